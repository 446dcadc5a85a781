"""Fixtures for the core engine tests (builders live in ``tests/conftest.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from agentmem import AgentMemory

Snapshot = dict[str, list[tuple[Any, ...]]]


#: How each snapshot table is ordered on Postgres (SQLite uses its rowid).
_ORDER = {"memories": "seq", "payloads": "key", "partitions": "collection", "audit_log": "seq"}


def read_snapshot(mem: AgentMemory) -> Snapshot:
    """Every stored row of every table, read through a separate read-only SQLite connection
    (or, on Postgres, through the store's own pool)."""
    if mem.records.shared:
        return {
            table: [tuple(r) for r in mem.records.read(f"SELECT * FROM {table} ORDER BY {o}")]
            for table, o in _ORDER.items()
        }
    uri = f"file:{mem.home / 'records.sqlite3'}?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
            for table in ("memories", "payloads", "partitions", "audit_log")
        }
    finally:
        conn.close()


@pytest.fixture
def snapshot() -> Callable[[AgentMemory], Snapshot]:
    """``snapshot(mem)``: the full contents of ``mem``'s records store, for before/after checks."""
    return read_snapshot


def count_rows(mem: AgentMemory, where: str = "1=1", params: tuple[Any, ...] = ()) -> int:
    """Rows of the ``memories`` table matching ``where``, read straight from SQLite (or
    through the store on Postgres)."""
    if mem.records.shared:
        return int(mem.records.count(where, params))
    uri = f"file:{mem.home / 'records.sqlite3'}?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        return int(
            conn.execute(f"SELECT COUNT(*) FROM memories WHERE {where}", params).fetchone()[0]
        )
    finally:
        conn.close()


@pytest.fixture
def rows() -> Callable[..., int]:
    """``rows(mem, where="1=1", params=())``: count ``memories`` rows straight from SQLite."""
    return count_rows
