"""LangChain adapters for agentmem: retriever, chat history, tools, LangGraph store.

Everything here is a thin translation onto :class:`agentmem.BoundMemory` (or, for the
store, :class:`agentmem.AgentMemory`); identity always comes from the bound memory.

``AgentMemStore`` needs ``langgraph`` (extra ``langgraph``) and ``AgentMemMiddleware``
needs ``langchain`` 1.x (extra ``langchain-agents``); both are imported on first access, so
the rest works with ``langchain-core`` alone.

Example:
    >>> from agentmem import AgentMemory
    >>> from langchain_agentmem import AgentMemRetriever, create_memory_tools
    >>> mem = AgentMemory(tmp_path)  # doctest: +SKIP
    >>> m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")  # doctest: +SKIP
    >>> retriever = AgentMemRetriever(memory=m, k=3)  # doctest: +SKIP
    >>> tools = create_memory_tools(m)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentmem.distribution import pip_install
from agentmem.tools.render import ADVISORY_HEADER, format_hits

from .chat_history import AgentMemChatMessageHistory
from .retrievers import AgentMemRetriever
from .tools import (
    TOOL_CLASSES,
    AgentMemTool,
    AnswerInput,
    AnswerTool,
    CompactInput,
    CompactTool,
    DeleteKnowledgeInput,
    DeleteKnowledgeTool,
    DeleteMemoryInput,
    DeleteMemoryTool,
    GetAgentStateInput,
    GetAgentStateTool,
    GetKnowledgeInput,
    GetKnowledgeTool,
    ListKnowledgeInput,
    ListKnowledgeTool,
    ReadToolOutputInput,
    ReadToolOutputTool,
    RecallInput,
    RecallTool,
    RememberFactInput,
    RememberFactTool,
    SearchMemoryInput,
    SearchMemoryTool,
    SessionDetailInput,
    SessionDetailTool,
    SetAgentStateInput,
    SetAgentStateTool,
    StoreMemoryInput,
    StoreMemoryTool,
    UpsertKnowledgeInput,
    UpsertKnowledgeTool,
    create_memory_tools,
)

if TYPE_CHECKING:
    from .middleware import AgentMemMiddleware
    from .store import AgentMemStore

_LAZY = {
    "AgentMemStore": (".store", "langgraph", "langgraph"),
    "AgentMemMiddleware": (".middleware", "langchain", "langchain-agents"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, dependency, extra = _LAZY[name]
    try:
        value = getattr(importlib.import_module(module, __name__), name)
    except ImportError as exc:
        raise ImportError(f"{name} needs {dependency}: {pip_install(extra)}") from exc
    globals()[name] = value
    return value


__all__ = [
    "ADVISORY_HEADER",
    "TOOL_CLASSES",
    "AgentMemChatMessageHistory",
    "AgentMemMiddleware",
    "AgentMemRetriever",
    "AgentMemStore",
    "AgentMemTool",
    "AnswerInput",
    "AnswerTool",
    "CompactInput",
    "CompactTool",
    "DeleteKnowledgeInput",
    "DeleteKnowledgeTool",
    "DeleteMemoryInput",
    "DeleteMemoryTool",
    "GetAgentStateInput",
    "GetAgentStateTool",
    "GetKnowledgeInput",
    "GetKnowledgeTool",
    "ListKnowledgeInput",
    "ListKnowledgeTool",
    "ReadToolOutputInput",
    "ReadToolOutputTool",
    "RecallInput",
    "RecallTool",
    "RememberFactInput",
    "RememberFactTool",
    "SearchMemoryInput",
    "SearchMemoryTool",
    "SessionDetailInput",
    "SessionDetailTool",
    "SetAgentStateInput",
    "SetAgentStateTool",
    "StoreMemoryInput",
    "StoreMemoryTool",
    "UpsertKnowledgeInput",
    "UpsertKnowledgeTool",
    "create_memory_tools",
    "format_hits",
]
