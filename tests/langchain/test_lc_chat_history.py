"""AgentMemChatMessageHistory: round trips, windows, bulk writes, chains, persistence."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from agentmem import AgentMemory, BoundMemory, MemoryItem, ScopeError, ValidationError
from langchain_agentmem import AgentMemChatMessageHistory, RecallTool

MakeMemory = Callable[..., AgentMemory]


def conversation() -> list[BaseMessage]:
    return [
        SystemMessage("You are a support agent.", id="m0"),
        HumanMessage("Where is my order 4711?", id="m1", name="alice"),
        AIMessage(
            "",
            id="m2",
            tool_calls=[{"name": "lookup_order", "args": {"order": 4711}, "id": "call_1"}],
        ),
        ToolMessage(
            '{"status": "shipped", "eta": "Friday"}',
            tool_call_id="call_1",
            name="lookup_order",
            id="m3",
        ),
        AIMessage("Your order 4711 ships and arrives on Friday.", id="m4"),
    ]


def same(a: BaseMessage, b: BaseMessage) -> bool:
    keys = ("content", "id", "name")
    if type(a) is not type(b) or any(getattr(a, k) != getattr(b, k) for k in keys):
        return False
    if isinstance(a, AIMessage):
        return a.tool_calls == b.tool_calls  # type: ignore[attr-defined]
    if isinstance(a, ToolMessage):
        return (a.tool_call_id, a.status) == (b.tool_call_id, b.status)  # type: ignore[attr-defined]
    return True


class CountingMemory(BoundMemory):
    """A bound memory that counts its write calls."""

    def __init__(self, base: BoundMemory) -> None:
        super().__init__(base.store, base.identity)
        self.calls: list[str] = []

    def add_messages(self, messages: Iterable[Mapping[str, Any]]) -> list[MemoryItem]:
        self.calls.append("add_messages")
        return super().add_messages(messages)

    def add_message(self, *args: Any, **kwargs: Any) -> MemoryItem:
        self.calls.append("add_message")
        return super().add_message(*args, **kwargs)

    def add_tool_output(self, *args: Any, **kwargs: Any) -> MemoryItem:
        self.calls.append("add_tool_output")
        return super().add_tool_output(*args, **kwargs)


def test_round_trip_reproduces_the_messages(bound: BoundMemory) -> None:
    history = AgentMemChatMessageHistory(memory=bound)
    history.add_messages(conversation())
    got = history.messages
    assert len(got) == 5
    for original, restored in zip(conversation(), got, strict=True):
        assert same(original, restored), (original, restored)


def test_tool_messages_become_tool_outputs(bound: BoundMemory) -> None:
    AgentMemChatMessageHistory(memory=bound).add_messages(conversation())
    items = bound.messages()
    kinds = [(i.kind, i.role) for i in items]
    assert kinds[3] == ("tool_output", "tool")
    tool_item = items[3]
    assert tool_item.metadata["tool_call_id"] == "call_1"
    assert tool_item.metadata["tool_name"] == "lookup_order"
    assert tool_item.source_ref is not None
    assert bound.read_tool_output(tool_item.source_ref) == '{"status": "shipped", "eta": "Friday"}'
    # the tool-call-only AI message is stored as itself: no text, its calls in the metadata
    assert items[2].content == ""
    assert items[2].metadata["tool_calls"][0]["name"] == "lookup_order"  # the core's form


def test_add_messages_is_one_core_call_per_run(bound: BoundMemory) -> None:
    counting = CountingMemory(bound)
    history = AgentMemChatMessageHistory(memory=counting)
    history.add_messages([HumanMessage("a"), AIMessage("b"), HumanMessage("c")])
    assert counting.calls == ["add_messages"]
    counting.calls.clear()
    history.add_messages(conversation())
    assert counting.calls == ["add_messages", "add_tool_output", "add_messages"]
    counting.calls.clear()
    history.add_messages([])
    assert counting.calls == []


def test_invalid_message_writes_nothing(bound: BoundMemory) -> None:
    history = AgentMemChatMessageHistory(memory=bound)
    with pytest.raises(ValidationError, match=r"messages\[1\]"):
        history.add_messages([HumanMessage("ok"), FunctionMessage("x", name="f")])
    assert history.messages == []
    # a message only the core's checks refuse (a lone surrogate): the messages before it are
    # not written either, so a retry does not duplicate them
    batch = [
        HumanMessage("ok"),
        AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}]),
        ToolMessage("bad \ud800 text", tool_call_id="c1"),
    ]
    for _ in range(2):
        with pytest.raises(ValidationError, match=r"messages\[2\]\.content"):
            history.add_messages(batch)
    assert history.messages == []


@pytest.mark.parametrize("bad", ["hello", {"role": "user", "content": "hello"}, None])
def test_a_message_that_is_not_a_langchain_message_is_named(bound: BoundMemory, bad: Any) -> None:
    history = AgentMemChatMessageHistory(memory=bound)
    history.add_user_message("kept")
    with pytest.raises(ValidationError, match=r"messages\[1\]: must be a LangChain message"):
        history.add_messages([HumanMessage("ok"), bad])
    with pytest.raises(ValidationError, match=r"messages\[0\]"):
        history.add_message(bad)
    assert [m.content for m in history.messages] == ["kept"]


def test_large_content_blocks_are_stored_as_stubs(bound: BoundMemory) -> None:
    """An image's base64 data would overflow the 64 KiB of metadata the blocks ride in: the
    message is stored (an agent's turn must not fail on it) with a stub for that block."""
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 80_000}}
    blocks: list[str | dict[Any, Any]] = [{"type": "text", "text": "What is broken here?"}, image]
    long_text: list[str | dict[Any, Any]] = [{"type": "text", "text": "log line\n" * 8_000}]
    history = AgentMemChatMessageHistory(memory=bound)
    history.add_messages(
        [
            HumanMessage(blocks),
            AIMessage("", tool_calls=[{"name": "logs", "args": {}, "id": "c1"}]),
            ToolMessage(long_text, tool_call_id="c1"),
        ]
    )
    human, _, tool = history.messages
    assert human.content[0] == blocks[0]
    assert human.content[1]["type"] == "image_url" and human.content[1]["lc_omitted_bytes"] > 80_000
    assert tool.content == "log line\n" * 8_000  # blocks too large to keep: their text


