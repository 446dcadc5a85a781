"""The system of record: every memory row lives in SQLite first.

Both search indexes (Tantivy keywords, Chroma vectors) are derived from these rows and can be
rebuilt from them. A write is acknowledged only after its transaction commits; the rows carry
their own index state (``kw_pending`` / ``vec_pending``) so a background indexer, or a restart
after a crash, knows what is left to do.

Threading: one write connection guarded by a lock; each reading thread gets its own connection
(WAL mode lets readers run beside the writer).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import StorageError
from .models import MemoryItem

#: Vector index state of a row.
VEC_SYNCED, VEC_PENDING, VEC_FAILED, VEC_SKIP = 0, 1, 2, 3

_MIGRATIONS: list[str] = [
    # 1: initial schema
    """
    CREATE TABLE memories (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        session_id TEXT,
        kind TEXT NOT NULL,
        memory_type TEXT,
        scope TEXT NOT NULL,
        role TEXT,
        content TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        source_ref TEXT,
        topic_key TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        importance REAL,
        event_time TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        access_count INTEGER NOT NULL DEFAULT 0,
        last_accessed TEXT,
        superseded_by TEXT,
        deleted_at TEXT,
        anonymized_at TEXT,
        partition TEXT NOT NULL,
        dedup_key TEXT UNIQUE,
        keyword_indexed INTEGER NOT NULL DEFAULT 0,
        embedded INTEGER NOT NULL DEFAULT 0,
        kw_pending INTEGER NOT NULL DEFAULT 1,
        vec_pending INTEGER NOT NULL DEFAULT 1,
        embed_attempts INTEGER NOT NULL DEFAULT 0,
        embed_error TEXT
    );
    CREATE INDEX memories_tenant_partition ON memories (tenant_id, partition);
    CREATE INDEX memories_session ON memories (tenant_id, session_id, seq);
    CREATE INDEX memories_source_ref ON memories (tenant_id, source_ref);
    CREATE INDEX memories_topic ON memories (tenant_id, partition, topic_key)
        WHERE topic_key IS NOT NULL;
    CREATE INDEX memories_kw_pending ON memories (seq) WHERE kw_pending = 1;
    CREATE INDEX memories_vec_pending ON memories (partition, seq) WHERE vec_pending != 0;
    CREATE TABLE payloads (
        key TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        content TEXT NOT NULL
    );
    CREATE TABLE partitions (
        tenant_id TEXT NOT NULL,
        partition TEXT NOT NULL,
        collection TEXT NOT NULL UNIQUE,
        PRIMARY KEY (tenant_id, partition)
    );
    CREATE TABLE audit_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        event TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        memory_id TEXT,
        detail TEXT NOT NULL DEFAULT '{}'
    );
    CREATE TABLE agent_state (
        tenant_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, agent_id, key)
    );
    """,
    # 2: derived memories (issue 3): judge bookkeeping and which messages were extracted
    """
    ALTER TABLE memories ADD COLUMN judged_at TEXT;
    CREATE INDEX memories_judge_pending ON memories (seq)
        WHERE judged_at IS NULL AND kind = 'memory';
    CREATE INDEX memories_superseded_by ON memories (superseded_by)
        WHERE superseded_by IS NOT NULL;
    CREATE TABLE ingest_log (
        tenant_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        extractor TEXT NOT NULL,
        extracted_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, message_id)
    );
    """,
    # 3: tiers (issue 3): tier of session-derived rows, closed sessions, working-memory state
    """
    ALTER TABLE memories ADD COLUMN tier TEXT;
    CREATE INDEX memories_tier ON memories (tenant_id, partition, session_id, tier)
        WHERE tier IS NOT NULL;
    CREATE TABLE sessions (
        tenant_id TEXT NOT NULL,
        partition TEXT NOT NULL,
        session_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        status TEXT NOT NULL DEFAULT 'closed',
        tier TEXT NOT NULL,
        close_order INTEGER NOT NULL,
        closed_at TEXT NOT NULL,
        promoted_at TEXT,
        last_seq INTEGER NOT NULL,
        message_count INTEGER NOT NULL,
        chunk_count INTEGER NOT NULL,
        summary_status TEXT NOT NULL,
        summarizer TEXT,
        summary_ids TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (tenant_id, partition, session_id)
    );
    CREATE INDEX sessions_order ON sessions (tenant_id, partition, tier, close_order);
    CREATE TABLE working_state (
        tenant_id TEXT NOT NULL,
        partition TEXT NOT NULL,
        session_id TEXT NOT NULL,
        summary TEXT NOT NULL,
        boundary_seq INTEGER NOT NULL DEFAULT 0,
        held TEXT NOT NULL DEFAULT '[]',
        version INTEGER NOT NULL DEFAULT 0,
        compactions INTEGER NOT NULL DEFAULT 0,
        trips INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, partition, session_id)
    );
    """,
    # 4: indexes for the hot "what is left to embed" queries (exact partial-index predicates)
    """
    CREATE INDEX memories_vec_todo ON memories (seq) WHERE vec_pending IN (1, 2);
    CREATE INDEX memories_vec_todo_partition ON memories (partition, seq)
        WHERE vec_pending IN (1, 2);
    DROP INDEX memories_vec_pending;
    """,
    # 5: settings of the data dir itself, e.g. the fingerprint of the embedder of its vectors
    """
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
]

