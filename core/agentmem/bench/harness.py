"""The parts of ``agentmem bench`` that the agentmem run and the peer runs share: settings,
the corpus's queries, bulk import, timed and interleaved searches, and scoring.

:mod:`agentmem.bench.runner` orchestrates a run; :mod:`agentmem.bench.peers` measures the
LangChain and LlamaIndex pipelines with the same pieces.
"""

from __future__ import annotations

import os
import platform
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..embeddings import CachedEmbedder, Embedder
from ..errors import ValidationError
from ..memory import AgentMemory, BoundMemory
from ..recall.profile import PHASES, RecallProfile, profiling
from .corpus import QUERY_KINDS, iter_memories, memory_at
from .stats import dir_size, phase_summary

TENANT = "bench"
USER = "bench-user"
QUERY_SESSION = "bench-query"
DEFAULT_PEER_CAP = 20_000
MAX_LISTED_MISSES = 20
#: Texts of the corpus the bare model embeds beside a bulk import (its throughput, the floor).
EMBEDDER_SAMPLE = 1024

ProgressFn = Callable[[str], None]


@dataclass(frozen=True)
class BenchSettings:
    """What to run.

    Attributes:
        memories: Corpus size N (bulk-imported memories).
        queries: Recall queries Q (half keyword, half paraphrase).
        seed: Corpus and query seed.
        peers: Also run the LangChain / LlamaIndex pipelines (when installed).
        peer_memories: Corpus size for the peer comparison; default ``min(N, 20000)`` (the
            peers' BM25 retrievers are in-memory Python and slow to build at 100k+).
        ack_samples: Single-write calls timed for the acknowledgement latency.
        batch_size: Rows per bulk call.
        warmup_queries: Untimed queries before the timed ones.
        top_k: Hits per query (Recall@top_k).
        workdir: Where data dirs go; default a temporary dir, removed afterwards.
        keep: Keep the data dirs.
        profile: Also time each phase of recall (an extra pass over the queries, with the
            query embedding uncached; see :mod:`agentmem.recall.profile`).
    """

    memories: int
    queries: int = 200
    seed: int = 0
    peers: bool = True
    peer_memories: int | None = None
    ack_samples: int = 500
    batch_size: int = 1000
    warmup_queries: int = 20
    top_k: int = 10
    workdir: Path | None = None
    keep: bool = False
    profile: bool = False

    def effective_peer_memories(self) -> int:
        cap = DEFAULT_PEER_CAP if self.peer_memories is None else self.peer_memories
        return max(1, min(self.memories, cap))

    def validate(self) -> None:
        for name in ("memories", "queries", "batch_size", "top_k"):
            if getattr(self, name) < 1:
                raise ValidationError(name, "must be a positive integer")
        for name in ("ack_samples", "warmup_queries"):
            if getattr(self, name) < 0:
                raise ValidationError(name, "must not be negative")
        if self.peer_memories is not None and self.peer_memories < 1:
            raise ValidationError("peer_memories", "must be a positive integer")


@dataclass(frozen=True, slots=True)
class Query:
    target: int
    kind: str
    text: str


@dataclass
class BenchResult:
    """Figures of one run: ``summary`` (JSON-ready) and raw ``samples`` for the plots."""

    summary: dict[str, Any]
    samples: dict[str, list[float]] = field(default_factory=dict)
    timeline: list[tuple[float, int, int]] = field(default_factory=list)
    """(seconds since import start, rows committed, rows embedded) during the bulk import."""


def make_queries(n_queries: int, corpus: int, seed: int, salt: int = 0) -> list[Query]:
    """``n_queries`` queries about distinct memories of ``range(corpus)``, kinds alternating."""
    r = random.Random(seed * 7_919 + salt)
    k = min(n_queries, corpus)
    targets = r.sample(range(corpus), k)
    out: list[Query] = []
    for j, t in enumerate(targets):
        kind = QUERY_KINDS[j % len(QUERY_KINDS)]
        out.append(Query(t, kind, memory_at(t, seed).query(kind)))
    return out


