"""Session state in the records store: closed sessions (tiers) and working-memory state.

- ``sessions``: one row per closed session of a conversation partition, with its tier
  (``mid_term`` or ``long_term``), close order and summary bookkeeping.
- ``working_state``: one row per session with working memory: the reference summary (JSON),
  the window boundary, and compaction counters, swapped with a compare-and-set on ``version``.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..models import MESSAGE_KINDS
from .database import Database, Transaction, marks
from .rows import COLUMNS, LIVE, Row, iso, now_utc, row_to_item
from .write_locks import close_order_key


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A closed session of a conversation (a row of the ``sessions`` table)."""

    session_id: str
    tier: str
    close_order: int
    closed_at: datetime
    promoted_at: datetime | None
    message_count: int
    chunk_count: int
    summary_status: str
    summarizer: str | None
    summary_ids: tuple[str, ...]
    last_seq: int = 0
    user_id: str | None = None
    agent_id: str | None = None


_INFO_COLS = (
    "session_id, tier, close_order, closed_at, promoted_at, message_count, chunk_count, "
    "summary_status, summarizer, summary_ids, last_seq, user_id, agent_id"
)


def _info(r: Sequence[Any]) -> SessionInfo:
    return SessionInfo(
        session_id=r[0],
        tier=r[1],
        close_order=r[2],
        closed_at=datetime.fromisoformat(r[3]),
        promoted_at=datetime.fromisoformat(r[4]) if r[4] else None,
        message_count=r[5],
        chunk_count=r[6],
        summary_status=r[7],
        summarizer=r[8],
        summary_ids=tuple(json.loads(r[9])),
        last_seq=int(r[10]),
        user_id=r[11],
        agent_id=r[12],
    )


