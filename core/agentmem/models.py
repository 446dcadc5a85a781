"""Value objects returned by the public API.

All are frozen dataclasses. Timestamps are timezone-aware UTC ``datetime`` objects.
Scores are floats in [0, 1]; higher is better.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Kind = Literal["chat_message", "tool_output", "document_chunk", "memory", "summary"]
MemoryType = Literal["fact", "preference", "decision", "note", "event", "instruction", "task"]
Scope = Literal["session", "history", "user", "agent", "tenant"]
RecallScope = Literal["session", "history", "user", "agent", "tenant", "any"]

KINDS: tuple[str, ...] = ("chat_message", "tool_output", "document_chunk", "memory", "summary")
MEMORY_TYPES: tuple[str, ...] = (
    "fact",
    "preference",
    "decision",
    "note",
    "event",
    "instruction",
    "task",
)
SCOPES: tuple[str, ...] = ("session", "history", "user", "agent", "tenant")
RECALL_SCOPES: tuple[str, ...] = (*SCOPES, "any")
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a bound memory acts for. Only ``tenant_id`` is required.

    Example:
        >>> Identity(tenant_id="acme", user_id="u1").user_id
        'u1'
    """

    tenant_id: str
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One stored record, as the records store holds it.

    Example:
        >>> item = m.add_message("user", "I prefer tea")  # doctest: +SKIP
        >>> item.kind
        'chat_message'
    """

    id: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    kind: str
    memory_type: str | None
    scope: str
    content: str
    content_hash: str
    source_ref: str | None
    metadata: dict[str, Any]
    importance: float | None
    event_time: datetime
    created_at: datetime
    updated_at: datetime
    role: str | None = None
    access_count: int = 0
    last_accessed: datetime | None = None
    superseded_by: str | None = None
    deleted_at: datetime | None = None
    anonymized_at: datetime | None = None
    keyword_indexed: bool = False
    embedded: bool = False


@dataclass(frozen=True, slots=True)
class RememberResult:
    """Outcome of ``remember``: the memory id, and whether this call created it.

    Example:
        >>> r = m.remember("I prefer tea")  # doctest: +SKIP
        >>> r.was_new
        True
    """

    id: str
    was_new: bool


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One recalled memory.

    Attributes:
        score: Calibrated relevance in [0, 1] (higher is better); comparable across queries,
            so a fixed ``min_score`` separates related from unrelated memories.
        metadata: The caller's metadata as stored.
    """

    id: str
    kind: str
    memory_type: str | None
    scope: str
    content: str
    score: float
    source_ref: str | None
    event_time: datetime
    session_id: str | None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What ``recall`` returns.

    Attributes:
        items: Hits, best first, at most ``top_k``, within the token budget.
        total: ``len(items)``.
        degraded: True while some rows of the searched scopes are not yet embedded (the
            vector half may be incomplete; the keyword half is complete once indexed).
        rerank_used: True when a reranker ordered the items.
        truncated: True when the token budget dropped items or cut the last one.
        token_count: Tokens (cl100k_base) in the returned contents.
    """

    items: list[RecallHit]
    total: int
    degraded: bool = False
    rerank_used: bool = False
    truncated: bool = False
    token_count: int = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
