"""AgentMemChatStore: the BaseChatStore contract, ChatMemoryBuffer, and the key mapping."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.memory import ChatMemoryBuffer

from agentmem import AgentMemory, ValidationError
from llamaindex_agentmem import AgentMemChatStore, AgentMemRetriever

MODES = pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])

ASYNC_NAMES = {
    "set_messages": "aset_messages",
    "get_messages": "aget_messages",
    "add_message": "async_add_message",
    "delete_messages": "adelete_messages",
    "delete_message": "adelete_message",
    "delete_last_message": "adelete_last_message",
    "get_keys": "aget_keys",
}


def op(store: AgentMemChatStore, use_async: bool) -> Callable[..., Any]:
    """``op(name, *args)`` calls the sync method, or its async variant to completion."""

    def run(name: str, *args: Any) -> Any:
        if use_async:
            return asyncio.run(getattr(store, ASYNC_NAMES[name])(*args))
        return getattr(store, name)(*args)

    return run


def pairs(messages: list[ChatMessage] | None) -> list[tuple[str, str | None]]:
    return [(m.role.value, m.content) for m in messages or []]


@pytest.fixture
def store(mem: AgentMemory) -> AgentMemChatStore:
    return AgentMemChatStore(mem, "acme", user_id="u1")


@MODES
def test_add_get_and_keys(store: AgentMemChatStore, use_async: bool) -> None:
    call = op(store, use_async)

    call("add_message", "chat-1", ChatMessage(role="user", content="Hi, I'm Ana"))
    call("add_message", "chat-1", ChatMessage(role="assistant", content="Hello Ana!"))
    call("add_message", "chat-2", ChatMessage(role="user", content="Second chat"))

    assert pairs(call("get_messages", "chat-1")) == [
        ("user", "Hi, I'm Ana"),
        ("assistant", "Hello Ana!"),
    ]
    assert pairs(call("get_messages", "chat-2")) == [("user", "Second chat")]
    assert pairs(call("get_messages", "never-used")) == []
    assert call("get_keys") == ["chat-1", "chat-2"]


@MODES
def test_set_replaces_and_deletes_remove(store: AgentMemChatStore, use_async: bool) -> None:
    call = op(store, use_async)
    call("set_messages", "k", [ChatMessage(role="user", content=f"m{n}") for n in range(4)])
    call("set_messages", "k", [ChatMessage(role="user", content=f"n{n}") for n in range(4)])

    assert pairs(call("get_messages", "k")) == [("user", f"n{n}") for n in range(4)]
    assert pairs([call("delete_message", "k", 1)]) == [("user", "n1")]
    assert call("delete_message", "k", 7) is None
    assert call("delete_message", "k", -4) is None
    assert pairs([call("delete_last_message", "k")]) == [("user", "n3")]
    call("add_message", "k", ChatMessage(role="user", content="n4"))
    assert pairs([call("delete_message", "k", -1)]) == [("user", "n4")]  # as SimpleChatStore
    assert pairs(call("get_messages", "k")) == [("user", "n0"), ("user", "n2")]
    assert pairs(call("delete_messages", "k")) == [("user", "n0"), ("user", "n2")]
    assert call("get_messages", "k") == []
    assert call("delete_messages", "k") is None
    assert call("delete_last_message", "k") is None
    assert call("get_keys") == []


def test_roles_kwargs_and_empty_messages_round_trip(store: AgentMemChatStore) -> None:
    messages = [
        ChatMessage(role=MessageRole.SYSTEM, content="Be brief."),
        ChatMessage(role=MessageRole.DEVELOPER, content="Use metric units."),
        ChatMessage(role=MessageRole.USER, content="Weather in Porto?"),
        ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            additional_kwargs={"tool_calls": [{"id": "c1", "name": "weather"}]},
        ),
        ChatMessage(
            role=MessageRole.TOOL, content="18C, sunny", additional_kwargs={"tool_call_id": "c1"}
        ),
        ChatMessage(role=MessageRole.CHATBOT, content="18C and sunny."),
        ChatMessage(
            role=MessageRole.USER, content="thanks", additional_kwargs={"handle": object()}
        ),
    ]

    store.set_messages("porto", messages)
    back = store.get_messages("porto")

    assert [(m.role, m.content) for m in back] == [(m.role, m.content or "") for m in messages]
    assert back[3].additional_kwargs == {"tool_calls": [{"id": "c1", "name": "weather"}]}
    assert back[4].additional_kwargs == {"tool_call_id": "c1"}
    assert back[6].additional_kwargs == {}  # not JSON-serialisable: not stored


def test_tool_call_blocks_round_trip(store: AgentMemChatStore) -> None:
    """How llama-index 0.14 agents call tools: a ToolCallBlock in the assistant's blocks. A
    history that lost it would give a tool result without its call, which chat APIs refuse."""
    call = ToolCallBlock(tool_call_id="c1", tool_name="weather", tool_kwargs={"city": "Porto"})
    messages = [
        ChatMessage(role=MessageRole.USER, content="Weather in Porto?"),
        ChatMessage(role=MessageRole.ASSISTANT, blocks=[call]),
        ChatMessage(role=MessageRole.ASSISTANT, blocks=[TextBlock(text="Checking."), call]),
        ChatMessage(
            role=MessageRole.TOOL, content="18C, sunny", additional_kwargs={"tool_call_id": "c1"}
        ),
    ]
    store.set_messages("porto", messages)
    back = store.get_messages("porto")
    assert [m.blocks for m in back[1:3]] == [[call], [TextBlock(text="Checking."), call]]
    assert back[3].content == "18C, sunny"


def test_context_messages_pair_the_tool_calls_the_store_wrote(store: AgentMemChatStore) -> None:
    """The session's prompt (``context_messages``) carries the assistant's tool calls in the
    OpenAI format and each result's call id, whichever surface wrote them; and a result the
    core stored reads back with its call id where LlamaIndex's LLMs look for it."""
    call = ToolCallBlock(tool_call_id="c1", tool_name="weather", tool_kwargs={"city": "Porto"})
    store.set_messages(
        "porto",
        [
            ChatMessage(role=MessageRole.USER, content="Weather in Porto?"),
            ChatMessage(role=MessageRole.ASSISTANT, blocks=[call]),
            ChatMessage(
                role=MessageRole.TOOL,
                content="18C, sunny",
                additional_kwargs={"tool_call_id": "c1"},
            ),
        ],
    )
    session = store.session("porto")
    context = session.context_messages()
    assert context[1]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city": "Porto"}'},
        }
    ]
    assert context[2] == {"role": "tool", "content": "18C, sunny", "tool_call_id": "c1"}

    session.add_message(
        "assistant",
        "",
        metadata={"tool_calls": [{"id": "c2", "name": "forecast", "arguments": {"days": 2}}]},
    )
    session.add_tool_output("c2", "rain on Sunday", tool_name="forecast")
    back = store.get_messages("porto")
    assert back[3].blocks == [
        ToolCallBlock(tool_call_id="c2", tool_name="forecast", tool_kwargs={"days": 2})
    ]
    assert back[4].additional_kwargs == {"tool_call_id": "c2"}


