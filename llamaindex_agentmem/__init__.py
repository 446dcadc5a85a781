"""LlamaIndex integration for agentmem: retriever, memory block, tools and chat store.

Example:
    >>> from agentmem import AgentMemory  # doctest: +SKIP
    >>> from llamaindex_agentmem import AgentMemMemoryBlock, AgentMemRetriever  # doctest: +SKIP
    >>> m = AgentMemory("./memdata").bind("acme", user_id="u1", session_id="s1")  # doctest: +SKIP
    >>> retriever = AgentMemRetriever(memory=m, similarity_top_k=3)  # doctest: +SKIP
    >>> block = AgentMemMemoryBlock(memory=m)  # doctest: +SKIP
"""

from __future__ import annotations

from .chat_store import AgentMemChatStore
from .memory_block import AgentMemMemoryBlock
from .retriever import AgentMemRetriever
from .tools import ReadToolOutputInput, RecallInput, RememberFactInput, create_memory_tools

__all__ = [
    "AgentMemChatStore",
    "AgentMemMemoryBlock",
    "AgentMemRetriever",
    "ReadToolOutputInput",
    "RecallInput",
    "RememberFactInput",
    "create_memory_tools",
]
