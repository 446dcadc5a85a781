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


#: Every LangChain adapter built with one argument it does not know (``top_k``, which is
#: the core's name, not the adapters').
WITH_UNKNOWN: dict[str, Callable[[AgentMemory, BoundMemory], object]] = {
    "AgentMemRetriever": lambda mem, m: AgentMemRetriever(memory=m, top_k=1),
    "AgentMemChatMessageHistory": lambda mem, m: AgentMemChatMessageHistory(memory=m, top_k=1),  # type: ignore[call-arg]
    "AgentMemMiddleware": lambda mem, m: AgentMemMiddleware(m, top_k=1),  # type: ignore[call-arg]
    "AgentMemStore": lambda mem, m: AgentMemStore(mem, tenant_id="acme", top_k=1),  # type: ignore[call-arg]
    "create_memory_tools": lambda mem, m: create_memory_tools(m, top_k=1),  # type: ignore[call-arg]
    **{
        cls.__name__: (lambda mem, m, cls=cls: cls(memory=m, top_k=1))
        for cls in TOOL_CLASSES.values()
    },
}


@pytest.mark.parametrize("owner", sorted(WITH_UNKNOWN))
def test_unknown_arguments_are_refused_naming_them(
    owner: str, mem: AgentMemory, bound: BoundMemory
) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument.*top_k"):
        WITH_UNKNOWN[owner](mem, bound)


def test_the_retriever_says_which_field_to_use(bound: BoundMemory) -> None:
    with pytest.raises(TypeError) as top_k:
        AgentMemRetriever(memory=bound, top_k=1)
    assert str(top_k.value).startswith(
        "AgentMemRetriever got unexpected keyword arguments ['top_k']; the number of "
        "documents is k (the core's top_k) (accepted: "
    )
    with pytest.raises(TypeError) as search_kwargs:
        AgentMemRetriever(
            memory=bound, search_kwargs={"k": 2, "score_threshold": 0.5, "fetch_k": 20}
        )
    assert (
        "['search_kwargs']; search_kwargs is VectorStoreRetriever's: set the fields instead "
        "(k=2, min_score=0.5); ['fetch_k'] have no counterpart"
    ) in str(search_kwargs.value)
    with pytest.raises(TypeError, match=r"\['search_type'\]; search_type is VectorStore"):
        AgentMemRetriever(memory=bound, search_type="mmr")
    # its own fields and BaseRetriever's are accepted
    retriever = AgentMemRetriever(memory=bound, k=2, min_score=0.4, tags=["support"])
    assert (retriever.k, retriever.min_score, retriever.tags) == (2, 0.4, ["support"])
