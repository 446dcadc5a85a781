"""Erasing an identity from the records store, and the log of erasures (``records.erasure``).

An erasure removes every row of one identity: a whole tenant, or the rows of a tenant owned
by a user, an agent, or one user with one agent. A row *belongs* to the identity when its
tenant matches and each given owner column (``user_id``, ``agent_id``) matches; a table
without a given column holds nothing of that identity. ``agent_state`` is keyed by the agent
keeping the entry and, for an entry kept about one user or another agent (a LangGraph
store's value of that user's or agent's namespace), by that user (``user_id``) or agent
(``about_agent_id``, a second agent column) too: erasing either deletes it, and the entries
that name nobody (the agent's own) stay.

:data:`IDENTITY_TABLES` lists the tables keyed by owner columns besides ``memories``; a table
added later that holds per-identity rows (API keys, say) joins every erasure by appending its
:class:`IdentityTable` there. The other tables are keyed by the rows they describe
(``payloads``, ``memory_sources``, ``ingest_log``, ``audit_log``), by conversation
(``working_state``) or by partition (``partitions``); :meth:`ErasureStore.delete` removes
their entries of the erased rows in the same transaction.

Each erasure is logged in ``erasures`` (ids, status, counts; never content): ``running``
until its rows are deleted, ``compacting`` until the indexes and files hold nothing of them,
then ``done``. An erasure that is not done is finished at the next open, and ``agentmem
doctor`` checks that nothing of a logged identity came back.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .database import Database, Transaction, chunks, marks
from .rows import iso, now_utc
from .sources import RowRef, unlink


@dataclass(frozen=True, slots=True)
class IdentityTable:
    """A table whose rows are owned by an identity, by these columns (None: no such column).
    A row whose ``about_agent_column`` names an agent belongs to that agent as well as to the
    one in ``agent_column``."""

    name: str
    user_column: str | None
    agent_column: str | None
    tenant_column: str = "tenant_id"
    about_agent_column: str | None = None

    @property
    def agent_columns(self) -> tuple[str, ...]:
        """The columns naming an agent a row belongs to (any of them matching is enough)."""
        return tuple(c for c in (self.agent_column, self.about_agent_column) if c is not None)


#: The ``memories`` table's owner columns (erased with its dependent tables).
MEMORIES = IdentityTable("memories", "user_id", "agent_id")
#: Other tables keyed by owner: an erasure deletes their rows of the identity.
IDENTITY_TABLES: list[IdentityTable] = [
    IdentityTable("sessions", "user_id", "agent_id"),
    IdentityTable("agent_state", "user_id", "agent_id", about_agent_column="about_agent_id"),
    IdentityTable("api_keys", "user_id", "agent_id"),
]
#: Tables of a tenant's rows that are keyed by something else than an owner; erasing a
#: tenant empties them of the tenant.
_TENANT_TABLES = (
    "payloads",
    "memory_sources",
    "ingest_log",
    "audit_log",
    "working_state",
    "partitions",
)


@dataclass(frozen=True, slots=True)
class ErasureSubject:
    """What to erase: a tenant, or its rows owned by a user and/or an agent."""

    tenant_id: str
    user_id: str | None = None
    agent_id: str | None = None

    @property
    def whole_tenant(self) -> bool:
        return self.user_id is None and self.agent_id is None

    def where(self, table: IdentityTable) -> tuple[str, list[Any]] | None:
        """SQL condition and parameters selecting the subject's rows of ``table``; None when
        the table cannot hold any (it lacks a column the subject names)."""
        sql = f"{table.tenant_column} = ?"
        params: list[Any] = [self.tenant_id]
        for value, columns in (
            (self.user_id, (table.user_column,) if table.user_column else ()),
            (self.agent_id, table.agent_columns),
        ):
            if value is None:
                continue
            if not columns:
                return None
            sql += " AND (" + " OR ".join(f"{c} = ?" for c in columns) + ")"
            params.extend([value] * len(columns))
        return sql, params

    def owned_partitions(self) -> tuple[str, ...]:
        """Partitions only this subject writes to (a user's or an agent's own); a user with
        an agent owns none alone (the user's conversation holds other agents' rows)."""
        if self.user_id is not None and self.agent_id is None:
            owner = f"u:{self.user_id}"
            return (f"user:{self.user_id}", f"conv:{owner}", f"chunks:conv:{owner}")
        if self.agent_id is not None and self.user_id is None:
            owner = f"a:{self.agent_id}"
            return (f"agent:{self.agent_id}", f"conv:{owner}", f"chunks:conv:{owner}")
        return ()


@dataclass(frozen=True, slots=True)
class ErasureRecord:
    """One logged erasure (a row of ``erasures``)."""

    id: str
    subject: ErasureSubject
    status: str
    started_at: datetime
    completed_at: datetime | None
    #: (partition, collection) pairs whose vectors the erasure removes.
    collections: tuple[tuple[str, str], ...] = ()
    removed: dict[str, int] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.status == "done"


_COLS = "id, tenant_id, user_id, agent_id, status, started_at, completed_at, collections, removed"


def _record(r: Sequence[Any]) -> ErasureRecord:
    return ErasureRecord(
        id=r[0],
        subject=ErasureSubject(r[1], r[2], r[3]),
        status=r[4],
        started_at=datetime.fromisoformat(r[5]),
        completed_at=datetime.fromisoformat(r[6]) if r[6] else None,
        collections=tuple((p, c) for p, c in json.loads(r[7])),
        removed={str(k): int(v) for k, v in json.loads(r[8]).items()},
    )


class ErasureStore:
    """Erasure of identities from the records, and the erasure log (``records.erasure``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- the log -------------------------------------------------------------------------------
    def begin(self, subject: ErasureSubject) -> tuple[ErasureRecord, bool]:
        """The unfinished erasure of ``subject`` (resumed: True), or a new one logged now."""
        for rec in self.unfinished():
            if rec.subject == subject:
                return rec, True
        id_ = "era_" + uuid.uuid4().hex
        with self._db.write() as tx:
            tx.execute(
                "INSERT INTO erasures (id, tenant_id, user_id, agent_id, status, started_at) "
                "VALUES (?,?,?,?,'running',?)",
                (id_, subject.tenant_id, subject.user_id, subject.agent_id, iso(now_utc())),
            )
        new = self.get(id_)
        assert new is not None
        return new, False

    def get(self, erasure_id: str) -> ErasureRecord | None:
        rows = self._db.read(f"SELECT {_COLS} FROM erasures WHERE id = ?", (erasure_id,))
        return _record(rows[0]) if rows else None

    def unfinished(self) -> list[ErasureRecord]:
        """Erasures interrupted before they were done, oldest first."""
        rows = self._db.read(
            f"SELECT {_COLS} FROM erasures WHERE status != 'done' ORDER BY started_at"
        )
        return [_record(r) for r in rows]

    def all(self) -> list[ErasureRecord]:
        """Every logged erasure, oldest first."""
        return [
            _record(r) for r in self._db.read(f"SELECT {_COLS} FROM erasures ORDER BY started_at")
        ]

    def plan(self, erasure_id: str, collections: Iterable[tuple[str, str]]) -> ErasureRecord:
        """Add (partition, collection) pairs to what the erasure must clear of vectors."""
        rec = self.get(erasure_id)
        assert rec is not None
        merged = dict.fromkeys([*rec.collections, *collections])
        with self._db.write() as tx:
            tx.execute(
                "UPDATE erasures SET collections = ? WHERE id = ?",
                (json.dumps([list(pc) for pc in merged]), erasure_id),
            )
        again = self.get(erasure_id)
        assert again is not None
        return again

    def finish(self, erasure_id: str, removed: dict[str, int]) -> None:
        """Mark the erasure done, with the counts of everything it removed."""
        with self._db.write() as tx:
            tx.execute(
                "UPDATE erasures SET status = 'done', completed_at = ?, removed = ? WHERE id = ?",
                (iso(now_utc()), json.dumps(removed, sort_keys=True), erasure_id),
            )

    # -- what an erasure removes ---------------------------------------------------------------
    def rows(self, subject: ErasureSubject) -> list[RowRef]:
        """The subject's rows in ``memories`` (any state)."""
        where = subject.where(MEMORIES)
        assert where is not None
        sql, params = where
        return [
            RowRef(r[0], r[1], r[2], r[3], r[4])
            for r in self._db.read(
                f"SELECT id, kind, tier, partition, session_id FROM memories WHERE {sql}",
                params,
            )
        ]

    def partitions(self, tenant_id: str) -> list[str]:
        """Every partition of ``tenant_id`` that holds rows or ever held vectors."""
        rows = self._db.read(
            "SELECT partition FROM partitions WHERE tenant_id = ? UNION "
            "SELECT DISTINCT partition FROM memories WHERE tenant_id = ?",
            (tenant_id, tenant_id),
        )
        return sorted({r[0] for r in rows})

    def remaining(self, tenant_id: str, partitions: Sequence[str]) -> set[str]:
        """Which of ``partitions`` still hold rows of ``tenant_id`` (any state)."""
        found: set[str] = set()
        for chunk in chunks(partitions):
            rows = self._db.read(
                f"SELECT DISTINCT partition FROM memories WHERE tenant_id = ? "
                f"AND partition IN ({marks(len(chunk))})",
                (tenant_id, *chunk),
            )
            found.update(r[0] for r in rows)
        return found

    def delete(
        self,
        erasure_id: str,
        subject: ErasureSubject,
        ids: Sequence[str],
        partitions: Sequence[str] = (),
    ) -> dict[str, int]:
        """Delete the subject's rows, ``ids`` (rows derived from them) and every entry about
        them, in one transaction that also moves the erasure to ``compacting``.

        Which of ``partitions`` (those the rows lived in) are left without rows loses its
        ``partitions`` entry (the caller drops its vector collection).

        The working-memory state of the subject's own conversations goes too (the caller
        handles conversations it shares). Rows the subject wrote after the caller listed
        ``ids`` are found again here. Returns rows removed per table, by this
        erasure so far (an interrupted earlier attempt included).
        """
        counts: dict[str, int] = {}

        def add(table: str, n: int) -> None:
            counts[table] = counts.get(table, 0) + max(n, 0)

        tenant = subject.tenant_id
        with self._db.write() as tx:
            if subject.whole_tenant:
                for name in ("memories", *_TENANT_TABLES):
                    cur = tx.execute(f"DELETE FROM {name} WHERE tenant_id = ?", (tenant,))
                    add(name, cur.rowcount)
            else:
                _delete_subject_rows(tx, subject, ids, add)
                _drop_empty_partitions(tx, tenant, partitions, add)
            for table in IDENTITY_TABLES:
                where = subject.where(table)
                if where is not None:
                    sql, params = where
                    add(
                        table.name,
                        tx.execute(f"DELETE FROM {table.name} WHERE {sql}", params).rowcount,
                    )
            total = _with_earlier(tx, erasure_id, counts)
            _set_status(tx, erasure_id, "compacting", total)
        return total

    # -- checks (doctor) -----------------------------------------------------------------------
    def leftovers(self, subjects: Sequence[ErasureSubject]) -> list[dict[str, int]]:
        """Rows of each subject still stored, per table (empty when nothing is left).

        Each owner-keyed table is read once, grouped by owner, whatever the number of
        subjects (``memories`` has no index by owner: one scan, not one per erasure).
        """
        owners: dict[str, dict[tuple[Any, ...], int]] = {}
        for table in (MEMORIES, *IDENTITY_TABLES):
            cols = [
                table.tenant_column,
                table.user_column or "NULL",
                table.agent_column or "NULL",
                table.about_agent_column or "NULL",
            ]
            owners[table.name] = {
                (r[0], r[1], r[2], r[3]): int(r[4])
                for r in self._db.read(
                    f"SELECT {', '.join(cols)}, COUNT(*) FROM {table.name} GROUP BY 1, 2, 3, 4"
                )
            }
        out = []
        for subject in subjects:
            found: dict[str, int] = {}
            for table in (MEMORIES, *IDENTITY_TABLES):
                if subject.where(table) is None:
                    continue
                n = sum(
                    count
                    for (tenant, user, agent, about), count in owners[table.name].items()
                    if tenant == subject.tenant_id
                    and (subject.user_id is None or user == subject.user_id)
                    and (subject.agent_id is None or subject.agent_id in (agent, about))
                )
                if n:
                    found[table.name] = n
            found.update(self._other_leftovers(subject))
            out.append(found)
        return out

    def _other_leftovers(self, subject: ErasureSubject) -> dict[str, int]:
        """Rows of ``subject`` in the tables not keyed by owner."""
        out: dict[str, int] = {}
        tenant = subject.tenant_id
        if subject.whole_tenant:
            for name in _TENANT_TABLES:
                rows = self._db.read(f"SELECT COUNT(*) FROM {name} WHERE tenant_id = ?", (tenant,))
                if rows[0][0]:
                    out[name] = int(rows[0][0])
        owned = subject.owned_partitions()
        if owned:
            for name in ("working_state", "partitions"):
                rows = self._db.read(
                    f"SELECT COUNT(*) FROM {name} WHERE tenant_id = ? "
                    f"AND partition IN ({marks(len(owned))})",
                    (tenant, *owned),
                )
                if rows[0][0]:
                    out[name] = out.get(name, 0) + int(rows[0][0])
        return out

    def orphans(self) -> dict[str, int]:
        """Entries about rows that no longer exist (payloads, source links, extraction log)."""
        out: dict[str, int] = {}
        for name, sql in (
            (
                "payloads",
                "SELECT COUNT(*) FROM payloads AS p WHERE NOT EXISTS "
                "(SELECT 1 FROM memories AS m WHERE m.id = p.memory_id)",
            ),
            (
                "memory_sources",
                "SELECT COUNT(*) FROM memory_sources AS s WHERE NOT EXISTS "
                "(SELECT 1 FROM memories AS m WHERE m.id = s.memory_id)",
            ),
        ):
            n = int(self._db.read(sql)[0][0])
            if n:
                out[name] = n
        return out


def _set_status(tx: Transaction, erasure_id: str, status: str, removed: dict[str, int]) -> None:
    tx.execute(
        "UPDATE erasures SET status = ?, removed = ? WHERE id = ?",
        (status, json.dumps(removed, sort_keys=True), erasure_id),
    )


def _delete_subject_rows(
    tx: Transaction, subject: ErasureSubject, ids: Sequence[str], add: Callable[[str, int], None]
) -> None:
    """Delete the rows of a subject narrower than a tenant, and ``ids``, with every entry
    about them, and the working-memory state of the subject's own conversations."""
    tenant = subject.tenant_id
    sql, params = subject.where(MEMORIES) or ("", [])
    found = {r[0] for r in tx.execute(f"SELECT id FROM memories WHERE {sql}", params).fetchall()}
    gone = sorted(found | set(ids))
    add("memory_sources", unlink(tx, gone))
    for chunk in chunks(gone):
        m = marks(len(chunk))
        for name, column in (
            ("payloads", "memory_id"),
            ("ingest_log", "message_id"),
            ("audit_log", "memory_id"),
            ("memories", "id"),
        ):
            cur = tx.execute(
                f"DELETE FROM {name} WHERE tenant_id = ? AND {column} IN ({m})",
                (tenant, *chunk),
            )
            add(name, cur.rowcount)
    owned = subject.owned_partitions()
    if owned:
        cur = tx.execute(
            f"DELETE FROM working_state WHERE tenant_id = ? AND partition IN ({marks(len(owned))})",
            (tenant, *owned),
        )
        add("working_state", cur.rowcount)


def _drop_empty_partitions(
    tx: Transaction, tenant: str, partitions: Sequence[str], add: Callable[[str, int], None]
) -> None:
    """Remove the ``partitions`` entries of those of ``partitions`` left without rows."""
    empty = [
        p
        for p in partitions
        if tx.execute(
            "SELECT 1 FROM memories WHERE tenant_id = ? AND partition = ? LIMIT 1",
            (tenant, p),
        ).fetchone()
        is None
    ]
    for chunk in chunks(empty):
        cur = tx.execute(
            f"DELETE FROM partitions WHERE tenant_id = ? AND partition IN ({marks(len(chunk))})",
            (tenant, *chunk),
        )
        add("partitions", cur.rowcount)


def _with_earlier(tx: Transaction, erasure_id: str, counts: dict[str, int]) -> dict[str, int]:
    """``counts`` plus what an interrupted earlier attempt of this erasure removed."""
    earlier = tx.execute("SELECT removed FROM erasures WHERE id = ?", (erasure_id,)).fetchone()
    total = dict(counts)
    for name, n in json.loads(earlier[0] if earlier else "{}").items():
        total[name] = total.get(name, 0) + int(n)
    return total
