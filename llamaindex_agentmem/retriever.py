"""``AgentMemRetriever``: agentmem hybrid recall as a LlamaIndex retriever."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from agentmem import BoundMemoryProtocol, validation
from agentmem.errors import ValidationError
from agentmem.models import KINDS, MEMORY_TYPES, RECALL_SCOPES, RecallHit
from agentmem.tools import check_memory

#: Metadata keys a node's text is shown to an LLM with (the rest stay out of the prompt).
LLM_METADATA_KEYS = ("kind", "memory_type", "event_time")


def hit_metadata(hit: RecallHit) -> dict[str, Any]:
    """The caller's stored metadata overlaid with agentmem's own fields (ours win)."""
    return {
        **hit.metadata,
        "id": hit.id,
        "kind": hit.kind,
        "memory_type": hit.memory_type,
        "scope": hit.scope,
        "score": hit.score,
        "source_ref": hit.source_ref,
        "event_time": hit.event_time.isoformat(),
        "session_id": hit.session_id,
    }


def hit_to_node(hit: RecallHit) -> NodeWithScore:
    """A ``NodeWithScore`` whose ``TextNode`` id is the memory id and score the recall score."""
    metadata = hit_metadata(hit)
    node = TextNode(
        id_=hit.id,
        text=hit.content,
        metadata=metadata,
        excluded_embed_metadata_keys=list(metadata),
        excluded_llm_metadata_keys=[k for k in metadata if k not in LLM_METADATA_KEYS],
    )
    return NodeWithScore(node=node, score=hit.score)


def _equality_filters(filters: Mapping[str, Any] | MetadataFilters | None) -> dict[str, Any] | None:
    """The core's equality filters of a dict, or of LlamaIndex ``MetadataFilters`` made of
    ``==`` filters joined by AND; any other operator or condition is refused by name rather
    than dropped, which would widen the results."""
    if not isinstance(filters, MetadataFilters):
        return None if filters is None else validation.metadata(filters, "filters")
    if filters.condition not in (None, FilterCondition.AND):
        raise ValidationError("filters", f"only AND is supported; got {filters.condition}")
    out: dict[str, Any] = {}
    for f in filters.filters:
        if not isinstance(f, MetadataFilter) or f.operator != FilterOperator.EQ:
            raise ValidationError("filters", f"only == filters are supported; got {f!r}")
        out[f.key] = f.value
    return validation.metadata(out, "filters")


class AgentMemRetriever(BaseRetriever):
    """Retrieve from an agentmem bound memory with hybrid (keyword + vector) recall.

    Each result is a ``NodeWithScore`` whose ``TextNode.id_`` is the memory id and whose
    score is agentmem's calibrated score in [0, 1] (higher is better). Node metadata holds
    the stored metadata plus ``id``, ``kind``, ``memory_type``, ``scope``, ``score``,
    ``source_ref``, ``event_time`` (ISO 8601) and ``session_id``. Identity comes only from
    ``memory``.

    Args:
        memory: A bound memory (``AgentMemory(...).bind(...)``).
        similarity_top_k: At most this many nodes (1..20); ``top_k`` in the core.
        scope: session, history, user, agent, tenant or any (default).
        kinds: Only these kinds (chat_message, tool_output, document_chunk, memory, summary).
        memory_types: Only these memory types (fact, preference, ...).
        min_score: Calibrated-score cut-off in [0, 1]; default the memory's config (0.3).
        filters: Equality filters on the stored metadata, as a dict (``{"source": "crm"}``,
            as the LangChain retriever's ``filters``) or as LlamaIndex ``MetadataFilters`` of
            ``==`` filters joined by AND; identity keys are refused by the core.
        token_budget: Max tokens of returned content; default the memory's config.
        rerank: Use the memory's reranker when one is configured.
        callback_manager: LlamaIndex callback manager.
        verbose: Print retrieval details.

    Example:
        >>> from agentmem import AgentMemory  # doctest: +SKIP
        >>> from llama_index.core.query_engine import RetrieverQueryEngine  # doctest: +SKIP
        >>> m = AgentMemory("./memdata").bind("acme", user_id="u1", session_id="s1")  # doctest: +SKIP
        >>> retriever = AgentMemRetriever(memory=m, similarity_top_k=3)  # doctest: +SKIP
        >>> engine = RetrieverQueryEngine.from_args(retriever, llm=llm)  # doctest: +SKIP
        >>> retriever.retrieve("which Python package manager do I prefer?")[0].node.id_  # doctest: +SKIP
    """

    def __init__(
        self,
        memory: BoundMemoryProtocol,
        *,
        similarity_top_k: int = 5,
        scope: str = "any",
        kinds: Iterable[str] | str | None = None,
        memory_types: Iterable[str] | str | None = None,
        min_score: float | None = None,
        filters: Mapping[str, Any] | MetadataFilters | None = None,
        token_budget: int | None = None,
        rerank: bool = True,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        check_memory(memory, "AgentMemRetriever")
        self.memory = memory
        self.similarity_top_k = validation.top_k(similarity_top_k, "similarity_top_k")
        self.scope = validation.choice(scope, "scope", RECALL_SCOPES)
        self.kinds = validation.choices(kinds, "kinds", KINDS)
        self.memory_types = validation.choices(memory_types, "memory_types", MEMORY_TYPES)
        self.min_score = validation.unit_float(min_score, "min_score")
        self.filters = _equality_filters(filters)
        self.token_budget = validation.positive_int(token_budget, "token_budget")
        if not isinstance(rerank, bool):
            raise ValidationError("rerank", "must be a bool")
        self.rerank = rerank
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.memory.recall(
            query_bundle.query_str,
            top_k=self.similarity_top_k,
            kinds=self.kinds,
            memory_types=self.memory_types,
            scope=self.scope,
            rerank=self.rerank,
            min_score=self.min_score,
            filters=self.filters,
            token_budget=self.token_budget,
        )
        return [hit_to_node(h) for h in result.items]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)
