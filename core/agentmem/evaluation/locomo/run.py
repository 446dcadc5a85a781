"""Running LoCoMo: ingest the conversations into a fresh store, ask every question in every
mode, and aggregate the turn-level metrics per mode and category."""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...bench.stats import percentile
from ...config import MemoryConfig
from ...embeddings import Embedder
from ...errors import ValidationError
from ...memory import AgentMemory
from ...rerank import Reranker
from ...storage.embedding_cache import DiskEmbeddingCache, cached_on_disk
from .data import CATEGORIES, Conversation, Question, load_locomo
from .ingest import TENANT, ingest_conversation
from .metrics import KS, METRICS, hit_dia_ids, ranked_turns, score
from .peers import DELTA_METRIC, PEER_MODES, deltas, open_peers, peer_plan
from .report import LocomoReport
from .retrieval import (
    MIN_SCORE,
    MODES,
    QUERY_SESSION,
    TOKEN_BUDGET,
    TOP_K,
    at_defaults,
    hybrid,
    single_retriever,
)

#: Every mode: agentmem's own, then the peers.
ALL_MODES: tuple[str, ...] = (*MODES, *PEER_MODES)

ProgressFn = Callable[[str, int, int], None]


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def run_locomo(
    source: str | os.PathLike[str] | Sequence[Any],
    *,
    modes: Sequence[str] | None = None,
    limit_questions: int | None = None,
    samples: Sequence[str] | None = None,
    captions: bool = False,
    close_sessions: bool = False,
    home: str | os.PathLike[str] | None = None,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    config: MemoryConfig | None = None,
    embed_cache: str | os.PathLike[str] | None = None,
    progress: ProgressFn | None = None,
) -> LocomoReport:
    """Ingest a LoCoMo file into a fresh store and score evidence retrieval per mode.

    Args:
        source: Path of a LoCoMo JSON file, or its parsed JSON list.
        modes: Any of :data:`ALL_MODES` (``hybrid``, ``keyword``, ``vector``, ``langchain``,
            ``llamaindex``); default all of them. A peer mode whose packages are not
            installed, or that fails to build, is left out and reported in
            ``summary["peers"]``; asking only for peers that cannot run is an error.
        limit_questions: Score at most this many questions (file order); conversations left
            without questions are not ingested.
        samples: Only these ``sample_id``s.
        captions: Append image captions to turn texts.
        close_sessions: Close each session after writing it, as an application would
            (:meth:`~agentmem.BoundMemory.close_session`: a summary row per session, which
            default recall searches and whose hit carries its turns' dia ids, and chunks;
            sessions beyond the mid-term window are promoted to long-term).
        home: Data dir to use (must be new or empty); default a temporary dir, removed after.
        embedder, reranker, config: Passed to :class:`~agentmem.AgentMemory`.
        embed_cache: Directory of an on-disk embedding cache (see
            :class:`DiskEmbeddingCache`): repeated runs embed only texts they have not seen.
            Latencies then exclude the model time of cached queries.
        progress: ``progress(stage, done, total)`` callback.
    """
    modes = list(dict.fromkeys(ALL_MODES if modes is None else modes))
    unknown = set(modes) - set(ALL_MODES)
    if unknown or not modes:
        raise ValidationError(
            "modes", f"must be a non-empty subset of {ALL_MODES}, got {list(modes)}"
        )
    if limit_questions is not None and limit_questions < 1:
        raise ValidationError("limit_questions", "must be a positive integer")
    started = time.perf_counter()
    convs = load_locomo(source)
    if samples:
        wanted = set(samples)
        missing = wanted - {c.sample_id for c in convs}
        if missing:
            raise ValidationError("samples", f"not in the file: {sorted(missing)}")
        convs = [c for c in convs if c.sample_id in wanted]
    peers = peer_plan([m for m in modes if m in PEER_MODES])
    modes = [m for m in modes if m not in peers or peers[m]["status"] == "ok"]
    if not modes:
        raise ValidationError(
            "modes",
            "none of the requested modes can run: "
            + "; ".join(f"{name}: {info['status']}" for name, info in peers.items()),
        )
    skipped: dict[str, int] = defaultdict(int)
    for c in convs:
        for key, n in c.skipped.items():
            skipped[key] += n
    total_scored = sum(len(c.questions) for c in convs)
    plan: list[tuple[Conversation, tuple[Question, ...]]] = []
    budget = limit_questions if limit_questions is not None else total_scored
    for c in convs:
        qs = c.questions[: max(budget, 0)]
        budget -= len(qs)
        if qs:
            plan.append((c, qs))
    if limit_questions is not None:
        skipped["over_limit"] = total_scored - sum(len(qs) for _, qs in plan)

    disk_cache: DiskEmbeddingCache | None = None
    if embed_cache is not None:
        embedder, disk_cache = cached_on_disk(embedder, embed_cache)
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if home is None:
        tmp = tempfile.TemporaryDirectory(prefix="agentmem-locomo-")
        home = tmp.name
    try:
        mem = AgentMemory(home, embedder=embedder, reranker=reranker, config=config)
        try:
            t0 = time.perf_counter()
            n_turns = 0
            for i, (c, _) in enumerate(plan):
                n_turns += ingest_conversation(mem, c, captions, close_sessions)
                if progress:
                    progress("ingest", i + 1, len(plan))
            t1 = time.perf_counter()
            mem.flush()
            t2 = time.perf_counter()
            questions, latencies, modes, peer_s = _ask(
                mem, plan, modes, progress, peers=peers, captions=captions
            )
            t3 = time.perf_counter()
            embedder_name = mem.embedder.model_name
        finally:
            mem.close()
    finally:
        if tmp is not None:
            tmp.cleanup()
        if disk_cache is not None:
            disk_cache.close()

    summary: dict[str, Any] = {
        "dataset": str(source) if isinstance(source, str | os.PathLike) else "<in-memory>",
        "conversations": len(plan),
        "turns": n_turns,
        "questions": {
            "scored": len(questions),
            "by_category": {
                str(c): sum(1 for q in questions if q["category"] == c)
                for c in CATEGORIES
                if any(q["category"] == c for q in questions)
            },
            "skipped": dict(sorted(skipped.items())),
        },
        "settings": {
            "top_k": TOP_K,
            "min_score": MIN_SCORE,
            "token_budget": TOKEN_BUDGET,
            "captions": captions,
            "close_sessions": close_sessions,
            "embedder": embedder_name,
            "reranker": getattr(reranker, "name", None) if reranker is not None else None,
            "roles": "speaker_a=user, speaker_b=assistant",
            "embed_cache": None
            if disk_cache is None
            else {
                "path": str(disk_cache.path),
                "hits": disk_cache.hits,
                "misses": disk_cache.misses,
            },
        },
        "modes": {mode: _aggregate(questions, mode, latencies[mode]) for mode in modes},
        "timing_s": {
            "ingest": round(t1 - t0, 3),
            "index": round(t2 - t1, 3),
            "queries": round(t3 - t2 - peer_s, 3),
            "peer_index": round(peer_s, 3),
            "total": round(time.perf_counter() - started, 3),
        },
    }
    if peers:
        summary["peers"] = peers
        summary["settings"]["peer_documents"] = (
            "one per turn of the question's conversation: speaker-prefixed turn text "
            "(agentmem's index_text, no preceding-turn context); k=20; agentmem's embedder"
        )
        if "hybrid" in summary["modes"]:
            summary[f"hybrid_minus_peer_{DELTA_METRIC}"] = deltas(summary["modes"])
    return LocomoReport(summary=summary, questions=questions)


