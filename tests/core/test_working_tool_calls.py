"""Tool calls in the working memory's prompt: an assistant turn's calls are emitted in the
OpenAI chat format, and no compaction or trimming separates a tool result from its call.

Real stores on ``tmp_path`` with the offline LLM.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agentmem import AgentMemory, BoundMemory, ValidationError
from agentmem.tiers.working import message_tokens

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]


@pytest.fixture
def m(make_memory: MakeMemory) -> BoundMemory:
    return make_memory(background=False).bind("acme", user_id="u1", session_id="s1")


def calls(*names: str) -> dict[str, Any]:
    """The metadata of an assistant turn calling ``names`` (ids ``call-<name>``)."""
    return {
        "tool_calls": [
            {"id": f"call-{name}", "name": name, "arguments": {"city": "Lisbon"}} for name in names
        ]
    }


def assert_paired(messages: list[dict[str, Any]]) -> None:
    """Every tool message answers a call of the assistant message before its run of tool
    messages, and every call of an assistant message is answered right after it."""
    open_calls: set[str] = set()
    for msg in messages:
        if msg["role"] == "tool":
            assert msg["tool_call_id"] in open_calls, messages
            open_calls.discard(msg["tool_call_id"])
            continue
        assert not open_calls, messages  # a call left without its result
        open_calls = {c["id"] for c in msg.get("tool_calls", [])}
    assert not open_calls, messages


def tool_exchange(m: BoundMemory, *names: str) -> None:
    m.add_message("assistant", "", metadata=calls(*names))
    for name in names:
        m.add_tool_output(f"call-{name}", f"{name}: 3 results for Lisbon", tool_name=name)


def test_an_assistant_turn_carries_its_tool_calls(m: BoundMemory) -> None:
    m.add_message("user", "Find me a hotel and a flight to Lisbon")
    m.add_message(
        "assistant",
        "Searching.",
        metadata={
            "tool_calls": [
                {"id": "c1", "name": "hotels", "arguments": {"city": "Lisbon", "nights": 3}},
                {"id": "c2", "name": "flights", "arguments": '{"to": "LIS"'},  # raw, cut short
            ]
        },
    )
    m.add_tool_output("c1", "3 hotels found", tool_name="hotels")
    m.add_tool_output("c2", "2 flights found", tool_name="flights")

    msgs = m.context_messages(model_window=100_000)

    assert [msg["role"] for msg in msgs] == ["user", "assistant", "tool", "tool"]
    assistant = msgs[1]
    assert assistant["content"] == "Searching."
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2"]
    assert all(c["type"] == "function" for c in assistant["tool_calls"])
    hotels, flights = (c["function"] for c in assistant["tool_calls"])
    assert hotels["name"] == "hotels"
    assert json.loads(hotels["arguments"]) == {"city": "Lisbon", "nights": 3}
    assert flights == {"name": "flights", "arguments": '{"to": "LIS"'}
    assert [msg["tool_call_id"] for msg in msgs[2:]] == ["c1", "c2"]
    assert_paired(msgs)


@pytest.mark.parametrize(
    "metadata",
    [
        {"tool_calls": [{"id": "c1", "name": "f", "arguments": {"a": 1}}]},
        {"tool_calls": [{"id": "c1", "name": "f", "args": {"a": 1}, "type": "tool_call"}]},
        {
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
            ]
        },
        {"tool_calls": [{"tool_call_id": "c1", "tool_name": "f", "tool_kwargs": {"a": 1}}]},
        # where the LangChain and LlamaIndex adapters kept calls before "tool_calls"
        {"lc_tool_calls": [{"name": "f", "args": {"a": 1}, "id": "c1"}]},
        {
            "llama_index_tool_calls": [
                {
                    "block_type": "tool_call",
                    "tool_call_id": "c1",
                    "tool_name": "f",
                    "tool_kwargs": {"a": 1},
                }
            ]
        },
    ],
    ids=["neutral", "langchain", "openai", "llamaindex", "former-langchain", "former-llamaindex"],
)
def test_every_form_of_a_call_is_stored_as_given_and_emitted_alike(
    m: BoundMemory, metadata: dict[str, Any]
) -> None:
    turn = m.add_message("assistant", "", metadata=metadata)
    assert turn.metadata == metadata
    (msg,) = m.context_messages(model_window=100_000)
    assert msg["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ]


def test_compaction_keeps_a_tool_call_with_its_results(m: BoundMemory) -> None:
    m.add_message("user", "I live in Berlin.")
    m.add_message("assistant", "Noted, Berlin.")
    latest = m.add_message("user", "Find me a hotel and a flight to Lisbon")
    tool_exchange(m, "hotels", "flights")
    m.add_message("assistant", "Here are your options.")

    # the last two messages are the tail: the cut falls between the two results
    result = m.compact(keep=2)

    assert result.ok and len(result.rolled_off) == 2  # the first exchange, not the call
    window = m.working.window
    assert window[0].id == latest.id
    assert [i.role for i in window] == ["user", "assistant", "tool", "tool", "assistant"]
    msgs = m.context_messages(model_window=100_000)
    assert_paired(msgs)

    # folding everything but the question folds the call and its results together
    assert m.compact(keep=0).ok
    assert [i.id for i in m.working.window] == [latest.id]


def test_the_trimmed_view_leaves_out_a_call_with_its_results(m: BoundMemory) -> None:
    tool_exchange(m, "hotels")
    m.add_message("assistant", "Three hotels in Lisbon have rooms on Friday. " * 5)
    m.add_message("user", "Which one is closest to the sea?")
    snap = m.working.snapshot()
    call = snap.window[0]
    # a window of four is the tail: compaction has nothing to fold, so the view is trimmed;
    # a budget the call alone would bring under
    budget = snap.tokens.total - 1
    assert len(snap.window) == 4 and m.working.config.working_tail == 4

    view = m.prompt_view(model_window=budget, budget_ratio=1.0)

    assert call.id not in {i.id for i in view.window}
    assert [i.role for i in view.window] == ["assistant", "user"]
    assert view.left_out == 2
    assert_paired(m.context_messages(model_window=budget, budget_ratio=1.0))


def test_a_call_costs_tokens_in_the_prompt(m: BoundMemory) -> None:
    plain = m.add_message("assistant", "ok")
    calling = m.add_message("assistant", "ok", metadata=calls("hotels"))
    assert message_tokens(calling) > message_tokens(plain)


@pytest.mark.parametrize(
    ("role", "metadata", "field"),
    [
        ("user", calls("hotels"), "metadata.tool_calls"),
        ("assistant", {"tool_calls": {"id": "c1"}}, "metadata.tool_calls"),
        ("assistant", {"tool_calls": [{"id": "c1"}]}, "metadata.tool_calls[0].name"),
        ("assistant", {"tool_calls": [{"id": "", "name": "f"}]}, "metadata.tool_calls[0].id"),
        (
            "assistant",
            {"tool_calls": [{"name": "f", "arguments": [1]}]},
            "metadata.tool_calls[0].arguments",
        ),
        (
            "assistant",
            {"tool_calls": [{"id": "c1", "type": "function", "function": {"arguments": "{}"}}]},
            "metadata.tool_calls[0].function.name",
        ),
    ],
)
def test_malformed_tool_calls_are_refused(
    m: BoundMemory, role: str, metadata: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as err:
        m.add_message(role, "", metadata=metadata)
    assert err.value.field == field
    assert m.messages() == []