def machine_info() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_1m_at_start": round(load[0], 2),
    }


class _Sampler:
    """Samples (t, committed, embedded) every ``interval`` seconds in a daemon thread."""

    def __init__(self, mem: AgentMemory, committed: Callable[[], int], interval: float = 0.25):
        self.mem = mem
        self.committed = committed
        self.interval = interval
        self.points: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self._t0 = time.perf_counter()
        self._base = mem.indexer.embedded_total
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def start(self) -> None:
        self._t0 = time.perf_counter()
        self._base = self.mem.indexer.embedded_total
        self._thread.start()

    def sample(self) -> None:
        self.points.append(
            (
                time.perf_counter() - self._t0,
                self.committed(),
                self.mem.indexer.embedded_total - self._base,
            )
        )

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


def embedding_rate(points: Sequence[tuple[float, int, int]]) -> float:
    """Rows/s the indexer embedded from its first to its last embedded row in ``points``."""
    first = next((p for p in points if p[2] > 0), None)
    if first is None:
        return 0.0
    last = max(points, key=lambda p: p[2])
    # the first sample with progress covers an unknown share of its interval: start one
    # interval earlier, when nothing had been embedded yet
    earlier = [p for p in points if p[0] < first[0]]
    t0, e0 = (earlier[-1][0], earlier[-1][2]) if earlier else (0.0, 0)
    span = last[0] - t0
    return (last[2] - e0) / span if span > 0 else 0.0