def test_window_returns_the_last_messages(bound: BoundMemory) -> None:
    AgentMemChatMessageHistory(memory=bound).add_messages(conversation())
    windowed = AgentMemChatMessageHistory(memory=bound, window=2).messages
    # the window of 2 starts at the tool result, whose call is outside: it is dropped
    assert [m.id for m in windowed] == ["m4"]
    assert [m.id for m in AgentMemChatMessageHistory(memory=bound, window=3).messages] == [
        "m2",
        "m3",
        "m4",
    ]
    for window in (0, "5", 2.5, True):
        with pytest.raises(ValidationError) as err:  # named when built, not at a later read
            AgentMemChatMessageHistory(memory=bound, window=window)  # type: ignore[arg-type]
        assert err.value.field == "window"


def test_long_contents_come_back_whole(bound: BoundMemory) -> None:
    long_text = "word " * 5000  # 25 KB: over the 16 KiB recallable copy
    long_tool = "row;" * 2000  # over the 2,000-character tool preview
    history = AgentMemChatMessageHistory(memory=bound)
    history.add_messages(
        [
            HumanMessage(long_text),
            AIMessage("", tool_calls=[{"name": "q", "args": {}, "id": "c9"}]),
            ToolMessage(long_tool, tool_call_id="c9"),
        ]
    )
    stored = bound.messages()
    assert len(stored[0].content.encode()) <= 16 * 1024 and "elided" in stored[2].content
    human, _, tool = history.messages
    assert human.content == long_text
    assert tool.content == long_tool


