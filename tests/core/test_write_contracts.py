"""Write-path contracts: which memories supersede, and messages without text."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentmem import AgentMemory, ValidationError

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]


def test_events_and_tasks_accumulate_under_a_topic_key(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    first = m.remember("Visited the Lisbon office in March", memory_type="event", topic_key="visit")
    second = m.remember("Visited the Porto office in May", memory_type="event", topic_key="visit")
    assert m.get(first.id).superseded_by is None and m.get(second.id).superseded_by is None
    assert m.get(first.id).metadata["topic_key"] == "visit"  # the key is kept
    t1 = m.remember("Renew the passport", memory_type="task", topic_key="todo")
    t2 = m.remember("Book the dentist", memory_type="task", topic_key="todo")
    assert m.get(t1.id).superseded_by is None and m.get(t2.id).superseded_by is None
    hits = {h.id for h in m.recall("which offices were visited?", top_k=10, min_score=0).items}
    assert {first.id, second.id} <= hits


@pytest.mark.parametrize("memory_type", ["fact", "preference", "decision", "instruction", "note"])
def test_current_state_types_supersede_under_a_topic_key(
    make_memory: MakeMemory, memory_type: str
) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    old = m.remember("Deploys go out on Tuesdays", memory_type=memory_type, topic_key="deploy")
    new = m.remember("Deploys go out on Thursdays", memory_type=memory_type, topic_key="deploy")
    assert m.get(old.id).superseded_by == new.id
    assert m.get(new.id).superseded_by is None


def test_a_tool_call_turn_is_stored_as_itself_and_never_recalled(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    calls = [{"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}]
    turn = m.add_message("assistant", "", metadata={"tool_calls": calls})
    result = m.add_tool_output("c1", "", tool_name="weather")  # a tool may return nothing
    m.add_message("user", "Thanks, and what about umbrellas?")
    assert turn.content == "" and turn.metadata["tool_calls"] == calls
    assert [i.id for i in m.messages()][:2] == [turn.id, result.id]
    for flushed in (False, True):
        hits = m.recall("weather tool call Oslo", top_k=20, min_score=0.0).items
        assert turn.id not in {h.id for h in hits} and result.id not in {h.id for h in hits}
        assert all(h.content.strip() for h in hits)
        if not flushed:
            mem.flush()
    assert mem.stats().vector_failed == 0
    with pytest.raises(ValidationError, match="content"):
        m.add_message("assistant", "   ")  # no text and nothing else: refused