def bulk_import(
    mem: AgentMemory,
    n: int,
    seed: int,
    batch_size: int,
    wanted: set[int],
    progress: ProgressFn | None = None,
    checkpoint: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[dict[int, str], dict[str, Any], list[tuple[float, int, int]]]:
    """Stream ``n`` memories in, alternating chat-message and fact batches; flush.

    Returns the record ids of the ``wanted`` memory indexes, the figures, and the timeline.
    While waiting for the indexes, ``checkpoint`` gets the figures so far every 30 s.
    """
    facts = mem.bind(TENANT, user_id=USER)
    ids: dict[int, str] = {}
    committed = 0
    # the floor: the bare model on a sample of the texts, half before and half after the import
    sample = [memory_at(i, seed).text for i in range(0, n, max(n // EMBEDDER_SAMPLE, 1))]
    floor_s = _embed_in_batches(mem, sample[::2])
    sampler = _Sampler(mem, lambda: committed)
    sampler.start()
    t0 = time.perf_counter()
    for b, start in enumerate(range(0, n, batch_size)):
        batch = list(iter_memories(min(start + batch_size, n), seed, start))
        if b % 2 == 0:
            session = mem.bind(TENANT, user_id=USER, session_id=f"bench-s{b}")
            items = session.add_messages(
                {"role": "user" if j % 2 == 0 else "assistant", "content": m.text}
                for j, m in enumerate(batch)
            )
            got = [it.id for it in items]
        else:
            results = facts.remember_many(
                {"content": m.text, "memory_type": m.memory_type} for m in batch
            )
            got = [r.id for r in results]
        if len(got) != len(batch):
            raise RuntimeError(f"batch {b}: {len(got)} ids for {len(batch)} memories")
        for m, id_ in zip(batch, got, strict=True):
            if m.index in wanted:
                ids[m.index] = id_
        committed += len(batch)
        if progress and (b % 20 == 0 or committed == n):
            progress(f"imported {committed:,}/{n:,}")
    t_commit = time.perf_counter() - t0
    if progress:
        progress("waiting for the indexes (flush)")
    while not mem.flush(timeout=30):
        points = list(sampler.points)
        done = points[-1][2] if points else 0
        if progress:
            progress(f"embedded {done:,}/{n:,}")
        if checkpoint:
            checkpoint(
                {
                    "rows": n,
                    "commit_s": round(t_commit, 3),
                    "commit_rows_per_s": round(n / t_commit, 1) if t_commit else 0.0,
                    "embedded_so_far": done,
                    "elapsed_s": round(time.perf_counter() - t0, 1),
                    "embedding_rows_per_s_so_far": round(embedding_rate(points), 1),
                }
            )
    t_flush = time.perf_counter() - t0
    sampler.stop()
    floor = len(sample) / (floor_s + _embed_in_batches(mem, sample[1::2]))
    figures = {
        "rows": n,
        "batch_size": batch_size,
        "commit_s": round(t_commit, 3),
        "flushed_s": round(t_flush, 3),
        "commit_rows_per_s": round(n / t_commit, 1) if t_commit else 0.0,
        "rows_per_s_until_flushed": round(n / t_flush, 1) if t_flush else 0.0,
        "embedding_rows_per_s": round(embedding_rate(sampler.points), 1),
        "embedder_batch_rows_per_s": round(floor, 1),
        "until_flushed_over_embedder": round(n / t_flush / floor, 3) if t_flush and floor else 0.0,
        "rows_embedded_per_row": round(sampler.points[-1][2] / n, 3),
    }
    return ids, figures, sampler.points


def _embed_in_batches(mem: AgentMemory, texts: Sequence[str]) -> float:
    """Seconds the bare model (no cache) takes to embed ``texts`` in the indexer's batches."""
    embedder = mem.embedder
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    size = mem.indexer.batch_size
    t = time.perf_counter()
    for start in range(0, len(texts), size):
        inner.embed_documents(texts[start : start + size])
    return time.perf_counter() - t


def ack_latencies(
    mem: AgentMemory, start: int, count: int, seed: int
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Time ``count`` single writes (alternating add_message / remember), then the drain."""
    session = mem.bind(TENANT, user_id=USER, session_id="bench-ack")
    facts = mem.bind(TENANT, user_id=USER)
    lat: dict[str, list[float]] = {"add_message": [], "remember": []}
    base = mem.indexer.embedded_total
    t0 = time.perf_counter()
    for j, m in enumerate(iter_memories(start + count, seed, start)):
        t = time.perf_counter()
        if j % 2 == 0:
            session.add_message("user", m.text)
            lat["add_message"].append((time.perf_counter() - t) * 1000)
        else:
            facts.remember(m.text, memory_type=m.memory_type)
            lat["remember"].append((time.perf_counter() - t) * 1000)
    t_writes = time.perf_counter() - t0
    backlog = count - (mem.indexer.embedded_total - base)
    t = time.perf_counter()
    mem.flush()
    drain = time.perf_counter() - t
    return lat, {
        "writes_s": round(t_writes, 3),
        "backlog_after_writes": max(backlog, 0),
        "drain_s": round(drain, 3),
        "rows_per_s_until_flushed": round(count / (t_writes + drain), 1) if count else 0.0,
    }


def _clear_cache(embedder: Embedder) -> None:
    if isinstance(embedder, CachedEmbedder):
        embedder.clear_cache()


Search = Callable[[str], list[int]]
"""A system under test: query text -> corpus indexes of its hits, best first."""


def agentmem_search(m: BoundMemory, ids: dict[int, str], top_k: int) -> tuple[Search, list[Any]]:
    """agentmem's hybrid recall as a :data:`Search` (hits mapped back to corpus indexes).

    Only the memories in ``ids`` (the query targets) map to an index; other hits map to -1.
    The second value holds the last result's items (for listing misses).
    """
    back = {v: k for k, v in ids.items()}
    last: list[Any] = []

    def search(text: str) -> list[int]:
        res = m.recall(text, top_k=top_k, rerank=False, min_score=0.0)
        last[:] = res.items
        return [back.get(h.id, -1) for h in res.items]

    return search, last


def interleaved(
    systems: Mapping[str, Callable[[str], Any]], texts: Sequence[str]
) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Run every text through every system back to back, rotating the order per text.

    On a machine whose load changes while the benchmark runs, systems measured one after the
    other see different conditions; interleaved, each query's timings share them.
    Returns (latencies in ms, results) per system.
    """
    names = list(systems)
    lat: dict[str, list[float]] = {n: [] for n in names}
    out: dict[str, list[Any]] = {n: [] for n in names}
    for j, text in enumerate(texts):
        k = j % len(names)
        for name in names[k:] + names[:k]:
            t = time.perf_counter()
            result = systems[name](text)
            lat[name].append((time.perf_counter() - t) * 1000)
            out[name].append(result)
    return lat, out


def score(
    queries: Sequence[Query], results: Sequence[Sequence[int]], top_k: int
) -> dict[str, list[bool]]:
    found: dict[str, list[bool]] = {k: [] for k in QUERY_KINDS}
    for q, got in zip(queries, results, strict=True):
        found[q.kind].append(q.target in list(got)[:top_k])
    return found


def time_recall(
    m: BoundMemory,
    queries: Sequence[Query],
    ids: dict[int, str],
    top_k: int,
    warmup: Sequence[str],
    seed: int = 0,
) -> tuple[list[float], list[float], list[float], dict[str, Any]]:
    """(uncached recall ms, cached recall ms, embed_query ms, recall figures) of ``queries``.

    Each query is asked once with an empty query-embedding cache, interleaved with one
    uncached model call on the same text (the floor); then all again with the embeddings
    cached. The recall figures list up to :data:`MAX_LISTED_MISSES` missed queries.
    """
    embedder = m.store.embedder
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    search, last = agentmem_search(m, ids, top_k)
    misses: list[dict[str, Any]] = []
    queue = iter(queries)

    def recall(text: str) -> list[int]:
        got = search(text)
        q = next(queue)
        if q.target not in got and len(misses) < MAX_LISTED_MISSES:
            misses.append(
                {
                    "kind": q.kind,
                    "query": q.text,
                    "target": memory_at(q.target, seed).text,
                    "top_hit": last[0].content if last else None,
                }
            )
        return got

    for text in warmup:
        search(text)
        inner.embed_query(text)
    _clear_cache(embedder)
    lat, results = interleaved(
        {"recall": recall, "embed_query": inner.embed_query}, [q.text for q in queries]
    )
    warm: list[float] = []
    for q in queries:
        t = time.perf_counter()
        search(q.text)
        warm.append((time.perf_counter() - t) * 1000)
    found = score(queries, results["recall"], top_k)
    return lat["recall"], warm, lat["embed_query"], {**recall_figures(found), "misses": misses}


def profile_recall(m: BoundMemory, queries: Sequence[Query], top_k: int) -> dict[str, Any]:
    """Per-phase times of one more pass over ``queries`` (query embedding uncached), with
    the same recall settings as :func:`time_recall`."""
    _clear_cache(m.store.embedder)
    prof = RecallProfile()
    with profiling(prof):
        for q in queries:
            m.recall(q.text, top_k=top_k, rerank=False, min_score=0.0)
    return phase_summary(prof.runs, PHASES)


def recall_figures(found: dict[str, list[bool]]) -> dict[str, Any]:
    every = [x for v in found.values() for x in v]
    out: dict[str, Any] = {"all": round(sum(every) / len(every), 4) if every else 0.0}
    for kind, v in found.items():
        out[kind] = round(sum(v) / len(v), 4) if v else 0.0
    return out


def index_sizes(home: Path) -> dict[str, int]:
    records = sum(dir_size(p) for p in home.glob("records.sqlite3*"))
    return {
        "records": records,
        "keywords": dir_size(home / "keywords"),
        "chroma": dir_size(home / "chroma"),
    }
