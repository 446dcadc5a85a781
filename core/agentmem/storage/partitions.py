"""Vector partitions: which Chroma collection holds each (tenant, partition)'s vectors.

A partition is registered the first time its vectors are written, and stays listed after its
rows are gone, so a check or an erasure finds every collection that ever held vectors. When
the vectors are dropped (an embedder change), every embeddable row is queued again.
"""

from __future__ import annotations

from collections.abc import Mapping

from .database import Database
from .rows import VEC_PENDING, VEC_SKIP, iso, now_utc


class PartitionTable:
    """The ``partitions`` table (``records.partitions``), and the re-embedding of every row."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def register(self, tenant_id: str, partition: str, collection: str) -> None:
        """Record that ``collection`` holds the vectors of (tenant, partition)."""
        with self._db.write(keys=()) as tx:  # one idempotent insert
            tx.execute(
                "INSERT INTO partitions (tenant_id, partition, collection) VALUES (?,?,?) "
                "ON CONFLICT DO NOTHING",
                (tenant_id, partition, collection),
            )

    def requeue_vectors(self, *, meta: Mapping[str, str | None] | None = None) -> None:
        """Flag every embeddable row for the vector index (its vectors were dropped), and
        set (or, for None, delete) ``meta`` keys in the same transaction."""
        with self._db.write() as tx:
            tx.execute(
                f"UPDATE memories SET vec_pending = {VEC_PENDING}, embedded = 0 "
                f"WHERE vec_pending != {VEC_SKIP}"
            )
            for key, value in (meta or {}).items():
                if value is None:
                    tx.execute("DELETE FROM meta WHERE key = ?", (key,))
                    continue
                tx.execute(
                    "INSERT INTO meta (key, value, updated_at) VALUES (?,?,?) ON CONFLICT (key) "
                    "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                    (key, value, iso(now_utc())),
                )

    def collection_for(self, tenant_id: str, partition: str) -> str | None:
        """The collection registered for (tenant, partition), if any."""
        rows = self._db.read(
            "SELECT collection FROM partitions WHERE tenant_id = ? AND partition = ?",
            (tenant_id, partition),
        )
        return rows[0][0] if rows else None

    def all(self) -> list[tuple[str, str, str]]:
        """(tenant, partition, collection) of every partition that ever held vectors."""
        return [
            (r[0], r[1], r[2])
            for r in self._db.read("SELECT tenant_id, partition, collection FROM partitions")
        ]
