"""Small bookkeeping tables: data-dir settings (``meta``) and extraction progress
(``ingest_log``)."""

from __future__ import annotations

from collections.abc import Sequence

from .database import Database, chunks, marks
from .rows import iso, now_utc


class MetaTable:
    """Settings of the data dir itself, e.g. the embedder of its vectors (``records.meta``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, key: str) -> str | None:
        """The value stored under ``key``, or None."""
        rows = self._db.read("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def set(self, key: str, value: str, *, replace: bool = True) -> bool:
        """Store ``value`` under ``key``; with ``replace=False`` an existing value is kept.

        Returns True if a row was written.
        """
        conflict = (
            "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
            if replace
            else "DO NOTHING"
        )
        with self._db.write(keys=()) as tx:  # one upsert
            cur = tx.execute(
                f"INSERT INTO meta (key, value, updated_at) VALUES (?,?,?) "
                f"ON CONFLICT (key) {conflict}",
                (key, value, iso(now_utc())),
            )
            return cur.rowcount > 0

    def delete(self, key: str) -> bool:
        """Remove ``key``; returns True if it was there."""
        with self._db.write() as tx:
            return tx.execute("DELETE FROM meta WHERE key = ?", (key,)).rowcount > 0


class IngestLog:
    """Which messages the extractor has seen (``records.ingest_log``): re-ingesting a
    conversation extracts only from messages it has not seen."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def extracted(self, tenant_id: str, message_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for chunk in chunks(message_ids):
            rows = self._db.read(
                f"SELECT message_id FROM ingest_log WHERE tenant_id = ? "
                f"AND message_id IN ({marks(len(chunk))})",
                (tenant_id, *chunk),
            )
            found.update(r[0] for r in rows)
        return found

    def mark(self, tenant_id: str, message_ids: Sequence[str], extractor: str) -> None:
        now = iso(now_utc())
        # in one order for every writer: two marks of the same messages wait on the same
        # keys in the same order, never in a cycle
        with self._db.write(keys=()) as tx:
            tx.executemany(
                "INSERT INTO ingest_log (tenant_id, message_id, extractor, extracted_at) "
                "VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
                [(tenant_id, i, extractor, now) for i in sorted(set(message_ids))],
            )
