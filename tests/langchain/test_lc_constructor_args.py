"""Every LangChain adapter checks the memory object it is built with, at construction.

An adapter acting for one identity needs a bound memory (``AgentMemory.bind``); a store that
binds per namespace needs the ``AgentMemory``. Passing the other one (or anything else) raises
a ``TypeError`` naming the adapter, what it got and how to get the right one, instead of an
``AttributeError`` at first use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentmem import AgentMemory, BoundMemory
from langchain_agentmem import (
    AgentMemChatMessageHistory,
    AgentMemMiddleware,
    AgentMemRetriever,
    AgentMemStore,
    create_memory_tools,
)
from langchain_agentmem.tools import TOOL_CLASSES

NEEDS_BOUND: dict[str, Callable[[Any], object]] = {
    "AgentMemRetriever": lambda memory: AgentMemRetriever(memory=memory),
    "AgentMemChatMessageHistory": lambda memory: AgentMemChatMessageHistory(memory=memory),
    "AgentMemMiddleware": lambda memory: AgentMemMiddleware(memory),
    "create_memory_tools": create_memory_tools,
    **{cls.__name__: (lambda memory, cls=cls: cls(memory=memory)) for cls in TOOL_CLASSES.values()},
}


@pytest.mark.parametrize("owner", sorted(NEEDS_BOUND))
def test_one_identity_adapters_refuse_the_unbound_store(
    owner: str, mem: AgentMemory, bound: BoundMemory
) -> None:
    build = NEEDS_BOUND[owner]
    with pytest.raises(TypeError) as info:
        build(mem)
    message = str(info.value)
    assert message.startswith(f"{owner} expects a bound memory")
    assert "got AgentMemory; call .bind(tenant_id=..." in message
    with pytest.raises(TypeError, match=rf"^{owner} expects a bound memory.*got str$"):
        build("acme")
    assert build(bound) is not None  # the right object is accepted


def test_the_store_refuses_a_bound_memory(mem: AgentMemory, bound: BoundMemory) -> None:
    with pytest.raises(TypeError) as info:
        AgentMemStore(bound, tenant_id="acme")  # type: ignore[arg-type]
    assert str(info.value) == (
        "AgentMemStore expects an AgentMemory (it binds per namespace), got BoundMemory; "
        "pass memory.store"
    )
    with pytest.raises(TypeError, match=r"AgentMemStore expects an AgentMemory.*got NoneType$"):
        AgentMemStore(None, tenant_id="acme")  # type: ignore[arg-type]
    assert AgentMemStore(bound.store, tenant_id="acme").memory is mem


def test_adapters_refuse_an_asyncio_memory(tmp_path: Any) -> None:
    """Their methods are coroutines, which the adapters would call without awaiting: refused
    at construction, pointing at the blocking client."""
    from agentmem.client.aio import AsyncClient, AsyncRemoteBoundMemory

    bound = object.__new__(AsyncRemoteBoundMemory)  # no connection needed to check the shape
    client = object.__new__(AsyncClient)
    for owner, build in NEEDS_BOUND.items():
        with pytest.raises(TypeError, match=rf"^{owner} expects a bound memory with blocking"):
            build(bound)
    with pytest.raises(TypeError, match=r"^AgentMemStore expects an AgentMemory.*coroutines"):
        AgentMemStore(client, tenant_id="acme")  # type: ignore[arg-type]
