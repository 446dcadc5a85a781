"""What a key pinned to a user or an agent sees of the others of its tenant, through the real
server and the remote client: what they shared with it, never what they did (agent state,
how often and when they recalled a shared row)."""

from __future__ import annotations

from functools import partial

import pytest
from _agentmem_server import ConnectAs

from agentmem.errors import AuthError


def test_a_key_pinned_to_a_user_reads_no_agent_state(connect_as: ConnectAs, tenant: str) -> None:
    app = connect_as(tenant)  # the application's own key, serving every user
    app.bind(user_id="u2", agent_id="support").state.set("current_task", "Refund 4711 for Bob")
    for pins in ({"user": "u1"}, {"user": "u1", "agent": "support"}):
        state = connect_as(tenant, **pins).bind(agent_id="support").state
        calls = (
            partial(state.get, "current_task"),
            state.list,
            partial(state.set, "current_task", "overwritten"),
            partial(state.delete, "current_task"),
        )
        for call in calls:
            with pytest.raises(AuthError) as refused:
                call()
            assert refused.value.reason == "forbidden" and "4711" not in str(refused.value)
    # not blind: the agent's own key reads its state, untouched
    agent = connect_as(tenant, agent="support").bind(user_id="u3").state
    entry = agent.get("current_task")
    assert entry is not None and entry.value == "Refund 4711 for Bob"


def test_a_pinned_key_sees_no_access_count_moved_by_others(
    connect_as: ConnectAs, tenant: str
) -> None:
    app = connect_as(tenant)
    u1 = connect_as(tenant, user="u1").bind(agent_id="support", session_id="s1")
    own = u1.remember("My LaserJet jams on page two")
    written = u1.remember("Hold the printer's red button to reset it", scope="agent")
    agents = app.bind(agent_id="support").remember(
        "Printer toner is in the cupboard", scope="agent"
    )
    shared = [written.id, agents.id]
    assert app.flush(timeout=60)

    u2 = app.bind(user_id="u2", agent_id="support", session_id="s2")
    u2.add_message("user", "How do I reset the printer?")
    hits = [h.id for h in u2.recall("reset the printer toner", min_score=0.0).items]
    assert set(shared) <= set(hits) and own.id not in hits
    u2.close_session(summary_timeout=0)  # writes the access counts out
    for memory_id in shared:  # they did move
        assert u2.get(memory_id).access_count == 1 and u2.get(memory_id).last_accessed

    for memory_id in shared:
        for item in (u1.get(memory_id), *u1.history(memory_id)):
            assert (item.access_count, item.last_accessed) == (0, None), item.content
    # not blind: u1's own recall of its own fact shows
    assert [h.id for h in u1.recall("LaserJet jams", scope="user", min_score=0.0).items] == [own.id]
    u1.close_session(summary_timeout=0)
    assert u1.get(own.id).access_count == 1

    # a key pinned to the agent: u1's fact is recalled with u1's other agents too, the
    # agent's own fact only by the agent
    agent = connect_as(tenant, agent="support").bind(user_id="u1")
    assert (agent.get(own.id).access_count, agent.get(own.id).last_accessed) == (0, None)
    assert agent.get(agents.id).access_count == 1


def test_a_pinned_key_is_not_told_who_else_wrote_a_shared_row(
    connect_as: ConnectAs, tenant: str
) -> None:
    app = connect_as(tenant)
    u2 = app.bind(user_id="u2", agent_id="billing", session_id="s2")
    tenant_fact = u2.remember("Refunds take five business days", scope="tenant")
    u2_fact = u2.remember("Bob pays by bank transfer")
    assert app.flush(timeout=60)
    by_app = app.bind(user_id="u2").get(tenant_fact.id)
    assert (by_app.user_id, by_app.agent_id) == ("u2", "billing")

    u1 = connect_as(tenant, user="u1").bind(agent_id="support")
    for item in (u1.get(tenant_fact.id), *u1.history(tenant_fact.id)):
        assert item.user_id is None and item.content == "Refunds take five business days"
    # a key pinned to another agent, acting for u2, is not told which agents u2 talks to
    support = connect_as(tenant, agent="support").bind(user_id="u2")
    for memory_id in (tenant_fact.id, u2_fact.id):
        assert (support.get(memory_id).user_id, support.get(memory_id).agent_id) == ("u2", None)
    # not blind: its own rows keep their owners
    own = u1.remember("My desk is by the window")
    assert (u1.get(own.id).user_id, u1.get(own.id).agent_id) == ("u1", "support")
