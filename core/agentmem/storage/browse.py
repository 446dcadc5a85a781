"""Reads for looking around a store (``records.browse``): who has rows, how many, of what
tier and from when to when, the rows themselves page by page, and the audit trail of a row.

Counts and time ranges are of live rows (not deleted, not anonymized); times are the rows'
``event_time`` (when what they say happened). The inspector (``agentmem ui``) reads these
through :mod:`agentmem.maintenance.browse`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..models import MESSAGE_KINDS
from .database import Database, marks
from .rows import COLUMNS, LIVE, VEC_FAILED, VEC_PENDING, Row, row_to_item


@dataclass(frozen=True, slots=True)
class Span:
    """How many live rows a group has, and the first and last of their event times."""

    key: str | None
    rows: int
    first: datetime | None
    last: datetime | None


@dataclass(frozen=True, slots=True)
class GroupSpan:
    """A :class:`Span` of rows sharing (kind, stored tier, scope, partition)."""

    kind: str
    tier: str | None
    scope: str
    partition: str
    span: Span


@dataclass(frozen=True, slots=True)
class SessionSpan:
    """The live messages of one session of a conversation partition."""

    partition: str
    session_id: str
    user_id: str | None
    agent_id: str | None
    span: Span


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One entry of the audit log (ids and decisions, never content)."""

    at: datetime | None
    event: str
    memory_id: str | None
    detail: dict[str, Any]


#: Filters :meth:`BrowseReads.rows` takes, as their columns.
ROW_FILTERS: tuple[str, ...] = (
    "user_id",
    "agent_id",
    "session_id",
    "kind",
    "scope",
    "partition",
    "tier",
)


def _span(key: Any, n: Any, first: Any, last: Any) -> Span:
    return Span(
        key=None if key is None else str(key),
        rows=int(n),
        first=None if first is None else datetime.fromisoformat(str(first)),
        last=None if last is None else datetime.fromisoformat(str(last)),
    )


