"""The public surface of llamaindex_agentmem is explicit and pinned."""

from __future__ import annotations

import importlib
from pathlib import Path

import llamaindex_agentmem

EXPECTED = [
    "AgentMemChatStore",
    "AgentMemMemoryBlock",
    "AgentMemRetriever",
    "ReadToolOutputInput",
    "RecallInput",
    "RememberFactInput",
    "create_memory_tools",
]


def test_all_is_pinned() -> None:
    assert sorted(llamaindex_agentmem.__all__) == EXPECTED
    for name in EXPECTED:
        assert getattr(llamaindex_agentmem, name) is not None


def test_package_is_typed() -> None:
    assert (Path(llamaindex_agentmem.__file__).parent / "py.typed").is_file()


def test_public_classes_document_usage() -> None:
    for name in ("AgentMemChatStore", "AgentMemMemoryBlock", "AgentMemRetriever"):
        doc = getattr(llamaindex_agentmem, name).__doc__ or ""
        assert "Example:" in doc and "Args:" in doc, name
    assert "Example:" in (llamaindex_agentmem.create_memory_tools.__doc__ or "")


def test_framework_classes_are_the_real_llama_index_bases() -> None:
    bases = {
        "AgentMemRetriever": ("llama_index.core.retrievers", "BaseRetriever"),
        "AgentMemMemoryBlock": ("llama_index.core.memory.memory", "BaseMemoryBlock"),
        "AgentMemChatStore": ("llama_index.core.storage.chat_store", "BaseChatStore"),
    }
    for name, (module, base) in bases.items():
        assert issubclass(
            getattr(llamaindex_agentmem, name), getattr(importlib.import_module(module), base)
        )