def test_long_messages_come_back_whole(store: AgentMemChatStore) -> None:
    text = "lorem ipsum " * 3000  # > 16 KiB: agentmem caps the recallable copy

    store.add_message("long", ChatMessage(role="user", content=text))

    assert store.get_messages("long")[0].content == text


def test_keys_are_session_ids_of_the_stores_identity(mem: AgentMemory) -> None:
    ana = AgentMemChatStore(mem, "acme", user_id="u1")
    ana.add_message("chat-1", ChatMessage(role="user", content="I moved to Porto"))
    bound = mem.bind("acme", user_id="u1", session_id="chat-1")

    assert [m.content for m in bound.messages()] == ["I moved to Porto"]
    bound.add_message("assistant", "Noted!")
    assert pairs(ana.get_messages("chat-1"))[-1] == ("assistant", "Noted!")

    other_user = AgentMemChatStore(mem, "acme", user_id="u2")
    other_tenant = AgentMemChatStore(mem, "globex", user_id="u1")
    agent_store = AgentMemChatStore(mem, "acme", agent_id="support")
    anonymous = AgentMemChatStore(mem, "acme")
    anonymous.add_message("walk-in", ChatMessage(role="user", content="hello"))

    for other in (other_user, other_tenant, agent_store):
        assert other.get_keys() == []
        assert other.get_messages("chat-1") == []
    assert anonymous.get_keys() == ["walk-in"]
    assert ana.get_keys() == ["chat-1"]


def test_history_is_recallable(mem: AgentMemory, store: AgentMemChatStore) -> None:
    store.add_message("chat-1", ChatMessage(role="user", content="My locker code is 7391"))
    mem.flush(timeout=60)

    here = mem.bind("acme", user_id="u1", session_id="chat-1")
    later = mem.bind("acme", user_id="u1", session_id="chat-2")

    assert "7391" in AgentMemRetriever(here, scope="session").retrieve("locker code")[0].text
    assert "7391" in AgentMemRetriever(later, scope="history").retrieve("locker code")[0].text


