"""What a key pinned to a user or an agent sees of the others of its tenant, through the real
server and the remote client: what they shared with it, never what they did (agent state,
how often and when they recalled a shared row)."""

from __future__ import annotations

from functools import partial

import pytest
from conftest import ConnectAs

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
