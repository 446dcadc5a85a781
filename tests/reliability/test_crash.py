"""Crash safety: SIGKILL a writer process at random points and check nothing acknowledged is lost.

The writer (``_reliability_support.py writer``) bulk-imports batches of 25 memories or chat
messages in one transaction each and prints every id the API returned (the acknowledgement)
before writing the next batch. The tests kill it (``SIGKILL``: no close, no flush, no atexit)

- at random delays, five times in a row on the same data dir (each run reopens it),
- while the background indexer is embedding a large backlog (``vec_pending > 0``),
- in the middle of ``reindex`` (both indexes dropped and half rebuilt),
- in the middle of ``erase`` (at delays spread over its phases): at the next open the erasure
  is finished (or, killed before it was logged, runs again) and no file holds the erased
  user's canary while the other user's rows are intact,

then open the dir, ``flush()`` and check (:func:`verify`): every acknowledged id is in the
records with its exact content; every batch is all-or-nothing (no half-written transaction is
visible); every row has content and a matching content hash; the keyword index and each
Chroma collection hold exactly the live rows (nothing missing, nothing extra); every live row's
stored vector is its own embedding (looked up by id: exact, unlike a nearest-neighbour search);
each collection answers a vector query; and a sample of acknowledged ids is found by a keyword
search for its unique token (ranked first, or tied first with the chat messages that carry it
as context) and by ``recall`` restricted to its kind and scope.

A vector *search* for one given id is not asserted: Chroma's HNSW graph can leave a few nodes
unreachable (the test embedder gives many rows nearly or exactly the same vector), so even a
query for the whole collection may return fewer ids than it holds. That happens without any
crash too; what a crash could break (a vector lost or stale) is checked exactly instead.
"""

from __future__ import annotations

import hashlib
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pytest
from _canaries import files_with
from _reliability_support import (
    BATCH,
    ERASED_CANARY,
    KEPT_CANARY,
    SESSION,
    TENANT,
    USER,
    HashEmbedder,
    content,
    token,
)

from agentmem import AgentMemory
from agentmem.maintenance.doctor import diagnose
from agentmem.storage.keyword_index import KeywordFilter
from agentmem.write.index_text import row_text

pytestmark = pytest.mark.slow

_CONTENT = re.compile(r"^(memory|message) zq(\d+)x(\d+)x(\d+) of batch \d+ run \d+ about")

Acked = dict[str, tuple[int, int, int]]  # id -> (run, batch, item)


def _acks(lines: list[str], run: int) -> Acked:
    out: Acked = {}
    per_batch: Counter[int] = Counter()
    for line in lines:
        if line.startswith("ACK "):
            _, batch_s, id_ = line.split()
            batch = int(batch_s)
            out[id_] = (run, batch, per_batch[batch])
            per_batch[batch] += 1
    return out


def _expected(run: int, batch: int, item: int) -> str:
    return content("memory" if batch % 2 == 0 else "message", run, batch, item)


def _stored_vectors(mem: AgentMemory, collection: str, ids: Iterable[str]) -> dict[str, np.ndarray]:
    """The vectors stored for ``ids`` in ``collection``, looked up by id (no search)."""
    col = mem.vectors.client.get_collection(collection, embedding_function=None)
    wanted = sorted(ids)
    out: dict[str, np.ndarray] = {}
    for start in range(0, len(wanted), 1000):
        got = col.get(ids=wanted[start : start + 1000], include=["embeddings"])
        out.update(zip(got["ids"], (np.asarray(e) for e in got["embeddings"]), strict=True))
    return out