_COLUMNS = (
    "id, tenant_id, user_id, agent_id, session_id, kind, memory_type, scope, role, content, "
    "content_hash, source_ref, metadata, importance, event_time, created_at, updated_at, "
    "access_count, last_accessed, superseded_by, deleted_at, anonymized_at, keyword_indexed, "
    "embedded, partition, tier"
)

#: SQLite page cache per connection, in KiB.
CACHE_KIB = 32768

LIVE = "deleted_at IS NULL AND anonymized_at IS NULL"
#: Rows that belong in the vector index: live, and not a long-term detail chunk (issue 3 tiers:
#: those stay keyword-searchable but leave the vector index; the indexer deletes their vectors).
VECTOR_LIVE = f"{LIVE} AND COALESCE(tier, '') != 'long_term_detail'"


def now_utc() -> datetime:
    return datetime.now(UTC)


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat(timespec="microseconds")


def _dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def retire_sources(conn: sqlite3.Connection, tenant_id: str, old_id: str, new_id: str) -> int:
    """Mark the chat messages a superseded memory was extracted from as superseded too.

    "I live in Berlin" said in a session stays in the transcript (``messages``,
    ``session_detail``, audit recall with ``include_superseded``), but default recall stops
    returning it once the memory derived from it is outdated. Returns how many were marked.
    """
    row = conn.execute(
        "SELECT metadata FROM memories WHERE id = ? AND tenant_id = ?", (old_id, tenant_id)
    ).fetchone()
    if row is None:
        return 0
    sources = json.loads(row[0]).get("source_message_ids")
    if not isinstance(sources, list) or not sources:
        return 0
    ids = [s for s in sources if isinstance(s, str)]
    marks = ",".join("?" * len(ids))
    cur = conn.execute(
        f"UPDATE memories SET superseded_by = ? WHERE +tenant_id = ? AND id IN ({marks}) "
        f"AND kind = 'chat_message' AND superseded_by IS NULL",
        (new_id, tenant_id, *ids),
    )
    return cur.rowcount


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