class BrowseReads:
    """Counts, time ranges and pages of rows for the inspector (see the module docstring)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def tenants(self) -> list[Span]:
        """Every tenant with live rows."""
        rows = self._db.read(
            f"SELECT tenant_id, COUNT(*), MIN(event_time), MAX(event_time) FROM memories "
            f"WHERE {LIVE} GROUP BY tenant_id ORDER BY tenant_id"
        )
        return [_span(*r) for r in rows]

    def owners(
        self,
        tenant_id: str,
        column: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> list[Span]:
        """The users (``column="user_id"``) or agents (``"agent_id"``) of a tenant's live
        rows (of one user and/or agent: the counts and times of those rows only)."""
        if column not in ("user_id", "agent_id"):
            raise ValueError(f"not an owner column: {column!r}")
        where, params = _owned(tenant_id, user_id, agent_id)
        rows = self._db.read(
            f"SELECT {column}, COUNT(*), MIN(event_time), MAX(event_time) FROM memories "
            f"WHERE {where} AND {column} IS NOT NULL GROUP BY {column} ORDER BY {column}",
            params,
        )
        return [_span(*r) for r in rows]

    def groups(
        self, tenant_id: str, *, user_id: str | None = None, agent_id: str | None = None
    ) -> list[GroupSpan]:
        """A tenant's live rows (of one user and/or agent) grouped by kind, stored tier,
        scope and partition."""
        where, params = _owned(tenant_id, user_id, agent_id)
        rows = self._db.read(
            f"SELECT kind, tier, scope, partition, COUNT(*), MIN(event_time), MAX(event_time) "
            f"FROM memories WHERE {where} GROUP BY kind, tier, scope, partition",
            params,
        )
        return [GroupSpan(r[0], r[1], r[2], r[3], _span(None, *r[4:])) for r in rows]

    def agent_state(self, tenant_id: str, agent_id: str | None = None) -> list[Span]:
        """Keys of agent state per agent of a tenant, with the first and last update."""
        sql = (
            "SELECT agent_id, COUNT(*), MIN(updated_at), MAX(updated_at) FROM agent_state "
            "WHERE tenant_id = ?"
        )
        params: list[Any] = [tenant_id]
        if agent_id is not None:
            sql += " AND agent_id = ?"
            params.append(agent_id)
        rows = self._db.read(sql + " GROUP BY agent_id ORDER BY agent_id", params)
        return [_span(*r) for r in rows]

    def sessions(
        self,
        tenant_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        limit: int = 200,
    ) -> list[SessionSpan]:
        """The sessions with live messages of a tenant (of one user and/or agent), the most
        recent first."""
        where, params = _owned(tenant_id, user_id, agent_id)
        rows = self._db.read(
            f"SELECT partition, session_id, MAX(user_id), MAX(agent_id), COUNT(*), "
            f"MIN(event_time), MAX(event_time) FROM memories WHERE {where} "
            f"AND scope = 'session' AND tier IS NULL AND session_id IS NOT NULL "
            f"AND kind IN ({marks(len(MESSAGE_KINDS))}) "
            f"GROUP BY partition, session_id ORDER BY MAX(seq) DESC LIMIT ?",
            (*params, *MESSAGE_KINDS, limit),
        )
        return [SessionSpan(r[0], r[1], r[2], r[3], _span(r[1], *r[4:])) for r in rows]

    def rows(
        self,
        tenant_id: str,
        filters: dict[str, str | None],
        *,
        live_only: bool = True,
        offset: int = 0,
        limit: int = 50,
    ) -> list[Row]:
        """A page of a tenant's rows matching ``filters`` (columns of :data:`ROW_FILTERS`;
        ``tier`` None is not a filter, ``"none"`` means rows of no stored tier), newest
        first. Without ``live_only``, deleted (not anonymized) rows too."""
        where = ["tenant_id = ?", LIVE if live_only else "anonymized_at IS NULL"]
        params: list[Any] = [tenant_id]
        for column, value in filters.items():
            if column not in ROW_FILTERS:
                raise ValueError(f"not a row filter: {column!r}")
            if value is None:
                continue
            if column == "tier" and value == "none":
                where.append("tier IS NULL")
                continue
            where.append(f"{column} = ?")
            params.append(value)
        rows = self._db.read(
            f"SELECT {COLUMNS} FROM memories WHERE {' AND '.join(where)} "
            f"ORDER BY seq DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return [row_to_item(r) for r in rows]

    def replaced(self, tenant_id: str, memory_id: str) -> list[Row]:
        """The rows ``memory_id`` superseded (any state but anonymized), oldest first."""
        rows = self._db.read(
            f"SELECT {COLUMNS} FROM memories WHERE superseded_by = ? AND tenant_id = ? "
            f"AND anonymized_at IS NULL ORDER BY seq",
            (memory_id, tenant_id),
        )
        return [row_to_item(r) for r in rows]

    def audit(self, tenant_id: str, memory_ids: Sequence[str]) -> list[AuditEntry]:
        """The audit entries of ``memory_ids`` (supersessions with the deciding judge,
        deletions, anonymization), oldest first."""
        if not memory_ids:
            return []
        rows = self._db.read(
            f"SELECT at, event, memory_id, detail FROM audit_log WHERE tenant_id = ? "
            f"AND memory_id IN ({marks(len(memory_ids))}) ORDER BY seq",
            (tenant_id, *memory_ids),
        )
        return [
            AuditEntry(
                at=None if r[0] is None else datetime.fromisoformat(str(r[0])),
                event=str(r[1]),
                memory_id=r[2],
                detail=json.loads(r[3] or "{}"),
            )
            for r in rows
        ]

    def oldest_unembedded(self, tenant_id: str | None = None) -> datetime | None:
        """When the oldest row (of ``tenant_id``) still waiting for (or failed) its vector was
        written."""
        sql = f"SELECT created_at FROM memories WHERE vec_pending IN ({VEC_PENDING}, {VEC_FAILED})"
        params: tuple[Any, ...] = ()
        if tenant_id is not None:
            sql += " AND tenant_id = ?"
            params = (tenant_id,)
        rows = self._db.read(sql + " ORDER BY seq LIMIT 1", params)
        return datetime.fromisoformat(str(rows[0][0])) if rows else None


def _owned(
    tenant_id: str, user_id: str | None, agent_id: str | None
) -> tuple[str, tuple[Any, ...]]:
    where = f"tenant_id = ? AND {LIVE}"
    params: list[Any] = [tenant_id]
    if user_id is not None:
        where += " AND user_id = ?"
        params.append(user_id)
    if agent_id is not None:
        where += " AND agent_id = ?"
        params.append(agent_id)
    return where, tuple(params)
