"""The whole store at once: rows streamed in insertion order (export, rebuilds, checks),
copies of exported rows restored as they were (import), and counts (``agentmem stats``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .database import Database, Transaction, marks
from .rows import (
    COLUMNS,
    LIVE,
    VEC_PENDING,
    VEC_SKIP,
    Row,
    StoredRecord,
    iso,
    row_to_item,
    vectorized,
)
from .sources import link


@dataclass(frozen=True, slots=True)
class RecordCounts:
    """Row counts of the whole store (``agentmem stats``)."""

    live: int
    deleted: int
    superseded: int
    tenants: int
    by_kind: dict[str, int]


class ArchiveTable:
    """Stream, restore and count rows of ``memories`` (``records.archive``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def count(self, where: str = "1=1", params: Sequence[Any] = ()) -> int:
        """Rows of ``memories`` matching a raw condition."""
        return int(self._db.read(f"SELECT COUNT(*) FROM memories WHERE {where}", params)[0][0])

    def topic_keys(self, tenant_id: str | None = None) -> dict[str, str]:
        """id -> topic key of live rows that have one (export keeps supersession keys)."""
        sql = f"SELECT id, topic_key FROM memories WHERE topic_key IS NOT NULL AND {LIVE}"
        params: tuple[Any, ...] = ()
        if tenant_id is not None:
            sql += " AND tenant_id = ?"
            params = (tenant_id,)
        return {r[0]: r[1] for r in self._db.read(sql, params)}

    def iter_rows(
        self,
        *,
        tenant_id: str | None = None,
        kinds: Sequence[str] | None = None,
        live_only: bool = True,
        batch: int = 1000,
    ) -> Iterator[Row]:
        """Stream rows in insertion order (export, diagnostics)."""
        where = LIVE if live_only else "1=1"
        params: list[Any] = []
        if tenant_id is not None:
            where += " AND tenant_id = ?"
            params.append(tenant_id)
        if kinds is not None:
            where += f" AND kind IN ({marks(len(kinds))})"
            params.extend(kinds)
        last = 0
        while True:
            rows = self._db.read(
                f"SELECT seq, {COLUMNS} FROM memories WHERE seq > ? AND ({where}) "
                f"ORDER BY seq LIMIT ?",
                (last, *params, batch),
            )
            if not rows:
                return
            for r in rows:
                yield row_to_item(r[1:])
            last = rows[-1][0]

    def iter_records(
        self, *, tenant_id: str | None = None, kinds: Sequence[str] | None = None
    ) -> Iterator[StoredRecord]:
        """Every live row with its supersession key, dedup key and payload, in insertion
        order (export)."""
        where = "m.deleted_at IS NULL AND m.anonymized_at IS NULL"
        params: list[Any] = []
        if tenant_id is not None:
            where += " AND m.tenant_id = ?"
            params.append(tenant_id)
        if kinds is not None:
            where += f" AND m.kind IN ({marks(len(kinds))})"
            params.extend(kinds)
        cols = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))
        last = 0
        while True:
            rows = self._db.read(
                f"SELECT m.seq, {cols}, m.topic_key, m.dedup_key, p.content FROM memories AS m "
                f"LEFT JOIN payloads AS p ON p.key = m.source_ref AND p.memory_id = m.id "
                f"WHERE m.seq > ? AND {where} "
                f"ORDER BY m.seq LIMIT 1000",
                (last, *params),
            )
            if not rows:
                return
            for r in rows:
                yield StoredRecord(row_to_item(r[1:-3]), r[-3], r[-2], r[-1])
            last = rows[-1][0]

    def restore(self, records: Sequence[StoredRecord]) -> list[bool]:
        """Insert copies of stored rows as they were (id, timestamps, supersession, tier,
        keys, payload), in one transaction, with no side effects: no topic supersession, no
        audit entry. A row whose id (or dedup key) is already stored is skipped. Returns,
        per record, whether it was inserted. The restored rows are queued for both indexes.
        """
        out: list[bool] = []
        with self._db.write() as tx:
            for rec in records:
                item = rec.row.item
                found = tx.execute("SELECT 1 FROM memories WHERE id = ?", (item.id,)).fetchone()
                if found is None and rec.dedup_key is not None:
                    found = tx.execute(
                        "SELECT 1 FROM memories WHERE dedup_key = ?", (rec.dedup_key,)
                    ).fetchone()
                if found is not None:
                    out.append(False)
                    continue
                vec = VEC_PENDING if vectorized(item.kind, rec.row.tier) else VEC_SKIP
                tx.execute(
                    "INSERT INTO memories (id, tenant_id, user_id, agent_id, session_id, kind, "
                    "memory_type, scope, role, content, content_hash, source_ref, metadata, "
                    "importance, event_time, created_at, updated_at, access_count, "
                    "last_accessed, superseded_by, partition, dedup_key, vec_pending, "
                    "topic_key, tier) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        item.id,
                        item.tenant_id,
                        item.user_id,
                        item.agent_id,
                        item.session_id,
                        item.kind,
                        item.memory_type,
                        item.scope,
                        item.role,
                        item.content,
                        item.content_hash,
                        item.source_ref,
                        json.dumps(item.metadata, ensure_ascii=False),
                        item.importance,
                        iso(item.event_time),
                        iso(item.created_at),
                        iso(item.updated_at),
                        item.access_count,
                        iso(item.last_accessed),
                        item.superseded_by,
                        rec.row.partition,
                        rec.dedup_key,
                        vec,
                        rec.topic_key,
                        rec.row.tier,
                    ),
                )
                link(tx, item.tenant_id, item.id, item.kind, rec.row.tier, item.metadata)
                if rec.payload is not None and item.source_ref:
                    tx.execute(
                        "INSERT INTO payloads (key, tenant_id, memory_id, content) "
                        "VALUES (?,?,?,?) ON CONFLICT (key) DO NOTHING",
                        (item.source_ref, item.tenant_id, item.id, rec.payload),
                    )
                if rec.topic_key is not None and item.superseded_by is None:
                    _one_current(tx, item.tenant_id, rec.row.partition, rec.topic_key)
                out.append(True)
        return out

    def counts(self, kinds: Sequence[str], tenant_id: str | None = None) -> RecordCounts:
        """Live, deleted and superseded rows, tenants, and live rows per kind (of one tenant,
        or of all)."""
        mine, params = ("", ()) if tenant_id is None else (" AND tenant_id = ?", (tenant_id,))
        by_kind = {
            k: int(n)
            for k, n in self._db.read(
                f"SELECT kind, COUNT(*) FROM memories WHERE {LIVE}{mine} GROUP BY kind", params
            )
        }
        return RecordCounts(
            live=self.count(f"{LIVE}{mine}", params),
            deleted=self.count(f"deleted_at IS NOT NULL{mine}", params),
            superseded=self.count(f"superseded_by IS NOT NULL{mine}", params),
            tenants=int(
                self._db.read(
                    f"SELECT COUNT(DISTINCT tenant_id) FROM memories WHERE 1=1{mine}", params
                )[0][0]
            ),
            by_kind={k: by_kind.get(k, 0) for k in kinds},
        )

    def count_live(self) -> int:
        return self.count(LIVE)

    def holds_history(self) -> bool:
        """True once anything was stored here: a row (live or not) or a logged erasure.

        A store without either is new (or a lost one's empty replacement).
        """
        rows = self._db.read(
            "SELECT EXISTS (SELECT 1 FROM memories) OR EXISTS (SELECT 1 FROM erasures)"
        )
        return bool(rows[0][0])


def _one_current(tx: Transaction, tenant_id: str, partition: str, topic_key: str) -> None:
    """Leave one current row of a topic key: the newest; the others superseded by it (an
    import into a store that has its own version of the key)."""
    rows = tx.execute(
        f"SELECT id FROM memories WHERE tenant_id = ? AND partition = ? AND topic_key = ? "
        f"AND superseded_by IS NULL AND {LIVE} ORDER BY created_at DESC, seq DESC",
        (tenant_id, partition, topic_key),
    ).fetchall()
    for (old_id,) in rows[1:]:
        tx.execute(
            "UPDATE memories SET superseded_by = ?, dedup_key = NULL WHERE id = ?",
            (rows[0][0], old_id),
        )
