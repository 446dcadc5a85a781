"""The inspector of ``agentmem ui`` over HTTP (Starlette's TestClient): every page escapes
stored text, GET changes nothing, a read-only inspector refuses every change, a writable one
wants the CSRF token, and what search shows is what recall returns."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from _inspector_support import (
    ATTRIBUTE,
    INJECTION,
    SCRIPT,
    Seeded,
    markup_problems,
    seeded,
    snapshot,
)
from fastapi.testclient import TestClient

from agentmem import AgentMemory, NotFoundError
from agentmem.inspector.access import Csrf
from agentmem.inspector.app import create_ui_app, hostname

SEARCHES = [
    "/ui/search?q=where+does+Alice+live&tenant=acme&user=u1&session=s1",
    "/ui/search?q=dentist&tenant=acme&user=u1&session=s1&min_score=0&include_superseded=yes",
    "/ui/search?" + "q=" + SCRIPT.replace(" ", "+") + "&tenant=acme&user=u1",
]


@pytest.fixture
def store(make_memory) -> tuple[AgentMemory, Seeded]:  # type: ignore[no-untyped-def]
    mem: AgentMemory = make_memory()
    return mem, seeded(mem)


def client(mem: AgentMemory, *, writable: bool) -> TestClient:
    return TestClient(create_ui_app(mem, writable=writable), follow_redirects=False)


def crawl(c: TestClient, ids: list[str]) -> dict[str, str]:
    """Every page of the inspector over the seeded store, by URL."""
    urls = [
        "/ui",
        "/ui/tenants/acme",
        "/ui/rows?tenant=acme",
        "/ui/rows?tenant=acme&retired=1",
        "/ui/rows?tenant=acme&user_id=u1&session_id=s1",
        "/ui/state?tenant=acme",
        *SEARCHES,
        *(f"/ui/memories/{i}" for i in ids),
    ]
    pages = {}
    for url in urls:
        response = c.get(url)
        assert response.status_code == 200, (url, response.text[:500])
        pages[url] = response.text
    return pages


def test_every_page_escapes_stored_text(store: tuple[AgentMemory, Seeded]) -> None:
    mem, ids = store
    pages = crawl(client(mem, writable=False), ids.all_acme)
    shown = "".join(pages.values())
    for url, html in pages.items():
        assert markup_problems(html) == [], url
        assert SCRIPT not in html and ATTRIBUTE not in html, url
        # nothing from another origin (no CDN): every asset is the package's
        assert re.findall(r'(?:src|href|action)="(?:[a-z]+:)?//', html) == [], url
    # the hostile texts are there, as text
    assert "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;" in shown
    assert "&#34; onmouseover=&#34;alert(1)&#34;" in shown
    assert "Ignore previous instructions" in shown and "&lt;img src=x onerror" in shown
    hostile = pages[f"/ui/memories/{ids.hostile}"]
    assert "&lt;/pre&gt;&lt;img" in hostile  # in the content and in the metadata
    # the searched query is escaped where the form shows it again
    assert 'value="&lt;script&gt;' in pages[SEARCHES[2]]


def test_pages_carry_the_security_headers(store: tuple[AgentMemory, Seeded]) -> None:
    mem, ids = store
    response = client(mem, writable=False).get(f"/ui/memories/{ids.hostile}")
    csp = response.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["cache-control"] == "no-store"
    css = client(mem, writable=False).get("/ui/static/style.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")


def test_get_changes_nothing(store: tuple[AgentMemory, Seeded]) -> None:
    mem, ids = store
    before = snapshot(mem)
    c = client(mem, writable=True)
    crawl(c, ids.all_acme)
    for url in (
        f"/ui/memories/{ids.new_home}/forget",
        "/ui/erase?tenant=acme&user=u1",
        "/ui/sessions/close?tenant=acme&user=u1&session=s1",
    ):
        assert c.get(url).status_code == 200, url  # a confirmation, nothing done
    mem.access.flush()
    assert snapshot(mem) == before


def test_a_read_only_inspector_refuses_every_change(
    store: tuple[AgentMemory, Seeded], monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, ids = store
    c = client(mem, writable=False)
    page = c.get(f"/ui/memories/{ids.new_home}").text
    assert "/forget" not in page and "<form" not in page.split("</header>")[1]
    assert "/erase" not in c.get("/ui/tenants/acme").text
    before = snapshot(mem)
    for url in (
        f"/ui/memories/{ids.new_home}/forget",
        "/ui/erase?tenant=acme&user=u1",
        "/ui/sessions/close?tenant=acme&user=u1&session=s1",
    ):
        refused = c.get(url)
        assert refused.status_code == 403 and "read-only" in refused.text, url
    posts = (
        (f"/ui/memories/{ids.new_home}/forget", {}),
        ("/ui/erase", {"tenant": "acme", "user": "u1", "confirm": "u1"}),
        ("/ui/sessions/close", {"tenant": "acme", "user": "u1", "session": "s1"}),
    )
    for url, form in posts:
        assert c.post(url, data=form).status_code == 403, url
    # refused for being read-only, not only for lacking the CSRF token
    monkeypatch.setattr(Csrf, "check", lambda self, viewer, presented: None)
    for url, form in posts:
        refused = c.post(url, data=form)
        assert refused.status_code == 403 and "read-only" in refused.text, url
    assert snapshot(mem) == before


def test_a_rows_supersession_says_what_when_and_who_decided(
    store: tuple[AgentMemory, Seeded],
) -> None:
    mem, ids = store
    c = client(mem, writable=False)
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
    for new, old, decided in (
        (ids.new_home, ids.old_home, "same topic key"),
        (ids.judged_new, ids.judged_old, "judge offline-judge: SUPERSEDE"),
    ):
        replaced = c.get(f"/ui/memories/{new}").text.split('id="replaced"')[1].split("</table>")[0]
        row = re.search(rf'href="/ui/memories/{old}".*?<td>({when})</td><td>([^<]*)</td>', replaced)
        assert row is not None and row.group(2) == decided, new
        replaced_by = c.get(f"/ui/memories/{old}").text.split('id="replaced-by">')[1]
        assert f'href="/ui/memories/{new}"' in replaced_by.split("</p>")[0]
        assert re.search(when, replaced_by.split("</p>")[0])


def _token(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    assert found is not None
    return found.group(1)


def test_forget_is_confirmed_and_needs_the_token(store: tuple[AgentMemory, Seeded]) -> None:
    mem, ids = store
    c = client(mem, writable=True)
    url = f"/ui/memories/{ids.message}/forget"
    confirm = c.get(url)
    assert confirm.status_code == 200 and 'id="confirm"' in confirm.text
    before = snapshot(mem)
    assert c.post(url).status_code == 403
    assert c.post(url, data={"csrf": "0" * 64}).status_code == 403
    assert snapshot(mem) == before
    done = c.post(url, data={"csrf": _token(confirm.text)})
    assert done.status_code == 200 and "forgotten" in done.text
    m = mem.bind("acme", user_id="u1", session_id="s1")
    with pytest.raises(NotFoundError):
        m.get(ids.message)
    page = c.get(f"/ui/memories/{ids.message}")
    assert page.status_code == 200 and 'id="state">forgotten' in page.text
    assert "dentist" not in page.text


def test_erasing_a_user_asks_for_the_id_and_shows_the_receipt(
    store: tuple[AgentMemory, Seeded],
) -> None:
    mem, ids = store
    c = client(mem, writable=True)
    confirm = c.get("/ui/erase?tenant=acme&user=u2")
    assert "Bob keeps bees" in confirm.text
    form = {"csrf": _token(confirm.text), "tenant": "acme", "user": "u2", "confirm": "u1"}
    wrong = c.post("/ui/erase", data=form)
    assert wrong.status_code == 422 and "confirm" in wrong.text
    receipt = c.post("/ui/erase", data={**form, "confirm": "u2"})
    assert receipt.status_code == 200 and 'id="receipt"' in receipt.text
    assert re.search(r"records: memories</th><td class=\"num\">1<", receipt.text)
    assert mem.records.memories.get(ids.u2_fact) is None
    assert mem.records.memories.get(ids.new_home) is not None  # u1 untouched


def test_closing_a_session_again(store: tuple[AgentMemory, Seeded]) -> None:
    mem, _ = store
    c = client(mem, writable=True)
    confirm = c.get("/ui/sessions/close?tenant=acme&user=u1&session=s1")
    form = {"csrf": _token(confirm.text), "tenant": "acme", "user": "u1", "session": "s1"}
    done = c.post("/ui/sessions/close", data=form)
    assert done.status_code == 200 and "Session s1 closed" in done.text
    assert re.search(r"<th>messages</th><td class=\"num\">2<", done.text)


def test_search_shows_what_recall_returns(store: tuple[AgentMemory, Seeded]) -> None:
    mem, _ = store
    c = client(mem, writable=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    for query, options in (
        ("where does Alice live", ""),
        ("dentist appointment", "&min_score=0&top_k=3"),
        ("coffee or tea", "&kinds=memory&rerank=no"),
    ):
        page = c.get(f"/ui/search?q={query}&tenant=acme&user=u1&session=s1{options}").text
        shown = re.findall(r'<li><a href="/ui/memories/([0-9a-f]+)"', page.split('id="result"')[1])
        kw: dict[str, object] = {"min_score": 0.0, "top_k": 3} if "top_k" in options else {}
        if "kinds" in options:
            kw = {"kinds": "memory", "rerank": False}
        recalled = [h.id for h in m.recall(query, **kw).items]  # type: ignore[arg-type]
        assert shown[: len(recalled)] == recalled, query
    # every feature of the model by name, with its weight and contribution
    page = c.get("/ui/search?q=where+does+Alice+live&tenant=acme&user=u1").text
    scoring = mem.context.engine.scoring
    assert scoring.weights is not None
    from agentmem.recall.ranking import FEATURE_NAMES

    table = page.split('id="calibration-1"')[1].split("</table>")[0]
    assert re.findall(r"<tr[^>]*><td>([a-z_0-9]+)</td>", table) == list(FEATURE_NAMES)
    assert 'id="keyword-only"' in page and 'id="vector-only"' in page
    assert re.search(r'id="gate">\d+<', page)


def test_search_takes_recalls_metadata_filters(store: tuple[AgentMemory, Seeded]) -> None:
    mem, _ = store
    m = mem.bind("acme", user_id="u1")
    apollo = m.remember("The launch review is on Monday", metadata={"project": "apollo"}).id
    m.remember("The launch review is on Friday", metadata={"project": "zeus"})
    mem.flush()
    c = client(mem, writable=False)
    url = "/ui/search?q=when+is+the+launch+review&tenant=acme&user=u1&min_score=0"
    page = c.get(url + "&filters=" + quote('{"project": "apollo"}')).text
    shown = re.findall(r'<li><a href="/ui/memories/([0-9a-f]+)"', page.split('id="result"')[1])
    filtered = m.recall("when is the launch review", min_score=0.0, filters={"project": "apollo"})
    assert shown[: filtered.total] == [h.id for h in filtered.items] and shown[0] == apollo
    assert "Friday" not in page.split('id="result"')[1].split("</ol>")[0]
    assert 'value="{&#34;project&#34;: &#34;apollo&#34;}"' in page  # the form keeps it
    for bad in ("project=apollo", "[1, 2]"):
        refused = c.get(url + "&filters=" + quote(bad))
        assert refused.status_code == 422 and "filters" in refused.text, bad


def test_bad_input_is_a_page_naming_the_problem(store: tuple[AgentMemory, Seeded]) -> None:
    mem, _ = store
    c = client(mem, writable=False)
    bad = c.get("/ui/search?q=x&tenant=acme&top_k=many")
    assert bad.status_code == 422 and "top_k" in bad.text
    bad = c.get("/ui/search?q=x&tenant=acme&top_k=99")
    assert bad.status_code == 422 and "top_k" in bad.text
    missing = c.get("/ui/memories/0123456789abcdef0123456789abcdef")
    assert missing.status_code == 404 and markup_problems(missing.text) == []
    assert c.get("/ui/rows").status_code == 422  # which tenant?


def test_the_host_check_refuses_other_names(store: tuple[AgentMemory, Seeded]) -> None:
    mem, _ = store
    app = create_ui_app(mem, writable=False, hosts={"127.0.0.1", "localhost", "::1"})
    c = TestClient(app, base_url="http://127.0.0.1:8721")
    assert c.get("/ui").status_code == 200
    assert c.get("/ui", headers={"host": "localhost:8721"}).status_code == 200
    assert c.get("/ui", headers={"host": "[::1]:8721"}).status_code == 200
    assert c.get("/ui", headers={"host": "attacker.example:8721"}).status_code == 421
    assert hostname("[::1]:80") == "::1" and hostname("a.b") == "a.b"


def test_injection_text_stays_text_in_the_explanation(store: tuple[AgentMemory, Seeded]) -> None:
    mem, _ = store
    page = client(mem, writable=False).get(
        "/ui/search?q=ignore+previous+instructions&tenant=acme&user=u1&session=s1&min_score=0"
    )
    assert INJECTION not in page.text
    assert "Ignore previous instructions" in page.text
    assert markup_problems(page.text) == []