_BRIEF_COLUMNS = (
    "id, tenant_id, user_id, agent_id, session_id, kind, memory_type, scope, superseded_by, "
    "partition, tier, content, metadata, source_ref, event_time, seq"
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
        speaker = self.metadata.get("speaker")
        return speaker if isinstance(speaker, str) and speaker.strip() else None

    @property
    def event_time(self) -> datetime:
        return datetime.fromisoformat(self.event_time_iso)


def row_to_item(r: sqlite3.Row | tuple[Any, ...]) -> Row:
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


class RecordStore:
    """SQLite records store (WAL mode, versioned migrations).

    Example:
        >>> store = RecordStore(tmp_path / "records.sqlite3")  # doctest: +SKIP
    """

    def __init__(self, path: Path, *, durable: bool = True) -> None:
        self.path = path
        self._sync = "FULL" if durable else "NORMAL"
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._all_conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        try:
            self._writer = self._connect()
            self._migrate()
        except sqlite3.Error as exc:
            raise StorageError(
                f"cannot open records store at {path}: {exc}", path=str(path)
            ) from exc

    # -- connections -------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._sync}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        # recall reads ~150 rows by id at random places: keep hot pages in this connection
        conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        with self._conns_lock:
            self._all_conns.append(conn)
        return conn

    def _reader(self) -> sqlite3.Connection:
        if self._closed:
            raise StorageError("records store is closed", path=str(self.path))
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE ... COMMIT) on the single writer connection."""
        if self._closed:
            raise StorageError("records store is closed", path=str(self.path))
        with self._write_lock:
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StorageError(f"records store write failed: {exc}") from exc
                raise

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._reader().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"records store read failed: {exc}") from exc

    def close(self) -> None:
        with self._write_lock:
            self._closed = True
            with self._conns_lock:
                for conn in self._all_conns:
                    with suppress(sqlite3.Error):
                        conn.close()
                self._all_conns.clear()

    def _migrate(self) -> None:
        conn = self._writer
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        current = row[0] or 0
        if current > len(_MIGRATIONS):
            raise StorageError(
                f"records store schema version {current} is newer than this agentmem "
                f"({len(_MIGRATIONS)}); upgrade agentmem",
                path=str(self.path),
            )
        for version in range(current + 1, len(_MIGRATIONS) + 1):
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _MIGRATIONS[version - 1].split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def schema_version(self) -> int:
        return int(self.read("SELECT MAX(version) FROM schema_version")[0][0])

    # -- meta (settings of the data dir) -----------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """The value stored under ``key`` in the meta table, or None."""
        rows = self.read("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    @staticmethod
    def set_meta(conn: sqlite3.Connection, key: str, value: str, *, replace: bool = True) -> bool:
        """Store ``value`` under ``key`` inside the caller's write transaction.

        With ``replace=False`` an existing value is kept. Returns True if a row was written.
        """
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        cur = conn.execute(
            f"{verb} INTO meta (key, value, updated_at) VALUES (?,?,?)",
            (key, value, iso(now_utc())),
        )
        return cur.rowcount > 0

    # -- writes ------------------------------------------------------------------------------
    def insert(self, records: Iterable[NewRecord]) -> list[tuple[str, bool]]:
        """Insert records in one transaction; returns (id, was_new) per record.

        A record whose ``dedup_key`` already exists (live) is not inserted again: its
        existing id comes back with ``was_new=False``.
        """
        now = iso(now_utc())
        out: list[tuple[str, bool]] = []
        with self.write() as conn:
            for rec in records:
                if rec.dedup_key is not None:
                    found = conn.execute(
                        "SELECT id FROM memories WHERE dedup_key = ?", (rec.dedup_key,)
                    ).fetchone()
                    if found is not None:
                        out.append((found[0], False))
                        continue
                conn.execute(
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
                if rec.topic_key is not None:
                    self._supersede_topic(conn, rec, now)
                if rec.payload is not None and rec.payload_key is not None:
                    conn.execute(
                        "INSERT OR REPLACE INTO payloads (key, tenant_id, memory_id, content) "
                        "VALUES (?,?,?,?)",
                        (rec.payload_key, rec.tenant_id, rec.id, rec.payload),
                    )
                out.append((rec.id, True))
        return out

    @staticmethod
    def _supersede_topic(conn: sqlite3.Connection, rec: NewRecord, now: str | None) -> None:
        """Retire live rows sharing ``rec``'s topic key in the same tenant and partition."""
        old = conn.execute(
            f"SELECT id FROM memories WHERE tenant_id = ? AND partition = ? AND topic_key = ? "
            f"AND id != ? AND superseded_by IS NULL AND {LIVE}",
            (rec.tenant_id, rec.partition, rec.topic_key, rec.id),
        ).fetchall()
        for (old_id,) in old:
            conn.execute(
                "UPDATE memories SET superseded_by = ?, updated_at = ?, dedup_key = NULL "
                "WHERE id = ?",
                (rec.id, now, old_id),
            )
            retire_sources(conn, rec.tenant_id, old_id, rec.id)
            conn.execute(
                "INSERT INTO audit_log (at, event, tenant_id, memory_id, detail) "
                "VALUES (?,?,?,?,?)",
                (now, "memory.supersede", rec.tenant_id, old_id, json.dumps({"by": rec.id})),
            )

    def soft_delete(self, tenant_id: str, memory_id: str) -> bool:
        now = iso(now_utc())
        with self.write() as conn:
            cur = conn.execute(
                f"UPDATE memories SET deleted_at = ?, updated_at = ?, dedup_key = NULL, "
                f"kw_pending = 1, vec_pending = CASE WHEN vec_pending = {VEC_SKIP} THEN "
                f"{VEC_SKIP} ELSE {VEC_PENDING} END "
                f"WHERE id = ? AND tenant_id = ? AND {LIVE}",
                (now, now, memory_id, tenant_id),
            )
            if cur.rowcount:
                conn.execute(
                    "INSERT INTO audit_log (at, event, tenant_id, memory_id) VALUES (?,?,?,?)",
                    (now, "memory.delete", tenant_id, memory_id),
                )
            return cur.rowcount > 0

    def register_partition(self, tenant_id: str, partition: str, collection: str) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO partitions (tenant_id, partition, collection) "
                "VALUES (?,?,?)",
                (tenant_id, partition, collection),
            )

    # -- reads -------------------------------------------------------------------------------
    def get(self, memory_id: str) -> Row | None:
        rows = self.read(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        return row_to_item(rows[0]) if rows else None

    def get_many(self, tenant_id: str, ids: Sequence[str], *, live_only: bool = True) -> list[Row]:
        if not ids:
            return []
        out: list[Row] = []
        live = f" AND {LIVE}" if live_only else " AND anonymized_at IS NULL"
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self.read(
                # "+tenant_id": look rows up by id (unique index), then check the tenant;
                # the tenant index would walk every row of a large tenant
                f"SELECT {_COLUMNS} FROM memories WHERE +tenant_id = ? AND id IN ({marks}){live}",
                (tenant_id, *chunk),
            )
            out.extend(row_to_item(r) for r in rows)
        return out

    def briefs(self, tenant_id: str, ids: Sequence[str]) -> list[Brief]:
        """The live rows of ``tenant_id`` among ``ids``, as :class:`Brief` (unordered)."""
        out: list[Brief] = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self.read(
                f"SELECT {_BRIEF_COLUMNS} FROM memories "
                f"WHERE +tenant_id = ? AND id IN ({marks}) AND {LIVE}",
                (tenant_id, *chunk),
            )
            out.extend(Brief(*r) for r in rows)
        return out

    def payload(self, tenant_id: str, key: str) -> tuple[str, str] | None:
        """(memory_id, full content) stored under ``key`` for this tenant."""
        rows = self.read(
            "SELECT memory_id, content FROM payloads WHERE tenant_id = ? AND key = ?",
            (tenant_id, key),
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def preceding_messages(
        self, tenant_id: str, session_id: str, partition: str, memory_id: str, n: int
    ) -> list[Row]:
        """Up to ``n`` live chat messages before ``memory_id`` in its session, oldest first."""
        rows = self.read(
            f"SELECT {_COLUMNS} FROM memories WHERE tenant_id = ? AND session_id = ? "
            f"AND partition = ? AND kind = 'chat_message' AND tier IS NULL AND {LIVE} "
            f"AND seq < (SELECT seq FROM memories WHERE id = ?) ORDER BY seq DESC LIMIT ?",
            (tenant_id, session_id, partition, memory_id, n),
        )
        return [row_to_item(r) for r in reversed(rows)]

    def has_unembedded(self, tenant_id: str, partitions: Sequence[str]) -> bool:
        if not partitions:
            return False
        marks = ",".join("?" * len(partitions))
        rows = self.read(
            f"SELECT 1 FROM memories INDEXED BY memories_vec_todo_partition "
            f"WHERE vec_pending IN ({VEC_PENDING}, {VEC_FAILED}) "
            f"AND partition IN ({marks}) AND tenant_id = ? AND {LIVE} LIMIT 1",
            (*partitions, tenant_id),
        )
        return bool(rows)

    def collection_for(self, tenant_id: str, partition: str) -> str | None:
        rows = self.read(
            "SELECT collection FROM partitions WHERE tenant_id = ? AND partition = ?",
            (tenant_id, partition),
        )
        return rows[0][0] if rows else None

    def partitions(self) -> list[tuple[str, str, str]]:
        return [
            (r[0], r[1], r[2])
            for r in self.read("SELECT tenant_id, partition, collection FROM partitions")
        ]

    def iter_rows(
        self, where: str = "1=1", params: Sequence[Any] = (), batch: int = 1000
    ) -> Iterator[Row]:
        """Stream rows in insertion order (used by export and reindex)."""
        last = 0
        while True:
            rows = self.read(
                f"SELECT seq, {_COLUMNS} FROM memories WHERE seq > ? AND ({where}) "
                f"ORDER BY seq LIMIT ?",
                (last, *params, batch),
            )
            if not rows:
                return
            for r in rows:
                yield row_to_item(r[1:])
            last = rows[-1][0]

    def count(self, where: str = "1=1", params: Sequence[Any] = ()) -> int:
        return int(self.read(f"SELECT COUNT(*) FROM memories WHERE {where}", params)[0][0])

    # -- index bookkeeping (used by the indexer) ---------------------------------------------
    def pending_keyword(self, limit: int) -> list[tuple[int, Row, bool]]:
        """Rows whose keyword-index state is stale: (seq, row, live)."""
        rows = self.read(
            f"SELECT seq, {_COLUMNS}, ({LIVE}) FROM memories WHERE kw_pending = 1 "
            f"ORDER BY seq LIMIT ?",
            (limit,),
        )
        return [(r[0], row_to_item(r[1:-1]), bool(r[-1])) for r in rows]

    def pending_vector(
        self, limit: int, *, retry_failed: bool = False
    ) -> list[tuple[int, Row, bool]]:
        state = "" if retry_failed else f" AND vec_pending = {VEC_PENDING}"
        rows = self.read(
            f"SELECT seq, {_COLUMNS}, ({VECTOR_LIVE}) FROM memories INDEXED BY memories_vec_todo "
            f"WHERE vec_pending IN ({VEC_PENDING}, {VEC_FAILED}){state} "
            f"ORDER BY seq LIMIT ?",
            (limit,),
        )
        return [(r[0], row_to_item(r[1:-1]), bool(r[-1])) for r in rows]

    def mark_keyword_done(self, done: Sequence[tuple[int, bool]]) -> None:
        """(seq, indexed) pairs: clear kw_pending; keyword_indexed = indexed.

        ``indexed`` is the liveness the indexer saw; a row deleted or anonymized since then
        stays pending, so the next pass removes it from the index.
        """
        with self.write() as conn:
            conn.executemany(
                f"UPDATE memories SET kw_pending = 0, keyword_indexed = ? "
                f"WHERE seq = ? AND ({LIVE}) = ?",
                [(int(indexed), seq, int(indexed)) for seq, indexed in done],
            )

    def mark_vector_done(self, done: Sequence[tuple[int, bool]]) -> None:
        """(seq, embedded) pairs; like :meth:`mark_keyword_done`, guarded by liveness."""
        with self.write() as conn:
            conn.executemany(
                f"UPDATE memories SET vec_pending = {VEC_SYNCED}, embedded = ?, "
                f"embed_error = NULL WHERE seq = ? AND ({VECTOR_LIVE}) = ?",
                [(int(embedded), seq, int(embedded)) for seq, embedded in done],
            )

    def mark_vector_failed(self, seqs: Sequence[int], error: str) -> None:
        with self.write() as conn:
            conn.executemany(
                f"UPDATE memories SET vec_pending = {VEC_FAILED}, embedded = 0, "
                f"embed_attempts = embed_attempts + 1, embed_error = ? WHERE seq = ?",
                [(error[:500], seq) for seq in seqs],
            )

    def mark_all_pending(self) -> None:
        """Flag every row for re-indexing (used by ``reindex``)."""
        with self.write() as conn:
            conn.execute("UPDATE memories SET kw_pending = 1, keyword_indexed = 0")
            conn.execute(
                f"UPDATE memories SET vec_pending = {VEC_PENDING}, embedded = 0 "
                f"WHERE vec_pending != {VEC_SKIP}"
            )

    def pending_counts(self) -> tuple[int, int, int]:
        """(keyword pending, vector pending, vector failed)."""
        kw = self.count("kw_pending = 1")  # the partial index memories_kw_pending
        rows = self.read(
            f"SELECT vec_pending, COUNT(*) FROM memories INDEXED BY memories_vec_todo "
            f"WHERE vec_pending IN ({VEC_PENDING}, {VEC_FAILED}) GROUP BY vec_pending"
        )
        counts = dict(rows)
        return kw, int(counts.get(VEC_PENDING, 0)), int(counts.get(VEC_FAILED, 0))
