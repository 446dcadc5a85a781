"""Where a canary text is left after a deletion: the bytes of a data dir's files, and the rows
of the agent state (the LangGraph store's values)."""

from __future__ import annotations

import os
from pathlib import Path

from agentmem import AgentMemory


def files_with(home: Path, needle: str) -> list[str]:
    """Files under ``home`` (every store: SQLite and its WAL, Tantivy, Chroma) whose bytes
    contain ``needle`` (UTF-8), as paths relative to ``home``."""
    raw = needle.encode("utf-8")
    found = []
    for root, _, files in os.walk(home):
        for name in files:
            path = Path(root) / name
            try:
                data = path.read_bytes()
            except OSError:  # a file removed while walking
                continue
            if raw in data:
                found.append(str(path.relative_to(home)))
    return sorted(found)


def state_rows_with(mem: AgentMemory, needle: str) -> int:
    """Agent-state rows whose value holds ``needle``."""
    rows = mem.records.read("SELECT COUNT(*) FROM agent_state WHERE value LIKE ?", (f"%{needle}%",))
    return int(rows[0][0])