def verify(home: Path, acked: Acked, *, sample: int = 25) -> AgentMemory:
    """Open ``home``, flush, and check the invariants listed in the module docstring."""
    embedder = HashEmbedder()
    mem = AgentMemory(home, embedder=embedder, background=False)
    assert mem.flush()
    records = mem.records
    assert records.index.pending_counts() == (0, 0, 0)

    rows = {r.item.id: r for r in records.archive.iter_rows(live_only=False)}
    # 1. every acknowledged write is there, exactly as written
    missing = [i for i in acked if i not in rows]
    assert not missing, f"{len(missing)} acknowledged ids lost, e.g. {missing[:3]}"
    for id_, (run, batch, item) in acked.items():
        assert rows[id_].item.content == _expected(run, batch, item)
    # 2. nothing half-written: each row whole, each batch (one transaction) all or nothing
    groups: dict[tuple[int, int], set[int]] = defaultdict(set)
    for row in rows.values():
        item = row.item
        assert item.content and item.deleted_at is None
        assert item.content_hash == hashlib.sha256(item.content.encode()).hexdigest()
        m = _CONTENT.match(item.content)
        assert m, item.content
        groups[(int(m[2]), int(m[3]))].add(int(m[4]))
    for key, items in groups.items():
        assert items == set(range(BATCH)), f"batch {key} is partial: {sorted(items)}"
    assert len(rows) == sum(len(v) for v in groups.values())  # no duplicates
    assert records.count() == len(rows)

    # 3. both indexes hold exactly the live rows
    live = set(rows)
    assert mem.keywords.all_ids() == live
    by_partition: dict[str, set[str]] = defaultdict(set)
    for row in rows.values():
        by_partition[row.partition].add(row.item.id)
    vector_ids: set[str] = set()
    for tenant, partition, collection in records.partitions.all():
        assert tenant == TENANT
        ids = mem.vectors.ids(collection)
        assert ids == by_partition[partition], f"partition {partition} drifted"
        vector_ids |= ids
        # each row's vector is there and is its own embedding (not lost, not stale)
        part_rows = [rows[i] for i in sorted(by_partition[partition])]
        stored = _stored_vectors(mem, collection, (r.item.id for r in part_rows))
        want = embedder.embed_documents([row_text(r) for r in part_rows])
        wrong = [
            r.item.id
            for r, w in zip(part_rows, want, strict=True)
            if r.item.id not in stored or float(np.dot(stored[r.item.id], w)) < 0.999
        ]
        assert not wrong, f"{len(wrong)} rows without their own vector, e.g. {wrong[:3]}"
        # and the collection answers a vector search with live rows of its partition
        if part_rows:
            hits = mem.vectors.query(collection, want[0], 5)
            assert len(hits) == min(5, len(part_rows))
            assert {i for i, _ in hits} <= by_partition[partition]
    assert vector_ids == live

    # 4. a sample is findable by each index on its own, and by recall
    m = mem.bind(tenant_id=TENANT, user_id=USER, session_id=SESSION)
    chosen = random.Random(7).sample(sorted(acked), min(sample, len(acked)))
    for n, id_ in enumerate(chosen):
        run, batch, item = acked[id_]
        row = rows[id_]
        tok = token(run, batch, item)
        flt = KeywordFilter(tenant=TENANT, partitions=(row.partition,))
        kw = mem.keywords.search(mem.keywords.query_terms(tok), flt, 5)
        # the row has the top score; a chat message's keyword document also carries the
        # messages before it (keyword_context), so the next ones in its session hold the
        # token too and may tie with it (in index order, which a crash and re-index changes)
        assert kw and id_ in {i for i, s in kw if s >= kw[0][1] - 1e-6}, kw
        for other, _ in kw:
            if other != id_:
                before = records.conversations.preceding_messages(
                    TENANT, SESSION, rows[other].partition, other, mem.config.keyword_context
                )
                assert id_ in {r.item.id for r in before}, (other, kw)
        if n < 5:
            kind, scope = (
                ("memory", "user") if row.item.kind == "memory" else ("chat_message", "session")
            )
            got = m.recall(tok, kinds=kind, scope=scope, min_score=0.0, top_k=3)
            assert got.items and got.items[0].id == id_
            assert got.degraded is False
    return mem


