"""Turn a fresh SQLite records store into one an older agentmem wrote: what each later
migration added is taken away again, newest first, and ``schema_version`` rolled back, so a
test can check what opening it migrates or backfills. A new migration adds its undo here."""

from __future__ import annotations

import sqlite3

#: Statements that undo each SQLite migration (``agentmem.storage.schema.MIGRATIONS``).
_UNDO: dict[int, tuple[str, ...]] = {
    11: (
        "DROP INDEX agent_state_about_agent",
        "ALTER TABLE agent_state DROP COLUMN about_agent_id",
    ),
    10: ("DROP INDEX agent_state_user", "ALTER TABLE agent_state DROP COLUMN user_id"),
    9: ("ALTER TABLE api_keys DROP COLUMN operator",),
    8: tuple(
        f"ALTER TABLE memories DROP COLUMN {column}"
        for column in ("kw_terms", "kw_term_count", "content_tokens")
    ),
    7: (
        "DROP TABLE memory_sources",
        "DROP TABLE erasures",
        "ALTER TABLE memories DROP COLUMN forgotten_at",
    ),
    6: ("DROP TABLE api_keys",),
    5: ("DROP TABLE meta",),
}


def downgrade(conn: sqlite3.Connection, version: int) -> None:
    """Make the store behind ``conn`` look as schema ``version`` left it (5 or later undo
    only; what migrations up to 4 did is kept), and commit."""
    for migration in sorted(_UNDO, reverse=True):
        if migration > version:
            for statement in _UNDO[migration]:
                conn.execute(statement)
    conn.execute("DELETE FROM schema_version WHERE version > ?", (version,))
    conn.commit()