class SessionTable:
    """Closed sessions per conversation partition (``records.sessions``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, tenant_id: str, partition: str, session_id: str) -> SessionInfo | None:
        rows = self._db.read(
            f"SELECT {_INFO_COLS} FROM sessions WHERE tenant_id = ? AND partition = ? "
            f"AND session_id = ?",
            (tenant_id, partition, session_id),
        )
        return _info(rows[0]) if rows else None

    def list(self, tenant_id: str, partition: str, *, tier: str | None = None) -> list[SessionInfo]:
        """Closed sessions of a partition, oldest closed first (optionally of one tier)."""
        sql = f"SELECT {_INFO_COLS} FROM sessions WHERE tenant_id = ? AND partition = ?"
        params: list[Any] = [tenant_id, partition]
        if tier is not None:
            sql += " AND tier = ?"
            params.append(tier)
        return [_info(r) for r in self._db.read(sql + " ORDER BY close_order", params)]

    def all(self, tenant_id: str | None = None) -> builtins.list[tuple[str, str, SessionInfo]]:
        """(tenant, partition, info) of every closed session (of one tenant), for export."""
        sql = f"SELECT tenant_id, partition, {_INFO_COLS} FROM sessions"
        params: tuple[Any, ...] = ()
        if tenant_id is not None:
            sql += " WHERE tenant_id = ?"
            params = (tenant_id,)
        order = " ORDER BY tenant_id, partition, close_order"
        return [(r[0], r[1], _info(r[2:])) for r in self._db.read(sql + order, params)]

    def restore(self, tenant_id: str, partition: str, info: SessionInfo) -> bool:
        """Insert a copy of a closed session's row unless the session is known; its
        ``last_seq`` is taken from this store's copy of its messages: the last of the
        ``message_count`` its close covered (messages added after the close stay outside it).
        True if inserted."""
        with self._db.write() as tx:
            last = tx.execute(
                f"SELECT COALESCE(MAX(seq), 0) FROM (SELECT seq FROM memories WHERE "
                f"tenant_id = ? AND partition = ? AND session_id = ? AND kind IN "
                f"({marks(len(MESSAGE_KINDS))}) AND {LIVE} ORDER BY seq LIMIT ?) AS covered",
                (tenant_id, partition, info.session_id, *MESSAGE_KINDS, info.message_count),
            ).fetchone()[0]
            cur = tx.execute(
                "INSERT INTO sessions (tenant_id, partition, session_id, user_id, agent_id, "
                "status, tier, close_order, closed_at, promoted_at, last_seq, message_count, "
                "chunk_count, summary_status, summarizer, summary_ids) "
                "VALUES (?,?,?,?,?,'closed',?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                (
                    tenant_id,
                    partition,
                    info.session_id,
                    info.user_id,
                    info.agent_id,
                    info.tier,
                    info.close_order,
                    iso(info.closed_at),
                    iso(info.promoted_at),
                    last,
                    info.message_count,
                    info.chunk_count,
                    info.summary_status,
                    info.summarizer,
                    json.dumps(list(info.summary_ids)),
                ),
            )
            return cur.rowcount > 0

    def record_close(
        self,
        tenant_id: str,
        partition: str,
        session_id: str,
        *,
        user_id: str | None,
        agent_id: str | None,
        tier: str,
        last_seq: int,
        messages: int,
        chunks: int,
        summary_status: str,
        summarizer: str | None,
        summary_ids: Sequence[str],
    ) -> None:
        """Insert or update the session's row after a close (its close order is kept).

        The next close order is read, then written: the partition's close order is locked."""
        now = iso(now_utc())
        with self._db.write(keys=(close_order_key(tenant_id, partition),)) as tx:
            order = tx.execute(
                "SELECT COALESCE(MAX(close_order), 0) + 1 FROM sessions WHERE tenant_id = ? "
                "AND partition = ?",
                (tenant_id, partition),
            ).fetchone()[0]
            tx.execute(
                "INSERT INTO sessions (tenant_id, partition, session_id, user_id, agent_id, "
                "status, tier, close_order, closed_at, last_seq, message_count, chunk_count, "
                "summary_status, summarizer, summary_ids) "
                "VALUES (?,?,?,?,?,'closed',?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT (tenant_id, partition, session_id) DO UPDATE SET "
                "closed_at = excluded.closed_at, last_seq = excluded.last_seq, "
                "message_count = excluded.message_count, chunk_count = excluded.chunk_count, "
                "summary_status = excluded.summary_status, summarizer = excluded.summarizer, "
                "summary_ids = excluded.summary_ids",
                (
                    tenant_id,
                    partition,
                    session_id,
                    user_id,
                    agent_id,
                    tier,
                    order,
                    now,
                    last_seq,
                    messages,
                    chunks,
                    summary_status,
                    summarizer,
                    json.dumps(list(summary_ids)),
                ),
            )

    @staticmethod
    def promote(
        tx: Transaction,
        tenant_id: str,
        partition: str,
        session_id: str,
        now: str | None,
        summary_ids: Sequence[str] | None,
        summarizer: str | None,
    ) -> None:
        """Mark a session long-term inside the caller's transaction."""
        if summary_ids:
            tx.execute(
                "UPDATE sessions SET summary_ids = ?, summarizer = COALESCE(summarizer, ?) "
                "WHERE tenant_id = ? AND partition = ? AND session_id = ?",
                (json.dumps(list(summary_ids)), summarizer, tenant_id, partition, session_id),
            )
        tx.execute(
            "UPDATE sessions SET tier = 'long_term', promoted_at = ? WHERE tenant_id = ? AND "
            "partition = ? AND session_id = ?",
            (now, tenant_id, partition, session_id),
        )


@dataclass(frozen=True, slots=True)
class WorkingRow:
    """The stored working-memory state of a session (see :mod:`agentmem.tiers.working`)."""

    summary: dict[str, Any]
    boundary: int = 0
    held: tuple[int, ...] = ()
    version: int = 0
    compactions: int = 0
    trips: int = 0
    last_error: str | None = None


