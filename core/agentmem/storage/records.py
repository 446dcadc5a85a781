"""The system of record: every memory row lives in the records store first.

Both search indexes (Tantivy keywords, Chroma vectors) are derived from these rows and can be
rebuilt from them. A write is acknowledged only after its transaction commits; the rows carry
their own index state, so a background indexer, or a restart after a crash, knows what is
left to do (:mod:`agentmem.storage.index_queue`).

:class:`RecordStore` is the only way into the SQL: the ``memories`` table (with its payloads
and vector partitions) through its own methods, the other tables through its attributes
(:attr:`~RecordStore.sessions`, :attr:`~RecordStore.working`, :attr:`~RecordStore.agent_state`,
:attr:`~RecordStore.meta`, :attr:`~RecordStore.ingest_log`, :attr:`~RecordStore.index`,
:attr:`~RecordStore.api_keys`, :attr:`~RecordStore.activity`,
:attr:`~RecordStore.browse`).
Feature code calls these named operations and never writes SQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..models import MESSAGE_KINDS
from .activity import ActivityLog
from .agent_state import AgentStateTable
from .browse import BrowseReads
from .database import Database, Transaction, chunks, marks
from .erasure import ErasureStore
from .index_queue import IndexQueue
from .keys import ApiKeyTable
from .meta import IngestLog, MetaTable
from .postgres import PostgresDatabase
from .rows import (
    BRIEF_COLUMNS,
    COLUMNS,
    LIVE,
    VEC_PENDING,
    VEC_SKIP,
    Brief,
    NewRecord,
    Row,
    StoredRecord,
    iso,
    now_utc,
    row_to_item,
    vectorized,
)
from .schema import MIGRATIONS, POSTGRES_MIGRATIONS
from .sessions import SessionTable, WorkingStateTable
from .sources import SourceLinks, link, unlink
from .write_locks import insert_keys, update_rows

#: Marks an anonymized row's source_ref; its partition label becomes ANONYMIZED_PARTITION
#: once the indexer has removed its index entries.
ANONYMIZED_SUFFIX = "|anonymized"
ANONYMIZED_PARTITION = "anonymized"
REDACTED = "[REDACTED]"


@dataclass(frozen=True, slots=True)
class JudgeRow:
    """A memory waiting for the supersession judge (``judged_at`` not set)."""

    seq: int
    id: str
    tenant_id: str
    partition: str
    scope: str
    user_id: str | None
    agent_id: str | None
    memory_type: str | None
    kind: str
    live: bool


@dataclass(frozen=True, slots=True)
class RecordCounts:
    """Row counts of the whole store (``agentmem stats``)."""

    live: int
    deleted: int
    superseded: int
    tenants: int
    by_kind: dict[str, int]


def _audit(
    tx: Transaction, at: str | None, event: str, tenant: str, memory_id: str, **d: Any
) -> None:
    tx.execute(
        "INSERT INTO audit_log (at, event, tenant_id, memory_id, detail) VALUES (?,?,?,?,?)",
        (at, event, tenant, memory_id, json.dumps(d)),
    )


class RecordStore:
    """The records store of one data dir (SQLite, WAL), or of a cluster (PostgreSQL), with
    versioned migrations.

    Args:
        path: The SQLite file (unused with ``url``).
        durable: ``synchronous=FULL`` instead of ``NORMAL`` (see
            :attr:`~agentmem.config.MemoryConfig.durable_writes`); a Postgres commit is
            durable as the server is configured.
        read_only: Open for reading only (no migration, no writes), e.g. for
            ``agentmem stats`` beside a running process.
        url: A ``postgresql://`` URL: the records live in that database, shared by every
            node opened on it.
        node_id: This node's name in the Postgres store's index progress.

    Example:
        >>> store = RecordStore(tmp_path / "records.sqlite3")  # doctest: +SKIP
        >>> store.insert([new_record])  # doctest: +SKIP
        [('3f2a...', True)]
    """

    def __init__(
        self,
        path: Path,
        *,
        durable: bool = False,
        read_only: bool = False,
        url: str | None = None,
        node_id: str | None = None,
    ) -> None:
        self.db: Database
        if url is not None:
            self.db = PostgresDatabase(url, read_only=read_only)
            migrations = POSTGRES_MIGRATIONS
        else:
            self.db = Database(path, durable=durable, read_only=read_only)
            migrations = MIGRATIONS
        self.path = self.db.path
        try:
            self.db.migrate(migrations)
            self.index = IndexQueue(self.db, node_id)
        except BaseException:
            self.db.close()
            raise
        self.sessions = SessionTable(self.db)
        self.working = WorkingStateTable(self.db)
        self.agent_state = AgentStateTable(self.db)
        self.meta = MetaTable(self.db)
        self.ingest_log = IngestLog(self.db)
        self.api_keys = ApiKeyTable(self.db)
        self.activity = ActivityLog(self.db)
        self.sources = SourceLinks(self.db)
        self.erasure = ErasureStore(self.db)
        self.browse = BrowseReads(self.db)

    # -- raw access, for diagnostics and tests ---------------------------------------------
    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a raw query. Feature code uses the named methods instead."""
        return self.db.read(sql, params)

    def write(self) -> Any:
        """A raw write transaction (context manager). Feature code uses the named methods."""
        return self.db.write()

    def count(self, where: str = "1=1", params: Sequence[Any] = ()) -> int:
        """Rows of ``memories`` matching a raw condition (diagnostics and tests)."""
        return int(self.db.read(f"SELECT COUNT(*) FROM memories WHERE {where}", params)[0][0])

    def schema_version(self) -> int:
        return self.db.schema_version()

    def reclaim(self) -> bool:
        """Rewrite the records file and empty its WAL, so no copy of deleted content stays in
        either (after an erasure); False when readers kept the WAL from being emptied."""
        return self.db.reclaim(vacuum=True)

    def close(self) -> None:
        self.db.close()

    @property
    def location(self) -> str:
        """Where the records are, for messages: the SQLite file, or the Postgres URL without
        its password."""
        return self.db.url_redacted if isinstance(self.db, PostgresDatabase) else str(self.path)

    @property
    def shared(self) -> bool:
        """True when other nodes may write to these records too (Postgres)."""
        return isinstance(self.db, PostgresDatabase)

    def on_change(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` when another node changes indexed rows (Postgres ``LISTEN``; on
        SQLite this process is the only writer, so there is nothing to hear)."""
        if isinstance(self.db, PostgresDatabase):
            self.db.listen(wake)

    # -- inserts and deletes -----------------------------------------------------------------
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
        with self.db.write(keys=insert_keys(records)) as tx:
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
            _retire_sources(tx, rec.tenant_id, old_id, rec.id)
            _audit(tx, now, "memory.supersede", rec.tenant_id, old_id, by=rec.id)

    def soft_delete(self, tenant_id: str, memory_id: str) -> bool:
        """Retire one live row (its index entries are removed by the indexer)."""
        return self.soft_delete_many(tenant_id, [memory_id]) > 0

    def soft_delete_many(self, tenant_id: str, ids: Sequence[str]) -> int:
        """Retire live rows of ``tenant_id`` among ``ids`` in one transaction; how many."""
        now = iso(now_utc())
        done = 0
        with self.db.write() as tx:
            for memory_id in ids:
                cur = tx.execute(
                    f"UPDATE memories SET deleted_at = ?, updated_at = ?, dedup_key = NULL, "
                    f"kw_pending = 1, vec_pending = CASE WHEN vec_pending = {VEC_SKIP} THEN "
                    f"{VEC_SKIP} ELSE {VEC_PENDING} END "
                    f"WHERE id = ? AND tenant_id = ? AND {LIVE}",
                    (now, now, memory_id, tenant_id),
                )
                if cur.rowcount:
                    _audit(tx, now, "memory.delete", tenant_id, memory_id)
                    done += 1
        return done

    def tombstone(
        self,
        tenant_id: str,
        ids: Sequence[str],
        *,
        cause: str | None = None,
        conversations: Sequence[tuple[str, str]] = (),
    ) -> list[str]:
        """Forget rows of ``tenant_id`` among ``ids`` in one transaction; the ids done.

        A forgotten row becomes a tombstone: it keeps its ids (row, tenant, owner, session),
        kind, scope, partition, tier and times, for audit; its content, hash, metadata,
        role, type, keys and importance are cleared, its full-text payload and its source
        links are deleted, and both index entries are queued for removal (the caller
        removes them at once with :meth:`~agentmem.write.indexer.Indexer.sync`). Rows
        already forgotten or anonymized are skipped. ``cause`` (the id whose forgetting
        reached these rows) goes into the audit entry. The working-memory state of
        ``conversations`` ((partition, session) pairs) changes version in the same
        transaction, so a compaction that read a forgotten message before cannot save a
        summary of it.
        """
        now = iso(now_utc())
        done: list[str] = []
        with self.db.write() as tx:
            for memory_id in ids:
                cur = tx.execute(
                    "UPDATE memories SET content = '', content_hash = '', metadata = '{}', "
                    "role = NULL, memory_type = NULL, source_ref = NULL, topic_key = NULL, "
                    "dedup_key = NULL, importance = NULL, embed_error = NULL, kw_terms = NULL, "
                    "kw_term_count = NULL, content_tokens = NULL, "
                    "deleted_at = COALESCE(deleted_at, ?), forgotten_at = ?, updated_at = ?, "
                    f"kw_pending = 1, vec_pending = CASE WHEN vec_pending = {VEC_SKIP} "
                    f"THEN {VEC_SKIP} ELSE {VEC_PENDING} END "
                    "WHERE id = ? AND tenant_id = ? AND forgotten_at IS NULL "
                    "AND anonymized_at IS NULL",
                    (now, now, now, memory_id, tenant_id),
                )
                if not cur.rowcount:
                    continue
                tx.execute("DELETE FROM payloads WHERE memory_id = ?", (memory_id,))
                detail = {} if cause is None or cause == memory_id else {"via": cause}
                _audit(tx, now, "memory.forget", tenant_id, memory_id, **detail)
                done.append(memory_id)
            unlink(tx, done)
            for partition, session_id in conversations:
                tx.execute(
                    "UPDATE working_state SET version = version + 1 WHERE tenant_id = ? "
                    "AND partition = ? AND session_id = ?",
                    (tenant_id, partition, session_id),
                )
        return done

    def following_messages(
        self, tenant_id: str, partition: str, session_id: str, seq: int, n: int
    ) -> list[str]:
        """Ids of up to ``n`` live chat messages after ``seq`` in a session, oldest first
        (the messages whose index entries carry the one at ``seq`` as context)."""
        rows = self.db.read(
            f"SELECT id FROM memories WHERE tenant_id = ? AND session_id = ? AND partition = ? "
            f"AND kind = 'chat_message' AND tier IS NULL AND {LIVE} AND seq > ? "
            f"ORDER BY seq LIMIT ?",
            (tenant_id, session_id, partition, seq, n),
        )
        return [r[0] for r in rows]

    def register_partition(self, tenant_id: str, partition: str, collection: str) -> None:
        with self.db.write(keys=()) as tx:  # one idempotent insert
            tx.execute(
                "INSERT INTO partitions (tenant_id, partition, collection) VALUES (?,?,?) "
                "ON CONFLICT DO NOTHING",
                (tenant_id, partition, collection),
            )

    # -- reads by id ---------------------------------------------------------------------------
    def get(self, memory_id: str) -> Row | None:
        rows = self.db.read(f"SELECT {COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        return row_to_item(rows[0]) if rows else None

    def get_many(self, tenant_id: str, ids: Sequence[str], *, live_only: bool = True) -> list[Row]:
        """Rows of ``tenant_id`` among ``ids`` (unordered); anonymized rows never."""
        out: list[Row] = []
        live = f" AND {LIVE}" if live_only else " AND anonymized_at IS NULL"
        for chunk in chunks(ids):
            rows = self.db.read(
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
            rows = self.db.read(
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
            rows = self.db.read(f"SELECT id FROM memories WHERE id IN ({marks(len(chunk))})", chunk)
            found.update(r[0] for r in rows)
        return found

    def seqs(self, ids: Sequence[str]) -> dict[str, int]:
        """Insertion order (``seq``) of the stored rows among ``ids``."""
        out: dict[str, int] = {}
        for chunk in chunks(ids):
            for id_, seq in self.db.read(
                f"SELECT id, seq FROM memories WHERE id IN ({marks(len(chunk))})", chunk
            ):
                out[id_] = int(seq)
        return out

    def payload(self, tenant_id: str, key: str) -> tuple[str, str] | None:
        """(memory_id, full content) stored under ``key`` for this tenant."""
        rows = self.db.read(
            "SELECT memory_id, content FROM payloads WHERE tenant_id = ? AND key = ?",
            (tenant_id, key),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    # -- reads by owner ------------------------------------------------------------------------
    def session_items(
        self,
        tenant_id: str,
        partition: str,
        session_id: str,
        *,
        limit: int | None = None,
        kinds: Sequence[str] = MESSAGE_KINDS,
    ) -> list[tuple[int, Row]]:
        """(seq, row) of a session's live rows of ``kinds``, oldest first (the last ``limit``)."""
        sql = (
            f"SELECT seq, {COLUMNS} FROM memories WHERE tenant_id = ? AND partition = ? "
            f"AND session_id = ? AND scope = 'session' AND kind IN ({marks(len(kinds))}) "
            f"AND {LIVE} ORDER BY seq DESC"
        )
        params: list[Any] = [tenant_id, partition, session_id, *kinds]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self.db.read(sql, params)
        return [(int(r[0]), row_to_item(r[1:])) for r in reversed(rows)]

    def conversation_sessions(self, tenant_id: str, partition: str | None) -> list[str]:
        """Session ids with live messages in a conversation partition, oldest first.

        ``partition`` None means the sessions bound with neither user nor agent (each its own
        ``conv:s:<session>`` partition).
        """
        where = (
            f"tenant_id = ? AND scope = 'session' AND kind IN ({marks(len(MESSAGE_KINDS))}) "
            f"AND {LIVE} AND session_id IS NOT NULL AND tier IS NULL"
        )
        params: list[Any] = [tenant_id, *MESSAGE_KINDS]
        if partition is None:
            where += " AND partition = 'conv:s:' || session_id"
        else:
            where += " AND partition = ?"
            params.append(partition)
        rows = self.db.read(
            f"SELECT session_id FROM memories WHERE {where} GROUP BY session_id ORDER BY MIN(seq)",
            params,
        )
        return [str(r[0]) for r in rows]

    def preceding_messages(
        self, tenant_id: str, session_id: str, partition: str, memory_id: str, n: int
    ) -> list[Row]:
        """Up to ``n`` live chat messages before ``memory_id`` in its session, oldest first."""
        rows = self.db.read(
            f"SELECT {COLUMNS} FROM memories WHERE tenant_id = ? AND session_id = ? "
            f"AND partition = ? AND kind = 'chat_message' AND tier IS NULL AND {LIVE} "
            f"AND seq < (SELECT seq FROM memories WHERE id = ?) ORDER BY seq DESC LIMIT ?",
            (tenant_id, session_id, partition, memory_id, n),
        )
        return [row_to_item(r) for r in reversed(rows)]

    def document_chunk_ids(self, tenant_id: str, source_ref: str) -> list[str]:
        """Live document chunks stored under ``source_ref``."""
        rows = self.db.read(
            f"SELECT id FROM memories WHERE tenant_id = ? AND source_ref = ? AND "
            f"kind = 'document_chunk' AND {LIVE}",
            (tenant_id, source_ref),
        )
        return [r[0] for r in rows]

    def topic_ids(self, tenant_id: str, partition: str, topic_key: str, scope: str) -> list[str]:
        """Live, not superseded rows of a partition with ``topic_key``, oldest first."""
        rows = self.db.read(
            f"SELECT id FROM memories WHERE tenant_id = ? AND partition = ? AND topic_key = ? "
            f"AND scope = ? AND superseded_by IS NULL AND {LIVE} ORDER BY seq",
            (tenant_id, partition, topic_key, scope),
        )
        return [r[0] for r in rows]

    def superseded_hashes(
        self, tenant_id: str, partition: str, session_id: str | None, hashes: Sequence[str]
    ) -> set[tuple[str, str]]:
        """(memory_type, content_hash) of the live memories of a partition (of one session
        for a session's memories) that a newer one superseded, among ``hashes``. Superseding
        clears a row's dedup key, so only this finds that its text was stored before."""
        if not hashes:
            return set()
        marks = ",".join("?" for _ in hashes)
        session = "session_id IS NULL" if session_id is None else "session_id = ?"
        params: list[Any] = [tenant_id, partition, *([session_id] if session_id else []), *hashes]
        rows = self.db.read(
            f"SELECT memory_type, content_hash FROM memories WHERE tenant_id = ? AND "
            f"partition = ? AND {session} AND kind = 'memory' AND superseded_by IS NOT NULL "
            f"AND {LIVE} AND content_hash IN ({marks})",
            params,
        )
        return {(str(r[0]), str(r[1])) for r in rows}

    def current_ids(
        self, tenant_id: str, partition: str, scope: str, *, agent_id: str | None = None
    ) -> list[str]:
        """Live, not superseded rows of a partition and scope (one agent's), oldest first."""
        sql = (
            f"SELECT id FROM memories WHERE tenant_id = ? AND partition = ? AND scope = ? "
            f"AND superseded_by IS NULL AND {LIVE}"
        )
        params: list[Any] = [tenant_id, partition, scope]
        if agent_id is not None:
            sql += " AND agent_id = ?"
            params.append(agent_id)
        return [r[0] for r in self.db.read(sql + " ORDER BY seq", params)]

    def superseded_by(self, new_id: str) -> list[str]:
        """Ids of the rows ``new_id`` superseded, newest first."""
        rows = self.db.read(
            "SELECT id FROM memories WHERE superseded_by = ? ORDER BY seq DESC", (new_id,)
        )
        return [r[0] for r in rows]

    def count_superseded_by(self, tenant_id: str, new_ids: Sequence[str]) -> int:
        """Memories retired by any of ``new_ids``."""
        total = 0
        for chunk in chunks(new_ids):
            rows = self.db.read(
                f"SELECT COUNT(*) FROM memories WHERE tenant_id = ? AND kind = 'memory' "
                f"AND superseded_by IN ({marks(len(chunk))})",
                (tenant_id, *chunk),
            )
            total += int(rows[0][0])
        return total

    def memory_neighbours(self, tenant_id: str, memory_id: str) -> list[str]:
        """Memories ``memory_id`` superseded (one step back along a supersession chain)."""
        rows = self.db.read(
            "SELECT id FROM memories WHERE tenant_id = ? AND superseded_by = ? AND kind = 'memory'",
            (tenant_id, memory_id),
        )
        return [r[0] for r in rows]

    def outdated_message_ids(self, tenant_id: str, message_ids: Sequence[str]) -> set[str]:
        """Chat messages among ``message_ids`` from which a now superseded memory was
        extracted (its ``source_message_ids``)."""
        if not message_ids:
            return set()
        if self.db.dialect == "postgres":
            each = (
                "jsonb_array_elements_text(CASE WHEN jsonb_typeof(mem.metadata::jsonb "
                "-> 'source_message_ids') = 'array' THEN mem.metadata::jsonb "
                "-> 'source_message_ids' ELSE '[]'::jsonb END) AS s(value)"
            )
        else:
            each = "json_each(mem.metadata, '$.source_message_ids') AS s"
        rows = self.db.read(
            "SELECT s.value, MAX(CASE WHEN mem.superseded_by IS NOT NULL THEN 1 ELSE 0 END) "
            f"FROM memories AS mem, {each} "
            f"WHERE mem.tenant_id = ? AND mem.kind = 'memory' AND s.value IN "
            f"({marks(len(message_ids))}) AND mem.deleted_at IS NULL AND "
            "mem.anonymized_at IS NULL GROUP BY s.value",
            (tenant_id, *message_ids),
        )
        return {r[0] for r in rows if r[1]}

    def topic_keys(self, tenant_id: str | None = None) -> dict[str, str]:
        """id -> topic key of live rows that have one (export keeps supersession keys)."""
        sql = f"SELECT id, topic_key FROM memories WHERE topic_key IS NOT NULL AND {LIVE}"
        params: tuple[Any, ...] = ()
        if tenant_id is not None:
            sql += " AND tenant_id = ?"
            params = (tenant_id,)
        return {r[0]: r[1] for r in self.db.read(sql, params)}

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
            rows = self.db.read(
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
            rows = self.db.read(
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
        with self.db.write() as tx:
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
            for k, n in self.db.read(
                f"SELECT kind, COUNT(*) FROM memories WHERE {LIVE}{mine} GROUP BY kind", params
            )
        }
        return RecordCounts(
            live=self.count(f"{LIVE}{mine}", params),
            deleted=self.count(f"deleted_at IS NOT NULL{mine}", params),
            superseded=self.count(f"superseded_by IS NOT NULL{mine}", params),
            tenants=int(
                self.db.read(
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
        rows = self.db.read(
            "SELECT EXISTS (SELECT 1 FROM memories) OR EXISTS (SELECT 1 FROM erasures)"
        )
        return bool(rows[0][0])

    def requeue_vectors(self, *, meta: Mapping[str, str | None] | None = None) -> None:
        """Flag every embeddable row for the vector index (its vectors were dropped), and
        set (or, for None, delete) ``meta`` keys in the same transaction."""
        with self.db.write() as tx:
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

    # -- vector partitions -----------------------------------------------------------------------
    def collection_for(self, tenant_id: str, partition: str) -> str | None:
        rows = self.db.read(
            "SELECT collection FROM partitions WHERE tenant_id = ? AND partition = ?",
            (tenant_id, partition),
        )
        return rows[0][0] if rows else None

    def partitions(self) -> list[tuple[str, str, str]]:
        """(tenant, partition, collection) of every partition that ever held vectors."""
        return [
            (r[0], r[1], r[2])
            for r in self.db.read("SELECT tenant_id, partition, collection FROM partitions")
        ]

    # -- session tiers ------------------------------------------------------------------------
    def derived_ids(
        self, tenant_id: str, partition: str, session_id: str, *, kind: str, live: bool = True
    ) -> tuple[str, ...]:
        """Tiered rows (session chunks or summaries) of a session in ``partition``: the live
        ones, or with ``live=False`` every one that still has content (retired ones too)."""
        state = LIVE if live else "forgotten_at IS NULL AND anonymized_at IS NULL"
        rows = self.db.read(
            f"SELECT id FROM memories WHERE tenant_id = ? AND partition = ? AND kind = ? "
            f"AND session_id = ? AND tier IS NOT NULL AND {state} ORDER BY seq",
            (tenant_id, partition, kind, session_id),
        )
        return tuple(r[0] for r in rows)

    def promote_session(
        self,
        tenant_id: str,
        partition: str,
        session_id: str,
        *,
        moves: Sequence[tuple[str, str, str, str | None]],
        summary_ids: Sequence[str] | None,
        summarizer: str | None,
    ) -> None:
        """Move a session to long-term in one transaction.

        ``moves`` are (partition, from tier, to tier, kind or None) steps applied to the
        session's live rows: their tier column and ``metadata["tier"]`` change and they are
        queued for the vector index (which embeds or drops them by tier). The session's
        ``sessions`` row becomes long-term (with ``summary_ids`` written by the promotion, if
        any).
        """
        now = iso(now_utc())
        with self.db.write() as tx:
            for part, old_tier, new_tier, kind in moves:
                sql = (
                    f"SELECT id, metadata FROM memories WHERE tenant_id = ? AND partition = ? "
                    f"AND session_id = ? AND tier = ? AND {LIVE}"
                )
                params: list[Any] = [tenant_id, part, session_id, old_tier]
                if kind is not None:
                    sql += " AND kind = ?"
                    params.append(kind)
                label = "long_term" if new_tier.startswith("long_term") else new_tier
                for id_, meta in tx.execute(sql, params).fetchall():
                    data = json.loads(meta)
                    data["tier"] = label
                    tx.execute(
                        f"UPDATE memories SET tier = ?, vec_pending = {VEC_PENDING}, "
                        f"updated_at = ?, metadata = ? WHERE id = ?",
                        (new_tier, now, json.dumps(data, ensure_ascii=False), id_),
                    )
            self.sessions.promote(
                tx, tenant_id, partition, session_id, now, summary_ids, summarizer
            )

    # -- supersession judge ----------------------------------------------------------------------
    _JUDGE_COLS = (
        "seq, id, tenant_id, partition, scope, user_id, agent_id, memory_type, kind, "
        f"(superseded_by IS NULL AND {LIVE})"
    )

    def unjudged(self, *, ids: Sequence[str] | None = None, limit: int) -> list[JudgeRow]:
        """Memories not judged yet, oldest first: the first ``limit``, or those among ``ids``."""
        if ids is None:
            rows = self.db.read(
                f"SELECT {self._JUDGE_COLS} FROM memories WHERE judged_at IS NULL AND "
                f"kind = 'memory' ORDER BY seq LIMIT ?",
                (limit,),
            )
        else:
            rows = []
            for chunk in chunks(ids):
                rows.extend(
                    self.db.read(
                        f"SELECT {self._JUDGE_COLS} FROM memories WHERE judged_at IS NULL AND "
                        f"id IN ({marks(len(chunk))})",
                        chunk,
                    )
                )
            rows.sort(key=lambda r: r[0])
            rows = rows[:limit]
        return [_judge_row(r) for r in rows]

    def unembedded_older(self, row: JudgeRow, memory_types: Sequence[str], limit: int) -> list[str]:
        """Older live memories of ``row``'s bucket whose vectors are not written yet."""
        rows = self.db.read(
            f"SELECT id FROM memories WHERE tenant_id = ? AND partition = ? AND kind = 'memory' "
            f"AND memory_type IN ({marks(len(memory_types))}) AND seq < ? "
            f"AND superseded_by IS NULL AND {LIVE} AND vec_pending IN (1, 2) "
            f"ORDER BY seq DESC LIMIT ?",
            (row.tenant_id, row.partition, *memory_types, row.seq, limit),
        )
        return [r[0] for r in rows]

    def older_in_bucket(
        self, row: JudgeRow, ids: Sequence[str], memory_types: Sequence[str]
    ) -> list[tuple[str, str]]:
        """(id, content) of the ids that are older live memories of ``row``'s exact bucket
        (tenant, partition, scope, user, agent) and of ``memory_types``."""
        out: list[tuple[str, str]] = []
        for chunk in chunks(ids):
            rows = self.db.read(
                f"SELECT id, content FROM memories WHERE id IN ({marks(len(chunk))}) "
                f"AND tenant_id = ? AND partition = ? AND scope = ? AND user_id IS ? "
                f"AND agent_id IS ? AND kind = 'memory' "
                f"AND memory_type IN ({marks(len(memory_types))}) AND seq < ? "
                f"AND superseded_by IS NULL AND {LIVE}",
                (
                    *chunk,
                    row.tenant_id,
                    row.partition,
                    row.scope,
                    row.user_id,
                    row.agent_id,
                    *memory_types,
                    row.seq,
                ),
            )
            out.extend((r[0], r[1]) for r in rows)
        return out

    def apply_judgement(self, row: JudgeRow, retire: Sequence[str], judge: str) -> list[str]:
        """Retire ``retire`` in favour of ``row`` (if both are still live) and mark ``row``
        judged, in one transaction; returns the ids retired.

        On Postgres the judged row is locked first (``FOR UPDATE``), so a write superseding
        it meanwhile waits, or is seen; each retirement is a guarded single-row update.
        """
        now = iso(now_utc())
        done: list[str] = []
        lock = " FOR UPDATE" if self.db.dialect == "postgres" else ""
        with self.db.write(keys=()) as tx:
            alive = tx.execute(
                f"SELECT 1 FROM memories WHERE id = ? AND superseded_by IS NULL AND {LIVE}{lock}",
                (row.id,),
            ).fetchone()
            for old in retire if alive else ():
                cur = tx.execute(
                    f"UPDATE memories SET superseded_by = ?, updated_at = ?, dedup_key = NULL "
                    f"WHERE id = ? AND tenant_id = ? AND partition = ? "
                    f"AND superseded_by IS NULL AND {LIVE}",
                    (row.id, now, old, row.tenant_id, row.partition),
                )
                if cur.rowcount:
                    _retire_sources(tx, row.tenant_id, old, row.id)
                    _audit(
                        tx,
                        now,
                        "memory.supersede",
                        row.tenant_id,
                        old,
                        by=row.id,
                        via="judge",
                        judge=judge,
                    )
                    done.append(old)
            tx.execute("UPDATE memories SET judged_at = ? WHERE id = ?", (now, row.id))
        return done

    # -- access counts ---------------------------------------------------------------------------
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

        update_rows(self.db, "id", list(counts), add)

    # -- retention ------------------------------------------------------------------------------
    def retired(
        self,
        *,
        deleted_before: str,
        superseded_before: str,
        tenant_id: str | None,
        after_seq: int,
        limit: int,
    ) -> list[tuple[int, str, str, str]]:
        """(seq, id, tenant, reason) of retired rows past their TTLs, not anonymized yet.

        ``reason`` is ``soft_deleted`` (deleted before ``deleted_before``) or ``superseded``
        (a memory superseded before ``superseded_before``).
        """
        where = (
            "anonymized_at IS NULL AND forgotten_at IS NULL AND "
            "((deleted_at IS NOT NULL AND deleted_at < ?) OR "
            "(deleted_at IS NULL AND superseded_by IS NOT NULL AND kind = 'memory' "
            "AND updated_at < ?))"
        )
        params: list[Any] = [deleted_before, superseded_before]
        if tenant_id is not None:
            where += " AND tenant_id = ?"
            params.append(tenant_id)
        rows = self.db.read(
            f"SELECT seq, id, tenant_id, deleted_at IS NOT NULL FROM memories "
            f"WHERE seq > ? AND {where} ORDER BY seq LIMIT ?",
            (after_seq, *params, limit),
        )
        return [(int(r[0]), r[1], r[2], "soft_deleted" if r[3] else "superseded") for r in rows]

    def anonymize(self, batch: Sequence[tuple[str, str, str]], now: str) -> None:
        """Anonymize (id, tenant, reason) rows: content redacted, identity, metadata and
        payloads cleared, index entries queued for removal; an audit entry each."""
        with self.db.write() as tx:
            for id_, tenant, reason in batch:
                cur = tx.execute(
                    "UPDATE memories SET content = ?, content_hash = '', user_id = NULL, "
                    "agent_id = NULL, session_id = NULL, metadata = '{}', topic_key = NULL, "
                    "importance = NULL, dedup_key = NULL, kw_terms = NULL, "
                    "kw_term_count = NULL, content_tokens = NULL, "
                    "source_ref = COALESCE(source_ref, '') || ?, anonymized_at = ?, "
                    "updated_at = ?, embedded = 0, embed_error = NULL, kw_pending = 1, "
                    f"vec_pending = CASE WHEN vec_pending = {VEC_SKIP} THEN {VEC_SKIP} "
                    f"ELSE {VEC_PENDING} END WHERE id = ? AND anonymized_at IS NULL",
                    (REDACTED, ANONYMIZED_SUFFIX, now, now, id_),
                )
                if not cur.rowcount:
                    continue
                tx.execute("DELETE FROM payloads WHERE memory_id = ?", (id_,))
                unlink(tx, [id_])
                _audit(tx, now, "memory.anonymize", tenant, id_, reason=reason)

    def scrub_partitions(self, tenant_id: str | None) -> int:
        """Clear the owner label of anonymized rows whose index entries are already gone."""
        where = (
            "anonymized_at IS NOT NULL AND partition != ? "
            f"AND kw_pending = 0 AND vec_pending IN (0, {VEC_SKIP})"
        )
        params: list[Any] = [ANONYMIZED_PARTITION, ANONYMIZED_PARTITION]
        if tenant_id is not None:
            where += " AND tenant_id = ?"
            params.append(tenant_id)
        with self.db.write() as tx:
            return tx.execute(f"UPDATE memories SET partition = ? WHERE {where}", params).rowcount


def _judge_row(r: Sequence[Any]) -> JudgeRow:
    seq, id_, tenant, partition, scope, user, agent, memory_type, kind, live = r
    return JudgeRow(seq, id_, tenant, partition, scope, user, agent, memory_type, kind, bool(live))


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


def _retire_sources(tx: Transaction, tenant_id: str, old_id: str, new_id: str) -> int:
    """Mark the chat messages a superseded memory was extracted from as superseded too.

    "I live in Berlin" said in a session stays in the transcript (``messages``,
    ``session_detail``, audit recall with ``include_superseded``), but default recall stops
    returning it once the memory derived from it is outdated. Returns how many were marked.
    """
    row = tx.execute(
        "SELECT metadata FROM memories WHERE id = ? AND tenant_id = ?", (old_id, tenant_id)
    ).fetchone()
    if row is None:
        return 0
    sources = json.loads(row[0]).get("source_message_ids")
    if not isinstance(sources, list) or not sources:
        return 0
    ids = [s for s in sources if isinstance(s, str)]
    cur = tx.execute(
        f"UPDATE memories SET superseded_by = ? WHERE +tenant_id = ? AND id IN ({marks(len(ids))}) "
        f"AND kind = 'chat_message' AND superseded_by IS NULL",
        (new_id, tenant_id, *ids),
    )
    return cur.rowcount


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