def test_sigkill_during_bulk_import_keeps_every_acknowledged_write(
    tmp_path: Path, spawn: Callable[..., object]
) -> None:
    home = tmp_path / "bulk"
    rng = random.Random(20240611)
    acked: Acked = {}
    for run in range(5):
        proc = spawn("writer", home, run, "bulk")
        proc.wait_for(lambda line: line == "OPEN")  # type: ignore[attr-defined]
        if run % 2:  # odd runs: somewhere after the first acknowledged batch
            proc.wait_for(lambda line: line.startswith("ACK"))  # type: ignore[attr-defined]
        time.sleep(rng.uniform(0.0, 0.8))  # even runs may die before their first batch
        acked |= _acks(proc.kill(), run)  # type: ignore[attr-defined]
    assert len(acked) >= BATCH  # the kills did land in the middle of an import
    verify(home, acked).close()


def test_sigkill_during_background_embedding(tmp_path: Path, spawn: Callable[..., object]) -> None:
    home = tmp_path / "embedding"
    proc = spawn("writer", home, 0, "embedding")
    # every batch acknowledged, the indexer part-way through the (slow) embedding backlog
    proc.wait_for(  # type: ignore[attr-defined]
        lambda line: (
            line.startswith("PENDING ") and int(line.split()[2]) > 0 and int(line.split()[3]) > 0
        )
    )
    lines = proc.kill()  # type: ignore[attr-defined]
    acked = _acks(lines, 0)
    assert len(acked) == 40 * BATCH
    mem = verify(home, acked)
    assert mem.stats().vector_failed == 0
    mem.close()


def test_sigkill_during_reindex(tmp_path: Path, spawn: Callable[..., object]) -> None:
    home = tmp_path / "reindex"
    # a populated, fully indexed data dir, written in-process: more rows than one pass of the
    # rebuild embeds (a keyword pass embeds a batch of chat messages first, then the vector
    # pass another batch), so that the rebuild reports progress before its end
    acked: Acked = {}
    with AgentMemory(home, embedder=HashEmbedder(), background=False) as mem:
        m = mem.bind(tenant_id=TENANT, user_id=USER, session_id=SESSION)
        for batch in range(24):
            texts = [_expected(9, batch, i) for i in range(BATCH)]
            if batch % 2 == 0:
                ids = [r.id for r in m.remember_many(texts)]
            else:
                ids = [
                    i.id for i in m.add_messages([{"role": "user", "content": t} for t in texts])
                ]
            acked |= {id_: (9, batch, i) for i, id_ in enumerate(ids)}
        mem.flush()
    proc = spawn("writer", home, 9, "reindex")
    # killed after the indexes were dropped and the first embedding batch was stored
    proc.wait_for(lambda line: line.startswith("PROGRESS "))  # type: ignore[attr-defined]
    lines = proc.kill()  # type: ignore[attr-defined]
    assert "REINDEXED" not in lines
    verify(home, acked).close()


# measured: the erasure is logged and its rows deleted within milliseconds of ERASING; the
# rewrites and compactions take the next ~0.2 s (a kill at 0.3 s mostly finds it done)
@pytest.mark.parametrize("delay", [0.0, 0.03, 0.08, 0.15, 0.3])
def test_sigkill_during_erase(tmp_path: Path, spawn: Callable[..., object], delay: float) -> None:
    home = tmp_path / "erase"
    proc = spawn("eraser", home)
    proc.wait_for(lambda line: line == "ERASING")  # type: ignore[attr-defined]
    time.sleep(delay)
    lines = proc.kill()  # type: ignore[attr-defined]
    mem = AgentMemory(home, embedder=HashEmbedder(), background=False)  # finishes the erasure
    try:
        logged = mem.records.erasure.all()
        assert all(rec.done for rec in logged), logged
        if not logged:  # killed before the erasure was logged: nothing was erased yet
            assert "ERASED" not in lines
            mem.erase(tenant_id=TENANT, user_id="u-gone")
        kept = mem.bind(tenant_id=TENANT, user_id="u-kept", agent_id="a1", session_id="s-u-kept")
        assert len(kept.messages()) == 31
        assert kept.recall(KEPT_CANARY, min_score=0.0).items
        report = diagnose(mem.context)
        assert not report.erasures, report.erasures
    finally:
        mem.close()
    assert files_with(home, ERASED_CANARY) == []
    assert files_with(home, KEPT_CANARY)