class WorkingStateTable:
    """Working-memory state per session, and the messages of its window (``records.working``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def load(self, tenant_id: str, partition: str, session_id: str) -> WorkingRow | None:
        rows = self._db.read(
            "SELECT summary, boundary_seq, held, version, compactions, trips, last_error "
            "FROM working_state WHERE tenant_id = ? AND partition = ? AND session_id = ?",
            (tenant_id, partition, session_id),
        )
        if not rows:
            return None
        r = rows[0]
        return WorkingRow(
            summary=json.loads(r[0]),
            boundary=int(r[1]),
            held=tuple(json.loads(r[2])),
            version=int(r[3]),
            compactions=int(r[4]),
            trips=int(r[5]),
            last_error=r[6],
        )

    def window_rows(
        self,
        tenant_id: str,
        partition: str,
        session_id: str,
        *,
        boundary: int,
        held: Sequence[int],
    ) -> tuple[list[tuple[int, Row]], int | None]:
        """The session's messages that may be in a prompt, oldest first: those after
        ``boundary``, the ``held`` ones, system messages and pinned ones; and the seq of the
        latest user message."""
        base = (
            f"FROM memories WHERE tenant_id = ? AND partition = ? AND session_id = ? "
            f"AND scope = 'session' AND kind IN ({marks(len(MESSAGE_KINDS))}) AND {LIVE}"
        )
        key = (tenant_id, partition, session_id, *MESSAGE_KINDS)
        held_sql = ",".join(str(int(s)) for s in held) or "-1"
        pinned = (
            "(metadata::jsonb -> 'pinned') IN ('true'::jsonb, '1'::jsonb)"
            if self._db.dialect == "postgres"
            else "json_extract(metadata, '$.pinned') = 1"
        )
        rows = self._db.read(
            f"SELECT seq, {COLUMNS} {base} AND (seq > ? OR seq IN ({held_sql}) "
            f"OR role = 'system' OR {pinned}) ORDER BY seq",
            (*key, boundary),
        )
        latest = self._db.read(f"SELECT MAX(seq) {base} AND role = 'user'", key)
        return [(int(r[0]), row_to_item(r[1:])) for r in rows], (latest[0][0] if latest else None)

    def record_error(
        self, tenant_id: str, partition: str, session_id: str, summary: dict[str, Any], error: str
    ) -> None:
        """Record a failed compaction's error (the state itself is unchanged)."""
        now = iso(now_utc())
        with self._db.write(keys=()) as tx:  # one upsert
            tx.execute(
                "INSERT INTO working_state (tenant_id, partition, session_id, summary, "
                "last_error, updated_at) VALUES (?,?,?,?,?,?) ON CONFLICT (tenant_id, "
                "partition, session_id) DO UPDATE SET last_error = excluded.last_error, "
                "updated_at = excluded.updated_at",
                (tenant_id, partition, session_id, json.dumps(summary), error, now),
            )

    def save(
        self,
        tenant_id: str,
        partition: str,
        session_id: str,
        *,
        expected_version: int,
        summary: dict[str, Any],
        boundary: int,
        held: Sequence[int],
        trip: bool,
    ) -> bool:
        """Compare-and-set the new state; False when another compaction got there first."""
        now = iso(now_utc())
        encoded = json.dumps(summary, ensure_ascii=False)
        with self._db.write(keys=()) as tx:  # one compare-and-set statement
            cur = tx.execute(
                "INSERT INTO working_state (tenant_id, partition, session_id, summary, "
                "boundary_seq, held, version, compactions, trips, last_error, updated_at) "
                "VALUES (?,?,?,?,?,?,1,1,?,NULL,?) ON CONFLICT (tenant_id, partition, "
                "session_id) DO UPDATE SET summary = excluded.summary, "
                "boundary_seq = excluded.boundary_seq, held = excluded.held, "
                "version = working_state.version + 1, "
                "compactions = working_state.compactions + 1, "
                "trips = working_state.trips + excluded.trips, last_error = NULL, "
                "updated_at = excluded.updated_at WHERE working_state.version = ?",
                (
                    tenant_id,
                    partition,
                    session_id,
                    encoded,
                    boundary,
                    json.dumps(list(held)),
                    int(trip),
                    now,
                    expected_version,
                ),
            )
            return cur.rowcount > 0

    def rewrite_summary(
        self,
        tenant_id: str,
        partition: str,
        session_id: str,
        *,
        expected_version: int,
        summary: dict[str, Any],
        error: str | None,
    ) -> bool:
        """Compare-and-set a rebuilt summary (window boundary and counters unchanged);
        False when a compaction changed the state meanwhile."""
        with self._db.write(keys=()) as tx:  # one compare-and-set statement
            cur = tx.execute(
                "UPDATE working_state SET summary = ?, version = version + 1, last_error = ?, "
                "updated_at = ? WHERE tenant_id = ? AND partition = ? AND session_id = ? "
                "AND version = ?",
                (
                    json.dumps(summary, ensure_ascii=False),
                    error,
                    iso(now_utc()),
                    tenant_id,
                    partition,
                    session_id,
                    expected_version,
                ),
            )
            return cur.rowcount > 0

    def delete(self, tenant_id: str, partition: str, session_id: str) -> bool:
        """Drop a session's working-memory state (its messages are gone)."""
        with self._db.write(keys=()) as tx:
            cur = tx.execute(
                "DELETE FROM working_state WHERE tenant_id = ? AND partition = ? "
                "AND session_id = ?",
                (tenant_id, partition, session_id),
            )
            return cur.rowcount > 0
