"""``AgentMemMemoryBlock``: agentmem as a long-term block of ``llama_index.core.memory.Memory``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, field_validator, model_validator
from llama_index.core.memory.memory import BaseMemoryBlock

from agentmem import BoundMemoryProtocol, validation
from agentmem.models import KINDS, MEMORY_TYPES, RECALL_SCOPES
from agentmem.tools import check_memory
from agentmem.tools.memory_shape import check_arguments
from agentmem.tools.render import drop_lowest_scored, fit_to_budget, format_hits

from ._messages import message_text, to_agentmem

log = logging.getLogger("agentmem.llamaindex")


class AgentMemMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for ``llama_index.core.memory.Memory``, backed by agentmem.

    - ``_aput``: messages flushed out of ``Memory``'s short-term queue are stored in the
      bound session (``add_messages``), so they stay recallable after they leave the prompt.
      That is when they are stored: ``Memory`` flushes once its queue passes
      ``token_limit * chat_history_token_ratio`` tokens, not at each ``put`` (use
      :class:`AgentMemChatStore` with ``ChatMemoryBuffer`` to record every message as it
      comes). Messages without text are skipped.
    - ``_aget``: recalls what is relevant to the latest ``retrieval_context_window``
      messages and returns it as one delimited, advisory ``<recalled-memories>`` block of at
      most ``token_budget`` tokens (the lowest-scored items are dropped to fit).
    - ``atruncate``: when ``Memory`` runs over its token limit it drops this block's
      lowest-scored items first (only for ``priority`` > 0; priority 0 is never truncated).

    Where ``Memory`` puts the block is its ``insert_method``: its default (``"system"``)
    makes the recalled text part of the system message; ``insert_method="user"`` puts it
    in the latest user message instead, which keeps stored text out of the system prompt.

    Identity comes from ``memory`` only; the ``session_id`` that ``Memory`` passes along is
    ignored (it is LlamaIndex's chat-store key, recorded as ``llama_index_session_id``
    metadata on stored messages).

    Args:
        memory: A bound memory (``AgentMemory(...).bind(...)``); it needs a ``session_id``
            unless ``accept_short_term_memory=False`` (a recall-only block).
        name: Block name (its tag in ``Memory``'s template).
        priority: ``Memory`` truncates higher numbers first; 0 means never truncate.
        similarity_top_k: At most this many recalled items (1..20).
        token_budget: Max tokens of the returned block.
        retrieval_context_window: How many of the latest messages form the query.
        scope, kinds, memory_types, min_score: Recall filters as in ``BoundMemory.recall``.

    Example:
        >>> from llama_index.core.memory import Memory  # doctest: +SKIP
        >>> block = AgentMemMemoryBlock(memory=bound, priority=1)  # doctest: +SKIP
        >>> chat = Memory.from_defaults(  # doctest: +SKIP
        ...     session_id="s1", memory_blocks=[block], insert_method="user"
        ... )
    """

    memory: BoundMemoryProtocol = Field(exclude=True, description="The bound agentmem memory.")
    name: str = Field(default="agentmem", description="The name of the memory block.")
    description: str | None = Field(
        default="Memories recalled from agentmem for the latest messages.",
        description="A description of the memory block.",
    )
    priority: int = Field(
        default=1, ge=0, description="Truncation priority (0 = never truncate this block)."
    )
    similarity_top_k: int = Field(default=5, description="Max recalled items (1..20).")
    token_budget: int = Field(default=600, description="Max tokens of the returned block.")
    retrieval_context_window: int = Field(
        default=2, description="How many of the latest messages are used as the query."
    )
    scope: str = Field(default="any", description="Recall scope.")
    kinds: tuple[str, ...] | None = Field(default=None, description="Only these kinds.")
    memory_types: tuple[str, ...] | None = Field(
        default=None, description="Only these memory types."
    )
    min_score: float | None = Field(default=None, description="Score cut-off in [0, 1].")

    @model_validator(mode="before")
    @classmethod
    def _known_arguments(cls, data: Any) -> Any:
        if isinstance(data, dict):
            count = "the number of recalled items is similarity_top_k"
            hints = {"top_k": count, "k": count}
            check_arguments(cls.__name__, data, cls.model_fields, hints=hints)
        return data

    @field_validator("memory", mode="before")
    @classmethod
    def _check_memory(cls, value: Any) -> Any:
        return check_memory(value, cls.__name__)

    @field_validator("similarity_top_k")
    @classmethod
    def _check_top_k(cls, value: int) -> int:
        return validation.top_k(value, "similarity_top_k")

    @field_validator("token_budget", "retrieval_context_window")
    @classmethod
    def _check_positive(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be a positive integer")
        return value

    @field_validator("scope")
    @classmethod
    def _check_scope(cls, value: str) -> str:
        return validation.choice(value, "scope", RECALL_SCOPES)

    @field_validator("kinds", mode="before")
    @classmethod
    def _check_kinds(cls, value: Any) -> tuple[str, ...] | None:
        return validation.choices(value, "kinds", KINDS)

    @field_validator("memory_types", mode="before")
    @classmethod
    def _check_memory_types(cls, value: Any) -> tuple[str, ...] | None:
        return validation.choices(value, "memory_types", MEMORY_TYPES)

    @field_validator("min_score")
    @classmethod
    def _check_min_score(cls, value: float | None) -> float | None:
        return validation.unit_float(value, "min_score")

    @model_validator(mode="after")
    def _check_session(self) -> AgentMemMemoryBlock:
        if self.accept_short_term_memory and self.memory.session_id is None:
            raise ValueError(
                "memory must be bound with a session_id to store flushed messages "
                "(bind one, or pass accept_short_term_memory=False for a recall-only block)"
            )
        return self

    def _recall_block(self, query: str) -> str:
        result = self.memory.recall(
            query,
            top_k=self.similarity_top_k,
            kinds=self.kinds,
            memory_types=self.memory_types,
            scope=self.scope,
            min_score=self.min_score,
            token_budget=self.token_budget,
        )
        block = format_hits(result.items, include_ids=False, empty="")
        return fit_to_budget(block, self.token_budget)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """Recalled context for the latest messages ('' when there is nothing relevant)."""
        if not messages:
            return ""
        window = messages[-self.retrieval_context_window :]
        query = "\n".join(t for t in (message_text(m) for m in window) if t.strip())
        if not query.strip():
            return ""
        return await asyncio.to_thread(self._recall_block, query)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store messages flushed from short-term memory in the bound session."""
        batch = []
        for message in messages:
            llama_session = message.additional_kwargs.get("session_id")
            extra = {"source": "llama_index.memory"}
            if isinstance(llama_session, str):
                extra["llama_index_session_id"] = llama_session
            item = to_agentmem(
                message,
                keep_empty=False,
                extra_metadata=extra,
                skip_kwargs=frozenset({"session_id"}),
            )
            if item is not None:
                batch.append(item)
        if batch:
            await asyncio.to_thread(self.memory.add_messages, batch)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """``content`` without its lowest-scored items, ``tokens_to_truncate`` tokens shorter.

        Returns None (drop the whole block) when no item can stay.
        """
        if not content:
            return None
        return drop_lowest_scored(content, tokens_to_truncate)
