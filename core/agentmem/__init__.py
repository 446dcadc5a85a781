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

from .calibration import CalibrationProfile, UncalibratedEmbedderWarning
from .client import connect, connect_async
from .config import MemoryConfig, Settings, TierConfig
from .embeddings import CachedEmbedder, Embedder, OnnxMiniLMEmbedder
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
from .evaluation import calibration_data as _calibration_data  # noqa: F401 (calibrate's data)
from .llm import LLM, AnthropicLLM, OfflineLLM
from .memory import AgentMemory, BoundMemory
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
from .rerank import HttpReranker, OnnxCrossEncoderReranker, Reranker
from .tiers.knowledge import KnowledgeEntry
from .tiers.sessions import CloseResult

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
    "NotFoundError",
    "OfflineLLM",
    "OnnxCrossEncoderReranker",
    "OnnxMiniLMEmbedder",
    "RateLimitError",
    "RecallHit",
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
