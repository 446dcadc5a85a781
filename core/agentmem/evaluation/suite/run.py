"""Running the suite: every family in a fresh store, every case asked of four systems, and the
candidates of agentmem labelled for calibration (see :mod:`agentmem.evaluation.suite`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from ...config import MemoryConfig
from ...embeddings import Embedder
from ...memory import AgentMemory
from ...storage.rows import Brief
from ..halves import RRF_K, naive_rrf, retriever_rows
from .candidates import LabelledQuery, collect_case
from .cases import SuiteCase, WrittenFamily
from .metrics import (
    SYSTEMS,
    TOP_K,
    CaseOutcome,
    SystemOutcome,
    calibration,
    evidence_ranks,
    system_metrics,
)
from .report import SuiteReport
from .stores import family_stores, plan, run_embedder

#: ``progress(family, done, total)`` after each case.
ProgressFn = Callable[[str, int, int], None]


def evaluate_case(mem: AgentMemory, family: WrittenFamily, case: SuiteCase) -> CaseOutcome:
    """Ask ``case`` of every system (:data:`~.metrics.SYSTEMS`) on the family's store.

    - ``agentmem``: the public recall at default settings, ``recall(query, top_k=10)`` with
      the case's scope (``history`` for a conversation) and nothing else set;
    - ``keyword`` / ``vector``: one half alone (:func:`~agentmem.evaluation.halves.retriever_rows`);
    - ``rrf``: the two halves' lists fused by :func:`~agentmem.evaluation.halves.naive_rrf`.
    """
    i = case.identity
    bound = mem.bind(i.tenant_id, i.user_id, i.agent_id, i.session_id)
    result = bound.recall(
        case.query,
        top_k=TOP_K,
        scope=case.scope,
        kinds=case.kinds,
        memory_types=case.memory_types,
    )
    hits = [family.units(h.id, h.content, h.metadata) for h in result.items]
    systems = {"agentmem": SystemOutcome(len(hits), evidence_ranks(hits, case.evidence))}
    halves = {
        name: retriever_rows(
            mem,
            case.identity,
            case.query,
            name,
            scope=case.scope,
            kinds=case.kinds,
            memory_types=case.memory_types,
        )
        for name in ("keyword", "vector")
    }
    by_id = {r.id: r for rows in halves.values() for r in rows}
    fused = [by_id[i] for i in naive_rrf([[r.id for r in rows] for rows in halves.values()])]
    for name, rows in (*halves.items(), ("rrf", fused)):
        systems[name] = _outcome(family, case, rows)
    return CaseOutcome(
        family=case.family,
        id=case.id,
        group=case.group,
        query=case.query,
        expect_empty=case.expect_empty,
        tags=case.tags,
        systems=systems,
    )


def _outcome(family: WrittenFamily, case: SuiteCase, rows: Sequence[Brief]) -> SystemOutcome:
    hits = [family.units(r.id, r.content, r.metadata) for r in rows]
    return SystemOutcome(len(rows), evidence_ranks(hits, case.evidence))


def run_suite(
    families: Sequence[str] | None = None,
    *,
    locomo: str | os.PathLike[str] | None = None,
    directory: str | os.PathLike[str] | None = None,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
    embed_cache: str | os.PathLike[str] | None = None,
    progress: ProgressFn | None = None,
) -> SuiteReport:
    """Run the suite's families and report each family's figures per system.

    Args:
        families: Names of :data:`~agentmem.evaluation.suite.FAMILIES` (default: every
            family whose data is there; ``locomo`` needs ``locomo``). A family asked for by
            name whose data is missing is an error.
        locomo: A LoCoMo file (e.g. the development split), read where it lies.
        directory: The family files (default: the bundled ones, :func:`suite_dir`).
        embedder: Shared by every family's store; default the packaged model.
        config: Store configuration; default the one a user gets (``AGENTMEM_*`` variables
            applied).
        embed_cache: Keep every vector in this directory across runs (a repeat run embeds
            only texts it has not seen).
        progress: Called after each case.
    """
    names, skipped = plan(families, locomo=locomo, directory=directory)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    outcomes: list[CaseOutcome] = []
    queries: list[LabelledQuery] = []
    summary: dict[str, Any] = {}
    # the settings reported are those the stores ran with (the environment's, without config)
    cfg = config or MemoryConfig.from_env()
    with run_embedder(embedder, embed_cache) as (shared, disk):
        t0 = time.perf_counter()
        for name, (mem, family) in family_stores(
            names, locomo=locomo, directory=directory, embedder=shared, config=config
        ):
            t1 = time.perf_counter()
            cfg = mem.config
            mine: list[CaseOutcome] = []
            labelled: list[LabelledQuery] = []
            for n, case in enumerate(family.cases):
                labelled.append(collect_case(mem, family, case))
                mine.append(evaluate_case(mem, family, case))
                if progress is not None:
                    progress(name, n + 1, len(family.cases))
            summary[name] = {
                "rows": family.rows,
                "cases": sum(1 for c in family.cases if not c.expect_empty),
                "expect_empty_cases": sum(1 for c in family.cases if c.expect_empty),
                "systems": {s: system_metrics(mine, s) for s in SYSTEMS},
                "calibration": {
                    **calibration(labelled, cfg.min_score),
                    "expect_empty": system_metrics(mine, "agentmem")["expect_empty"],
                },
                "timing_s": {
                    "write": round(t1 - t0, 2),
                    "queries": round(time.perf_counter() - t1, 2),
                },
            }
            outcomes.extend(mine)
            queries.extend(labelled)
            t0 = time.perf_counter()
        settings = {
            "top_k": TOP_K,
            "min_score": cfg.min_score,
            "token_budget": cfg.token_budget,
            "candidates_per_list": cfg.candidates,
            "rrf_k": RRF_K,
            "embedder": shared.model_name,
            "locomo": None if locomo is None else str(locomo),
            "directory": None if directory is None else str(directory),
            "embed_cache": None
            if disk is None
            else {"path": str(disk.path), "hits": disk.hits, "misses": disk.misses},
        }
    return SuiteReport(
        summary={
            "started_at": started_at,
            "duration_s": round(time.perf_counter() - started, 2),
            "settings": settings,
            "skipped": skipped,
            "families": summary,
        },
        cases=outcomes,
        candidates=queries,
    )


__all__ = ["ProgressFn", "evaluate_case", "run_suite"]
