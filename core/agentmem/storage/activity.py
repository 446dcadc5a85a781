"""Session activity: which sessions received messages, and when (for closing idle sessions).

The server's idle-session job reads the messages written since its last look (``seq`` above a
watermark, a range scan of the primary key), so after a first full pass each poll costs only
the new rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..models import MESSAGE_KINDS
from .database import Database, chunks, marks
from .rows import LIVE


@dataclass(frozen=True, slots=True)
class SessionActivity:
    """The newest live message of one session, and who wrote it."""

    tenant_id: str
    partition: str
    session_id: str
    last_seq: int
    last_at: datetime
    user_id: str | None
    agent_id: str | None


class ActivityLog:
    """Reads of session activity (``records.activity``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def sessions_since(self, after_seq: int) -> list[SessionActivity]:
        """Sessions with live messages or tool outputs of ``seq > after_seq``, each with its
        newest such row (its seq, time, user and agent)."""
        rows = self._db.read(
            f"SELECT tenant_id, partition, session_id, MAX(seq), MAX(created_at) FROM memories "
            f"WHERE seq > ? AND scope = 'session' AND kind IN ({marks(len(MESSAGE_KINDS))}) "
            f"AND session_id IS NOT NULL AND tier IS NULL AND {LIVE} "
            f"GROUP BY tenant_id, partition, session_id",
            (after_seq, *MESSAGE_KINDS),
        )
        owners: dict[int, tuple[Any, Any]] = {}
        for part in chunks([int(r[3]) for r in rows]):
            for seq, user, agent in self._db.read(
                f"SELECT seq, user_id, agent_id FROM memories WHERE seq IN ({marks(len(part))})",
                part,
            ):
                owners[int(seq)] = (user, agent)
        out = []
        for tenant, partition, session, seq, at in rows:
            user, agent = owners.get(int(seq), (None, None))
            out.append(
                SessionActivity(
                    tenant_id=str(tenant),
                    partition=str(partition),
                    session_id=str(session),
                    last_seq=int(seq),
                    last_at=datetime.fromisoformat(str(at)),
                    user_id=None if user is None else str(user),
                    agent_id=None if agent is None else str(agent),
                )
            )
        return out
