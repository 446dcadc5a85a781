"""``/ui`` on ``agentmem serve`` over HTTP (Starlette's TestClient): the login form and its
cookie, and what a key reaches: its tenant (never another's), its pins, its permissions."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest
from _inspector_support import SECRET, Seeded, markup_problems, seeded, snapshot
from fastapi.testclient import TestClient

from agentmem import AgentMemory
from agentmem.inspector.access import COOKIE
from agentmem.server.app import create_app
from agentmem.server.keys import create_key, revoke_key
from agentmem.server.runner import QuerylessAccessLog


@pytest.fixture
def served(make_memory) -> Iterator[tuple[AgentMemory, Seeded, TestClient]]:  # type: ignore[no-untyped-def]
    mem: AgentMemory = make_memory()
    ids = seeded(mem)
    with TestClient(create_app(mem, run_jobs=False), follow_redirects=False) as c:
        yield mem, ids, c


def key(mem: AgentMemory, tenant: str, **flags: object) -> str:
    return create_key(mem.records, tenant_id=tenant, **flags).key  # type: ignore[arg-type]


def login(c: TestClient, api_key: str) -> None:
    response = c.post("/ui/login", data={"key": api_key, "next": "/ui/tenants/acme"})
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/ui/tenants/acme"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie
    assert "SameSite=strict" in cookie and "Path=/ui" in cookie


def test_a_browser_logs_in_with_a_key(served: tuple[AgentMemory, Seeded, TestClient]) -> None:
    mem, _, c = served
    start = c.get("/ui/tenants/acme")
    assert start.status_code == 303
    assert start.headers["location"] == "/ui/login?next=%2Fui%2Ftenants%2Facme"
    form = c.get("/ui/login")
    assert form.status_code == 200 and 'type="password"' in form.text
    wrong = c.post("/ui/login", data={"key": "amk_000000000000_nope"})
    assert wrong.status_code == 401 and "invalid API key" in wrong.text
    assert "set-cookie" not in wrong.headers
    # the next page is one of the inspector's, never another site
    assert (
        c.post(
            "/ui/login", data={"key": key(mem, "acme"), "next": "https://evil.example/"}
        ).headers["location"]
        == "/ui"
    )
    login(c, key(mem, "acme"))
    assert c.get("/ui/tenants/acme").status_code == 200
    out = c.post("/ui/logout")
    assert out.status_code == 303 and f'{COOKIE}=""' in out.headers["set-cookie"]
    c.cookies.clear()
    assert c.get("/ui").status_code == 303


def test_a_bearer_header_works_and_a_revoked_key_logs_out(
    served: tuple[AgentMemory, Seeded, TestClient],
) -> None:
    mem, _, c = served
    secret = key(mem, "acme")
    assert c.get("/ui", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    login(c, secret)
    revoke_key(mem.records, secret.split("_")[1])
    assert c.get("/ui").status_code == 303


def _crawl(c: TestClient) -> dict[str, str]:
    """Every page a key of acme can reach from its start page, by following links."""
    seen: dict[str, str] = {}
    todo = ["/ui", "/ui/search?q=when+does+the+deal+complete&tenant=acme&min_score=0"]
    while todo and len(seen) < 200:
        url = todo.pop()
        if url in seen or "/forget" in url or "/erase" in url or "/sessions/close" in url:
            continue
        response = c.get(url)
        assert response.status_code == 200, (url, response.status_code)
        seen[url] = response.text
        todo += [u.replace("&amp;", "&") for u in re.findall(r'href="(/ui[^"]*)"', response.text)]
    return seen


def test_another_tenants_data_never_appears(served: tuple[AgentMemory, Seeded, TestClient]) -> None:
    mem, ids, c = served
    login(c, key(mem, "acme", admin=True))
    pages = _crawl(c)
    assert len(pages) > 15
    for url, html in pages.items():
        assert "merger" not in html and "globex" not in html.lower(), url
        assert markup_problems(html) == [], url
    # named directly, another tenant's pages answer as if there were nothing
    assert c.get(f"/ui/memories/{ids.secret}").status_code == 404
    for url in (
        "/ui/tenants/globex",
        "/ui/rows?tenant=globex",
        "/ui/state?tenant=globex",
        "/ui/search?q=merger&tenant=globex",
        "/ui/erase?tenant=globex&user=g1",
        "/ui/sessions/close?tenant=globex&user=g1&session=x1",
    ):
        refused = c.get(url)
        assert refused.status_code == 403 and SECRET not in refused.text, url
    confirm = c.get(f"/ui/memories/{ids.new_home}/forget")
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', confirm.text).group(1)  # type: ignore[union-attr]
    before = snapshot(mem)
    assert c.post(f"/ui/memories/{ids.secret}/forget", data={"csrf": token}).status_code == 404
    erase = {"csrf": token, "tenant": "globex", "user": "g1", "confirm": "g1"}
    assert c.post("/ui/erase", data=erase).status_code == 403
    assert snapshot(mem) == before


def test_a_pinned_key_sees_what_its_user_may_recall(
    served: tuple[AgentMemory, Seeded, TestClient],
) -> None:
    mem, ids, c = served
    login(c, key(mem, "acme", user_id="u1"))
    assert c.get(f"/ui/memories/{ids.new_home}").status_code == 200
    assert c.get(f"/ui/memories/{ids.u2_fact}").status_code == 404
    rows = c.get("/ui/rows?tenant=acme&retired=1").text
    assert "Alice lives in Porto" in rows and "Bob keeps bees" not in rows
    assert c.get("/ui/rows?tenant=acme&user_id=u2").text.count("/ui/memories/") == 0
    tenant = c.get("/ui/tenants/acme").text
    assert "u2" not in tenant
    assert c.get("/ui/search?q=bees&user=u2").status_code == 403
    search = c.get("/ui/search?q=bees+on+the+roof&min_score=0").text
    assert "Bob keeps bees" not in search and "readonly" in search
    assert 'id="gate"' not in search  # how many of u2's rows matched is not u1's business


def test_a_pinned_key_sees_no_trace_of_other_users_activity(
    served: tuple[AgentMemory, Seeded, TestClient],
) -> None:
    mem, _, c = served
    bearer = {"Authorization": f"Bearer {key(mem, 'acme')}"}  # the app's own, unpinned key

    def op(name: str, identity: dict[str, str], **args: object) -> dict[str, object]:
        body = {"identity": identity, "args": args}
        answer = c.post(f"/v1/ops/{name}", json=body, headers=bearer)
        assert answer.status_code == 200, answer.text
        result: dict[str, object] = answer.json()["result"]
        return result

    u1 = {"user_id": "u1", "agent_id": "support", "session_id": "u1-chat"}
    u2 = {"user_id": "u2", "agent_id": "support", "session_id": "u2-chat"}
    for text in ("My printer jams on page two", "It is the LaserJet on floor 3"):
        op("add_message", u1, role="user", content=text)
    shared = op(
        "remember",
        {"agent_id": "support"},
        content="Printers reset with the red button",
        scope="agent",
    )
    # u1 wrote it, but to the agent: u2's recalls count there too
    written = op("remember", u1, content="Hold the printer's red button to reset it", scope="agent")
    mem.flush()
    rows = [f"/ui/memories/{row['id']}" for row in (shared, written)]
    pages = ("/ui", "/ui/tenants/acme", *rows)
    viewers = {"u1": key(mem, "acme", user_id="u1"), "bot": key(mem, "acme", agent_id="bot")}

    def look(api_key: str) -> dict[str, str]:
        out = {}
        for page in pages:
            response = c.get(page, headers={"Authorization": f"Bearer {api_key}"})
            out[page] = response.status_code, response.text
        return out  # type: ignore[return-value]

    before = {who: look(k) for who, k in viewers.items()}
    assert before["u1"][f"/ui/memories/{shared['id']}"][0] == 200  # u1 may recall it
    # u2 writes three messages under the same agent, then recalls the agent's memory
    for text in ("Where is the scanner?", "The one by the kitchen", "Thanks"):
        op("add_message", u2, role="user", content=text)
    found = op("recall", u2, query="how do I reset the printer?", min_score=0.0)
    hits = [h["id"] for h in found["items"]]  # type: ignore[attr-defined]
    assert shared["id"] in hits and written["id"] in hits
    mem.flush()
    assert {who: look(k) for who, k in viewers.items()} == before
    # not blind: u1's own activity shows on the same pages
    op("add_message", u1, role="user", content="Now it jams on page three")
    op("recall", u1, query="printer on floor 3", min_score=0.0)
    mem.flush()
    after = look(viewers["u1"])
    assert after["/ui"] != before["u1"]["/ui"]
    assert after["/ui/tenants/acme"] != before["u1"]["/ui/tenants/acme"]
    agents = after["/ui/tenants/acme"][1].split('id="agents"')[1].split("</table>")[0]
    # u1's rows under the agent: three messages and the fact u1 wrote to it
    assert re.search(r">support</a></td>\s*<td[^>]*>4</td>", agents), agents


def test_a_pinned_key_is_not_told_who_else_wrote_a_shared_row(
    served: tuple[AgentMemory, Seeded, TestClient],
) -> None:
    mem, _, c = served
    serving_u2 = mem.bind("acme", user_id="u2", agent_id="support", session_id="u2-chat")
    shared = serving_u2.remember("Printers reset with the red button", scope="agent").id
    login(c, key(mem, "acme", user_id="u1"))
    page = c.get(f"/ui/memories/{shared}").text
    assert "Printers reset" in page and "u2" not in page
    assert re.search(r"<th>user</th><td>-</td>", page), page
    # not blind: the application's own key sees who wrote it
    c.cookies.clear()
    login(c, key(mem, "acme"))
    assert re.search(r"<th>user</th><td>u2</td>", c.get(f"/ui/memories/{shared}").text)


def test_a_key_pinned_to_a_user_reads_no_agent_state(
    served: tuple[AgentMemory, Seeded, TestClient],
) -> None:
    """An agent's state is shared by every user it serves: a value set while serving u2 is
    not for u1's key, nor how many keys the agents keep or when they changed them."""
    mem, _, c = served
    serving_u2 = mem.bind("acme", user_id="u2", agent_id="bot", session_id="u2-chat")
    serving_u2.state.set("current_task", "Refund order 4711 for Bob")
    login(c, key(mem, "acme", user_id="u1"))
    for url in ("/ui/state?tenant=acme", "/ui/state?tenant=acme&agent=bot"):
        refused = c.get(url)
        assert refused.status_code == 403 and "4711" not in refused.text, url
    tenant = c.get("/ui/tenants/acme").text
    assert "agent state" not in tenant and "/ui/state" not in tenant
    # not blind: the agent's own key reads it
    c.cookies.clear()
    login(c, key(mem, "acme", agent_id="bot"))
    assert "Refund order 4711 for Bob" in c.get("/ui/state?tenant=acme").text


