"""Translations between agentmem values and LangChain values (documents)."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document

from agentmem import RecallHit

#: The metadata keys every retrieved ``Document`` carries (on top of the stored metadata).
DOCUMENT_METADATA_KEYS: tuple[str, ...] = (
    "id",
    "kind",
    "memory_type",
    "scope",
    "score",
    "source_ref",
    "event_time",
    "session_id",
)


def hit_to_document(hit: RecallHit) -> Document:
    """A recall hit as a ``Document``: ``id`` and ``page_content`` from the memory.

    The stored metadata comes first; the agentmem fields (:data:`DOCUMENT_METADATA_KEYS`)
    are written over it, so they are always the memory's own.
    """
    metadata: dict[str, Any] = dict(hit.metadata)
    metadata.update(
        id=hit.id,
        kind=hit.kind,
        memory_type=hit.memory_type,
        scope=hit.scope,
        score=hit.score,
        source_ref=hit.source_ref,
        event_time=hit.event_time.isoformat(),
        session_id=hit.session_id,
    )
    return Document(id=hit.id, page_content=hit.content, metadata=metadata)
