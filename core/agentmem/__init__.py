"""agentmem: durable, searchable memory for AI agents.

Example:
    >>> from agentmem import AgentMemory
    >>> mem = AgentMemory("./memdata")  # doctest: +SKIP
    >>> m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")  # doctest: +SKIP
    >>> m.remember("I prefer uv over pip", memory_type="preference")  # doctest: +SKIP

Many processes share one memory through ``agentmem serve``; :func:`connect` returns a client
of the same shape (``agentmem.connect(url, api_key=...).bind(user_id="u1")``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .client import connect, connect_async
from .config import MemoryConfig, Settings, TierConfig
from .errors import (
    AgentMemError,
    AuthError,
    ConfigError,
    DataDirLockedError,
    EmbedderMismatchError,
    EmbeddingError,
    LLMError,
    ModelFilesError,
    NotFoundError,
    RateLimitError,
    RecordsMissingError,
    RemoteError,
    RerankError,
    ScopeError,
    StorageError,
    ValidationError,
)
from .models import (
    AnswerResult,
    ErasureReceipt,
    Identity,
    IngestResult,
    JudgeResult,
    MemoryItem,
    RecallHit,
    RecallResult,
    RememberResult,
    RetentionResult,
)
from .protocols import BoundMemoryProtocol, MemoryProtocol
from .recall_options import RecallOptions
from .results import CloseResult, KnowledgeEntry

if TYPE_CHECKING:
    from .calibration import CalibrationProfile, UncalibratedEmbedderWarning
    from .embeddings import CachedEmbedder, Embedder, ModelFilesWarning, OnnxMiniLMEmbedder
    from .llm import LLM, AnthropicLLM, OfflineLLM
    from .memory import AgentMemory, BoundMemory
    from .rerank import HttpReranker, OnnxCrossEncoderReranker, Reranker

#: The engine's public names and their modules, imported on first use (PEP 562): a process
#: that only talks to a server (``agentmem.connect``) never loads the engine, its indexes or
#: their native libraries.
_ENGINE: dict[str, str] = {
    "AgentMemory": ".memory",
    "BoundMemory": ".memory",
    "CalibrationProfile": ".calibration",
    "UncalibratedEmbedderWarning": ".calibration",
    "CachedEmbedder": ".embeddings",
    "Embedder": ".embeddings",
    "ModelFilesWarning": ".embeddings",
    "OnnxMiniLMEmbedder": ".embeddings",
    "LLM": ".llm",
    "AnthropicLLM": ".llm",
    "OfflineLLM": ".llm",
    "HttpReranker": ".rerank",
    "OnnxCrossEncoderReranker": ".rerank",
    "Reranker": ".rerank",
}


def __getattr__(name: str) -> Any:
    module = _ENGINE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # the labelled data calibrate() fits on registers itself when imported (it lives above
    # the facade, which cannot import it): load it with the engine, as an eager import did
    importlib.import_module(".evaluation.calibration_data", __name__)
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ENGINE))


__version__ = "0.1.0"

__all__ = [
    "LLM",
    "AgentMemError",
    "AgentMemory",
    "AnswerResult",
    "AnthropicLLM",
    "AuthError",
    "BoundMemory",
    "BoundMemoryProtocol",
    "CachedEmbedder",
    "CalibrationProfile",
    "CloseResult",
    "ConfigError",
    "DataDirLockedError",
    "Embedder",
    "EmbedderMismatchError",
    "EmbeddingError",
    "ErasureReceipt",
    "HttpReranker",
    "Identity",
    "IngestResult",
    "JudgeResult",
    "KnowledgeEntry",
    "LLMError",
    "MemoryConfig",
    "MemoryItem",
    "MemoryProtocol",
    "ModelFilesError",
    "ModelFilesWarning",
    "NotFoundError",
    "OfflineLLM",
    "OnnxCrossEncoderReranker",
    "OnnxMiniLMEmbedder",
    "RateLimitError",
    "RecallHit",
    "RecallOptions",
    "RecallResult",
    "RecordsMissingError",
    "RememberResult",
    "RemoteError",
    "RerankError",
    "Reranker",
    "RetentionResult",
    "ScopeError",
    "Settings",
    "StorageError",
    "TierConfig",
    "UncalibratedEmbedderWarning",
    "ValidationError",
    "__version__",
    "connect",
    "connect_async",
]
