"""The ``memories`` rows themselves: written (with their payloads, source links and topic
supersession) in one transaction per batch, retired, read by id, and counted as recalled.

Feature code reads a session's rows through :mod:`agentmem.storage.conversations`, the
supersession chain through :mod:`agentmem.storage.supersession`, and forgets rows through
:mod:`agentmem.storage.retention`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from .audit import audit
from .database import Database, Transaction, chunks, marks
from .rows import (
    BRIEF_COLUMNS,
    COLUMNS,
    LIVE,
    VEC_PENDING,
    VEC_SKIP,
    Brief,
    NewRecord,
    Row,
    iso,
    now_utc,
    row_to_item,
)
from .sources import link
from .supersession import retire_sources
from .write_locks import insert_keys, update_rows


class MemoryTable:
    """Write, retire and read rows of ``memories`` by id (``records.memories``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def insert(self, records: Iterable[NewRecord]) -> list[tuple[str, bool]]:
        """Insert records in one transaction; returns (id, was_new) per record.

        A record whose ``dedup_key`` (or id) already exists is not inserted again: the
        existing id comes back with ``was_new=False``. A record with a ``topic_key``
        supersedes the live rows of its tenant and partition with that key.

        On Postgres the transaction locks its ids, dedup keys, payload keys and topics
        (:func:`~agentmem.storage.write_locks.insert_keys`), nothing of other writes.
        """
        now = iso(now_utc())
        out: list[tuple[str, bool]] = []
        records = list(records)
        with self._db.write(keys=insert_keys(records)) as tx:
            for rec in records:
                # one query for both keys (a round trip per statement counts on Postgres);
                # a row with the same dedup key wins over one with the same id
                same = tx.execute(
                    "SELECT id, dedup_key FROM memories WHERE dedup_key = ? OR id = ?",
                    (rec.dedup_key, rec.id),
                ).fetchall()
                if same:
                    by_key = [r[0] for r in same if rec.dedup_key and r[1] == rec.dedup_key]
                    out.append(((by_key or [same[0][0]])[0], False))
                    continue
                _insert_row(tx, rec, now)
                link(tx, rec.tenant_id, rec.id, rec.kind, rec.tier, rec.metadata)
                if rec.topic_key is not None:
                    self._supersede_topic(tx, rec, now)
                if rec.payload is not None and rec.payload_key is not None:
                    tx.execute(
                        "INSERT INTO payloads (key, tenant_id, memory_id, content) "
                        "VALUES (?,?,?,?) ON CONFLICT (key) DO UPDATE SET "
                        "tenant_id = excluded.tenant_id, memory_id = excluded.memory_id, "
                        "content = excluded.content",
                        (rec.payload_key, rec.tenant_id, rec.id, rec.payload),
                    )
                out.append((rec.id, True))
        return out

    @staticmethod
    def _supersede_topic(tx: Transaction, rec: NewRecord, now: str | None) -> None:
        """Retire live rows sharing ``rec``'s topic key in the same tenant and partition."""
        old = tx.execute(
            f"SELECT id FROM memories WHERE tenant_id = ? AND partition = ? AND topic_key = ? "
            f"AND id != ? AND superseded_by IS NULL AND {LIVE}",
            (rec.tenant_id, rec.partition, rec.topic_key, rec.id),
        ).fetchall()
        for (old_id,) in old:
            # still current: the judge may have retired it since (it takes no topic lock)
            cur = tx.execute(
                "UPDATE memories SET superseded_by = ?, updated_at = ?, dedup_key = NULL "
                "WHERE id = ? AND superseded_by IS NULL",
                (rec.id, now, old_id),
            )
            if not cur.rowcount:
                continue
            retire_sources(tx, rec.tenant_id, old_id, rec.id)
            audit(tx, now, "memory.supersede", rec.tenant_id, old_id, by=rec.id)

    def soft_delete(self, tenant_id: str, memory_id: str) -> bool:
        """Retire one live row (its index entries are removed by the indexer)."""
        return self.soft_delete_many(tenant_id, [memory_id]) > 0

    def soft_delete_many(self, tenant_id: str, ids: Sequence[str]) -> int:
        """Retire live rows of ``tenant_id`` among ``ids`` in one transaction; how many."""
        now = iso(now_utc())
        done = 0
        with self._db.write() as tx:
            for memory_id in ids:
                cur = tx.execute(
                    f"UPDATE memories SET deleted_at = ?, updated_at = ?, dedup_key = NULL, "
                    f"kw_pending = 1, vec_pending = CASE WHEN vec_pending = {VEC_SKIP} THEN "
                    f"{VEC_SKIP} ELSE {VEC_PENDING} END "
                    f"WHERE id = ? AND tenant_id = ? AND {LIVE}",
                    (now, now, memory_id, tenant_id),
                )
                if cur.rowcount:
                    audit(tx, now, "memory.delete", tenant_id, memory_id)
                    done += 1
        return done

    def get(self, memory_id: str) -> Row | None:
        rows = self._db.read(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        return row_to_item(rows[0]) if rows else None

    def get_many(self, tenant_id: str, ids: Sequence[str], *, live_only: bool = True) -> list[Row]:
        """Rows of ``tenant_id`` among ``ids`` (unordered); anonymized rows never."""
        out: list[Row] = []
        live = f" AND {LIVE}" if live_only else " AND anonymized_at IS NULL"
        for chunk in chunks(ids):
            rows = self._db.read(
                # "+tenant_id": look rows up by id (unique index), then check the tenant;
                # the tenant index would walk every row of a large tenant
                f"SELECT {COLUMNS} FROM memories WHERE +tenant_id = ? "
                f"AND id IN ({marks(len(chunk))}){live}",
                (tenant_id, *chunk),
            )
            out.extend(row_to_item(r) for r in rows)
        return out

    def items(self, tenant_id: str, ids: Sequence[str]) -> list[Row]:
        """Live rows of ``tenant_id`` among ``ids``, in the order of ``ids``."""
        found = {r.item.id: r for r in self.get_many(tenant_id, ids)}
        return [found[i] for i in ids if i in found]

    def briefs(self, tenant_id: str, ids: Sequence[str]) -> list[Brief]:
        """The live rows of ``tenant_id`` among ``ids``, as :class:`Brief` (unordered)."""
        out: list[Brief] = []
        for chunk in chunks(ids):
            rows = self._db.read(
                f"SELECT {BRIEF_COLUMNS} FROM memories "
                f"WHERE +tenant_id = ? AND id IN ({marks(len(chunk))}) AND {LIVE}",
                (tenant_id, *chunk),
            )
            out.extend(Brief(*r) for r in rows)
        return out

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored (any state)."""
        found: set[str] = set()
        for chunk in chunks(ids):
            rows = self._db.read(
                f"SELECT id FROM memories WHERE id IN ({marks(len(chunk))})", chunk
            )
            found.update(r[0] for r in rows)
        return found

    def seqs(self, ids: Sequence[str]) -> dict[str, int]:
        """Insertion order (``seq``) of the stored rows among ``ids``."""
        out: dict[str, int] = {}
        for chunk in chunks(ids):
            for id_, seq in self._db.read(
                f"SELECT id, seq FROM memories WHERE id IN ({marks(len(chunk))})", chunk
            ):
                out[id_] = int(seq)
        return out

    def payload(self, tenant_id: str, key: str) -> tuple[str, str] | None:
        """(memory_id, full content) stored under ``key`` for this tenant."""
        rows = self._db.read(
            "SELECT memory_id, content FROM payloads WHERE tenant_id = ? AND key = ?",
            (tenant_id, key),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def document_chunk_ids(self, tenant_id: str, source_ref: str) -> list[str]:
        """Live document chunks stored under ``source_ref``."""
        rows = self._db.read(
            f"SELECT id FROM memories WHERE tenant_id = ? AND source_ref = ? AND "
            f"kind = 'document_chunk' AND {LIVE}",
            (tenant_id, source_ref),
        )
        return [r[0] for r in rows]

    def add_access(self, counts: Mapping[str, int], last: Mapping[str, str]) -> None:
        """Add recall hits to ``access_count`` and move ``last_accessed`` forward
        (``updated_at`` is not touched: being read is not an update). On Postgres a row
        another write holds gets its count in a later transaction; recall never waits."""

        def add(tx: Transaction, ids: list[str]) -> None:
            tx.executemany(
                "UPDATE memories SET access_count = access_count + ?, last_accessed = "
                "CASE WHEN last_accessed IS NULL OR last_accessed < ? THEN ? "
                "ELSE last_accessed END WHERE id = ?",
                [(counts[id_], last[id_], last[id_], id_) for id_ in ids],
            )

        update_rows(self._db, "id", list(counts), add)


def _insert_row(tx: Transaction, rec: NewRecord, now: str | None) -> None:
    tx.execute(
        "INSERT INTO memories (id, tenant_id, user_id, agent_id, session_id, kind, "
        "memory_type, scope, role, content, content_hash, source_ref, metadata, "
        "importance, event_time, created_at, updated_at, partition, dedup_key, "
        "vec_pending, topic_key, tier) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            rec.id,
            rec.tenant_id,
            rec.user_id,
            rec.agent_id,
            rec.session_id,
            rec.kind,
            rec.memory_type,
            rec.scope,
            rec.role,
            rec.content,
            rec.content_hash,
            rec.source_ref,
            json.dumps(rec.metadata, ensure_ascii=False),
            rec.importance,
            iso(rec.event_time) or now,
            now,
            now,
            rec.partition,
            rec.dedup_key,
            VEC_PENDING if rec.vectorize else VEC_SKIP,
            rec.topic_key,
            rec.tier,
        ),
    )
