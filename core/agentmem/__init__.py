"""agentmem: durable, searchable memory for AI agents.

Example:
    >>> from agentmem import AgentMemory
    >>> mem = AgentMemory("./memdata")  # doctest: +SKIP
    >>> m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")  # doctest: +SKIP
    >>> m.remember("I prefer uv over pip", memory_type="preference")  # doctest: +SKIP
"""

from __future__ import annotations

from .config import MemoryConfig
from .embeddings import CachedEmbedder, Embedder, OnnxMiniLMEmbedder
from .errors import (
    AgentMemError,
    DataDirLockedError,
    EmbeddingError,
    LLMError,
    NotFoundError,
    RerankError,
    ScopeError,
    StorageError,
    ValidationError,
)
from .memory import AgentMemory, BoundMemory
from .models import Identity, MemoryItem, RecallHit, RecallResult, RememberResult
from .rerank import HttpReranker, OnnxCrossEncoderReranker, Reranker

__version__ = "0.1.0"

__all__ = [
    "AgentMemError",
    "AgentMemory",
    "BoundMemory",
    "CachedEmbedder",
    "DataDirLockedError",
    "Embedder",
    "EmbeddingError",
    "HttpReranker",
    "Identity",
    "LLMError",
    "MemoryConfig",
    "MemoryItem",
    "NotFoundError",
    "OnnxCrossEncoderReranker",
    "OnnxMiniLMEmbedder",
    "RecallHit",
    "RecallResult",
    "RememberResult",
    "RerankError",
    "Reranker",
    "ScopeError",
    "StorageError",
    "ValidationError",
    "__version__",
]
