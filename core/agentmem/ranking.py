"""Fusion and calibration: from two ranked candidate lists per scope to scores in [0, 1].

1. **Weighted Reciprocal Rank Fusion** (seed 004, k=60) over every (scope, retriever) list,
   each weighted by its scope's class prior (seed 000).
2. **Calibration**: raw RRF values say nothing about whether *anything* matched, so each
   candidate gets a probability-like score from absolute evidence:

   - ``cos``: cosine similarity of query and memory embeddings (absolute, comparable across
     queries; for a keyword-only candidate, the lowest similarity its scope's vector list
     reached, an upper bound),
   - ``coverage``: the IDF-weighted share of the query's terms the memory contains,
   - ``fused``: the weighted RRF value, normalised to [0, 1],
   - ``cos_gap`` and ``coverage_gap``: how far the candidate trails the best candidate of the
     same query on each signal (a near miss next to a clear winner is probably not relevant).

   ``score = sigmoid(BIAS + WEIGHTS . features)``. The weights are a logistic regression fitted
   on the relevance labels of ``eval/memory_golden_dataset.json`` by
   ``benchmarks/fit_calibration.py``, which also reports 5-fold cross-validated Recall@5 and
   Precision@5 so the figures are not in-sample. A query unrelated to every memory lands below
   the default ``min_score`` of 0.3.

3. **Ranking**: candidates are ordered by a second linear model over the same features
   (``RANK_WEIGHTS``), fitted for ordering on conversational recall (LoCoMo development split),
   where the golden set's few candidates per query teach little about order. Items whose
   calibrated score is below ``min_score`` are dropped; the scores of the items kept are made
   non-increasing down the list, so higher is better everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: Calibration weights: (cos, coverage, fused, cos gap to the best candidate, coverage gap).
WEIGHTS: tuple[float, ...] = (3.585, 1.585, 0.946, -3.139, -2.793, 0.0)
BIAS = -2.343

#: Ranking weights over the same features: the order of candidates within one query. Fitted
#: as a logistic regression on evidence labels of the LoCoMo development split (leave one
#: conversation out: R@10 0.749; see ``benchmarks/fit_calibration.py --locomo``). Only the
#: order matters, so there is no bias.
RANK_WEIGHTS: tuple[float, ...] = (-0.547, 1.710, 2.716, -3.068, -1.717, 2.352)


@dataclass(slots=True)
class Candidate:
    """Evidence gathered for one candidate row."""

    id: str
    scope: str
    fused: float = 0.0
    cos: float | None = None
    coverage: float = 0.0
    in_keyword: bool = False
    in_vector: bool = False
    bm25: float = 0.0
    kw_rank: int = 0
    vec_rank: int = 0
    score: float = 0.0
    rank: float = 0.0
    features: tuple[float, ...] = ()


def rrf(
    lists: Sequence[tuple[str, Sequence[str]]],
    weights: Mapping[str, float],
    k: int = 60,
) -> dict[str, float]:
    """Weighted RRF: ``sum(weight[scope] / (k + rank))`` over (scope, ranked ids) lists."""
    out: dict[str, float] = {}
    for scope, ids in lists:
        w = weights.get(scope, 1.0)
        for rank, id_ in enumerate(ids, start=1):
            out[id_] = out.get(id_, 0.0) + w / (k + rank)
    return out


def coverage(query_idf: Mapping[str, float], doc_terms: set[str]) -> float:
    """IDF-weighted share of query terms present in the document, in [0, 1]."""
    total = sum(query_idf.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in query_idf.items() if t in doc_terms) / total


def features(
    c: Candidate, fused_max: float, best_cos: float, best_coverage: float, best_bm25: float
) -> tuple[float, ...]:
    """The calibration features of a candidate, relative to the best of its query."""
    cos = 0.0 if c.cos is None else max(c.cos, 0.0)
    fused = min(c.fused / fused_max, 1.0) if fused_max > 0 else 0.0
    return (
        cos,
        c.coverage,
        fused,
        best_cos - cos,
        best_coverage - c.coverage,
        c.bm25 / best_bm25 if best_bm25 > 0 else 0.0,
    )


def monotone(scores: Sequence[float]) -> list[float]:
    """Scores made non-increasing down a ranked list (each at least the ones below it)."""
    out = list(scores)
    for i in range(len(out) - 2, -1, -1):
        out[i] = max(out[i], out[i + 1])
    return out


def score_all(cands: Sequence[Candidate]) -> None:
    """Set every candidate's calibrated ``score`` and ordering key ``rank`` from its features
    (one matrix product for the whole list rather than a Python loop per candidate)."""
    if not cands:
        return
    x = np.array([c.features for c in cands], dtype=np.float64)
    z = np.clip(x @ np.asarray(WEIGHTS) + BIAS, -60.0, 60.0)
    scores = 1.0 / (1.0 + np.exp(-z))
    ranks = x @ np.asarray(RANK_WEIGHTS)
    for c, score, rank in zip(cands, scores.tolist(), ranks.tolist(), strict=True):
        c.score = score
        c.rank = rank
