"""Cross-agent reads of the tiers: ``recall(..., target_agent=...)`` and
``session_detail(session_id, target_agent=...)``.

An agent bound without a user may read another agent's mid-term and long-term sessions
(chunks, summaries; the detail of a closed session up to its close) and its knowledge; never its
working memory, a user's conversation, or another tenant. Real stores, offline LLM.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentmem import AgentMemory, NotFoundError, ScopeError

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]


@pytest.fixture(autouse=True)
def _offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


@pytest.fixture
def world(make_memory: MakeMemory) -> AgentMemory:
    mem = make_memory()
    for tenant in ("acme", "globex"):
        planner = mem.bind(tenant, agent_id="planner", session_id="p1")
        planner.add_message("user", f"Plan the {tenant} harbour inspection for Friday.")
        planner.add_message("assistant", f"The {tenant} harbour inspection is set for Friday.")
        planner.close_session(summary_timeout=10)
        # a later, still open session: its working memory
        mem.bind(tenant, agent_id="planner", session_id="p2").add_message(
            "user", f"Draft the {tenant} harbour budget, still open."
        )
        # the planner serving a user: that user's conversation
        served = mem.bind(tenant, user_id="u1", agent_id="planner", session_id="u1s")
        served.add_message("user", f"My {tenant} harbour locker number is 4711.")
        served.close_session(summary_timeout=10)
        kb = mem.bind(tenant, agent_id="planner").knowledge
        kb.upsert(f"The {tenant} harbour opens at six.", key="hours")
        mem.bind(tenant, agent_id="other").knowledge.upsert(
            f"The {tenant} harbour cafe serves tea.", key="cafe"
        )
    mem.flush()
    return mem


def test_an_agent_reads_another_agents_closed_sessions_and_knowledge(world: AgentMemory) -> None:
    reader = world.bind("acme", agent_id="reader")
    result = reader.recall("harbour", target_agent="planner", top_k=20, min_score=0.0)
    texts = [h.content for h in result.items]
    assert any("inspection" in t for t in texts)  # a chunk or summary of its closed session
    assert any("opens at six" in t for t in texts)  # its knowledge
    for hit in result.items:
        row = world.records.memories.get(hit.id)
        assert row is not None and row.item.tenant_id == "acme"
        assert row.item.agent_id == "planner" and row.item.user_id is None
        assert hit.scope in ("history", "knowledge")
        if hit.scope == "history":
            assert row.tier is not None  # never a raw (working) message
    # never its open session, a user's conversation, another agent's knowledge or tenant
    assert not [t for t in texts if "budget" in t or "locker" in t or "cafe" in t]
    assert not [t for t in texts if "globex" in t]
    only_kb = reader.recall("harbour", target_agent="planner", scope="knowledge", min_score=0.0)
    assert {h.scope for h in only_kb.items} == {"knowledge"}
    only_sessions = reader.recall(
        "harbour", target_agent="planner", scope="history", tiers="mid_term", min_score=0.0
    )
    assert only_sessions.items and {h.scope for h in only_sessions.items} == {"history"}
    # without target_agent the reader sees none of the planner's sessions
    own = reader.recall("harbour inspection", top_k=20, min_score=0.0)
    assert not [h for h in own.items if "inspection" in h.content]


def test_session_detail_of_another_agents_closed_session(world: AgentMemory) -> None:
    reader = world.bind("acme", agent_id="reader")
    detail = reader.session_detail("p1", target_agent="planner")
    assert [e.content for e in detail.events] == [
        "Plan the acme harbour inspection for Friday.",
        "The acme harbour inspection is set for Friday.",
    ]
    assert detail.tier == "mid_term" and detail.summary and "inspection" in detail.summary
    # messages after the close are working memory again: not readable by another agent
    planner = world.bind("acme", agent_id="planner", session_id="p1")
    planner.add_message("user", "A private follow-up after the close.")
    again = reader.session_detail("p1", target_agent="planner")
    assert len(again.events) == 2
    with pytest.raises(NotFoundError):
        reader.session_detail("p2", target_agent="planner")  # never closed
    with pytest.raises(NotFoundError):
        reader.session_detail("u1s", target_agent="planner")  # a user's conversation
    with pytest.raises(NotFoundError):
        world.bind("globex", agent_id="reader").session_detail("zz", target_agent="planner")


@pytest.mark.parametrize(
    "bind",
    [
        {"user_id": "u1", "agent_id": "reader"},  # bound with a user
        {"user_id": "u1"},
        {},  # no agent
    ],
)
def test_cross_agent_reads_need_an_agent_without_a_user(world: AgentMemory, bind: dict) -> None:
    m = world.bind("acme", **bind)
    with pytest.raises(ScopeError):
        m.recall("harbour", target_agent="planner")
    with pytest.raises(ScopeError):
        m.session_detail("p1", target_agent="planner")


def test_cross_agent_reads_refuse_other_scopes_and_working_memory(world: AgentMemory) -> None:
    reader = world.bind("acme", agent_id="reader", session_id="r1")
    for scope in ("session", "user", "agent", "tenant"):
        with pytest.raises(ScopeError):
            reader.recall("harbour", target_agent="planner", scope=scope)
    with pytest.raises(ScopeError):
        reader.recall("harbour", target_agent="planner", tiers=("working",))
    with pytest.raises(Exception, match="target_agent"):
        reader.recall("harbour", target_agent="")


def test_the_own_agent_as_target_reads_its_closed_sessions_only(world: AgentMemory) -> None:
    planner = world.bind("acme", agent_id="planner")
    hits = planner.recall("harbour", target_agent="planner", top_k=20, min_score=0.0).items
    assert hits and not [h for h in hits if "budget" in h.content or "locker" in h.content]
