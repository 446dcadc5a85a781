"""Working memory: window, reference summary, compaction, persistence.

Real stores on ``tmp_path`` with the offline LLM; the LLM failure modes (an error, a malformed
delta) come from a small test implementation of the LLM protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agentmem import AgentMemory, BoundMemory, LLMError, ScopeError, ValidationError
from agentmem.config import TierConfig
from agentmem.llm import ChatTurn, OfflineLLM, SummaryDelta
from agentmem.tiers.working import (
    MalformedDeltaError,
    ReferenceFact,
    ReferenceSummary,
    apply_delta,
    message_tokens,
)

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]


class SwitchableLLM(OfflineLLM):
    """The offline LLM whose ``summary_delta`` can be made to fail or reply garbage."""

    def __init__(self) -> None:
        super().__init__()
        self.mode = "ok"
        self.garbage: Any = None
        self.delta_calls = 0

    def summary_delta(self, current: str, turns: Sequence[ChatTurn]) -> SummaryDelta:
        self.delta_calls += 1
        if self.mode == "raise":
            raise LLMError("model unavailable (test)")
        if self.mode == "garbage":
            return self.garbage  # type: ignore[no-any-return]
        return super().summary_delta(current, turns)


def conversation(m: BoundMemory, exchanges: int = 10) -> None:
    """A system prompt, a pinned identity message and ``exchanges`` user/assistant pairs."""
    m.add_message("system", "You are a helpful travel agent.")
    m.add_message("user", "USER.md: my name is Alice.", metadata={"pinned": True})
    for i in range(exchanges):
        m.add_message(
            "user", f"I live in Berlin and I want to visit city number {i} with my sister."
        )
        m.add_message("assistant", f"City number {i} is lovely in spring. " * 4)


def roles(messages: list[dict[str, str]]) -> list[str]:
    return [msg["role"] for msg in messages]


@pytest.fixture
def llm() -> SwitchableLLM:
    return SwitchableLLM()


@pytest.fixture
def mem(make_memory: MakeMemory, llm: SwitchableLLM) -> AgentMemory:
    return make_memory(llm=llm, background=False)


# -- the prompt ---------------------------------------------------------------------------------
def test_below_budget_everything_is_in_the_prompt(mem: AgentMemory) -> None:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m, exchanges=3)
    tool = m.add_tool_output("call-1", "3 hotels found", tool_name="hotels")
    msgs = m.context_messages(model_window=100_000)
    assert roles(msgs) == ["system", "user"] + ["user", "assistant"] * 3 + ["tool"]
    assert msgs[-1] == {"role": "tool", "content": tool.content, "tool_call_id": "call-1"}
    snap = m.working.snapshot()
    assert len(snap.pinned) == 2 and len(snap.window) == 7
    assert snap.summary.empty and snap.compactions == 0 and not snap.compressed
    assert snap.tokens.window == sum(message_tokens(i) for i in snap.window)
    assert snap.tokens.total == snap.tokens.pinned + snap.tokens.window


def test_budget_trip_keeps_latest_user_message_and_a_tail_of_four(mem: AgentMemory) -> None:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m)
    latest = m.add_message("user", "Which hotels do you suggest?")
    steps = [m.add_message("assistant", f"Searching hotels, step {i}. " * 3) for i in range(6)]
    before = m.working.snapshot()
    assert before.tokens.total > 0.8 * 800  # the trip condition

    msgs = m.context_messages(model_window=800)

    after = m.working.snapshot()
    assert [i.id for i in after.window] == [latest.id] + [s.id for s in steps[-4:]]
    assert [i.content for i in after.pinned] == [
        "You are a helpful travel agent.",
        "USER.md: my name is Alice.",
    ]
    assert roles(msgs) == ["system", "user", "system", "user"] + ["assistant"] * 4
    assert msgs[2]["content"].startswith("Summary of earlier messages")
    assert "recall" in msgs[2]["content"]
    assert msgs[3]["content"] == "Which hotels do you suggest?"
    # what rolled off is referenced by the summary, and the stated fact was kept
    rolled = {i.id for i in before.window} - {i.id for i in after.window}
    assert len(rolled) == len(before.window) - 5
    assert rolled <= set(after.summary.referenced_events)
    assert [f.key for f in after.summary.facts] == ["user.residence"]
    assert after.summary.facts[0].value == "The user lives in Berlin."
    assert after.trips == 1 and after.compressed and after.compactions == 1
    assert after.tokens.total < before.tokens.total


def test_budget_trip_when_the_latest_user_message_is_in_the_tail(mem: AgentMemory) -> None:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m)
    tail = m.messages()[-4:]
    m.context_messages(model_window=600)
    assert [i.id for i in m.working.window] == [i.id for i in tail]


def test_full_window_rolls_off_oldest_until_half_remain(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False, tier_config=TierConfig(working_max_messages=10))
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m, exchanges=6)  # 12 compactable messages
    m.context_messages(model_window=100_000)
    snap = m.working.snapshot()
    assert [i.id for i in snap.window] == [i.id for i in m.messages()[-5:]]
    assert snap.trips == 0 and snap.compactions == 1  # a full window is not a budget trip


def test_prompt_view_with_a_per_call_message_limit(mem: AgentMemory) -> None:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m, exchanges=6)  # 12 compactable messages; the store's limit is 50
    assert m.working.prompt_view(model_window=100_000).compaction is None
    view = m.working.prompt_view(model_window=100_000, max_messages=8)
    assert view.compaction is not None and view.compaction.reason == "window_full"
    assert [i.id for i in view.window] == [i.id for i in m.messages()[-4:]]  # keep max(4, tail)
    assert [i.role for i in view.pinned] == ["system", "user"]
    assert not view.summary.empty and view.left_out == 0
    # context_messages renders the same view (no second compaction: the window is short now)
    msgs = m.context_messages(model_window=100_000, max_messages=8)
    assert [x["content"] for x in msgs] == [
        *(i.content for i in view.pinned),
        view.summary.render(),
        *(i.content for i in view.window),
    ]
    with pytest.raises(ValidationError):
        m.working.prompt_view(max_messages=0)


def test_manual_compact_and_nothing_left_to_compact(mem: AgentMemory, llm: SwitchableLLM) -> None:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m, exchanges=4)
    result = m.compact()
    assert result.ok and result.reason == "manual" and len(result.rolled_off) == 4
    assert result.window == 4 and not result.summary.empty
    calls = llm.delta_calls
    again = m.compact()
    assert again.ok and again.rolled_off == () and llm.delta_calls == calls  # no LLM call
    everything = m.compact(keep=0)
    # the latest user message is never compacted, even with keep=0
    assert [i.role for i in m.working.window] == ["user"]
    assert len(everything.rolled_off) == 3
    with pytest.raises(ValidationError):
        m.compact(keep=-1)


def test_a_long_roll_off_is_folded_in_batches(
    mem: AgentMemory, llm: SwitchableLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agentmem.tiers.working.MAX_DELTA_MESSAGES", 3)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m, exchanges=5)
    result = m.compact(keep=2)
    assert result.ok and len(result.rolled_off) == 8 and llm.delta_calls == 3
    assert set(result.rolled_off) <= set(result.summary.referenced_events)
    # a failure in a later batch leaves everything as it was
    for i in range(6):
        m.add_message("assistant", f"More notes {i}.")
    before = m.working.snapshot()
    calls = llm.delta_calls

    def fail_third(current: str, turns: Sequence[ChatTurn]) -> SummaryDelta:
        if llm.delta_calls - calls >= 2:
            raise LLMError("third batch failed (test)")
        llm.delta_calls += 1
        return OfflineLLM.summary_delta(llm, current, turns)

    monkeypatch.setattr(llm, "summary_delta", fail_third)
    assert not m.compact(keep=0).ok
    after = m.working.snapshot()
    assert after.summary == before.summary and after.window == before.window


def test_an_older_user_message_becomes_compactable_later(mem: AgentMemory) -> None:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    question = m.add_message("user", "Plan my trip to Lisbon, please.")
    for i in range(6):
        m.add_message("assistant", f"Working on it, step {i}.")
    m.compact()
    assert question.id in {i.id for i in m.working.window}  # held: the latest user message
    m.add_message("user", "Thanks! And a hotel?")
    result = m.compact(keep=1)
    assert question.id in result.rolled_off
    assert [i.content for i in m.working.window] == ["Thanks! And a hotel?"]


# -- failures leave the summary intact ----------------------------------------------------------
GARBAGE: list[Any] = [
    {"mode": "append", "summary_update": "a dict, not a SummaryDelta"},
    "not even an object",
    None,
    SummaryDelta(mode="explode", summary_update="x"),  # type: ignore[arg-type]
    SummaryDelta(mode="append", summary_update=42),  # type: ignore[arg-type]
    SummaryDelta(mode="overwrite", summary_update="   "),
    SummaryDelta(mode="append", summary_update="ok", add_facts=({"key": 3, "value": "v"},)),
    SummaryDelta(mode="append", summary_update="ok", add_facts=("not a mapping",)),  # type: ignore[arg-type]
    SummaryDelta(mode="append", summary_update="ok", add_references=(7,)),  # type: ignore[arg-type]
    SummaryDelta(mode="append", summary_update="ok", remove_fact_keys="abc"),  # type: ignore[arg-type]
]


def test_failed_or_malformed_deltas_leave_the_previous_summary_intact(
    mem: AgentMemory, llm: SwitchableLLM
) -> None:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m, exchanges=3)
    assert m.compact().ok
    good = m.working.snapshot()
    for i in range(4):
        m.add_message("user", f"Also consider town number {i}.")
        m.add_message("assistant", f"Town number {i} is fine. " * 3)
    window = [i.id for i in m.working.window]

    llm.mode = "raise"
    failed = m.compact()
    assert not failed.ok and "model unavailable" in (failed.error or "")
    assert failed.summary == good.summary and failed.rolled_off == ()
    snap = m.working.snapshot()
    assert snap.summary == good.summary and [i.id for i in snap.window] == window
    assert snap.last_error is not None and "LLMError" in snap.last_error
    assert snap.compactions == good.compactions

    llm.mode = "garbage"
    for garbage in GARBAGE:
        llm.garbage = garbage
        result = m.compact()
        assert not result.ok, garbage
        snap = m.working.snapshot()
        assert snap.summary == good.summary, garbage
        assert [i.id for i in snap.window] == window, garbage

    llm.mode = "ok"  # the next trigger retries and succeeds
    assert m.compact().ok
    snap = m.working.snapshot()
    assert snap.last_error is None and snap.compactions == good.compactions + 1
    assert snap.summary.summary.startswith(good.summary.summary)


def test_over_budget_with_a_failing_llm_trims_only_the_view(
    mem: AgentMemory, llm: SwitchableLLM
) -> None:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m)
    latest = m.add_message("user", "Which hotels do you suggest?")
    m.add_message("assistant", "Let me look. " * 3)
    llm.mode = "raise"
    msgs = m.context_messages(model_window=600)
    window = m.working.snapshot()
    assert len(window.window) == 22  # nothing rolled off: the state is unchanged
    assert window.last_error is not None
    body = msgs[2:]
    assert {"role": "user", "content": latest.content} in body
    assert sum(message_tokens_of(x) for x in msgs) <= 0.8 * 600
    assert roles(msgs)[:2] == ["system", "user"]  # pinned messages stay


def message_tokens_of(msg: dict[str, str]) -> int:
    from agentmem.tokens import count_tokens

    return count_tokens(msg["content"]) + 4


# -- persistence ---------------------------------------------------------------------------------
def test_working_state_survives_a_restart(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m)
    m.add_message("user", "Which hotels do you suggest?")
    m.context_messages(model_window=800)
    before = m.working.snapshot()
    home = mem.home
    mem.close()

    again = make_memory(path=home, background=False)
    m2 = again.bind("acme", user_id="u1", session_id="s1")
    after = m2.working.snapshot()
    assert after.summary == before.summary and not after.summary.empty
    assert [i.id for i in after.window] == [i.id for i in before.window]
    assert [i.id for i in after.pinned] == [i.id for i in before.pinned]
    assert (after.trips, after.compactions) == (before.trips, before.compactions)
    # new messages join the restored window
    new = m2.add_message("assistant", "The Hotel Lisboa is a good choice.")
    assert m2.working.window[-1].id == new.id


def test_working_memory_is_per_session_and_owner(mem: AgentMemory) -> None:
    a = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(a, exchanges=3)
    a.compact()
    assert mem.bind("acme", user_id="u1", session_id="s2").working.snapshot().window == ()
    other_user = mem.bind("acme", user_id="u2", session_id="s1").working.snapshot()
    assert other_user.window == () and other_user.summary.empty
    with pytest.raises(ScopeError):
        mem.bind("acme", user_id="u1").working.snapshot()


def test_model_window_override_from_the_environment(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AGENTMEM_MODEL_WINDOW_OVERRIDE", "600")
    with caplog.at_level("WARNING", logger="agentmem.tiers.sessions"):
        mem = make_memory(background=False)
    assert "AGENTMEM_MODEL_WINDOW_OVERRIDE" in caplog.text
    m = mem.bind("acme", user_id="u1", session_id="s1")
    conversation(m)
    m.context_messages(model_window=1_000_000)
    assert m.working.snapshot().trips == 1


def test_context_messages_validates_its_arguments(mem: AgentMemory) -> None:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    for kwargs in ({"model_window": 0}, {"budget_ratio": 0.0}, {"budget_ratio": 1.5}):
        with pytest.raises(ValidationError):
            m.context_messages(**kwargs)


# -- the delta format ----------------------------------------------------------------------------
def test_apply_delta_append_overwrite_facts_and_references() -> None:
    s = ReferenceSummary(
        summary="User plans a trip.",
        facts=(ReferenceFact("user.residence", "Berlin", "e1"), ReferenceFact("a", "1")),
        referenced_events=("e1",),
    )
    out = apply_delta(
        s,
        SummaryDelta(
            mode="append",
            summary_update="They moved.",
            add_facts=({"key": "user.residence", "value": "Lisbon", "source_event": "e9"},),
            remove_fact_keys=("a",),
            add_references=("e9", "session:s0", "e1"),
            remove_references=(),
        ),
    )
    assert out.summary == "User plans a trip.\nThey moved."
    assert out.facts == (ReferenceFact("user.residence", "Lisbon", "e9"),)
    assert out.referenced_events == ("e1", "e9") and out.referenced_sessions == ("s0",)
    over = apply_delta(
        out, SummaryDelta(mode="overwrite", summary_update="Fresh.", remove_references=("e1",))
    )
    assert over.summary == "Fresh." and over.referenced_events == ("e9",)
    assert ReferenceSummary.from_dict(over.to_dict()) == over
    with pytest.raises(MalformedDeltaError):
        apply_delta(s, SummaryDelta(mode="append", summary_update="x", add_facts=({},)))
