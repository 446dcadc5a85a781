"""Cost of forgetting and erasure: ``forget`` latency, ``erase`` time by phase, and what
``secure_delete`` costs the write path.

Builds a data dir of ``--users`` users with ``--messages`` chat messages each (plus one
remembered fact and one closed session per user), embedded with a deterministic hash embedder
(so the build is fast; erasure never embeds), then measures:

- ``forget`` of one message of a closed session (tombstone, index removal, follower re-index,
  session chunks and summary rebuilt with the offline LLM), median of ``--forgets``;
- ``erase`` of one user, total and per phase (records delete, keyword rewrite, vector
  collections, Chroma compaction, SQLite VACUUM + WAL truncate);
- the write path with ``PRAGMA secure_delete`` ON vs OFF: ``remember_many`` of 2,000 rows and
  the indexer's flag updates, median of five.

Usage::

    python benchmarks/erase_bench.py --users 100 --messages 200 [--workdir DIR]

Prints one JSON document. Nothing here is asserted by the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentmem import AgentMemory
from agentmem.bench.hash_embedder import HashEmbedder
from agentmem.storage import database
from agentmem.storage.datadir import dir_size
from agentmem.storage.erasure import ErasureStore
from agentmem.storage.records import RecordStore
from agentmem.storage.vector_index import VectorIndex
from agentmem.write.indexer import Indexer


@contextmanager
def timed(phases: dict[str, float], name: str, owner: Any, attr: str) -> Iterator[None]:
    """Add the time spent in ``owner.attr`` to ``phases[name]`` while the block runs."""
    original = getattr(owner, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            phases[name] += time.perf_counter() - started

    setattr(owner, attr, wrapper)
    try:
        yield
    finally:
        setattr(owner, attr, original)


def build(home: Path, users: int, messages: int) -> AgentMemory:
    mem = AgentMemory(home, embedder=HashEmbedder(), background=False)
    for u in range(users):
        m = mem.bind("acme", user_id=f"u{u}", agent_id="support", session_id=f"s{u}")
        m.add_messages(
            [
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"user {u} message {i}: the parcel {u * 1000 + i} left the depot",
                }
                for i in range(messages)
            ]
        )
        m.remember(f"user {u} prefers deliveries on Fridays")
        m.close_session(summary_timeout=10)
        mem.flush()
    return mem


def bench_forget(mem: AgentMemory, users: int, n: int) -> list[float]:
    out = []
    for k in range(n):
        m = mem.bind(
            "acme", user_id=f"u{k % users}", agent_id="support", session_id=f"s{k % users}"
        )
        target = m.messages(limit=20)[0].id
        started = time.perf_counter()
        assert m.forget(target)
        out.append((time.perf_counter() - started) * 1000)
    return out


def bench_erase(mem: AgentMemory, user: str) -> dict[str, Any]:
    phases: dict[str, float] = defaultdict(float)
    with (
        timed(phases, "records_delete", ErasureStore, "delete"),
        timed(phases, "keyword_rewrite", Indexer, "rewrite_keywords"),
        timed(phases, "vector_rebuild", VectorIndex, "rebuild"),
        timed(phases, "vector_drop", VectorIndex, "drop"),
        timed(phases, "chroma_compaction", VectorIndex, "compact_files"),
        timed(phases, "sqlite_vacuum_and_wal", RecordStore, "reclaim"),
    ):
        started = time.perf_counter()
        receipt = mem.erase(tenant_id="acme", user_id=user)
        total = time.perf_counter() - started
    return {
        "seconds": round(total, 3),
        "phases_seconds": {k: round(v, 3) for k, v in phases.items()},
        "rows_removed": receipt.rows,
        "keyword_entries": receipt.keyword_entries,
        "vectors": receipt.vectors,
        "collections_dropped": receipt.collections_dropped,
        "collections_rebuilt": receipt.collections_rebuilt,
    }


def bench_writes(workdir: Path, secure: bool) -> float:
    """Seconds for 2,000 remembered rows plus their indexing (median of five)."""
    original: Callable[..., Any] = database.Database._connect
    mode = "ON" if secure else "OFF"

    def connect(self: database.Database) -> Any:
        conn = original(self)
        conn.execute(f"PRAGMA secure_delete={mode}")
        return conn

    times = []
    database.Database._connect = connect  # type: ignore[method-assign]
    try:
        for run in range(5):
            home = workdir / f"writes-{mode}-{run}"
            mem = AgentMemory(home, embedder=HashEmbedder(), background=False)
            m = mem.bind("acme", user_id="w")
            started = time.perf_counter()
            for b in range(20):
                m.remember_many([f"fact {b}-{i} about parcel {b * 100 + i}" for i in range(100)])
            mem.flush()
            times.append(time.perf_counter() - started)
            mem.close()
    finally:
        database.Database._connect = original  # type: ignore[method-assign]
    return round(statistics.median(times), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--forgets", type=int, default=20)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    os.environ.pop("ANTHROPIC_API_KEY", None)  # the offline LLM writes the summaries
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="agentmem-erase-bench-"))
    started = time.perf_counter()
    mem = build(workdir / "store", args.users, args.messages)
    built = time.perf_counter() - started
    rows = mem.records.count()
    forget_ms = bench_forget(mem, args.users, args.forgets)
    mem.flush()
    sizes = {name: dir_size(mem.home / name) for name in ("records.sqlite3", "keywords", "chroma")}
    erase = bench_erase(mem, "u1")
    mem.close()
    print(
        json.dumps(
            {
                "rows": rows,
                "users": args.users,
                "build_seconds": round(built, 1),
                "disk_bytes": sizes,
                "forget_ms": {
                    "median": round(statistics.median(forget_ms), 1),
                    "max": round(max(forget_ms), 1),
                    "n": len(forget_ms),
                },
                "erase_one_user": erase,
                "writes_2000_rows_seconds": {
                    "secure_delete_on": bench_writes(workdir, True),
                    "secure_delete_off": bench_writes(workdir, False),
                },
                "workdir": str(workdir),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
