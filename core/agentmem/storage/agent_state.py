"""The ``agent_state`` table: small named JSON values per (tenant, agent).

An entry may name the user and the agent it is about (``user_id``, ``about_agent_id``; NULL:
the owning agent's own): erasing that user, or that agent, deletes it
(:data:`agentmem.storage.erasure.IDENTITY_TABLES`).
"""

from __future__ import annotations

import builtins
import json
from datetime import datetime
from typing import Any

from .database import Database
from .rows import iso


class AgentStateTable:
    """Rows of ``agent_state`` (``records.agent_state``); values are stored as JSON text."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(
        self, tenant_id: str, agent_id: str, key: str
    ) -> tuple[Any, datetime, str | None, str | None] | None:
        """(value, updated_at, user, about agent) of an entry, or None."""
        rows = self._db.read(
            "SELECT value, updated_at, user_id, about_agent_id FROM agent_state "
            "WHERE tenant_id = ? AND agent_id = ? AND key = ?",
            (tenant_id, agent_id, key),
        )
        if not rows:
            return None
        r = rows[0]
        return json.loads(r[0]), datetime.fromisoformat(r[1]), r[2], r[3]

    def set(
        self,
        tenant_id: str,
        agent_id: str,
        key: str,
        value: Any,
        at: datetime,
        *,
        user_id: str | None = None,
        about_agent_id: str | None = None,
        only_if_newer: bool = False,
    ) -> bool:
        """Write an entry about ``user_id`` and ``about_agent_id`` (None: about no user, no
        other agent); True if written. With ``only_if_newer`` (an import) an entry this store
        holds from ``at`` or later is kept: an older export imported again must not roll the
        state back."""
        newer = " WHERE agent_state.updated_at < excluded.updated_at" if only_if_newer else ""
        encoded = json.dumps(value, ensure_ascii=False)
        with self._db.write(keys=()) as tx:  # one upsert
            cur = tx.execute(
                "INSERT INTO agent_state (tenant_id, agent_id, key, value, updated_at, user_id, "
                "about_agent_id) VALUES (?,?,?,?,?,?,?) ON CONFLICT (tenant_id, agent_id, key) "
                "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
                f"user_id = excluded.user_id, about_agent_id = excluded.about_agent_id{newer}",
                (tenant_id, agent_id, key, encoded, iso(at), user_id, about_agent_id),
            )
            return cur.rowcount > 0

    def delete(self, tenant_id: str, agent_id: str, key: str) -> bool:
        with self._db.write(keys=()) as tx:
            cur = tx.execute(
                "DELETE FROM agent_state WHERE tenant_id = ? AND agent_id = ? AND key = ?",
                (tenant_id, agent_id, key),
            )
            return cur.rowcount > 0

    def list(
        self, tenant_id: str, agent_id: str, prefix: str | None = None
    ) -> list[tuple[str, Any, datetime, str | None, str | None]]:
        """(key, value, updated_at, user, about agent) of every entry of an agent (whose key
        starts with ``prefix``, when given), by key. On SQLite the prefix is one range of the
        primary key; on Postgres a check on the agent's keys: either way only the entries
        under it are read out and decoded."""
        sql = (
            "SELECT key, value, updated_at, user_id, about_agent_id FROM agent_state "
            "WHERE tenant_id = ? AND agent_id = ?"
        )
        params: tuple[Any, ...] = (tenant_id, agent_id)
        if prefix:
            if self._db.dialect == "postgres":
                # the column's collation may not order by code point; starts_with is exact
                sql += " AND starts_with(key, ?)"
                params += (prefix,)
            else:  # BINARY collation: code point order, so the prefix is one index range
                sql += " AND key >= ?"
                params += (prefix,)
                if (end := _after_prefix(prefix)) is not None:
                    sql += " AND key < ?"
                    params += (end,)
        rows = self._db.read(sql + " ORDER BY key", params)
        return [(r[0], json.loads(r[1]), datetime.fromisoformat(r[2]), r[3], r[4]) for r in rows]

    def all(
        self, tenant_id: str | None = None
    ) -> builtins.list[tuple[str, str, str, Any, datetime, str | None, str | None]]:
        """(tenant, agent, key, value, updated_at, user, about agent) of every entry (of one
        tenant), for export."""
        sql = (
            "SELECT tenant_id, agent_id, key, value, updated_at, user_id, about_agent_id "
            "FROM agent_state"
        )
        params: tuple[Any, ...] = ()
        if tenant_id is not None:
            sql += " WHERE tenant_id = ?"
            params = (tenant_id,)
        return [
            (r[0], r[1], r[2], json.loads(r[3]), datetime.fromisoformat(r[4]), r[5], r[6])
            for r in self._db.read(sql + " ORDER BY tenant_id, agent_id, key", params)
        ]


def _after_prefix(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix`` (None: no bound): the
    prefix with its last character raised by one, past the surrogates UTF-8 cannot hold."""
    head = prefix.rstrip(chr(0x10FFFF))
    if not head:
        return None
    code = ord(head[-1]) + 1
    if 0xD800 <= code <= 0xDFFF:
        code = 0xE000
    return head[:-1] + chr(code)
