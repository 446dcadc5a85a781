"""Which rows were made from which: the ``memory_sources`` table (``records.sources``).

A derived row names the messages it was made from in its metadata: an extracted memory in
``source_message_ids``, a session chunk or summary (a row with a tier) in ``message_ids``.
The records store copies those ids into ``memory_sources`` in the transaction that inserts the
row, so forgetting or erasing a message finds what was derived from it with an index lookup
(the same on every backend), not a scan of JSON metadata.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .database import Database, Transaction, chunks, marks


def source_ids(kind: str, tier: str | None, metadata: Mapping[str, Any]) -> list[str]:
    """The message ids a row of ``kind`` and ``tier`` was derived from, by its metadata."""
    if tier is not None:
        raw = metadata.get("message_ids")
    elif kind == "memory":
        raw = metadata.get("source_message_ids")
    else:
        return []
    if not isinstance(raw, list):
        return []
    return list(dict.fromkeys(s for s in raw if isinstance(s, str) and s))


def link(
    tx: Transaction,
    tenant_id: str,
    memory_id: str,
    kind: str,
    tier: str | None,
    metadata: Mapping[str, Any],
) -> None:
    """Record, inside the caller's transaction, the sources of a row being inserted."""
    ids = source_ids(kind, tier, metadata)
    if ids:
        tx.executemany(
            "INSERT INTO memory_sources (tenant_id, memory_id, source_id) VALUES (?,?,?) "
            "ON CONFLICT DO NOTHING",
            [(tenant_id, memory_id, s) for s in ids],
        )


def unlink(tx: Transaction, ids: Sequence[str]) -> int:
    """Drop every link from or to ``ids`` inside the caller's transaction; how many."""
    done = 0
    for chunk in chunks(ids):
        m = marks(len(chunk))
        cur = tx.execute(
            f"DELETE FROM memory_sources WHERE memory_id IN ({m}) OR source_id IN ({m})",
            (*chunk, *chunk),
        )
        done += max(cur.rowcount, 0)
    return done


@dataclass(frozen=True, slots=True)
class RowRef:
    """Where a row lives: its id, kind, tier, partition and session."""

    id: str
    kind: str
    tier: str | None
    partition: str
    session_id: str | None


class SourceLinks:
    """Reads of ``memory_sources`` (``records.sources``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def derived_from(self, tenant_id: str, ids: Sequence[str]) -> list[RowRef]:
        """Rows of ``tenant_id`` (any state but anonymized) made from any of ``ids``."""
        out: dict[str, RowRef] = {}
        for chunk in chunks(ids):
            rows = self._db.read(
                f"SELECT m.id, m.kind, m.tier, m.partition, m.session_id "
                f"FROM memory_sources AS s JOIN memories AS m ON m.id = s.memory_id "
                f"WHERE s.tenant_id = ? AND s.source_id IN ({marks(len(chunk))}) "
                f"AND m.tenant_id = s.tenant_id AND m.anonymized_at IS NULL",
                (tenant_id, *chunk),
            )
            for r in rows:
                out[r[0]] = RowRef(r[0], r[1], r[2], r[3], r[4])
        return list(out.values())

    def sources_of(self, tenant_id: str, ids: Sequence[str]) -> dict[str, set[str]]:
        """The source ids of each of ``ids`` that has any."""
        out: dict[str, set[str]] = {}
        for chunk in chunks(ids):
            for memory_id, source in self._db.read(
                f"SELECT memory_id, source_id FROM memory_sources WHERE tenant_id = ? "
                f"AND memory_id IN ({marks(len(chunk))})",
                (tenant_id, *chunk),
            ):
                out.setdefault(memory_id, set()).add(source)
        return out
