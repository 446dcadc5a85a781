"""Every LlamaIndex adapter checks the memory object it is built with, at construction.

Retriever, memory block and tools act for one identity (a bound memory); the chat store binds
one session per key (the ``AgentMemory``). The wrong one raises a ``TypeError`` naming the
adapter, what it got and how to get the right one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentmem import AgentMemory, BoundMemory
from llamaindex_agentmem import (
    AgentMemChatStore,
    AgentMemMemoryBlock,
    AgentMemRetriever,
    create_memory_tools,
)

NEEDS_BOUND: dict[str, Callable[[Any], object]] = {
    "AgentMemRetriever": lambda memory: AgentMemRetriever(memory=memory),
    "AgentMemMemoryBlock": lambda memory: AgentMemMemoryBlock(memory=memory),
    "create_memory_tools": create_memory_tools,
}


@pytest.mark.parametrize("owner", sorted(NEEDS_BOUND))
def test_one_identity_adapters_refuse_the_unbound_store(
    owner: str, mem: AgentMemory, bound: BoundMemory
) -> None:
    build = NEEDS_BOUND[owner]
    with pytest.raises(TypeError) as info:
        build(mem)
    assert str(info.value).startswith(f"{owner} expects a bound memory")
    assert "got AgentMemory; call .bind(tenant_id=..." in str(info.value)
    with pytest.raises(TypeError, match=rf"^{owner} expects a bound memory.*got int$"):
        build(42)
    assert build(bound) is not None


def test_the_chat_store_refuses_a_bound_memory(mem: AgentMemory, bound: BoundMemory) -> None:
    with pytest.raises(TypeError) as info:
        AgentMemChatStore(bound, "acme")  # type: ignore[arg-type]
    assert str(info.value) == (
        "AgentMemChatStore expects an AgentMemory (it binds one session per chat-store key), "
        "got BoundMemory; pass memory.store"
    )
    assert AgentMemChatStore(bound.store, "acme").memory is mem


def test_adapters_refuse_an_asyncio_memory() -> None:
    """Their methods are coroutines the adapters would call without awaiting: refused at
    construction, pointing at the blocking client."""
    from agentmem.client.aio import AsyncClient, AsyncRemoteBoundMemory

    bound = object.__new__(AsyncRemoteBoundMemory)  # no connection needed to check the shape
    for owner, build in NEEDS_BOUND.items():
        with pytest.raises(TypeError, match=rf"^{owner} expects a bound memory with blocking"):
            build(bound)
    with pytest.raises(TypeError, match=r"^AgentMemChatStore expects an AgentMemory.*coroutines"):
        AgentMemChatStore(object.__new__(AsyncClient), tenant_id="acme")


def test_unknown_arguments_are_refused_naming_them(mem: AgentMemory, bound: BoundMemory) -> None:
    with pytest.raises(TypeError) as block:
        AgentMemMemoryBlock(memory=bound, top_k=3)
    assert str(block.value).startswith(
        "AgentMemMemoryBlock got unexpected keyword arguments ['top_k']; the number of "
        "recalled items is similarity_top_k (accepted: "
    )
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'top_k'"):
        AgentMemChatStore(mem, "acme", top_k=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'top_k'"):
        AgentMemRetriever(memory=bound, top_k=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'top_k'"):
        create_memory_tools(bound, top_k=3)  # type: ignore[call-arg]
    # their own fields and the base class's are accepted
    assert AgentMemMemoryBlock(memory=bound, similarity_top_k=3, priority=0).priority == 0