def test_content_blocks_and_empty_content_round_trip(bound: BoundMemory) -> None:
    blocks: list[str | dict[str, Any]] = [
        {"type": "text", "text": "See the photo"},
        {"type": "text", "text": "of the damage"},
    ]
    history = AgentMemChatMessageHistory(memory=bound)
    history.add_messages(
        [HumanMessage(blocks), AIMessage(""), ToolMessage("", tool_call_id="c1", status="error")]
    )
    human, ai, tool = history.messages
    assert human.content == blocks
    assert ai.content == ""
    assert tool.content == "" and tool.status == "error"  # type: ignore[attr-defined]
    # the text is what gets indexed, one block a line (LangChain's .text runs them together)
    assert bound.messages()[0].content == "See the photo\nof the damage"
    assert bound.recall("damage", min_score=0).items[0].content.endswith("of the damage")


def test_clear_empties_the_session_only(mem: AgentMemory, bound: BoundMemory) -> None:
    other = AgentMemChatMessageHistory(memory=mem.bind("acme", user_id="u1", session_id="s2"))
    other.add_user_message("keep me")
    history = AgentMemChatMessageHistory(memory=bound)
    history.add_messages(conversation())
    history.clear()
    assert history.messages == []
    assert [m.content for m in other.messages] == ["keep me"]


def test_needs_a_session(mem: AgentMemory) -> None:
    with pytest.raises(ScopeError, match="session_id"):
        AgentMemChatMessageHistory(memory=mem.bind("acme", user_id="u1"))


def test_history_survives_a_reopen(make_memory: MakeMemory) -> None:
    mem = make_memory()
    AgentMemChatMessageHistory(memory=mem.bind("acme", user_id="u1", session_id="s1")).add_messages(
        conversation()
    )
    home = mem.home
    mem.close()
    reopened = make_memory(path=home)
    got = AgentMemChatMessageHistory(
        memory=reopened.bind("acme", user_id="u1", session_id="s1")
    ).messages
    assert all(same(a, b) for a, b in zip(conversation(), got, strict=True))


@pytest.mark.asyncio
async def test_async_variants(bound: BoundMemory) -> None:
    history = AgentMemChatMessageHistory(memory=bound, window=10)
    await history.aadd_messages(conversation())
    got = await history.aget_messages()
    assert [m.id for m in got] == ["m0", "m1", "m2", "m3", "m4"]
    await history.aclear()
    assert await history.aget_messages() == []


def _chain(mem: AgentMemory, replies: list[str], seen: list[list[BaseMessage]]) -> Any:
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are a support agent."),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )

    def record(value: Any) -> Any:
        seen.append(value.to_messages())
        return value

    chain = prompt | RunnableLambda(record) | FakeListChatModel(responses=replies)
    return RunnableWithMessageHistory(
        chain,  # type: ignore[arg-type]
        lambda session_id: AgentMemChatMessageHistory(
            memory=mem.bind("acme", user_id="u1", session_id=session_id)
        ),
        input_messages_key="question",
        history_messages_key="history",
    )


def test_runnable_with_message_history_persists_and_recalls(mem: AgentMemory) -> None:
    seen: list[list[BaseMessage]] = []
    chain = _chain(mem, ["Sorry to hear that! I opened ticket RF-2291.", "It is RF-2291."], seen)
    config = {"configurable": {"session_id": "s1"}}
    first = chain.invoke({"question": "My order 4711 arrived with a cracked screen"}, config)
    assert first.content == "Sorry to hear that! I opened ticket RF-2291."
    chain.invoke({"question": "What was my ticket number?"}, config)
    # the second prompt carried the first turn, read back from agentmem
    assert [m.content for m in seen[1][1:3]] == [
        "My order 4711 arrived with a cracked screen",
        "Sorry to hear that! I opened ticket RF-2291.",
    ]
    s1 = mem.bind("acme", user_id="u1", session_id="s1")
    assert [(i.role, i.kind) for i in s1.messages()] == [
        ("user", "chat_message"),
        ("assistant", "chat_message"),
    ] * 2

    # A later session starts empty, and reaches the earlier one through recall (history).
    mem.flush()
    s2 = mem.bind("acme", user_id="u1", session_id="s2")
    assert AgentMemChatMessageHistory(memory=s2).messages == []
    tool = RecallTool(memory=s2)
    msg = tool.invoke(
        {
            "name": "recall",
            "id": "c1",
            "type": "tool_call",
            "args": {"query": "which ticket did you open?", "scope": "history"},
        }
    )
    assert "RF-2291" in msg.content
    assert {d.metadata["session_id"] for d in msg.artifact} == {"s1"}


