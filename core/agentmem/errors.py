"""The agentmem exception tree.

Every error agentmem raises on purpose derives from :class:`AgentMemError`::

    AgentMemError
    ├── ValidationError      bad input (names the field); nothing stored is changed
    │   └── ScopeError       a scope that needs an identity the bound memory lacks
    ├── NotFoundError        an id or key that does not exist in this identity's view
    ├── StorageError         the records store (SQLite) or an index failed
    │   ├── DataDirLockedError   another process holds the data dir
    │   └── RecordsMissingError  the records store is missing or new beside indexes with rows
    ├── EmbeddingError       the embedder failed or its model files are wrong
    │   └── ModelFilesError  its model files are missing, corrupt or unloadable (reinstall)
    ├── ConfigError          the store was opened with settings its data dir cannot use
    │   └── EmbedderMismatchError   an embedder other than the one that made its vectors
    ├── RerankError          a reranker failed (recall catches it: fail-open)
    ├── LLMError             an LLM call failed after retries (extraction, summaries, judge)
    ├── AuthError            (server mode) a missing, wrong or revoked API key, or an identity
    │                        the key may not act for
    ├── RateLimitError       (server mode) the key's request rate is over the server's limit
    ├── RemoteError          (server mode) the server could not be reached or answered
    │                        something other than a result or an agentmem error
    └── ToolCallError        (agentmem.tools.mcp) a tool call's arguments or result failed

Errors from chromadb, tantivy, sqlite3 and anthropic are translated into this tree at the
boundary, with the original exception chained as ``__cause__``.
"""

from __future__ import annotations

from typing import Any


class AgentMemError(Exception):
    """Root of every error agentmem raises on purpose.

    Attributes:
        context: Identifiers that help locate the problem (ids, field names); never content.
    """

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.context: dict[str, Any] = context


class ValidationError(AgentMemError, ValueError):
    """An argument is malformed, out of range or of the wrong type.

    Attributes:
        field: The name of the offending parameter.
    """

    def __init__(self, field: str, message: str, **context: Any) -> None:
        super().__init__(f"{field}: {message}", field=field, **context)
        self.field = field
        self.reason = message

    def nested(self, prefix: str) -> ValidationError:
        """The same error for a field inside ``prefix`` (``items[3].content``); the class is
        kept, so a ScopeError stays a ScopeError."""
        return type(self)(f"{prefix}.{self.field}", self.reason)


class ScopeError(ValidationError):
    """A scope was asked for whose identity (user_id, agent_id, session_id) is not bound."""


class NotFoundError(AgentMemError, LookupError):
    """No live record with that id or key is visible to this identity."""


class StorageError(AgentMemError):
    """The records store or an index could not be read or written."""


class DataDirLockedError(StorageError):
    """Another process has this data dir open; agentmem allows one process per data dir.

    The message names the holder's pid (also ``context["pid"]``; None if it is unknown).
    """


class RecordsMissingError(StorageError):
    """The records store of a data dir is missing, or new (no record, no erasure), while the
    dir's keyword or vector index holds entries.

    The records are the system of record and the only copy of the memories' content; the
    indexes are derived from them and cannot restore them. Opening such a dir would start an
    empty store beside indexes of a lost one (and ``reindex`` would then delete those), so it
    is refused, before anything on disk is changed. Restore the records from a backup (or
    give the right records URL), or move the indexes out of the dir to start anew.
    """


class EmbeddingError(AgentMemError):
    """The embedder failed, or its model files are missing or do not match their checksum."""


class ModelFilesError(EmbeddingError):
    """The embedder's model files are missing, fail their checksum or cannot be loaded.

    Retrying does not help; reinstalling does. The message names the file and the fix (the
    exact ``pip`` command), also in ``context["fix"]``.
    """


class ConfigError(AgentMemError):
    """The store was opened with a setting its data dir cannot be used with.

    Raised before anything on disk is changed.
    """


class EmbedderMismatchError(ConfigError):
    """The data dir's vectors were made by another embedder (model name or dimensions).

    Vectors of different models do not mix: opening with another embedder is refused until
    every record is re-embedded (``allow_embedder_change=True`` and ``reindex()``, or
    ``agentmem reindex``).

    Attributes:
        recorded: The fingerprint stored in the data dir (an ``EmbedderFingerprint``).
        current: The fingerprint of the embedder the store was opened with.
    """

    def __init__(self, message: str, *, recorded: Any, current: Any, **context: Any) -> None:
        super().__init__(message, **context)
        self.recorded = recorded
        self.current = current


class RerankError(AgentMemError):
    """A reranker failed. Recall never lets this escape: it falls back to fused order."""


class LLMError(AgentMemError):
    """An LLM call failed after its retries, or its reply could not be parsed."""


class AuthError(AgentMemError):
    """The server refused the API key: missing, wrong or revoked, or it may not act for the
    identity asked for (another tenant, or another user or agent than the key is pinned to).

    Attributes:
        reason: ``missing``, ``invalid``, ``revoked``, ``forbidden`` (the key is valid but may
            not reach what was asked) or ``admin_required``.
    """

    def __init__(self, message: str, *, reason: str = "invalid", **context: Any) -> None:
        super().__init__(message, reason=reason, **context)
        self.reason = reason


class RateLimitError(AgentMemError):
    """The server's per-key request rate limit was hit (HTTP 429) and retries ran out.

    Attributes:
        retry_after: Seconds the server asked to wait before the next request.
    """

    def __init__(self, message: str, *, retry_after: float = 1.0, **context: Any) -> None:
        super().__init__(message, retry_after=retry_after, **context)
        self.retry_after = retry_after


class RemoteError(AgentMemError):
    """The agentmem server could not be reached, timed out, or answered with something that
    is neither a result nor an agentmem error (a proxy's error page, an unexpected status).

    Attributes:
        status: The HTTP status, when there was a response.
    """

    def __init__(self, message: str, *, status: int | None = None, **context: Any) -> None:
        super().__init__(message, status=status, **context)
        self.status = status


__all__ = [
    "AgentMemError",
    "AuthError",
    "ConfigError",
    "DataDirLockedError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "LLMError",
    "ModelFilesError",
    "NotFoundError",
    "RateLimitError",
    "RecordsMissingError",
    "RemoteError",
    "RerankError",
    "ScopeError",
    "StorageError",
    "ValidationError",
]
