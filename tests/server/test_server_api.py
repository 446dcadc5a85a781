"""The remote bound memory over a real ``agentmem serve``: same operations, same types, same
errors; keys, tenants and pinned identities enforced by the server."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import subprocess
import sys
import textwrap
from datetime import datetime

import httpx
import pytest
from _agentmem_server import ConnectAs, ServerProcess

import agentmem
from agentmem import (
    AnswerResult,
    AuthError,
    BoundMemory,
    BoundMemoryProtocol,
    CloseResult,
    IngestResult,
    MemoryItem,
    MemoryProtocol,
    NotFoundError,
    RecallHit,
    RecallOptions,
    RecallResult,
    RememberResult,
    ScopeError,
    ValidationError,
)
from agentmem.client import (
    AsyncRemoteBoundMemory,
    AsyncRemoteWorking,
    RemoteBoundMemory,
    RemoteWorking,
)
from agentmem.tiers.agent_state import StateEntry
from agentmem.tiers.knowledge import KnowledgeEntry, UpsertResult
from agentmem.tiers.sessions import SessionDetail
from agentmem.tiers.working import (
    CompactionResult,
    PromptView,
    ReferenceSummary,
    TokenCounts,
    WorkingMemory,
    WorkingSnapshot,
)


def _post(server: ServerProcess, path: str, key: str | None, body: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers["Content-Type"] = "application/json"
    return httpx.post(server.url + path, content=content, headers=headers, timeout=30)


def test_health_needs_no_key_and_the_api_is_documented(server: ServerProcess, tenant: str) -> None:
    assert httpx.get(server.url + "/health").json()["status"] == "ok"
    key = server.create_key(tenant)
    # a browser opens the documentation without a key; it describes routes, no data
    paths = httpx.get(server.url + "/openapi.json").json()["paths"]
    assert {"/v1/ops/recall", "/v1/ops/knowledge.upsert", "/v1/whoami", "/mcp"} - set(paths) == {
        "/mcp"
    }
    recall = paths["/v1/ops/recall"]["post"]
    assert recall["security"] == [{"HTTPBearer": []}]  # "Try it out" sends the key
    body = {"args": {"query": "x"}}
    assert _post(server, "/v1/ops/recall", None, body).status_code == 401
    assert _post(server, "/v1/ops/recall", key, body).status_code == 200
    assert httpx.get(server.url + "/v1/whoami").status_code == 401  # the rest needs a key


def test_the_docs_page_loads_everything_from_the_server(server: ServerProcess) -> None:
    """/docs opens offline: the page and every file it loads come from this server."""
    page = httpx.get(server.url + "/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    refs = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert refs and all(ref.startswith("/") and not ref.startswith("//") for ref in refs), refs
    loaded: dict[str, httpx.Response] = {}
    for ref in refs:
        loaded[ref] = httpx.get(server.url + ref)  # no key: a browser sends none
        assert loaded[ref].status_code == 200, ref
    assert loaded["/docs/assets/swagger-ui-bundle.js"].text.count("SwaggerUIBundle") > 0
    css = loaded["/docs/assets/swagger-ui.css"]
    assert css.headers["content-type"].startswith("text/css")
    for url in re.findall(r"url\(([^)]*)\)", css.text):
        assert url.strip("'\"").startswith("data:"), url  # images inline, nothing fetched
    init = loaded["/docs/assets/agentmem-docs.js"].text
    assert "http://" not in init and "https://" not in init
    (spec,) = re.findall(r'url: "([^"]+)"', init)
    assert httpx.get(server.url + spec).json()["info"]["title"] == "agentmem"
    assert httpx.get(server.url + "/docs/assets/index.j2").status_code == 404  # only the page's


def test_every_operation_returns_the_embedded_types(connect_as: ConnectAs, tenant: str) -> None:
    client = connect_as(tenant)
    assert isinstance(client, MemoryProtocol)
    m = client.bind(user_id="u1", agent_id="support", session_id="s1")
    assert isinstance(m, BoundMemoryProtocol)
    assert (m.tenant_id, m.user_id, m.agent_id, m.session_id) == (tenant, "u1", "support", "s1")

    msg = m.add_message("user", "My order 4711 arrived damaged", metadata={"channel": "web"})
    assert isinstance(msg, MemoryItem) and isinstance(msg.created_at, datetime)
    assert msg.created_at.tzinfo is not None and msg.metadata == {"channel": "web"}
    assert m.get(msg.id) == msg
    [reply] = m.add_messages([{"role": "assistant", "content": "Sorry, a new one ships today"}])
    tool = m.add_tool_output("call-1", "tracking: " + "x" * 5000, tool_name="lookup")
    assert tool.source_ref and m.read_tool_output(tool.source_ref).startswith("tracking: x")
    assert [i.id for i in m.messages()] == [msg.id, reply.id, tool.id]
    chunks = m.add_document("Refund policy. Refunds take five business days.", source_ref="kb")
    assert chunks and all(isinstance(c, MemoryItem) for c in chunks)
    fact = m.remember("I prefer tea over coffee", memory_type="preference")
    assert isinstance(fact, RememberResult) and fact.was_new
    assert m.remember("I prefer tea over coffee", memory_type="preference") == RememberResult(
        fact.id, False
    )
    many = m.remember_many(["Lives in Porto", {"content": "Works at ACME", "scope": "user"}])
    assert [type(r) for r in many] == [RememberResult, RememberResult]
    assert client.flush(timeout=60)

    result = m.recall("which drink do I prefer?")
    assert isinstance(result, RecallResult) and result.items
    assert all(isinstance(h, RecallHit) for h in result) and result.items[0].id == fact.id
    assert isinstance(result.items[0].event_time, datetime)
    assert m.recall("order 4711", kinds=("chat_message",), scope="session").items[0].id == msg.id

    ingested = m.ingest([{"role": "user", "content": "I moved to Lisbon last month"}])
    assert isinstance(ingested, IngestResult) and ingested.session_id == "s1"
    answer = m.answer("where do I live?")
    assert isinstance(answer, AnswerResult)
    assert all(isinstance(h, RecallHit) for h in answer.sources)
    assert m.history(fact.id)[0].id == fact.id

    context = m.context_messages()
    assert context and all({"role", "content"} <= set(c) for c in context)
    compacted = m.compact(keep=1)
    assert isinstance(compacted, CompactionResult) and isinstance(
        compacted.summary, ReferenceSummary
    )

    kb = m.knowledge.upsert("Refunds are processed within 5 business days", key="refund-sla")
    assert isinstance(kb, UpsertResult) and kb.was_new
    entry = m.knowledge.get("refund-sla")
    assert isinstance(entry, KnowledgeEntry) and entry.agent_id == "support"
    assert [e.key for e in m.knowledge.list()] == ["refund-sla"]
    assert m.knowledge.get("no-such-key") is None
    state = m.state.set("plan", {"step": 2, "items": [1, 2]})
    assert isinstance(state, StateEntry) and m.state.get("plan") == state
    assert m.state.list() == [state] and m.state.delete("plan") and m.state.get("plan") is None

    closed = m.close_session(summary_timeout=10)
    assert isinstance(closed, CloseResult) and not closed.already_closed
    detail = m.session_detail("s1")
    assert isinstance(detail, SessionDetail) and detail.tier == "mid_term"
    assert [e.id for e in detail.events][:2] == [msg.id, reply.id]
    assert m.sessions() == ["s1"]
    assert m.forget(fact.id) and not m.forget(fact.id)
    assert m.knowledge.delete("refund-sla")
    assert m.clear_session() >= 3


def test_errors_come_back_as_the_same_classes(connect_as: ConnectAs, tenant: str) -> None:
    m = connect_as(tenant).bind(user_id="u1")
    with pytest.raises(ValidationError) as bad:
        m.recall("tea", top_k=50)
    assert type(bad.value) is ValidationError and bad.value.field == "top_k"
    with pytest.raises(ScopeError) as scope:
        m.remember("agent note", scope="agent")
    assert scope.value.field
    with pytest.raises(ScopeError):
        m.state.get("plan")  # no agent bound
    with pytest.raises(NotFoundError) as missing:
        m.get("0" * 32)
    assert missing.value.context == {"memory_id": "0" * 32}
    with pytest.raises(ValidationError) as wrong_type:
        m.recall("tea", top_k="5")  # type: ignore[arg-type]
    assert wrong_type.value.field == "top_k"
    with pytest.raises(ValidationError) as filt:
        m.recall("tea", filters={"tenant_id": "someone-else"})
    assert filt.value.field.startswith("filters")


def test_keys_are_checked_on_every_request_without_a_restart(
    server: ServerProcess, tenant: str
) -> None:
    with pytest.raises(AuthError) as wrong:
        agentmem.connect(server.url, api_key="amk_000000000000_not-a-real-secret")
    assert wrong.value.reason == "invalid"
    response = _post(server, "/v1/ops/recall", None, {"args": {"query": "x"}})
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["type"] == "AuthError"

    key = server.create_key(tenant)  # created beside the running server
    with agentmem.connect(server.url, api_key=key) as client:
        m = client.bind(user_id="u1")
        m.remember("kept before the revocation")
        server.revoke_key(key)
        with pytest.raises(AuthError) as revoked:
            m.remember("refused after it")
        assert revoked.value.reason == "revoked"
    with pytest.raises(AuthError):
        agentmem.connect(server.url, api_key=key)


def test_the_tenant_comes_only_from_the_key(
    server: ServerProcess, connect_as: ConnectAs, tenant: str
) -> None:
    other = tenant + "-b"
    a = connect_as(tenant).bind(user_id="u1", session_id="s1")
    b_client = connect_as(other)
    b = b_client.bind(user_id="u1", session_id="s1")
    secret = b.remember("tenant B's secret recipe", metadata={"tenant_id": tenant})
    b.add_message("user", "tenant B's secret recipe")
    mine = a.remember("tenant A's own note", metadata={"tenant_id": other})
    b_client.flush(timeout=60)

    assert {h.id for h in a.recall("secret recipe", min_score=0.0)} <= {mine.id}
    assert [i.content for i in a.messages()] == []
    with pytest.raises(NotFoundError):
        a.get(secret.id)
    assert not a.forget(secret.id)
    assert b.get(secret.id).content == "tenant B's secret recipe"

    with pytest.raises(AuthError) as forbidden:
        connect_as(tenant).bind(tenant_id=other)
    assert forbidden.value.reason == "forbidden"
    key = server.create_key(tenant)
    body = {"identity": {"tenant_id": other, "user_id": "u1"}, "args": {"memory_id": secret.id}}
    response = _post(server, "/v1/ops/get", key, body)
    assert response.status_code == 403 and response.json()["error"]["type"] == "AuthError"
    same = _post(server, "/v1/ops/get", key, {**body, "identity": {"tenant_id": tenant}})
    assert same.status_code == 404


def test_a_pinned_key_acts_only_for_its_user(
    server: ServerProcess, connect_as: ConnectAs, tenant: str
) -> None:
    pinned = connect_as(tenant, user="u1")
    assert pinned.whoami().user_id == "u1"
    m = pinned.bind(session_id="s1")
    assert m.user_id == "u1"
    fact = m.remember("u1 likes green tea")
    with pytest.raises(AuthError) as other_user:
        pinned.bind(user_id="u2")
    assert other_user.value.reason == "forbidden"
    key = server.create_key(tenant, user="u1")
    body = {"identity": {"user_id": "u2"}, "args": {"memory_id": fact.id}}
    assert _post(server, "/v1/ops/get", key, body).status_code == 403
    assert _post(server, "/v1/ops/get", key, {"args": {"memory_id": fact.id}}).status_code == 200
    # a tenant-wide key sees u1's memory when bound to u1, not when bound to u2
    wide = connect_as(tenant)
    assert wide.bind(user_id="u1").get(fact.id).content == "u1 likes green tea"
    with pytest.raises(NotFoundError):
        wide.bind(user_id="u2").get(fact.id)


def test_bad_json_and_arguments_are_422_naming_the_field(
    server: ServerProcess, tenant: str
) -> None:
    key = server.create_key(tenant)
    cases = [
        (b'{"args": {"query": ', "body"),
        ({"args": {"query": "tea", "bogus": 1}}, "bogus"),
        ({"args": {"query": "tea", "top_k": "five"}}, "top_k"),
        ({"args": {}}, "query"),
        ({"identity": {"user_id": "u1"}}, "args"),  # no args at all: args is what is missing
        ({"identity": {"user_id": 7}, "args": {"query": "tea"}}, "user_id"),
        ({"args": {"query": "tea"}, "extra": True}, "extra"),
    ]
    for body, field in cases:
        response = _post(server, "/v1/ops/recall", key, body)
        assert response.status_code == 422, (body, response.text)
        error = response.json()["error"]
        assert (error["type"], error["field"]) == ("ValidationError", field), body
        assert error["message"].startswith(f"{field}: "), error
    assert _post(server, "/v1/ops/no_such_op", key, {"args": {}}).status_code == 404


def test_two_client_processes_write_and_read_at_once(server: ServerProcess, tenant: str) -> None:
    script = textwrap.dedent(
        """
        import json, sys
        import agentmem
        url, key, name = sys.argv[1:4]
        ids = []
        with agentmem.connect(url, api_key=key) as client:
            m = client.bind(user_id="shared", session_id=name)
            other = client.bind(user_id="shared", session_id="a" if name == "b" else "b")
            seen = 0
            for i in range(40):
                ids.append(m.add_message("user", f"{name} message {i} about parcel {i}").id)
                ids.append(m.remember(f"{name} fact number {i}").id)
                seen = max(seen, len(other.messages()))
                assert len(m.messages()) == i + 1
                m.recall(f"parcel {i}")
        print(json.dumps({"ids": ids, "seen": seen}))
        """
    )
    key = server.create_key(tenant)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, server.url, key, name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    results = [json.loads(out) for out, _ in outputs]
    assert max(r["seen"] for r in results) > 0  # each read the other's writes while writing
    with agentmem.connect(server.url, api_key=key) as client:
        reader = client.bind(user_id="shared", session_id="a")
        for r in results:
            for memory_id in r["ids"]:
                assert reader.get(memory_id).id == memory_id
        assert len(reader.messages()) == 40
        assert len(client.bind(user_id="shared", session_id="b").messages()) == 40


def test_async_client_is_the_same_api(server: ServerProcess, tenant: str) -> None:
    key = server.create_key(tenant)

    async def scenario() -> None:
        async with await agentmem.connect_async(server.url, api_key=key) as client:
            m = client.bind(user_id="u1", agent_id="bot", session_id="s1")
            item = await m.add_message("user", "async parcel 99 went missing")
            assert isinstance(item, MemoryItem)
            fact = await m.remember("async user prefers rooibos")
            many = await asyncio.gather(*(m.remember(f"async fact {i}") for i in range(5)))
            assert len({r.id for r in many}) == 5
            assert await client.flush(timeout=60)
            hits = await m.recall("rooibos")
            assert hits.items[0].id == fact.id
            assert (await m.knowledge.upsert("async kb", key="k")).was_new
            assert await client.flush(timeout=60)
            assert (await m.knowledge.search("async kb")).items
            assert (await m.state.set("k", 1)).value == 1
            with pytest.raises(ValidationError):
                await m.recall("x", top_k=0)
            with pytest.raises(NotFoundError):
                await m.get("f" * 32)
        with pytest.raises(AuthError):
            await agentmem.connect_async(server.url, api_key="amk_111111111111_wrong")
        # the form the README shows: entered directly, closed on exit
        async with agentmem.connect_async(server.url, api_key=key) as direct:
            assert (await direct.bind(user_id="u1").recall("rooibos")).items
        assert direct.closed
        with pytest.raises(AuthError):
            async with agentmem.connect_async(server.url, api_key="amk_111111111111_wrong"):
                pass
        with pytest.raises(AuthError) as missing:
            agentmem.connect_async(server.url, api_key="")
        assert missing.value.reason == "missing"

    asyncio.run(scenario())


def test_async_and_sync_remote_memories_have_the_same_methods() -> None:
    def api(cls: type) -> dict[str, inspect.Signature]:
        members = {name: getattr(cls, name) for name in dir(cls)}  # inherited ones too
        return {
            name: inspect.signature(member)
            for name, member in members.items()
            if inspect.isfunction(member) and not name.startswith("_")
        }

    sync_api, async_api = api(RemoteBoundMemory), api(AsyncRemoteBoundMemory)
    assert sync_api.keys() == async_api.keys()
    for name, sig in sync_api.items():
        assert list(sig.parameters) == list(async_api[name].parameters), name
        assert inspect.iscoroutinefunction(getattr(AsyncRemoteBoundMemory, name)), name
    bound_api = {n for n in vars(agentmem.BoundMemory) if not n.startswith("_")}
    assert bound_api - set(sync_api) - {"store", "working", "knowledge", "state"} <= {
        "identity",
        "tenant_id",
        "user_id",
        "agent_id",
        "session_id",
    }


def test_a_remote_bound_memory_has_every_public_name_of_the_embedded_one() -> None:
    def names(cls: type) -> set[str]:
        return {n for n in dir(cls) if not n.startswith("_")}

    # `store` is the embedded AgentMemory a memory was bound from; a remote one has `client`
    assert names(BoundMemory) - names(RemoteBoundMemory) == {"store"}
    assert names(BoundMemory) - names(AsyncRemoteBoundMemory) == {"store"}
    # the store's tier settings are the server's; asyncio reads the rest from a snapshot
    assert names(WorkingMemory) - names(RemoteWorking) == {"config"}
    assert names(WorkingMemory) - names(AsyncRemoteWorking) == {
        "config",
        "pinned",
        "summary",
        "tokens",
        "window",
    }


def test_the_working_memory_is_served_too(server: ServerProcess, tenant: str) -> None:
    key = server.create_key(tenant)
    with agentmem.connect(server.url, api_key=key) as client:
        m = client.bind(user_id="u1", agent_id="bot", session_id="s1")
        m.add_message("system", "You are a travel agent.")
        m.add_message("user", "I live in Berlin.")
        m.add_message("assistant", "Noted.")
        question = m.add_message("user", "Find me a hotel in Lisbon")
        m.add_message(
            "assistant",
            "",
            metadata={"tool_calls": [{"id": "c1", "name": "hotels", "arguments": {"n": 3}}]},
        )
        m.add_tool_output("c1", "3 hotels found", tool_name="hotels")

        snap = m.working.snapshot()
        assert isinstance(snap, WorkingSnapshot) and snap.session_id == "s1"
        assert [i.content for i in snap.pinned] == ["You are a travel agent."]
        assert [i.id for i in snap.window] == [i.id for i in m.messages()][1:]
        assert snap.latest_user_id == question.id and not snap.compressed
        assert isinstance(snap.tokens, TokenCounts) and snap.tokens.total > 0
        assert [i.id for i in m.working.window] == [i.id for i in snap.window]
        assert [i.id for i in m.working.pinned] == [i.id for i in snap.pinned]
        assert m.working.summary.empty and m.working.tokens == snap.tokens

        folded = m.working.compact(keep=2)
        assert isinstance(folded, CompactionResult) and len(folded.rolled_off) == 2
        assert not m.working.summary.empty
        view = m.working.prompt_view()
        assert isinstance(view, PromptView)
        assert [i.id for i in view.window] == [i.id for i in m.working.window]
        context = m.working.context_messages()
        assert [c["role"] for c in context] == ["system", "system", "user", "assistant", "tool"]
        assert context[3]["tool_calls"][0]["function"]["name"] == "hotels"
        assert context == m.context_messages()

        with pytest.raises(ScopeError):
            client.bind(user_id="u1").working.snapshot()  # no session bound
        window = [i.id for i in m.working.window]

    async def scenario() -> None:
        async with agentmem.connect_async(server.url, api_key=key) as aclient:
            remote = aclient.bind(user_id="u1", agent_id="bot", session_id="s1")
            assert [i.id for i in (await remote.working.snapshot()).window] == window
            assert (await remote.working.compact(keep=0)).ok

    asyncio.run(scenario())


def test_flush_and_whoami(connect_as: ConnectAs, tenant: str) -> None:
    client = connect_as(tenant, agent="bot")
    key = client.whoami()
    assert (key.tenant_id, key.agent_id, key.admin) == (tenant, "bot", False)
    assert client.flush() is True
    with pytest.raises(ValidationError):
        client.flush(timeout=-1)


def test_the_server_logs_no_memory_content_and_no_key(
    server: ServerProcess, connect_as: ConnectAs, tenant: str
) -> None:
    marker = "zebra-7f3c-confidential"
    m = connect_as(tenant).bind(user_id="u1", session_id="s1")
    m.add_message("user", f"my password is {marker}")
    m.remember(f"{marker} is the vault code", metadata={"note": marker})
    m.recall(f"what is {marker}?")
    with pytest.raises(ValidationError):
        m.add_message("bogus-role", marker)
    with pytest.raises(ValidationError):
        m.recall(marker, filters={"user_id": marker})
    key = server.create_key(tenant)
    _post(server, "/v1/ops/recall", key, {"args": {"query": marker, "top_k": marker}})
    _post(server, "/v1/ops/recall", key + "x", {"args": {"query": marker}})
    # every request of this module so far went through the same server
    logged = server.output()
    assert "POST /v1/ops/recall" in logged  # the access log is on
    assert marker not in logged
    assert "amk_" not in logged and key.split("_", 2)[2] not in logged


def test_remote_memories_take_the_parameters_of_the_embedded_one() -> None:
    """A remote call accepts what the same call on an embedded BoundMemory accepts."""
    for name in dir(RemoteBoundMemory):  # its operations are inherited from the generated ones
        member, embedded = getattr(RemoteBoundMemory, name), getattr(BoundMemory, name, None)
        if name.startswith("_") or not callable(member) or not callable(embedded):
            continue
        remote = list(inspect.signature(member).parameters)
        assert remote == list(inspect.signature(embedded).parameters), name


def test_recall_options_travel_as_the_keywords_do(connect_as: ConnectAs, tenant: str) -> None:
    client = connect_as(tenant)
    m = client.bind(user_id="u1", session_id="s1")
    m.remember("The user prefers oolong tea", memory_type="preference")
    m.remember("The user's bike is blue")
    options = RecallOptions(top_k=1, memory_types=["preference"], min_score=0.0, rerank=False)
    by_value = m.recall("what does the user drink?", options)
    by_keywords = m.recall("what does the user drink?", options, top_k=2)  # laid over it
    assert [h.content for h in by_value.items] == ["The user prefers oolong tea"]
    assert [h.id for h in by_keywords.items] == [h.id for h in by_value.items]  # one preference
    with pytest.raises(ValidationError) as caught:  # refused by the server, naming the field
        m.recall("tea", RecallOptions(top_k=0))
    assert caught.value.field == "top_k"

    async def remote_async() -> list[str]:
        async with agentmem.connect_async(
            client.options.url, api_key=client.options.api_key
        ) as aclient:
            found = await aclient.bind(user_id="u1").recall("what does the user drink?", options)
            return [h.id for h in found.items]

    assert asyncio.run(remote_async()) == [h.id for h in by_value.items]


def test_a_remote_agent_reads_another_agents_closed_session(
    server: ServerProcess, tenant: str
) -> None:
    key = server.create_key(tenant)
    with agentmem.connect(server.url, api_key=key) as client:
        support = client.bind(agent_id="support", session_id="s0")
        support.add_message("user", "The refund for order 5512 was approved on Monday")
        support.close_session()
        assert client.flush(timeout=60)
        billing = client.bind(agent_id="billing")
        hits = billing.recall("refund order 5512", target_agent="support", min_score=0.0)
        assert any("5512" in h.content for h in hits.items)
        detail = billing.session_detail("s0", target_agent="support")
        assert [e.content for e in detail.events] == [
            "The refund for order 5512 was approved on Monday"
        ]
