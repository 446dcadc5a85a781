"""What the suite measures: per case and system, where the evidence ranks; per family, R@5,
R@10, hit@10 and the expect-empty pass rate; and how well recall's scores are calibrated.

- **R@k**: the share of a case's evidence units carried by its first ``k`` hits, averaged
  over the family's cases with evidence.
- **hit@10**: the share of those cases with at least one evidence unit in the first 10 hits.
- **expect-empty**: the share of the family's expect-empty cases for which the system
  returned nothing at all. The halves and naive RRF have no threshold: the vector half
  always returns something, so it never passes; the keyword half passes when no analysed
  term of the query is in the store.
- **calibration** (agentmem's scores on its candidates before any cut,
  :mod:`.candidates`): ECE over 10 equal-width bins, the share of relevant candidates
  scoring at least ``min_score`` (kept relevant) and of irrelevant ones (kept irrelevant),
  and the share of the evidence among the candidates at all (the ceiling of any ordering).
  For LoCoMo "relevant" means an evidence turn: a lower bound, since LoCoMo marks the turns
  an answer needs, not every turn about the question.

Example:
    >>> ranks = evidence_ranks([("a",), ("x",), ("b", "c")], frozenset({"b", "z"}))
    >>> ranks
    {'b': 3, 'z': None}
    >>> recall_at(ranks, 5), recall_at(ranks, 2), hit_at(ranks, 10)
    (0.5, 0.0, 1.0)
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .candidates import LabelledQuery

#: The systems compared, in report order.
SYSTEMS: tuple[str, ...] = ("agentmem", "keyword", "vector", "rrf")
#: How each system is shown.
SYSTEM_LABELS: dict[str, str] = {
    "agentmem": "agentmem (defaults)",
    "keyword": "keyword half",
    "vector": "vector half",
    "rrf": "naive RRF",
}
#: Hits each system is judged on (recall asks ``top_k=10``).
TOP_K = 10
#: The metrics of a family and system, in report order.
METRICS: tuple[str, ...] = ("R@5", "R@10", "hit@10", "expect_empty")
#: Bins of the expected calibration error.
ECE_BINS = 10


def evidence_ranks(
    hits: Sequence[Sequence[str]], evidence: frozenset[str], k: int = TOP_K
) -> dict[str, int | None]:
    """Each evidence unit -> the 1-based rank of the first of the first ``k`` hits carrying
    it (None when none does); ``hits`` gives the units each hit carries, best first."""
    ranks: dict[str, int | None] = dict.fromkeys(sorted(evidence))
    for rank, units in enumerate(hits[:k], start=1):
        for unit in units:
            if unit in ranks and ranks[unit] is None:
                ranks[unit] = rank
    return ranks


def recall_at(ranks: Mapping[str, int | None], k: int) -> float:
    """Share of the evidence units ranked within ``k`` (0.0 without evidence)."""
    if not ranks:
        return 0.0
    return sum(1 for r in ranks.values() if r is not None and r <= k) / len(ranks)


def hit_at(ranks: Mapping[str, int | None], k: int) -> float:
    """1.0 when an evidence unit is ranked within ``k``."""
    return 1.0 if any(r is not None and r <= k for r in ranks.values()) else 0.0


@dataclass(frozen=True, slots=True)
class SystemOutcome:
    """What one system did for one case."""

    returned: int
    """Items it returned (a half or naive RRF: every candidate it found)."""
    ranks: dict[str, int | None]
    """Evidence unit -> rank within the first :data:`TOP_K` hits, or None."""

    def to_dict(self) -> dict[str, Any]:
        return {"returned": self.returned, "ranks": dict(self.ranks)}


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """One case, every system."""

    family: str
    id: str
    group: str
    query: str
    expect_empty: bool
    tags: tuple[str, ...]
    systems: dict[str, SystemOutcome]

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "id": self.id,
            "group": self.group,
            "query": self.query,
            "expect_empty": self.expect_empty,
            "tags": list(self.tags),
            "systems": {name: s.to_dict() for name, s in self.systems.items()},
        }


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def system_metrics(outcomes: Sequence[CaseOutcome], system: str) -> dict[str, float | None]:
    """R@5, R@10, hit@10 over the cases with evidence; expect-empty over the others (None
    when a family has no case of that sort)."""
    judged = [o.systems[system] for o in outcomes if not o.expect_empty]
    empty = [o.systems[system] for o in outcomes if o.expect_empty]
    return {
        "R@5": _mean([recall_at(s.ranks, 5) for s in judged]),
        "R@10": _mean([recall_at(s.ranks, 10) for s in judged]),
        "hit@10": _mean([hit_at(s.ranks, 10) for s in judged]),
        "expect_empty": _mean([1.0 if s.returned == 0 else 0.0 for s in empty]),
    }


def ece(scores: np.ndarray, labels: np.ndarray, bins: int = ECE_BINS) -> float:
    """Expected calibration error: the count-weighted mean gap between the mean score and
    the share relevant in each of ``bins`` equal-width score bins."""
    if len(scores) == 0:
        return 0.0
    idx = np.minimum((scores * bins).astype(int), bins - 1)
    total = 0.0
    for b in np.unique(idx):
        mask = idx == b
        total += abs(float(scores[mask].mean()) - float(labels[mask].mean())) * int(mask.sum())
    return total / len(scores)


def calibration(
    queries: Sequence[LabelledQuery], min_score: float
) -> dict[str, int | float | None]:
    """Calibration of recall's scores over a family's candidates (see the module docstring)."""
    scores = np.concatenate([q.scores for q in queries]) if queries else np.zeros(0)
    labels = np.concatenate([q.labels for q in queries]) if queries else np.zeros(0)
    relevant, irrelevant = scores[labels == 1], scores[labels == 0]
    ceilings = [c for q in queries if (c := q.ceiling) is not None]
    return {
        "candidates": len(scores),
        "relevant": round(float(labels.mean()), 4) if len(labels) else None,
        "ece": round(ece(scores, labels), 4) if len(scores) else None,
        "kept_relevant": round(float((relevant >= min_score).mean()), 4) if len(relevant) else None,
        "kept_irrelevant": round(float((irrelevant >= min_score).mean()), 4)
        if len(irrelevant)
        else None,
        "ceiling": _mean(ceilings),
    }


__all__ = [
    "ECE_BINS",
    "METRICS",
    "SYSTEMS",
    "SYSTEM_LABELS",
    "TOP_K",
    "CaseOutcome",
    "SystemOutcome",
    "calibration",
    "ece",
    "evidence_ranks",
    "hit_at",
    "recall_at",
    "system_metrics",
]
