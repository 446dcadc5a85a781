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

Items are ordered by that score, so higher is better everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Calibration weights: (cos, coverage, fused, cos gap to the best candidate, coverage gap).
WEIGHTS: tuple[float, ...] = (3.585, 1.585, 0.946, -3.139, -2.793)
BIAS = -2.343


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
    score: float = 0.0
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
    c: Candidate, fused_max: float, best_cos: float, best_coverage: float
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
    )


def calibrate(
    feats: Sequence[float],
    weights: Sequence[float] = WEIGHTS,
    bias: float = BIAS,
) -> float:
    z = bias + sum(w * f for w, f in zip(weights, feats, strict=True))
    return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))