def test_a_key_pinned_to_an_agent_reads_that_agents_state_only(
    served: tuple[AgentMemory, Seeded, TestClient],
) -> None:
    mem, _, c = served
    mem.bind("acme", agent_id="helper").state.set("secret_step", "helper's own")
    login(c, key(mem, "acme", agent_id="helper"))
    own = c.get("/ui/state?tenant=acme").text
    assert "secret_step" in own and "plan" not in own  # bot's state is not listed
    assert c.get("/ui/state?tenant=acme&agent=bot").status_code == 403
    c.cookies.clear()
    login(c, key(mem, "acme"))
    every = c.get("/ui/state?tenant=acme").text
    assert "secret_step" in every and "plan" in every


def test_what_a_key_may_change(served: tuple[AgentMemory, Seeded, TestClient]) -> None:
    mem, ids, c = served
    login(c, key(mem, "acme"))  # not admin: forget and close, no erase
    tenant = c.get("/ui/tenants/acme").text
    assert "/erase" not in tenant and "/sessions/close" in tenant
    assert c.get("/ui/erase?tenant=acme&user=u2").status_code == 403
    confirm = c.get(f"/ui/memories/{ids.hostile}/forget")
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', confirm.text).group(1)  # type: ignore[union-attr]
    erase = {"csrf": token, "tenant": "acme", "user": "u2", "confirm": "u2"}
    assert c.post("/ui/erase", data=erase).status_code == 403
    assert mem.records.memories.get(ids.u2_fact) is not None
    assert c.post(f"/ui/memories/{ids.hostile}/forget", data={"csrf": token}).status_code == 200
    assert mem.records.memories.get(ids.hostile).item.content == ""  # type: ignore[union-attr]
    # a token is bound to its key: another key's session cannot use it
    c.cookies.clear()
    login(c, key(mem, "acme", admin=True))
    assert c.post("/ui/erase", data=erase).status_code == 403
    assert mem.records.memories.get(ids.u2_fact) is not None


