"""Helpers for the forgetting and erasure tests: byte scans of a data dir, and what of a text
is left in every store."""

from __future__ import annotations

import sqlite3
from typing import Any

from agentmem import AgentMemory, BoundMemory


def keyword_terms_left(mem: AgentMemory, text: str) -> dict[str, int]:
    """Analyzed terms of ``text`` that still have entries in the keyword index files
    (deleted-but-unmerged ones included): Tantivy compresses its term dictionary, so a byte
    scan alone would not see them."""
    out = {}
    for term in mem.keywords.query_terms(text):
        n = mem.keywords.doc_freq("content", term)
        if n:
            out[term] = n
    return out


def rows_containing(mem: AgentMemory, needle: str) -> int:
    """Rows of every records table whose text holds ``needle`` (read with a separate
    connection; on Postgres, every table of the store's schema through its pool)."""
    if mem.records.shared:
        return _pg_rows_containing(mem, needle)
    conn = sqlite3.connect(f"file:{mem.home / 'records.sqlite3'}?mode=ro", uri=True)
    try:
        total = 0
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            where = " OR ".join(f"CAST({c} AS TEXT) LIKE ?" for c in cols)
            total += conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE {where}", [f"%{needle}%"] * len(cols)
            ).fetchone()[0]
        return int(total)
    finally:
        conn.close()


def columns_of(mem: AgentMemory, table: str) -> list[str]:
    """The columns of a records table, in order, on either backend."""
    if not mem.records.shared:
        return [r[1] for r in mem.records.read(f"PRAGMA table_info({table})")]
    rows = mem.records.read(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
        (table,),
    )
    return [r[0] for r in rows]


def _pg_rows_containing(mem: AgentMemory, needle: str) -> int:
    total = 0
    tables = mem.records.read(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    )
    for (table,) in tables:
        cols = columns_of(mem, table)
        where = " OR ".join(f"CAST({c} AS TEXT) LIKE ?" for c in cols)
        params = [f"%{needle}%"] * len(cols)
        total += int(mem.records.read(f"SELECT COUNT(*) FROM {table} WHERE {where}", params)[0][0])
    return total


def everything_readable(m: BoundMemory, query: str) -> list[str]:
    """The text every read path of ``m`` returns for ``query``: recall in every scope and tier
    (superseded rows included), the session's messages, its session detail and working
    context, its working summary."""
    texts: list[str] = []
    for kwargs in (
        {},
        {"include_superseded": True},
        {"tiers": ("mid_term", "long_term")},
        {"tiers": ("working", "mid_term", "long_term", "knowledge")},
    ):
        result = m.recall(query, top_k=20, min_score=0.0, token_budget=20_000, **kwargs)
        texts += [h.content for h in result.items]
        texts += [str(h.metadata) for h in result.items]
    if m.session_id is not None:
        texts += [i.content for i in m.messages()]
        texts += [c["content"] for c in m.context_messages()]
        texts.append(str(m.working.summary.to_dict()))
        for sid in m.sessions():
            detail = m.session_detail(sid)
            texts += [e.content for e in detail.events]
            texts.append(detail.summary or "")
    return texts


def gettable(m: BoundMemory, ids: list[str]) -> dict[str, Any]:
    """The ids among ``ids`` that ``get`` still returns, with their content."""
    out = {}
    for id_ in ids:
        try:
            out[id_] = m.get(id_).content
        except Exception:
            continue
    return out
