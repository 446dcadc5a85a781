"""Agent state: small named JSON values per (tenant, agent) (seed 001 get/set_agent_state)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .. import validation as v
from ..errors import ScopeError
from ..models import Identity
from .records import RecordStore, iso, now_utc


@dataclass(frozen=True, slots=True)
class StateEntry:
    """One stored state value."""

    key: str
    value: Any
    updated_at: datetime


class AgentState:
    """Key-value state of the bound agent, shared by its sessions.

    Example:
        >>> m.state.set("current_task", "Q4 revenue analysis")  # doctest: +SKIP
        >>> m.state.get("current_task").value  # doctest: +SKIP
        'Q4 revenue analysis'
    """

    def __init__(self, records: RecordStore, identity: Identity) -> None:
        self._records = records
        self._identity = identity

    def _agent(self) -> str:
        if self._identity.agent_id is None:
            raise ScopeError("agent_id", "agent state needs an agent_id bound")
        return self._identity.agent_id

    def get(self, key: str) -> StateEntry | None:
        """The entry under ``key``, or None."""
        key = v.identity(key, "key", required=True)  # type: ignore[assignment]
        rows = self._records.read(
            "SELECT value, updated_at FROM agent_state WHERE tenant_id = ? AND agent_id = ? "
            "AND key = ?",
            (self._identity.tenant_id, self._agent(), key),
        )
        if not rows:
            return None
        return StateEntry(key, json.loads(rows[0][0]), datetime.fromisoformat(rows[0][1]))

    def set(self, key: str, value: Any) -> StateEntry:
        """Store a JSON-serialisable value under ``key`` (replacing any previous one)."""
        key = v.identity(key, "key", required=True)  # type: ignore[assignment]
        encoded = v.metadata({"value": value}, "value")["value"]
        now = now_utc()
        with self._records.write() as conn:
            conn.execute(
                "INSERT INTO agent_state (tenant_id, agent_id, key, value, updated_at) "
                "VALUES (?,?,?,?,?) ON CONFLICT (tenant_id, agent_id, key) DO UPDATE SET "
                "value = excluded.value, updated_at = excluded.updated_at",
                (
                    self._identity.tenant_id,
                    self._agent(),
                    key,
                    json.dumps(encoded, ensure_ascii=False),
                    iso(now),
                ),
            )
        return StateEntry(key, encoded, now)

    def delete(self, key: str) -> bool:
        key = v.identity(key, "key", required=True)  # type: ignore[assignment]
        with self._records.write() as conn:
            cur = conn.execute(
                "DELETE FROM agent_state WHERE tenant_id = ? AND agent_id = ? AND key = ?",
                (self._identity.tenant_id, self._agent(), key),
            )
            return cur.rowcount > 0

    def list(self) -> list[StateEntry]:
        rows = self._records.read(
            "SELECT key, value, updated_at FROM agent_state WHERE tenant_id = ? AND "
            "agent_id = ? ORDER BY key",
            (self._identity.tenant_id, self._agent()),
        )
        return [StateEntry(r[0], json.loads(r[1]), datetime.fromisoformat(r[2])) for r in rows]
