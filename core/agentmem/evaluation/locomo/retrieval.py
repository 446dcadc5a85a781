"""agentmem's own LoCoMo modes, all on the real engine.

- ``hybrid``: the public :meth:`~agentmem.BoundMemory.recall` (fusion, calibration, default
  reranker setting), with a threshold and a budget that never cut the ranking.
- ``defaults``: the public recall as an application calls it,
  ``recall(q, top_k=20, scope="history")``: the configured ``min_score`` and token budget
  (0.3 and 1,000 unless changed) decide how much comes back.
- ``keyword`` / ``vector``: one retriever alone. The engine's candidate step runs with only
  that retriever (:attr:`agentmem.recall.RecallRequest.retrievers`): the same scope plan,
  filters and identity gate as recall; the candidates are then ordered by that retriever's
  own score (BM25, or cosine similarity), which is what the retriever alone would return.
"""

from __future__ import annotations

from typing import Any

from ...config import MAX_TOP_K
from ...memory import AgentMemory, BoundMemory
from ...models import Identity
from ...recall.request import RETRIEVERS
from ..halves import retriever_rows

#: agentmem's own modes.
MODES: tuple[str, ...] = ("hybrid", "defaults", *RETRIEVERS)
QUERY_SESSION = "locomo-eval-query"
#: Recall settings that keep the threshold and the token budget from cutting the ranking.
TOP_K = MAX_TOP_K
TOKEN_BUDGET = 100_000
MIN_SCORE = 0.0


def hybrid(m: BoundMemory, query: str) -> list[dict[str, Any]]:
    """The metadata of the hits of the public recall, best first."""
    result = m.recall(query, top_k=TOP_K, min_score=MIN_SCORE, token_budget=TOKEN_BUDGET)
    return [hit.metadata for hit in result.items]


def at_defaults(m: BoundMemory, query: str) -> list[dict[str, Any]]:
    """The metadata of the hits of the public recall at default settings, best first."""
    return [hit.metadata for hit in m.recall(query, top_k=TOP_K, scope="history").items]


def single_retriever(
    mem: AgentMemory, identity: Identity, query: str, retriever: str
) -> list[dict[str, Any]]:
    """The metadata of the candidates one retriever finds (read-only), by its own score
    (see :func:`agentmem.evaluation.halves.retriever_rows`)."""
    return [dict(row.metadata) for row in retriever_rows(mem, identity, query, retriever)]