@MODES
def test_chat_memory_buffer_persists_in_agentmem(
    make_memory: Callable[..., AgentMemory], use_async: bool
) -> None:
    mem = make_memory()
    buffer = ChatMemoryBuffer.from_defaults(
        chat_store=AgentMemChatStore(mem, "acme", user_id="u1"), chat_store_key="chat-9"
    )
    turns = [
        ChatMessage(role="user", content="Book a table for two"),
        ChatMessage(role="assistant", content="For what time?"),
        ChatMessage(role="user", content="8pm"),
    ]

    if use_async:

        async def converse() -> list[ChatMessage]:
            for m in turns:
                await buffer.aput(m)
            return await buffer.aget()

        got = asyncio.run(converse())
    else:
        for m in turns:
            buffer.put(m)
        got = buffer.get()

    assert pairs(got) == pairs(turns)
    home = mem.home
    mem.close()

    reopened = make_memory(path=home)
    again = ChatMemoryBuffer.from_defaults(
        chat_store=AgentMemChatStore(reopened, "acme", user_id="u1"), chat_store_key="chat-9"
    )
    assert pairs(again.get_all()) == pairs(turns)
    again.reset()
    assert again.get_all() == []


@MODES
@pytest.mark.parametrize("bad", ["hello", {"role": "user", "content": "hello"}])
def test_a_message_that_is_not_a_chat_message_is_named(
    store: AgentMemChatStore, use_async: bool, bad: Any
) -> None:
    run = op(store, use_async)
    run("add_message", "s1", ChatMessage(role="user", content="kept"))
    with pytest.raises(ValidationError, match=r"messages\[0\]: must be a LlamaIndex ChatMessage"):
        run("add_message", "s1", bad)
    with pytest.raises(ValidationError, match=r"messages\[1\]"):
        store.set_messages("s1", [ChatMessage(role="user", content="new"), bad])
    assert pairs(store.get_messages("s1")) == [("user", "kept")]  # nothing replaced


@pytest.mark.parametrize("idx", ["0", 0.0, None])
def test_delete_message_names_an_index_that_is_not_an_int(
    store: AgentMemChatStore, idx: object
) -> None:
    store.add_message("s1", ChatMessage(role="user", content="kept"))
    with pytest.raises(ValidationError) as err:
        store.delete_message("s1", idx)  # type: ignore[arg-type]
    assert err.value.field == "idx"
    assert pairs(store.get_messages("s1")) == [("user", "kept")]


@pytest.mark.parametrize("key", ["", "   ", "x" * 300])
def test_invalid_keys_are_rejected(store: AgentMemChatStore, key: str) -> None:
    with pytest.raises(ValidationError) as err:
        store.get_messages(key)
    assert err.value.field == "session_id"


def test_constructor_validates(mem: AgentMemory) -> None:
    with pytest.raises(ValidationError, match="tenant_id"):
        AgentMemChatStore(mem, "")
    with pytest.raises(ValidationError, match="needs a tenant_id with an embedded AgentMemory"):
        AgentMemChatStore(mem, user_id="u1")  # only a client's API key fixes the tenant
    with pytest.raises(TypeError, match="AgentMemory"):
        AgentMemChatStore(mem.bind("acme"), "acme")  # type: ignore[arg-type]
    assert AgentMemChatStore.class_name() == "AgentMemChatStore"
    assert AgentMemChatStore(mem, "acme").memory is mem


def test_tool_calls_without_an_id_or_from_another_role_are_stored(
    store: AgentMemChatStore,
) -> None:
    """Some providers send a call with an empty id, and a message of another role may carry a
    ToolCallBlock: both are stored and read back, not refused (the core's neutral form takes
    an assistant's calls, with no id where there is none)."""
    unnamed = ToolCallBlock(tool_call_id="", tool_name="clock", tool_kwargs={})
    relayed = ToolCallBlock(tool_call_id="c2", tool_name="weather", tool_kwargs={"city": "Oslo"})
    store.set_messages(
        "calls",
        [
            ChatMessage(role=MessageRole.ASSISTANT, blocks=[unnamed]),
            ChatMessage(role=MessageRole.USER, blocks=[TextBlock(text="run this"), relayed]),
        ],
    )
    back = store.get_messages("calls")
    assert [b.tool_name for b in back[0].blocks if isinstance(b, ToolCallBlock)] == ["clock"]
    assert back[1].role == MessageRole.USER
    assert [b.tool_call_id for b in back[1].blocks if isinstance(b, ToolCallBlock)] == ["c2"]
