"""The ``api_keys`` table: the server's API keys, each stored as a hash of its secret.

Rows are never deleted: a revoked key keeps its row (``revoked_at`` set), so ``agentmem keys
list`` shows what existed and an old key can never come back to life.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .database import Database
from .rows import iso, now_utc

_COLUMNS = (
    "id, secret_hash, tenant_id, user_id, agent_id, name, admin, created_at, revoked_at, operator"
)


@dataclass(frozen=True, slots=True)
class KeyRow:
    """One stored API key (its secret only as a hash)."""

    id: str
    secret_hash: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    name: str | None
    admin: bool
    created_at: datetime
    revoked_at: datetime | None
    operator: bool = False


def _row(r: tuple[object, ...]) -> KeyRow:
    return KeyRow(
        id=str(r[0]),
        secret_hash=str(r[1]),
        tenant_id=str(r[2]),
        user_id=None if r[3] is None else str(r[3]),
        agent_id=None if r[4] is None else str(r[4]),
        name=None if r[5] is None else str(r[5]),
        admin=bool(r[6]),
        created_at=datetime.fromisoformat(str(r[7])),
        revoked_at=None if r[8] is None else datetime.fromisoformat(str(r[8])),
        operator=bool(r[9]),
    )


class ApiKeyTable:
    """Rows of ``api_keys`` (``records.api_keys``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def insert(
        self,
        key_id: str,
        secret_hash: str,
        *,
        tenant_id: str,
        user_id: str | None,
        agent_id: str | None,
        name: str | None,
        admin: bool,
        operator: bool = False,
    ) -> KeyRow:
        at = now_utc()
        values = (key_id, secret_hash, tenant_id, user_id, agent_id, name, int(admin), iso(at))
        with self._db.write(keys=()) as tx:  # a new id
            tx.execute(
                f"INSERT INTO api_keys ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,NULL,?)",
                (*values, int(operator)),
            )
        found = self.get(key_id)
        assert found is not None
        return found

    def get(self, key_id: str) -> KeyRow | None:
        rows = self._db.read(f"SELECT {_COLUMNS} FROM api_keys WHERE id = ?", (key_id,))
        return _row(rows[0]) if rows else None

    def list(self, *, tenant_id: str | None = None) -> list[KeyRow]:
        """Every key (of one tenant), oldest first."""
        if tenant_id is None:
            rows = self._db.read(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id")
        else:
            rows = self._db.read(
                f"SELECT {_COLUMNS} FROM api_keys WHERE tenant_id = ? ORDER BY created_at, id",
                (tenant_id,),
            )
        return [_row(r) for r in rows]

    def revoke(self, key_id: str) -> bool:
        """Mark a live key revoked; False when there is no such key or it was revoked."""
        with self._db.write(keys=()) as tx:  # one guarded update
            cur = tx.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (iso(now_utc()), key_id),
            )
            return cur.rowcount > 0
