"""Each half of hybrid recall alone, and the two fused naively: what recall is measured against.

- ``keyword`` / ``vector``: the engine's own candidate step
  (:meth:`~agentmem.recall.engine.RecallEngine.candidates`) with one retriever
  (:attr:`~agentmem.recall.request.RecallRequest.retrievers`): the same scope plan, filters
  and identity gate as recall, read-only. The candidates are ordered by that retriever's own
  score: BM25 as agentmem's keyword query computes it (identifier boosts and name phrases
  included), or the cosine the vector index returned (no threshold). This is what the
  retriever alone would return.
- :func:`naive_rrf`: reciprocal rank fusion of the two lists, ``sum(1 / (k + rank))`` with
  ``k = 60``, no weights, no calibration, no cut: the textbook hybrid.

Example:
    >>> naive_rrf([["a", "b"], ["b", "c"]])
    ['b', 'a', 'c']
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config import MAX_TOP_K
from ..memory import AgentMemory
from ..models import Identity
from ..recall.request import RETRIEVERS, RecallRequest
from ..storage.rows import Brief

#: The constant of reciprocal rank fusion (the value of the original paper and of most
#: hybrid search engines).
RRF_K = 60
#: A token budget that never cuts a list.
_NO_BUDGET = 10**9


def uncut_request(
    query: str,
    *,
    scope: str = "any",
    kinds: tuple[str, ...] | None = None,
    memory_types: tuple[str, ...] | None = None,
    retrievers: tuple[str, ...] = RETRIEVERS,
) -> RecallRequest:
    """A recall request that cuts nothing: every candidate of ``retrievers`` (at most
    ``MAX_TOP_K``), ``min_score`` 0, no token budget, no reranker."""
    return RecallRequest(
        query=query,
        top_k=MAX_TOP_K,
        scope=scope,
        kinds=kinds,
        memory_types=memory_types,
        rerank=False,
        min_score=0.0,
        token_budget=_NO_BUDGET,
        filters={},
        retrievers=retrievers,
    )


def retriever_rows(
    mem: AgentMemory,
    identity: Identity,
    query: str,
    retriever: str,
    *,
    scope: str = "any",
    kinds: tuple[str, ...] | None = None,
    memory_types: tuple[str, ...] | None = None,
) -> list[Brief]:
    """The rows one retriever finds for ``query`` (read-only), best first by its own score.

    Args:
        mem: The store.
        identity: Who asks (the same identity gate as recall).
        query: The query text.
        retriever: ``"keyword"`` or ``"vector"`` (:data:`~agentmem.recall.request.RETRIEVERS`).
        scope: The recall scope.
        kinds: Only rows of these kinds.
        memory_types: Only memories of these types.

    Ties keep the retriever's order (each candidate's rank in its list).
    """
    if retriever not in RETRIEVERS:
        raise ValueError(f"retriever must be one of {RETRIEVERS}, not {retriever!r}")
    req = uncut_request(
        query, scope=scope, kinds=kinds, memory_types=memory_types, retrievers=(retriever,)
    )
    ranked, visible, _ = mem.engine.candidates(identity, req)
    if retriever == "keyword":
        ranked.sort(key=lambda c: (-c.bm25, c.kw_rank))
    else:
        ranked.sort(key=lambda c: (-(c.vec_cos or 0.0), c.vec_rank))
    return [visible[c.id][1] for c in ranked]


def naive_rrf(lists: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Ids of ``lists`` (each best first) ordered by ``sum(1 / (k + rank))``, ranks from 1;
    ties in first-seen order."""
    fused: dict[str, float] = {}
    for ids in lists:
        for rank, id_ in enumerate(ids, start=1):
            fused[id_] = fused.get(id_, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda i: -fused[i])


__all__ = ["RRF_K", "naive_rrf", "retriever_rows", "uncut_request"]
