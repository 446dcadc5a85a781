"""The rows of a conversation: a session's messages in order, their neighbours, and the
tiered rows (chunks, summaries) a closed session is moved through.

The ``sessions`` and ``working_state`` tables themselves are :mod:`agentmem.storage.sessions`;
this reads and moves the ``memories`` rows that belong to a session.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..models import MESSAGE_KINDS
from .database import Database, marks
from .rows import COLUMNS, LIVE, VEC_PENDING, Row, iso, now_utc, row_to_item
from .sessions import SessionTable


class ConversationRows:
    """Rows of ``memories`` by session (``records.conversations``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def following_messages(
        self, tenant_id: str, partition: str, session_id: str, seq: int, n: int
    ) -> list[str]:
        """Ids of up to ``n`` live chat messages after ``seq`` in a session, oldest first
        (the messages whose index entries carry the one at ``seq`` as context)."""
        rows = self._db.read(
            f"SELECT id FROM memories WHERE tenant_id = ? AND session_id = ? AND partition = ? "
            f"AND kind = 'chat_message' AND tier IS NULL AND {LIVE} AND seq > ? "
            f"ORDER BY seq LIMIT ?",
            (tenant_id, session_id, partition, seq, n),
        )
        return [r[0] for r in rows]

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
        rows = self._db.read(sql, params)
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
        rows = self._db.read(
            f"SELECT session_id FROM memories WHERE {where} GROUP BY session_id ORDER BY MIN(seq)",
            params,
        )
        return [str(r[0]) for r in rows]

    def preceding_messages(
        self, tenant_id: str, session_id: str, partition: str, memory_id: str, n: int
    ) -> list[Row]:
        """Up to ``n`` live chat messages before ``memory_id`` in its session, oldest first."""
        rows = self._db.read(
            f"SELECT {COLUMNS} FROM memories WHERE tenant_id = ? AND session_id = ? "
            f"AND partition = ? AND kind = 'chat_message' AND tier IS NULL AND {LIVE} "
            f"AND seq < (SELECT seq FROM memories WHERE id = ?) ORDER BY seq DESC LIMIT ?",
            (tenant_id, session_id, partition, memory_id, n),
        )
        return [row_to_item(r) for r in reversed(rows)]

    def derived_ids(
        self, tenant_id: str, partition: str, session_id: str, *, kind: str, live: bool = True
    ) -> tuple[str, ...]:
        """Tiered rows (session chunks or summaries) of a session in ``partition``: the live
        ones, or with ``live=False`` every one that still has content (retired ones too)."""
        state = LIVE if live else "forgotten_at IS NULL AND anonymized_at IS NULL"
        rows = self._db.read(
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
        with self._db.write() as tx:
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
            SessionTable.promote(tx, tenant_id, partition, session_id, now, summary_ids, summarizer)
