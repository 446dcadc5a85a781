"""Turn-level retrieval metrics: Recall@k and binary-relevance NDCG over distinct dia ids."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .data import normalise_dia_id

#: Recall cut-offs, in turns.
KS: tuple[int, ...] = (5, 10, 20)
NDCG_K = 10


def hit_dia_ids(metadata: Mapping[str, Any] | None) -> list[str]:
    """The dia ids a hit carries: ``metadata["dia_id"]`` and/or the list ``metadata["dia_ids"]``."""
    if not metadata:
        return []
    out: list[str] = []
    for key in ("dia_id", "dia_ids"):
        value = metadata.get(key)
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if isinstance(v, str):
                dia = normalise_dia_id(v)
                if dia is not None:
                    out.append(dia)
    return out


def ranked_turns(hits: Iterable[Sequence[str]], limit: int | None = None) -> list[str]:
    """Distinct dia ids in hit order (each hit given as the dia ids it carries), cut at ``limit``.

    Example:
        >>> ranked_turns([["D1:2"], ["D1:2", "D1:3", "D1:4"], ["D2:1"]], limit=3)
        ['D1:2', 'D1:3', 'D1:4']
    """
    seen: dict[str, None] = {}
    for dias in hits:
        for dia in dias:
            if dia not in seen:
                seen[dia] = None
                if limit is not None and len(seen) >= limit:
                    return list(seen)
    return list(seen)


def recall_at_k(ranked: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """Share of ``evidence`` turns among the first ``k`` ranked turns (0.0 if no evidence)."""
    ev = set(evidence)
    if not ev:
        return 0.0
    return len(ev.intersection(ranked[:k])) / len(ev)


def ndcg_at_k(ranked: Sequence[str], evidence: Iterable[str], k: int = NDCG_K) -> float:
    """Binary-relevance NDCG of the first ``k`` ranked turns."""
    ev = set(evidence)
    if not ev:
        return 0.0
    dcg = sum(1.0 / math.log2(i + 2) for i, dia in enumerate(ranked[:k]) if dia in ev)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(ev), k)))
    return dcg / ideal


def score(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    out = {f"recall@{k}": recall_at_k(ranked, evidence, k) for k in KS}
    out[f"ndcg@{NDCG_K}"] = ndcg_at_k(ranked, evidence, NDCG_K)
    return out


METRICS: tuple[str, ...] = (*(f"recall@{k}" for k in KS), f"ndcg@{NDCG_K}")
SHORT = {**{f"recall@{k}": f"R@{k}" for k in KS}, f"ndcg@{NDCG_K}": f"nDCG@{NDCG_K}"}
