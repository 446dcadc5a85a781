"""``AgentMemRetriever``: agentmem hybrid recall as a LangChain retriever."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator, model_validator

from agentmem import BoundMemoryProtocol, validation
from agentmem.models import KINDS, MEMORY_TYPES, RECALL_SCOPES
from agentmem.tools import check_memory
from agentmem.tools.memory_shape import check_arguments

from ._convert import hit_to_document

#: Keyword arguments ``invoke`` accepts to override a field for one call.
_OVERRIDABLE = frozenset(
    {"k", "scope", "kinds", "memory_types", "min_score", "filters", "rerank", "token_budget"}
)
#: ``VectorStoreRetriever``'s ``search_kwargs`` and the fields that do their work here.
_SEARCH_KWARGS = {"k": "k", "score_threshold": "min_score", "filter": "filters"}


def _hints(data: dict[str, Any]) -> dict[str, str]:
    """What to write instead of the settings other retrievers take."""
    count = "the number of documents is k (the core's top_k)"
    given = data.get("search_kwargs")
    given = given if isinstance(given, dict) else {}
    mapped = [f"{_SEARCH_KWARGS[n]}={v!r}" for n, v in given.items() if n in _SEARCH_KWARGS]
    other = sorted(n for n in given if n not in _SEARCH_KWARGS)
    return {
        "top_k": count,
        "similarity_top_k": count,
        "search_type": "search_type is VectorStoreRetriever's: recall is always hybrid "
        "(keyword + vector), with min_score as its score threshold",
        "search_kwargs": "search_kwargs is VectorStoreRetriever's: set the fields instead ("
        + (", ".join(mapped) or "k, min_score, filters")
        + ")"
        + (f"; {other} have no counterpart" if other else ""),
    }


class AgentMemRetriever(BaseRetriever):
    """Hybrid (keyword + vector) recall over one bound identity's memories.

    Every call goes through :meth:`agentmem.BoundMemory.recall`, so it sees exactly what
    that identity may see. ``k`` maps to the core's ``top_k`` (at most 20); it can be set
    on the retriever or per call (``retriever.invoke(query, k=3)``), as can ``scope``,
    ``kinds``, ``memory_types``, ``min_score`` and ``filters``. An argument it does not
    know raises a ``TypeError`` naming it: ``top_k=`` or ``VectorStoreRetriever``'s
    ``search_kwargs={"k": 2}`` are refused with the field to use (``k=2``), not dropped.

    Each ``Document`` has ``id`` equal to the memory id, ``page_content`` equal to its
    content, and metadata with ``id``, ``kind``, ``memory_type``, ``scope``, ``score``
    (calibrated, in [0, 1], higher is better), ``source_ref``, ``event_time`` (ISO 8601),
    ``session_id``, plus the memory's stored metadata.

    Example:
        >>> from agentmem import AgentMemory
        >>> mem = AgentMemory(tmp_path)  # doctest: +SKIP
        >>> m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")  # doctest: +SKIP
        >>> retriever = AgentMemRetriever(memory=m, k=3)  # doctest: +SKIP
        >>> docs = retriever.invoke("which Python package manager do I prefer?")  # doctest: +SKIP
        >>> docs[0].metadata["kind"]  # doctest: +SKIP
        'memory'
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: BoundMemoryProtocol
    """The bound memory (``AgentMemory.bind``) whose identity every search uses."""
    k: int = Field(default=5, ge=1, le=20)
    """How many documents to return at most (the core's ``top_k``)."""
    scope: str = "any"
    """session, history, user, agent, tenant, or any (all of them, fused)."""
    kinds: list[str] | None = None
    """Restrict to these kinds (chat_message, tool_output, document_chunk, memory, summary)."""
    memory_types: list[str] | None = None
    """Restrict to these memory types (fact, preference, decision, ...)."""
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    """Calibrated-score cut-off; ``None`` uses the store's configured default."""
    filters: dict[str, Any] | None = None
    """Equality filters on the stored metadata (identity keys are rejected by the core)."""
    rerank: bool = True
    """Use the store's reranker, if one is configured (fail-open)."""
    token_budget: int | None = Field(default=None, ge=1)
    """Max tokens of returned content; ``None`` uses the store's configured default."""

    @model_validator(mode="before")
    @classmethod
    def _known_arguments(cls, data: Any) -> Any:
        if isinstance(data, dict):
            check_arguments(cls.__name__, data, cls.model_fields, hints=_hints(data))
        return data

    @field_validator("memory", mode="before")
    @classmethod
    def _check_memory(cls, value: Any) -> Any:
        return check_memory(value, cls.__name__)

    # Checked when built, as the LlamaIndex retriever's are, not at the first search; a
    # single kind or type may be given as a string, as to the core and per call.
    @field_validator("scope")
    @classmethod
    def _check_scope(cls, value: str) -> str:
        return validation.choice(value, "scope", RECALL_SCOPES)

    @field_validator("kinds", mode="before")
    @classmethod
    def _check_kinds(cls, value: Any) -> list[str] | None:
        checked = validation.choices(value, "kinds", KINDS)
        return None if checked is None else list(checked)

    @field_validator("memory_types", mode="before")
    @classmethod
    def _check_memory_types(cls, value: Any) -> list[str] | None:
        checked = validation.choices(value, "memory_types", MEMORY_TYPES)
        return None if checked is None else list(checked)

    def _search(self, query: str, overrides: dict[str, Any]) -> list[Document]:
        unknown = set(overrides) - _OVERRIDABLE
        if unknown:
            raise TypeError(
                f"AgentMemRetriever got unexpected keyword arguments {sorted(unknown)}; "
                f"accepted: {sorted(_OVERRIDABLE)}"
            )
        result = self.memory.recall(
            query,
            top_k=overrides.get("k", self.k),
            scope=overrides.get("scope", self.scope),
            kinds=overrides.get("kinds", self.kinds),
            memory_types=overrides.get("memory_types", self.memory_types),
            min_score=overrides.get("min_score", self.min_score),
            filters=overrides.get("filters", self.filters),
            rerank=overrides.get("rerank", self.rerank),
            token_budget=overrides.get("token_budget", self.token_budget),
        )
        return [hit_to_document(hit) for hit in result.items]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        **kwargs: Any,
    ) -> list[Document]:
        return self._search(query, kwargs)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        **kwargs: Any,
    ) -> list[Document]:
        # The core is synchronous (SQLite, Tantivy, Chroma, ONNX): run it off the event loop.
        return await asyncio.to_thread(self._search, query, kwargs)