def _ask(
    mem: AgentMemory,
    plan: Sequence[tuple[Conversation, tuple[Question, ...]]],
    modes: Sequence[str],
    progress: ProgressFn | None,
    *,
    peers: dict[str, dict[str, Any]] | None = None,
    captions: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, list[float]], list[str], float]:
    """Ask every question in every mode.

    The question is embedded once first, so every mode reads the same cached query vector
    and its latency is its own retrieval work; the modes take each question in rotating
    order, so a change in machine load hits all of them alike.

    Peer modes are built per conversation, before its questions; one that fails to build
    is dropped from the run (its figures so far removed) and its ``peers`` entry says why.
    Returns (records, latencies, the modes that ran, seconds spent building peer indexes).
    """
    modes = list(modes)
    peers = peers if peers is not None else {}
    latencies: dict[str, list[float]] = {m: [] for m in modes}
    records: list[dict[str, Any]] = []
    total = sum(len(qs) for _, qs in plan)
    done = 0
    peer_s = 0.0
    for conv, qs in plan:
        m = mem.bind(TENANT, user_id=conv.sample_id, session_id=QUERY_SESSION)
        with contextlib.ExitStack() as stack:
            index = open_peers(mem, conv, modes, peers, captions, stack)
            if index is not None:
                peer_s += index.embed_s + sum(index.build_s.values())
                for name, why in index.failed.items():
                    peers[name]["status"] = why
                    modes.remove(name)
                    del latencies[name]
                    for earlier in records:
                        earlier["modes"].pop(name, None)
            for n, q in enumerate(qs):
                mem.embedder.embed_query(q.question)
                rec: dict[str, Any] = {
                    "sample_id": q.sample_id,
                    "qa_index": q.index,
                    "category": q.category,
                    "question": q.question,
                    "evidence": list(q.evidence),
                    "dropped_evidence": list(q.dropped),
                    "modes": dict.fromkeys(modes),
                }
                k = n % len(modes)
                for mode in modes[k:] + modes[:k]:
                    t = time.perf_counter()
                    if mode == "hybrid":
                        metas = hybrid(m, q.question)
                    elif mode == "defaults":
                        metas = at_defaults(m, q.question)
                    elif mode in PEER_MODES:
                        assert index is not None
                        metas = index.search(mode, q.question)
                    else:
                        metas = single_retriever(mem, m.identity, q.question, mode)
                    latencies[mode].append((time.perf_counter() - t) * 1000)
                    ranked = ranked_turns((hit_dia_ids(md) for md in metas), max(KS))
                    ranks = {e: (ranked.index(e) + 1 if e in ranked else None) for e in q.evidence}
                    rec["modes"][mode] = {
                        "turns": ranked,
                        "hits": len(metas),
                        "evidence_ranks": ranks,
                        **{k: round(v, 6) for k, v in score(ranked, q.evidence).items()},
                    }
                records.append(rec)
                done += 1
                if progress:
                    progress("questions", done, total)
    return records, latencies, modes, peer_s


def _aggregate(
    questions: Sequence[Mapping[str, Any]], mode: str, latencies: Sequence[float]
) -> dict[str, Any]:
    def block(qs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(qs)}
        for metric in METRICS:
            out[metric] = round(_mean([q["modes"][mode][metric] for q in qs]), 4)
        out["hits"] = round(_mean([q["modes"][mode]["hits"] for q in qs]), 2)
        return out

    by_cat = {
        str(c): {"name": name, **block([q for q in questions if q["category"] == c])}
        for c, name in CATEGORIES.items()
        if any(q["category"] == c for q in questions)
    }
    return {
        "overall": block(questions),
        "by_category": by_cat,
        "latency_ms": {
            "p50": round(percentile(latencies, 0.5), 2),
            "p95": round(percentile(latencies, 0.95), 2),
            "mean": round(_mean(latencies), 2),
        },
    }
