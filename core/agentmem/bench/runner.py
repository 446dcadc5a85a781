"""``agentmem bench``: speed, memory and recall of agentmem on a synthetic corpus, and of peers.

One run of :func:`run_bench` for a corpus size ``N`` measures, on a fresh data dir:

1. **Bulk import**: ``N`` memories streamed from :mod:`agentmem.bench.corpus` in batches of
   1000, alternating ``add_messages`` (a session of chat messages) and ``remember_many``
   (user facts of varied memory types), all for one user of one tenant. Reported: rows/s
   until the records are committed, rows/s until :meth:`~agentmem.AgentMemory.flush`
   returns (both indexes caught up), and the background embedding rate (rows embedded per
   second by the indexer while it had a backlog, sampled every 0.25 s).
2. **Write acknowledgement**: ``ack_samples`` single ``add_message`` / ``remember`` calls
   (alternating) on the now large store; each call's latency is the time until the record
   is committed and the call returns. The indexer runs meanwhile, as in production.
3. **Recall** (hybrid, ``rerank=False``, ``top_k=10``, ``min_score=0``): a warm-up on other
   queries, then ``Q`` queries (half quote an id, half paraphrase) each asked once with an
   empty query-embedding cache (the realistic case, p50/p95/p99), then the same queries
   again with their embeddings cached (what the pipeline costs beyond the embedding).
   Recall@10 counts queries whose target memory is among the hits.
4. **Query embedding floor**: one ``embed_query`` call of the underlying model (no cache)
   per query text, interleaved with the recalls (:func:`interleaved`), so both see the same
   machine load.
5. **Peak RSS** of the process and **index sizes** on disk.
6. **Peers** (optional, :mod:`agentmem.bench.peers`): the first ``peer_memories`` memories
   of the same corpus and queries targeting them through LangChain and LlamaIndex hybrid
   pipelines with the same embedder, next to agentmem on the same ``peer_memories``
   corpus, every query through every system back to back (interleaved); Recall@10 and
   latency ratios (agentmem / peer).

Example:
    >>> from agentmem.bench import BenchSettings, run_bench
    >>> result = run_bench(BenchSettings(memories=1000, queries=20, peers=False))  # doctest: +SKIP
    >>> result.summary["recall"]["uncached_ms"]["p95"]  # doctest: +SKIP
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..embeddings import Embedder, default_embedder
from ..memory import AgentMemory
from .corpus import QUERY_KINDS, memory_at
from .harness import (
    QUERY_SESSION,
    TENANT,
    USER,
    BenchResult,
    BenchSettings,
    ProgressFn,
    Query,
    ack_latencies,
    bulk_import,
    index_sizes,
    machine_info,
    make_queries,
    profile_recall,
    time_recall,
)
from .peers import run_peers
from .stats import peak_rss_bytes, summarize

__all__ = ["BenchResult", "BenchSettings", "Query", "run_bench"]


def run_bench(
    settings: BenchSettings,
    *,
    embedder: Embedder | None = None,
    progress: ProgressFn | None = None,
    checkpoint: Callable[[dict[str, Any]], None] | None = None,
) -> BenchResult:
    """Run every measurement for ``settings.memories`` (see the module docstring).

    ``checkpoint(summary)`` gets the figures measured so far after every phase (and every
    30 s while the bulk import's embeddings drain), so a long run leaves partial results.
    """
    settings.validate()
    embedder = embedder or default_embedder()
    n = settings.memories
    root = Path(settings.workdir) if settings.workdir else None
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"agentmem-bench-{n}-", dir=root))
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    summary: dict[str, Any] = {
        "memories": n,
        "settings": {
            k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(settings).items()
        },
        "machine": machine_info(),
        "embedder": embedder.model_name,
    }
    samples: dict[str, list[float]] = {}

    def save(extra: dict[str, Any] | None = None) -> None:
        if checkpoint is not None:
            checkpoint({**summary, **(extra or {}), "partial": True})

    try:
        queries = make_queries(settings.queries, n, settings.seed)
        extra = settings.ack_samples + settings.warmup_queries
        warmup = [
            memory_at(n + settings.ack_samples + j, settings.seed).query(QUERY_KINDS[j % 2])
            for j in range(settings.warmup_queries)
        ]
        say(f"[{n:,}] loading the embedder")
        embedder.embed_query("load the model")
        home = work / "agentmem"
        with AgentMemory(home, embedder=embedder) as mem:
            ids, bulk, timeline = bulk_import(
                mem,
                n,
                settings.seed,
                settings.batch_size,
                {q.target for q in queries},
                lambda msg: say(f"[{n:,}] {msg}"),
                lambda so_far: save({"bulk_import_in_progress": so_far}),
            )
            summary["bulk_import"] = bulk
            save()
            say(f"[{n:,}] timing {settings.ack_samples} single writes")
            lat, drain = ack_latencies(mem, n, settings.ack_samples, settings.seed)
            samples["ack_add_message_ms"] = lat["add_message"]
            samples["ack_remember_ms"] = lat["remember"]
            summary["write_ack_ms"] = {
                "add_message": summarize(lat["add_message"]),
                "remember": summarize(lat["remember"]),
                "all": summarize(lat["add_message"] + lat["remember"]),
            }
            summary["single_writes"] = drain
            save()
            say(f"[{n:,}] timing {len(queries)} recalls")
            m = mem.bind(TENANT, user_id=USER, session_id=QUERY_SESSION)
            cold, warm, floor, recall_at = time_recall(
                m, queries, ids, settings.top_k, warmup, settings.seed
            )
            samples["recall_ms"] = cold
            samples["recall_cached_embedding_ms"] = warm
            samples["embed_query_ms"] = floor
            rec = summarize(cold)
            emb = summarize(floor)
            summary["recall"] = {
                "settings": {"top_k": settings.top_k, "rerank": False, "min_score": 0.0},
                "uncached_ms": rec,
                "cached_embedding_ms": summarize(warm),
                f"recall@{settings.top_k}": recall_at,
                "queries": len(queries),
            }
            summary["embed_query_ms"] = emb
            summary["recall_p95_over_embed_p95"] = (
                round(rec["p95"] / emb["p95"], 2) if emb["p95"] else None
            )
            if settings.profile:
                say(f"[{n:,}] profiling {len(queries)} recalls")
                summary["recall_profile"] = profile_recall(m, queries, settings.top_k)
            summary["index_bytes"] = index_sizes(home)
            summary["live_rows"] = n + settings.ack_samples
        summary["peak_rss_bytes"] = peak_rss_bytes()
        summary["extra_rows_note"] = (
            f"{settings.ack_samples} single writes are added after the bulk import; "
            f"warm-up queries ({settings.warmup_queries}) come from memories "
            f"{n + settings.ack_samples}..{n + extra - 1}, which are not stored"
        )
        save()
        if settings.peers:
            say(f"[{n:,}] peers")
            peer_summary, peer_samples = run_peers(
                settings,
                embedder,
                work,
                main_home=home,
                main_ids=ids,
                main_queries=queries,
                progress=lambda msg: say(f"[{n:,}] {msg}"),
            )
            summary["peers"] = peer_summary
            samples.update(peer_samples)
            summary["peak_rss_bytes_after_peers"] = peak_rss_bytes()
    finally:
        if not settings.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            summary["workdir"] = str(work)
    summary["wall_s"] = round(time.perf_counter() - started, 2)
    return BenchResult(summary=summary, samples=samples, timeline=timeline)
