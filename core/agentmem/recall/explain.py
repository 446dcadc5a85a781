"""``recall_explain``: why a recall returned what it did.

It runs the recall pipeline of :class:`~agentmem.recall.engine.RecallEngine` step by step (the
same candidates, rerank, cut-offs and token budget, through the engine's own methods) and
keeps what recall throws away: each candidate's keyword and vector evidence, the features of
the ranking's linear models with their weights, the calibrated score, and which cut-off
dropped it. The keyword and vector retrievers are then each run alone with the same options.

It never counts as a recall: no access counts, no recall log line. The weights are the
engine's :class:`~agentmem.recall.ranking.Scoring` (the embedder's calibration profile) over
the ranking module's declared feature names, so a changed model is explained as it is, with
no list of features kept here. Without a profile (uncalibrated), candidates are scored by
their fused rank alone and there are no feature terms to show.

Example:
    >>> why = recall_explain(ctx, Identity("acme", user_id="u1"), "tea or coffee?")  # doctest: +SKIP
    >>> why.candidates[0].calibration[0].name  # doctest: +SKIP
    'cos'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..context import StoreContext
from ..models import (
    ExplainedCandidate,
    FeatureTerm,
    Identity,
    RecallExplanation,
    RecallHit,
    RecallResult,
)
from ..storage.rows import Brief
from . import ranking
from .engine import RecallEngine, best_score, budget
from .ranking import Candidate, Scoring, kept
from .request import RecallRequest, recall_request

__all__ = ["explain", "recall_explain"]


def recall_explain(
    ctx: StoreContext, identity: Identity, query: str, **options: Any
) -> RecallExplanation:
    """Explain the recall ``BoundMemory.recall(query, **options)`` makes for ``identity``
    (the same options, validated the same way)."""
    ctx.check_open()
    request = recall_request(ctx.settings.memory, identity, query, **options)
    return explain(ctx.engine, identity, request)


@dataclass
class _Run:
    """One pass of the pipeline with what each step saw."""

    considered: list[Candidate]
    visible: dict[str, tuple[str, Brief]]
    calibrated: dict[str, float]
    scores: dict[str, float]
    rerank_used: bool
    gap: float | None
    cuts: dict[str, str]
    hits: list[RecallHit]
    token_count: int
    truncated: bool
    degraded: bool
    best: float | None = None
    refused: set[str] = field(default_factory=set)

    def result(self) -> RecallResult:
        return RecallResult(
            items=self.hits,
            total=len(self.hits),
            degraded=self.degraded,
            rerank_used=self.rerank_used,
            truncated=self.truncated,
            token_count=self.token_count,
            best_score=None if self.hits else self.best,
        )


def _run(engine: RecallEngine, identity: Identity, req: RecallRequest, scoring: Scoring) -> _Run:
    """The steps of ``RecallEngine.recall``, keeping why each candidate was cut."""
    notes: dict[str, bool] = {}
    refused: set[str] = set()
    ranked, visible, _ = engine.candidates(
        identity, req, notes=notes, scoring=scoring, refused=refused
    )
    calibrated = {c.id: c.score for c in ranked}  # before a reranker replaces them
    head, rerank_used = engine.rerank(req, ranked, visible)
    gap = engine.score_gap(scoring, rerank_used)
    scores = {c.id: c.score for c in head}  # before select makes them non-increasing
    kinds = [visible[c.id][1].kind for c in head]
    on_scale = scoring.calibrated or rerank_used
    passed = {
        c.id
        for c in kept(
            head, kinds, req.min_score, scoring, gap=gap, calibrated=on_scale, floors=req.floors
        )
    }
    chosen = engine.select(req, head, visible, rerank_used, scoring)
    selected = {c.id for c in chosen}
    hits, token_count, truncated = budget(chosen, visible, req.token_budget)
    returned = {h.id for h in hits}
    cuts: dict[str, str] = {}
    unknown = req.min_score > 0 and ranking.unknown_code(head)
    considered = head + [c for c in ranked if c.id not in scores]
    for c in considered:
        if c.id in returned:
            continue
        if c.id not in scores:
            cuts[c.id] = "rerank_depth"
        elif unknown:
            cuts[c.id] = "unknown_code"
        elif c.id not in passed:
            # uncalibrated, min_score is compared with the keyword evidence, not the score
            low = not on_scale or scores[c.id] < req.min_score
            cuts[c.id] = "min_score" if low else "score_gap"
        elif c.id not in selected:
            cuts[c.id] = "top_k"
        else:
            cuts[c.id] = "token_budget"
    return _Run(
        considered,
        visible,
        calibrated,
        scores,
        rerank_used,
        gap,
        cuts,
        hits,
        token_count,
        truncated,
        engine.degraded(notes),
        best_score(list(scores.values()), scoring, rerank_used),
        refused,
    )


def explain(engine: RecallEngine, identity: Identity, req: RecallRequest) -> RecallExplanation:
    """The explanation of the recall ``req`` for ``identity`` (see the module docstring)."""
    scoring = engine.scoring  # one profile for the three runs, as a recall reads it once
    run = _run(engine, identity, req, scoring)
    keyword = _run(engine, identity, dataclasses.replace(req, retrievers=("keyword",)), scoring)
    vector = _run(engine, identity, dataclasses.replace(req, retrievers=("vector",)), scoring)
    rank_weights = _rank_weights(run, scoring)
    on_scale = scoring.calibrated or run.rerank_used  # uncalibrated, no floor applies
    return RecallExplanation(
        query=req.query,
        result=run.result(),
        calibrated=scoring.calibrated,
        candidates=tuple(_explained(run, scoring, rank_weights)),
        gate_refused=len(run.refused),
        min_score=req.min_score,
        score_gap=run.gap,
        chat_floor=scoring.chat_floor if on_scale and req.floors else None,
        item_floor=scoring.item_floor if on_scale and req.floors else None,
        named_ordering=rank_weights is not None and rank_weights is scoring.named_rank_weights,
        top_k=req.top_k,
        token_budget=req.token_budget,
        keyword_only=keyword.result(),
        vector_only=vector.result(),
    )


def _rank_weights(run: _Run, scoring: Scoring) -> tuple[float, ...] | None:
    """The ordering weights the query's candidates were ranked with (the named ordering when
    the query names something its candidates carry); None uncalibrated."""
    if scoring.rank_weights is None or not run.considered:
        return scoring.rank_weights
    return ranking.rank_weights_for(np.array([c.features for c in run.considered]), scoring)


def _explained(
    run: _Run, scoring: Scoring, rank_weights: tuple[float, ...] | None
) -> list[ExplainedCandidate]:
    by_fused = sorted(run.considered, key=lambda c: c.fused, reverse=True)
    fused_rank = {c.id: n for n, c in enumerate(by_fused, start=1)}
    returned = {h.id: n for n, h in enumerate(run.hits)}
    last = len(run.hits) - 1
    out = []
    for position, c in enumerate(run.considered, start=1):
        row = run.visible[c.id][1]
        n = returned.get(c.id)
        out.append(
            ExplainedCandidate(
                id=c.id,
                kind=row.kind,
                memory_type=row.memory_type,
                scope=c.scope,
                content=row.content,
                session_id=row.session_id,
                event_time=datetime.fromisoformat(row.event_time_iso),
                keyword_rank=c.kw_rank if c.in_keyword else None,
                bm25=c.bm25 if c.in_keyword else None,
                vector_rank=c.vec_rank if c.in_vector else None,
                cosine=c.vec_cos if c.in_vector else None,  # the index's, not the feature
                fused=c.fused,
                fused_rank=fused_rank[c.id],
                position=position,
                calibration=_terms(c.features, scoring.weights),
                calibration_bias=scoring.bias,
                calibrated_score=run.calibrated[c.id],
                ordering=_terms(c.features, rank_weights),
                ordering_key=c.rank,
                rerank_score=run.scores.get(c.id) if run.rerank_used else None,
                score=None if n is None else run.hits[n].score,
                cut=run.cuts.get(c.id),
                truncated=n is not None and n == last and run.truncated,
            )
        )
    return out


def _terms(values: Sequence[float], weights: Sequence[float] | None) -> tuple[FeatureTerm, ...]:
    """The model's features by their declared names, with the candidate's values (none
    without a model)."""
    if weights is None:
        return ()
    return tuple(
        FeatureTerm(name, float(value), float(weight))
        for name, value, weight in zip(ranking.FEATURE_NAMES, values, weights, strict=True)
    )