@pytest.mark.asyncio
async def test_runnable_with_message_history_async(mem: AgentMemory) -> None:
    seen: list[list[BaseMessage]] = []
    chain = _chain(mem, ["First answer.", "Second answer."], seen)
    config = {"configurable": {"session_id": "s-async"}}
    await chain.ainvoke({"question": "Hello"}, config)
    await chain.ainvoke({"question": "Again"}, config)
    history = AgentMemChatMessageHistory(
        memory=mem.bind("acme", user_id="u1", session_id="s-async")
    )
    assert [m.content for m in await history.aget_messages()] == [
        "Hello",
        "First answer.",
        "Again",
        "Second answer.",
    ]


def test_a_tool_call_id_used_twice_in_a_session_keeps_both_results(bound: BoundMemory) -> None:
    # two calls of one tool given the same id (the README's call(name, args) helper does)
    history = AgentMemChatMessageHistory(memory=bound)
    turns: list[BaseMessage] = []
    for answer in ("first result", "second result"):
        turns += [
            AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "call-lookup"}]),
            ToolMessage(answer, tool_call_id="call-lookup", name="lookup"),
        ]
    history.add_messages(turns)
    back = history.messages
    assert [type(m).__name__ for m in back] == ["AIMessage", "ToolMessage"] * 2
    results = [m for m in back if isinstance(m, ToolMessage)]
    assert [(m.content, m.tool_call_id) for m in results] == [
        ("first result", "call-lookup"),
        ("second result", "call-lookup"),
    ]
    history.add_messages([turns[1]])  # the same result again is stored once (a retry)
    assert len(history.messages) == 4


def test_a_tool_call_with_an_empty_id_is_stored(bound: BoundMemory) -> None:
    """Some providers send tool calls with id ""; the turn is stored (its call without an id),
    not refused with the whole batch of messages."""
    history = AgentMemChatMessageHistory(memory=bound)
    history.add_messages(
        [
            HumanMessage("what time is it?"),
            AIMessage("", tool_calls=[{"name": "clock", "args": {}, "id": ""}]),
        ]
    )
    back = history.messages
    assert isinstance(back[1], AIMessage) and [c["name"] for c in back[1].tool_calls] == ["clock"]


def test_provider_fields_round_trip_when_they_are_json(bound: BoundMemory) -> None:
    """What providers keep beside the content: reasoning signatures in additional_kwargs,
    token usage in response_metadata, a tool's artifact. A value that is not JSON is not
    kept (and does not stop the message from being stored)."""
    history = AgentMemChatMessageHistory(memory=bound)
    history.add_messages(
        [
            HumanMessage("hi", additional_kwargs={"handle": object()}),
            AIMessage(
                "Let me look.",
                additional_kwargs={"thinking_signature": "sig-Zq81"},
                response_metadata={"model": "m-1", "usage": {"output_tokens": 12}},
                tool_calls=[{"name": "lookup", "args": {}, "id": "c1"}],
            ),
            ToolMessage("found 3", tool_call_id="c1", artifact={"rows": [1, 2, 3]}),
        ]
    )
    human, ai, tool = history.messages
    assert human.additional_kwargs == {}
    assert ai.additional_kwargs == {"thinking_signature": "sig-Zq81"}
    assert ai.response_metadata == {"model": "m-1", "usage": {"output_tokens": 12}}
    assert isinstance(tool, ToolMessage) and tool.artifact == {"rows": [1, 2, 3]}
