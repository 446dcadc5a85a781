"""Concurrency: many threads on one ``AgentMemory``; two processes on one data dir.

- 8 threads (2 tenants, 4 users, 8 sessions) write memories and messages, forget some of
  their own rows and recall, all at once for ~12 s against one store with its background
  indexer: no exception in any thread, every recalled row is one this identity may see, and
  after ``flush()`` no acknowledged write is lost (every returned id is live, every forgotten
  one gone), and the records, the keyword index and the Chroma collections agree exactly.
- One data dir, two processes: while a writer subprocess holds it, opening it here raises
  ``DataDirLockedError`` naming the dir; after the holder is SIGKILLed (no clean close), the
  lock is released by the OS and the dir opens with every acknowledged write. (The in-process
  second opener and a refused subprocess are covered in tests/core/test_api.py.)
- A new data dir, several processes: opened by all at the same instant (12 rounds), every
  open succeeds and each migration is applied once.
"""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _reliability_support import SESSION, TENANT, USER, HashEmbedder

from agentmem import AgentMemory, DataDirLockedError
from agentmem.storage.schema import MIGRATIONS

pytestmark = pytest.mark.slow

THREADS = 8
SECONDS = 12.0


def _worker(
    mem: AgentMemory,
    n: int,
    deadline: float,
    written: dict[str, str],
    forgotten: set[str],
    errors: list[BaseException],
    recalls: list[int],
) -> None:
    rng = random.Random(n)
    tenant, user = f"t{n % 2}", f"u{n % 4}"
    m = mem.bind(tenant_id=tenant, user_id=user, session_id=f"s{n}")
    own: list[str] = []
    i = 0
    try:
        while time.monotonic() < deadline:
            i += 1
            op = rng.random()
            if op < 0.35:
                rid = m.remember(f"thread {n} fact {i} mentions tok{n}x{i} and a heron").id
                own.append(rid)
                written[rid] = tenant
            elif op < 0.6:
                item = m.add_message("user", f"thread {n} message {i} about tok{n}x{i}")
                own.append(item.id)
                written[item.id] = tenant
            elif op < 0.65 and own:
                victim = own.pop(rng.randrange(len(own)))
                assert m.forget(victim)
                forgotten.add(victim)
            else:
                target = rng.randrange(max(i, 1))
                result = m.recall(f"tok{n}x{target} heron", top_k=5, min_score=0.0)
                assert len(result.items) <= 5
                for hit in result.items:
                    row = mem.records.memories.get(hit.id)
                    assert row is not None and row.item.tenant_id == tenant
                    if row.item.scope == "user":
                        assert row.item.user_id == user
                    if row.item.scope == "session":
                        assert row.partition == f"conv:u:{user}"
                recalls[n] += 1
    except BaseException as exc:  # reported by the test
        errors.append(exc)


def test_threads_writing_and_recalling_lose_nothing(make_memory, shared_embedder) -> None:
    mem = make_memory()  # real embedder, background indexer
    written: dict[str, str] = {}
    forgotten: set[str] = set()
    errors: list[BaseException] = []
    recalls = [0] * THREADS
    deadline = time.monotonic() + SECONDS
    threads = [
        threading.Thread(
            target=_worker, args=(mem, n, deadline, written, forgotten, errors, recalls)
        )
        for n in range(THREADS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(SECONDS + 120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[:3]
    assert len(written) > 50 and all(recalls), (len(written), recalls)

    assert mem.flush(timeout=180)
    live = set(written) - forgotten
    rows = {r.item.id: r for r in mem.records.archive.iter_rows(live_only=False)}
    assert set(rows) == set(written)  # nothing lost, nothing invented
    assert {i for i, r in rows.items() if r.item.deleted_at is None} == live
    for id_, tenant in written.items():
        assert rows[id_].item.tenant_id == tenant
        # a forgotten row is a tombstone: no content left
        assert bool(rows[id_].item.content) == (id_ in live)
    done = mem.stats()
    assert (done.keyword_pending, done.vector_pending, done.vector_failed) == (0, 0, 0)
    assert mem.keywords.all_ids() == live
    vectors = set().union(*(mem.vectors.ids(c) for _, _, c in mem.records.partitions.all()))
    assert vectors == live
    stats = mem.stats()
    assert stats.live == len(live) and stats.deleted == len(forgotten)


def test_second_process_gets_data_dir_locked_error(
    tmp_path: Path, spawn: Callable[..., Any]
) -> None:
    home = tmp_path / "shared"
    holder = spawn("writer", home, 0, "bulk")
    holder.wait_for(lambda line: line.startswith("ACK"))
    with pytest.raises(DataDirLockedError) as err:
        AgentMemory(home, embedder=HashEmbedder())
    message = str(err.value)
    assert str(home) in message and "another process" in message
    assert err.value.context["path"] == str(home)
    lines = holder.kill()  # SIGKILL: the OS drops the flock; no stale lock remains
    acked = [line.split()[2] for line in lines if line.startswith("ACK ")]
    with AgentMemory(home, embedder=HashEmbedder(), background=False) as mem:
        m = mem.bind(tenant_id=TENANT, user_id=USER, session_id=SESSION)
        assert len(mem.records.memories.get_many(TENANT, acked)) == len(acked)
        assert m.get(acked[-1]).content


#: Each process opens the records store of a new data dir per round, every process at the
#: same instant (the rounds' start is sent once all have imported agentmem).
_FIRST_OPEN = r"""
import sys, time
from pathlib import Path
from agentmem.storage.records import RecordStore
root, rounds, gap = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
print("READY", flush=True)
start = float(sys.stdin.readline())  # sent once every process is ready: one instant for all
failed = 0
for n in range(rounds):
    at = start + n * gap
    time.sleep(max(0.0, at - time.time() - 0.05))
    while time.time() < at:  # spin the last moment: a sleep wakes too unevenly
        pass
    try:
        RecordStore(root / f"dir{n}" / "records.sqlite3").close()
    except Exception as exc:
        failed += 1
        print(f"round {n}: {exc}", flush=True)
print(f"FAILED {failed}", flush=True)
"""


def test_processes_opening_a_new_data_dir_at_once_all_succeed(tmp_path: Path) -> None:
    """Several processes opening one new records store at once: each waits for the one
    migrating and finds the schema complete (none applies a migration twice)."""
    processes, rounds, gap = 4, 12, 0.4
    for n in range(rounds):
        (tmp_path / f"dir{n}").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _FIRST_OPEN, str(tmp_path), str(rounds), str(gap)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for _ in range(processes)
    ]
    before = []  # what each printed up to READY (it has imported agentmem)
    for p in procs:
        assert p.stdout is not None
        lines = []
        while (line := p.stdout.readline()) not in ("READY\n", ""):
            lines.append(line)
        assert line, f"ended before READY: {''.join(lines)}"
        before.append("".join(lines))
    start = time.time() + 0.5
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(f"{start}\n")
        p.stdin.flush()
    outputs = [b + p.communicate(timeout=120)[0] for b, p in zip(before, procs, strict=True)]
    assert [p.returncode for p in procs] == [0] * processes, outputs
    assert all(out.strip().endswith("FAILED 0") for out in outputs), outputs
    for n in range(rounds):
        with sqlite3.connect(tmp_path / f"dir{n}" / "records.sqlite3") as conn:
            versions = [v for (v,) in conn.execute("SELECT version FROM schema_version")]
        assert versions == list(range(1, len(MIGRATIONS) + 1))
