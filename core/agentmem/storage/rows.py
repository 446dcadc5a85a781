"""Row shapes of the ``memories`` table: what is inserted, what is read back.

- :class:`NewRecord`: a row to insert (the store fills timestamps and index state).
- :class:`Row`: a stored row as a public :class:`~agentmem.models.MemoryItem` plus the
  columns only the engine needs (partition, tier).
- :class:`Brief`: the light form recall reads of its candidates.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..models import TIER_LONG_DETAIL, TIER_LONG_SUMMARY, MemoryItem
from ..speakers import metadata_speaker

#: Vector index state of a row (``vec_pending``): embedded, waiting, failed, never embedded.
VEC_SYNCED, VEC_PENDING, VEC_FAILED, VEC_SKIP = 0, 1, 2, 3

COLUMNS = (
    "id, tenant_id, user_id, agent_id, session_id, kind, memory_type, scope, role, content, "
    "content_hash, source_ref, metadata, importance, event_time, created_at, updated_at, "
    "access_count, last_accessed, superseded_by, deleted_at, anonymized_at, keyword_indexed, "
    "embedded, partition, tier"
)


LIVE = "deleted_at IS NULL AND anonymized_at IS NULL"
#: Rows that belong in the vector index: live, and not a long-term detail chunk (those stay
#: keyword-searchable but leave the vector index; the indexer deletes their vectors).
VECTOR_LIVE = f"{LIVE} AND COALESCE(tier, '') != '{TIER_LONG_DETAIL}'"


def now_utc() -> datetime:
    return datetime.now(UTC)


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat(timespec="microseconds")


def _dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A row to insert (the records store fills timestamps and index state)."""

    id: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    kind: str
    memory_type: str | None
    scope: str
    role: str | None
    content: str
    content_hash: str
    source_ref: str | None
    metadata: dict[str, Any]
    importance: float | None
    event_time: datetime | None
    partition: str
    dedup_key: str | None = None
    topic_key: str | None = None
    payload: str | None = None
    payload_key: str | None = None
    vectorize: bool = True
    tier: str | None = None


@dataclass(frozen=True, slots=True)
class Row:
    """A stored row plus the columns only the engine needs (partition)."""

    item: MemoryItem
    partition: str
    tier: str | None = None


BRIEF_COLUMNS = (
    "id, tenant_id, user_id, agent_id, session_id, kind, memory_type, scope, superseded_by, "
    "partition, tier, content, metadata, source_ref, event_time, seq, kw_terms, "
    "kw_term_count, content_tokens"
)


@dataclass(slots=True)
class Brief:
    """The columns recall reads of a candidate row, with metadata and time left unparsed.

    Recall looks at every candidate (~150 per query) but returns only a few: parsing full
    :class:`Row` objects for all of them cost more than the SQL read itself.
    """

    id: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    kind: str
    memory_type: str | None
    scope: str
    superseded_by: str | None
    partition: str
    tier: str | None
    content: str
    metadata_json: str
    source_ref: str | None
    event_time_iso: str
    seq: int
    """Write order (the records' sequence): consecutive messages of a session written
    together have consecutive values."""
    kw_terms: str | None = None
    """The distinct analysed terms of the row's keyword text, space-separated (None until
    the keyword indexer has seen the row): see :class:`TextFeatures`."""
    kw_term_count: int | None = None
    content_tokens: int | None = None
    _metadata: dict[str, Any] | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            self._metadata = json.loads(self.metadata_json)
        return self._metadata

    @property
    def speaker(self) -> str | None:
        """The metadata's ``speaker`` (metadata without one is not parsed)."""
        if '"speaker"' not in self.metadata_json:
            return None
        return metadata_speaker(self.metadata)

    @property
    def event_time(self) -> datetime:
        return datetime.fromisoformat(self.event_time_iso)


@dataclass(frozen=True, slots=True)
class TextFeatures:
    """What recall scores of a row's text, stored with the row by the keyword indexer."""

    terms: str
    """The distinct analysed terms of its keyword text, space-separated, first use first."""
    term_count: int
    """How many analysed terms (repeats included) its keyword text has."""
    tokens: int
    """Tokens (cl100k_base) of its content, for the recall token budget."""


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A row with every column a faithful copy of it needs (export, restore)."""

    row: Row
    topic_key: str | None = None
    dedup_key: str | None = None
    #: The full text kept under ``row.item.source_ref`` (long messages, tool outputs).
    payload: str | None = None


def vectorized(kind: str, tier: str | None) -> bool:
    """Whether a row of ``kind`` and stored ``tier`` belongs in the vector index: a
    long-term session's detail chunks do not, and a session summary only once its session
    is long-term (its chunks carry the meaning while it is mid-term)."""
    if tier == TIER_LONG_DETAIL:
        return False
    if kind == "summary":
        return tier == TIER_LONG_SUMMARY
    return True


def row_to_item(r: Sequence[Any]) -> Row:
    (
        id_,
        tenant_id,
        user_id,
        agent_id,
        session_id,
        kind,
        memory_type,
        scope,
        role,
        content,
        content_hash,
        source_ref,
        metadata,
        importance,
        event_time,
        created_at,
        updated_at,
        access_count,
        last_accessed,
        superseded_by,
        deleted_at,
        anonymized_at,
        keyword_indexed,
        embedded,
        partition,
        tier,
    ) = tuple(r)
    item = MemoryItem(
        id=id_,
        tenant_id=tenant_id,
        user_id=user_id,
        agent_id=agent_id,
        session_id=session_id,
        kind=kind,
        memory_type=memory_type,
        scope=scope,
        role=role,
        content=content,
        content_hash=content_hash,
        source_ref=source_ref,
        metadata=json.loads(metadata),
        importance=importance,
        event_time=_dt(event_time),  # type: ignore[arg-type]
        created_at=_dt(created_at),  # type: ignore[arg-type]
        updated_at=_dt(updated_at),  # type: ignore[arg-type]
        access_count=access_count,
        last_accessed=_dt(last_accessed),
        superseded_by=superseded_by,
        deleted_at=_dt(deleted_at),
        anonymized_at=_dt(anonymized_at),
        keyword_indexed=bool(keyword_indexed),
        embedded=bool(embedded),
    )
    return Row(item=item, partition=partition, tier=tier)
