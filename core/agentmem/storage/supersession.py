"""Supersession in the records: which memories replaced which, and the judge's queue.

A memory is superseded when a newer one with the same topic key is written (at insert, see
:mod:`agentmem.storage.memories`) or when the supersession judge retires it
(:meth:`SupersessionTable.apply_judgement`). A superseded memory stays stored (audit recall,
history) with ``superseded_by`` set; the chat messages it was extracted from are marked too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .audit import audit
from .database import Database, Transaction, chunks, marks
from .rows import LIVE, iso, now_utc


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


class SupersessionTable:
    """Supersession reads and the judge's queue (``records.supersession``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def topic_ids(self, tenant_id: str, partition: str, topic_key: str, scope: str) -> list[str]:
        """Live, not superseded rows of a partition with ``topic_key``, oldest first."""
        rows = self._db.read(
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
        rows = self._db.read(
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
        return [r[0] for r in self._db.read(sql + " ORDER BY seq", params)]

    def superseded_by(self, new_id: str) -> list[str]:
        """Ids of the rows ``new_id`` superseded, newest first."""
        rows = self._db.read(
            "SELECT id FROM memories WHERE superseded_by = ? ORDER BY seq DESC", (new_id,)
        )
        return [r[0] for r in rows]

    def count_superseded_by(self, tenant_id: str, new_ids: Sequence[str]) -> int:
        """Memories retired by any of ``new_ids``."""
        total = 0
        for chunk in chunks(new_ids):
            rows = self._db.read(
                f"SELECT COUNT(*) FROM memories WHERE tenant_id = ? AND kind = 'memory' "
                f"AND superseded_by IN ({marks(len(chunk))})",
                (tenant_id, *chunk),
            )
            total += int(rows[0][0])
        return total

    def memory_neighbours(self, tenant_id: str, memory_id: str) -> list[str]:
        """Memories ``memory_id`` superseded (one step back along a supersession chain)."""
        rows = self._db.read(
            "SELECT id FROM memories WHERE tenant_id = ? AND superseded_by = ? AND kind = 'memory'",
            (tenant_id, memory_id),
        )
        return [r[0] for r in rows]

    def outdated_message_ids(self, tenant_id: str, message_ids: Sequence[str]) -> set[str]:
        """Chat messages among ``message_ids`` from which a now superseded memory was
        extracted (its ``source_message_ids``)."""
        if not message_ids:
            return set()
        if self._db.dialect == "postgres":
            each = (
                "jsonb_array_elements_text(CASE WHEN jsonb_typeof(mem.metadata::jsonb "
                "-> 'source_message_ids') = 'array' THEN mem.metadata::jsonb "
                "-> 'source_message_ids' ELSE '[]'::jsonb END) AS s(value)"
            )
        else:
            each = "json_each(mem.metadata, '$.source_message_ids') AS s"
        rows = self._db.read(
            "SELECT s.value, MAX(CASE WHEN mem.superseded_by IS NOT NULL THEN 1 ELSE 0 END) "
            f"FROM memories AS mem, {each} "
            f"WHERE mem.tenant_id = ? AND mem.kind = 'memory' AND s.value IN "
            f"({marks(len(message_ids))}) AND mem.deleted_at IS NULL AND "
            "mem.anonymized_at IS NULL GROUP BY s.value",
            (tenant_id, *message_ids),
        )
        return {r[0] for r in rows if r[1]}

    _JUDGE_COLS = (
        "seq, id, tenant_id, partition, scope, user_id, agent_id, memory_type, kind, "
        f"(superseded_by IS NULL AND {LIVE})"
    )

    def unjudged(self, *, ids: Sequence[str] | None = None, limit: int) -> list[JudgeRow]:
        """Memories not judged yet, oldest first: the first ``limit``, or those among ``ids``."""
        if ids is None:
            rows = self._db.read(
                f"SELECT {self._JUDGE_COLS} FROM memories WHERE judged_at IS NULL AND "
                f"kind = 'memory' ORDER BY seq LIMIT ?",
                (limit,),
            )
        else:
            rows = []
            for chunk in chunks(ids):
                rows.extend(
                    self._db.read(
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
        rows = self._db.read(
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
            rows = self._db.read(
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
        lock = " FOR UPDATE" if self._db.dialect == "postgres" else ""
        with self._db.write(keys=()) as tx:
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
                    retire_sources(tx, row.tenant_id, old, row.id)
                    audit(
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


def _judge_row(r: Sequence[Any]) -> JudgeRow:
    seq, id_, tenant, partition, scope, user, agent, memory_type, kind, live = r
    return JudgeRow(seq, id_, tenant, partition, scope, user, agent, memory_type, kind, bool(live))


def retire_sources(tx: Transaction, tenant_id: str, old_id: str, new_id: str) -> int:
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
