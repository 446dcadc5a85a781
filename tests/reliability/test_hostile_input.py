"""Hostile and bad input, property-based (hypothesis).

A module-scoped store holds rows of two tenants, two users and two agents in every scope,
all sharing the words "harbour lighthouse secret" so any query can reach any of them. Then:

- **recall with random identities, queries, kinds, scopes, filters, top_k, budgets and
  cross-agent targets** (unicode, NUL, lone surrogates, huge strings, query syntax
  ``" : ( * AND``): it raises only ``AgentMemError`` subclasses; every returned row passes an
  oracle written here independently of ``scopes.visible_scope`` (same tenant; a user-scope row
  of the same user; an agent-scope row of the same agent; a session row of the same
  conversation; with ``target_agent``, only that agent's knowledge and the chunks and
  summaries of its own closed conversations, for an agent bound without a user); never more
  than ``top_k`` items nor more tokens than the budget; a rejected call changes no stored data.
- **writes with random identities, contents, metadata, scopes and types**: either rejected
  with an ``AgentMemError`` and the records unchanged (row count + hash of every row), or the
  stored row carries exactly the bound identity, whatever the metadata says.
- **filter and metadata injection**: metadata naming ``tenant_id``/``user_id``/``agent_id``
  does not move a row; filters naming them are rejected; other filters only narrow.
- **oversized input**: a 50 MB string is rejected by every write without storing anything,
  and as a query it is truncated (bounded work), not an error.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _reliability_support import HashEmbedder
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentmem import AgentMemError, AgentMemory, BoundMemory, ValidationError
from agentmem.models import Identity
from agentmem.tokens import count_tokens

TENANTS = ("A", "B")
USERS = ("u1", "u2")
AGENTS = ("a1", "a2")
SHARED = "harbour lighthouse secret"
SYNTAX = [
    '"',
    ":",
    "(",
    ")",
    "*",
    "AND",
    "OR",
    "NOT",
    "~",
    "^",
    "-",
    "+",
    "[",
    "]",
    "{",
    "}",
    "\\",
    "/",
    "?",
    "id:x",
    'content:"x"',
    "tenant:A",
    "*:*",
    "a AND (b OR",
    "'",
]
HUGE = "lighthouse " * 1_000_000  # ~11 MB: over every content limit
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    # CI replays one fixed sequence of examples (a red CI run must be reproducible);
    # developers' runs explore new ones each time.
    derandomize=bool(os.environ.get("CI")),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())
hostile_text = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=any_char, max_size=40),  # NUL, controls, lone surrogates
    st.lists(st.sampled_from([*SYNTAX, SHARED, "lighthouse", "u1", "A"]), max_size=8).map(" ".join),
    st.builds(lambda a, b: f"{a} {SHARED} {b}", st.sampled_from(SYNTAX), st.text(max_size=10)),
    st.just(HUGE),
    st.just(""),
    st.just("   \n\t "),
)
ident_value = st.one_of(st.none(), st.text(alphabet=any_char, max_size=12), st.just("x" * 300))
# mostly identities that bind, so the calls behind bind() get exercised; some odd-but-valid ones
printable = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FFF, blacklist_categories=("Cs",)),
    min_size=1,
    max_size=8,
)
tenant_s = (
    st.sampled_from(TENANTS) | st.sampled_from(TENANTS) | st.sampled_from(TENANTS) | printable
)
user_s = st.sampled_from([None, *USERS]) | st.sampled_from(USERS) | printable
agent_s = st.sampled_from([None, *AGENTS]) | st.sampled_from(AGENTS) | printable
session_s = st.sampled_from([None, "s1", "s2"]) | st.sampled_from(["s1", "s2"]) | printable
json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(alphabet=any_char, max_size=8)
)
metadata_s = st.one_of(
    st.none(),
    st.dictionaries(
        st.one_of(
            st.sampled_from(["tenant_id", "user_id", "agent_id", "session_id", "owner"]),
            st.text(alphabet=any_char, max_size=8),
        ),
        json_leaf,
        max_size=4,
    ),
    st.just({"tenant_id": "A", "user_id": "u1", "agent_id": "a1"}),
    st.just({1: "x"}),
    st.just(["not", "a", "dict"]),
    st.just({"f": float("nan")}),
)


def mostly(valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
    """Seven draws in eight from ``valid``: enough calls get past validation to reach storage."""
    return st.tuples(st.integers(0, 7).map(lambda n: n % 8), valid, hostile).map(
        lambda x: x[2] if x[0] == 0 else x[1]
    )


def snapshot(home: Path) -> tuple[int, str]:
    """Row count and a hash of every stored row (access counters excluded: recall bumps them)."""
    conn = sqlite3.connect(f"file:{home / 'records.sqlite3'}?mode=ro", uri=True)
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(memories)")]
        keep = ", ".join(c for c in cols if c not in ("access_count", "last_accessed"))
        digest = hashlib.sha256()
        for sql in (
            f"SELECT {keep} FROM memories ORDER BY seq",
            "SELECT * FROM payloads ORDER BY rowid",
            "SELECT * FROM partitions ORDER BY rowid",
            "SELECT * FROM audit_log ORDER BY rowid",
        ):
            for row in conn.execute(sql):
                digest.update(repr(row).encode("utf-8", "surrogatepass"))
        return int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]), digest.hexdigest()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentMemory]:
    mem = AgentMemory(tmp_path_factory.mktemp("hostile"), embedder=HashEmbedder(), background=False)
    for t in TENANTS:
        mem.bind(tenant_id=t).add_document(f"{SHARED} tenant document of {t}")
        for u in USERS:
            for a in AGENTS:
                m = mem.bind(tenant_id=t, user_id=u, agent_id=a, session_id="s1")
                m.remember(f"{SHARED} user fact of {t}/{u} via {a}", metadata={"owner": u})
                m.remember(f"{SHARED} agent fact of {t}/{a} for {u}", scope="agent")
                m.add_message("user", f"{SHARED} message of {t}/{u}/{a} in s1")
            mem.bind(tenant_id=t, agent_id="a1", session_id="s2").add_message(
                "user", f"{SHARED} message of agent-only conversation {t}/a1"
            )
        for a in AGENTS:
            closed = mem.bind(tenant_id=t, agent_id=a, session_id=f"closed-{a}")
            closed.add_message("user", f"{SHARED} closed session of agent {t}/{a}")
            closed.close_session(summary_timeout=0)
            closed.add_message("user", f"{SHARED} working message after the close {t}/{a}")
            closed.knowledge.upsert(f"{SHARED} knowledge of agent {t}/{a}")
    mem.flush()
    yield mem
    mem.close()


def assert_may_see(
    mem: AgentMemory, ident: Identity, hit_id: str, target_agent: str | None = None
) -> None:
    """The isolation oracle (independent of scopes.visible_scope)."""
    row = mem.records.memories.get(hit_id)
    assert row is not None
    item = row.item
    assert item.tenant_id == ident.tenant_id, "row of another tenant"
    assert item.deleted_at is None
    if target_agent is not None:
        assert ident.agent_id is not None and ident.user_id is None, "not an agent alone"
        assert item.agent_id == target_agent and item.user_id is None, "not the target's row"
        if item.scope == "knowledge":
            return
        assert item.scope == "session" and row.tier is not None, "the target's working memory"
        assert row.partition.removeprefix("chunks:") == f"conv:a:{target_agent}"
        return
    if item.scope == "user":
        assert ident.user_id is not None and item.user_id == ident.user_id, "another user's row"
    elif item.scope == "agent":
        assert ident.agent_id is not None and item.agent_id == ident.agent_id, "another agent's"
    elif item.scope == "session":
        if ident.user_id is not None:
            own = f"conv:u:{ident.user_id}"
        elif ident.agent_id is not None:
            own = f"conv:a:{ident.agent_id}"
        else:  # a session bound with neither user nor agent: its own conversation
            own = f"conv:s:{ident.session_id}"
        # a session chunk lives in its conversation's chunk partition
        assert row.partition.removeprefix("chunks:") == own, "another conversation's message"
    else:
        assert item.scope in ("tenant", "knowledge")


def _bind(mem: AgentMemory, t: Any, u: Any, a: Any, s: Any) -> BoundMemory | None:
    try:
        return mem.bind(tenant_id=t, user_id=u, agent_id=a, session_id=s)
    except AgentMemError:
        return None


@SETTINGS
@given(t=ident_value, u=ident_value, a=ident_value, s=ident_value)
def test_random_identities_bind_exactly_or_are_rejected(world: AgentMemory, t, u, a, s) -> None:
    try:
        m = world.bind(tenant_id=t, user_id=u, agent_id=a, session_id=s)
    except AgentMemError:
        event("bind rejected")
        return
    event("bind accepted")
    assert (m.tenant_id, m.user_id, m.agent_id, m.session_id) == (t, u, a, s)


@SETTINGS
@given(
    t=tenant_s,
    u=user_s,
    a=agent_s,
    s=session_s,
    query=mostly(st.text(max_size=30).map(lambda x: f"{SHARED} {x}"), hostile_text),
    kinds=mostly(
        st.sampled_from([None, None, None, "memory", "chat_message", "document_chunk"]),
        st.sampled_from([["memory", "bogus"], [], "bogus", {"memory": 1}]),
    ),
    scope=mostly(
        st.sampled_from(["any", "any", "user", "agent", "session", "history", "tenant"]),
        st.sampled_from(["knowledge", "everyone", "*", ""]),
    ),
    filters=mostly(
        st.sampled_from([None, None, None, {"owner": "u1"}, {"owner": "u2"}]), metadata_s
    ),
    top_k=mostly(st.integers(min_value=1, max_value=20), st.sampled_from([0, -1, 21, True, "5"])),
    budget=mostly(
        st.sampled_from([None, 3, 16, 40, 400]) | st.integers(1, 400), st.sampled_from([0, -5])
    ),
    target=st.sampled_from([None] * 14 + ["a1", "a2"]),
)
def test_recall_never_leaks_and_stays_in_bounds(
    world: AgentMemory, t, u, a, s, query, kinds, scope, filters, top_k, budget, target
) -> None:
    m = _bind(world, t, u, a, s)
    if m is None:
        event("bind rejected")
        return
    before = snapshot(world.home)
    try:
        result = m.recall(
            query,
            kinds=kinds,
            scope=scope,
            filters=filters,
            top_k=top_k,
            token_budget=budget,
            min_score=0.0,
            target_agent=target,
        )
    except AgentMemError:
        event("recall rejected")
        assert snapshot(world.home) == before  # a rejected call changes nothing
        return
    event("recall returned rows" if result.items else "recall returned nothing")
    if target is not None and result.items:
        event("cross-agent recall returned rows")
    assert len(result.items) <= top_k
    limit = world.config.token_budget if budget is None else budget
    assert result.token_count <= limit
    assert sum(count_tokens(h.content) for h in result.items) <= limit
    for hit in result.items:
        assert_may_see(world, m.identity, hit.id, target)
        if filters:
            assert all(hit.metadata.get(k) == v for k, v in filters.items())


@SETTINGS
@given(
    t=tenant_s,
    u=mostly(st.none(), user_s),
    a=mostly(st.sampled_from(AGENTS), agent_s),
    s=session_s,
    target=mostly(st.sampled_from(AGENTS), ident_value),
    query=mostly(st.text(max_size=30).map(lambda x: f"{SHARED} {x}"), hostile_text),
    scope=mostly(
        st.sampled_from(["any", "any", "history", "knowledge"]),
        st.sampled_from(["session", "user", "agent", "tenant", "everyone"]),
    ),
    tiers=mostly(
        st.sampled_from([None, None, "mid_term", "long_term", "knowledge", ["mid_term"]]),
        st.sampled_from(["working", ["working", "knowledge"], "bogus"]),
    ),
)
def test_cross_agent_recall_reads_only_the_targets_closed_sessions_and_knowledge(
    world: AgentMemory, t, u, a, s, target, query, scope, tiers
) -> None:
    m = _bind(world, t, u, a, s)
    if m is None:
        event("bind rejected")
        return
    before = snapshot(world.home)
    try:
        result = m.recall(
            query, scope=scope, tiers=tiers, target_agent=target, top_k=20, min_score=0.0
        )
    except AgentMemError:
        event("cross-agent recall rejected")
        assert snapshot(world.home) == before
        return
    event("cross-agent recall returned rows" if result.items else "cross-agent recall: nothing")
    for hit in result.items:
        assert_may_see(world, m.identity, hit.id, target)
    try:
        detail = m.session_detail(f"closed-{target}", target_agent=target)
    except AgentMemError:
        return
    for item in detail.events:  # the closed session's messages, never the later ones
        assert item.agent_id == target and item.user_id is None and item.tenant_id == t
        assert "after the close" not in item.content


@SETTINGS
@given(
    t=tenant_s,
    u=user_s,
    a=agent_s,
    s=session_s,
    content=mostly(st.text(min_size=1, max_size=30).map(lambda x: f"{SHARED} {x}"), hostile_text),
    metadata=mostly(st.sampled_from([None, {"owner": "u1"}]), metadata_s),
    op=st.sampled_from(["remember", "message", "document", "tool"]),
    scope=mostly(
        st.sampled_from(["user", "agent", "session", "tenant"]),
        st.sampled_from(["knowledge", "global", ""]),
    ),
    memory_type=mostly(
        st.sampled_from(["fact", "preference", "instruction"]), st.sampled_from(["bogus", ""])
    ),
)
def test_writes_store_only_under_the_bound_identity_or_change_nothing(
    world: AgentMemory, t, u, a, s, content, metadata, op, scope, memory_type
) -> None:
    m = _bind(world, t, u, a, s)
    if m is None:
        event("bind rejected")
        return
    before = snapshot(world.home)
    try:
        if op == "remember":
            ids = [m.remember(content, scope=scope, memory_type=memory_type, metadata=metadata).id]
        elif op == "message":
            ids = [m.add_message("user", content, metadata=metadata).id]
        elif op == "document":
            ids = [c.id for c in m.add_document(content, metadata=metadata)]
        else:
            ids = [m.add_tool_output("call-1", content, metadata=metadata).id]
    except AgentMemError:
        event(f"{op} rejected")
        assert snapshot(world.home) == before
        return
    except Exception as exc:  # anything else is a bug
        pytest.fail(f"{op} raised {type(exc).__name__}: {exc!r}"[:500])
    event(f"{op} stored")
    for id_ in ids:
        row = world.records.memories.get(id_)
        assert row is not None
        item = row.item
        assert item.tenant_id == m.tenant_id  # metadata cannot move a row
        # (tenant rows are shared: an identical document may come back as another user's row)
        if item.scope == "user":
            assert item.user_id == m.user_id and row.partition == f"user:{m.user_id}"
        elif item.scope == "agent":
            assert item.agent_id == m.agent_id and row.partition == f"agent:{m.agent_id}"
        elif item.scope == "session":
            assert item.session_id == m.session_id and item.user_id == m.user_id
        if item.scope != "tenant":
            assert_may_see(world, m.identity, id_)


def test_identity_keys_in_metadata_and_filters_cannot_widen_scope(world: AgentMemory) -> None:
    intruder = world.bind(tenant_id="B", user_id="u2", agent_id="a2", session_id="s9")
    forged = {"tenant_id": "A", "user_id": "u1", "agent_id": "a1", "owner": "u1"}
    rid = intruder.remember(f"{SHARED} forged by B claiming A/u1", metadata=forged).id
    world.flush()
    row = world.records.memories.get(rid)
    assert row is not None and (row.item.tenant_id, row.item.user_id) == ("B", "u2")
    victim = world.bind(tenant_id="A", user_id="u1", agent_id="a1", session_id="s1")
    for flt in ({"owner": "u1"}, {"owner": "u2"}, None):
        got = victim.recall(f"{SHARED} forged", filters=flt, min_score=0.0, top_k=20)
        assert rid not in {h.id for h in got.items}
        for hit in got.items:
            assert_may_see(world, victim.identity, hit.id)
    for key in ("tenant_id", "user_id", "agent_id", "session_id"):
        with pytest.raises(ValidationError):
            victim.recall(SHARED, filters={key: "B"})
    # a filter on the caller's own metadata only narrows
    narrowed = victim.recall(SHARED, filters={"owner": "u1"}, scope="user", min_score=0.0)
    assert narrowed.items and all(h.metadata["owner"] == "u1" for h in narrowed.items)


def test_oversized_input_is_rejected_without_storing(world: AgentMemory) -> None:
    big = "x" * (50 * 1024 * 1024)
    m = world.bind(tenant_id="A", user_id="u1", agent_id="a1", session_id="s1")
    before = snapshot(world.home)
    writes = {
        "remember": lambda: m.remember(big),
        "remember_many": lambda: m.remember_many(["ok", big]),
        "add_message": lambda: m.add_message("user", big),
        "add_messages": lambda: m.add_messages(
            [{"role": "user", "content": "ok"}, {"role": "user", "content": big}]
        ),
        "add_document": lambda: m.add_document(big),
        "add_tool_output": lambda: m.add_tool_output("call-big", big),
        "metadata": lambda: m.remember("fine", metadata={"blob": big}),
    }
    for name, call in writes.items():
        with pytest.raises(ValidationError):
            call()
        assert snapshot(world.home) == before, name
    result = m.recall(big[:1_000_000] + " lighthouse", min_score=0.0)  # truncated, bounded
    assert len(result.items) <= 5
    with pytest.raises(ValidationError):
        m.recall(SHARED, top_k=21)