def test_an_operator_lists_the_tenants_and_reads_only_its_own(
    served: tuple[AgentMemory, Seeded, TestClient],
) -> None:
    mem, _, c = served
    login(c, key(mem, "acme", operator=True))
    start = c.get("/ui").text
    assert "globex" in start  # the tenant list, with counts
    assert 'href="/ui/tenants/globex"' not in start
    assert c.get("/ui/tenants/globex").status_code == 403
    assert SECRET not in start


def test_recent_recalls_are_plotted_for_the_keys_tenant(
    served: tuple[AgentMemory, Seeded, TestClient],
) -> None:
    mem, _, c = served
    acme = key(mem, "acme")
    for query in ("where does Alice live", "coffee", "dentist"):
        body = {"identity": {"user_id": "u1"}, "args": {"query": query, "min_score": 0.0}}
        answer = c.post("/v1/ops/recall", json=body, headers={"Authorization": f"Bearer {acme}"})
        assert answer.status_code == 200
    login(c, acme)
    start = c.get("/ui").text
    assert len(re.findall(r"<circle ", start.split('id="latency-plot"')[1])) == 3
    assert "<rect " in start.split('id="score-plot"')[1]
    c.cookies.clear()
    login(c, key(mem, "globex"))
    assert "no recall observed yet" in c.get("/ui").text


def test_the_access_log_keeps_no_query_string() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", "/ui/search?q=my+secret+plans&tenant=acme", "1.1", 200),
        None,
    )
    assert QuerylessAccessLog().filter(record)
    assert record.getMessage() == '127.0.0.1:5000 - "GET /ui/search?... HTTP/1.1" 200'
