"""The shape of memory the tools act for: the public methods of a bound memory.

The tool handlers call only these, so they work on :class:`agentmem.BoundMemory` and on any
other object with the same public shape (a client of a remote store), never on private
members of either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from ..models import AnswerResult, MemoryItem, RecallResult, RememberResult
from ..tiers.agent_state import StateEntry
from ..tiers.knowledge import KnowledgeEntry, UpsertResult
from ..tiers.sessions import SessionDetail
from ..tiers.working import CompactionResult


class StateLike(Protocol):
    """``memory.state``: the bound agent's named values."""

    def get(self, key: str) -> StateEntry | None: ...

    def set(self, key: str, value: Any) -> StateEntry: ...


class KnowledgeLike(Protocol):
    """``memory.knowledge``: the tenant's agent-managed knowledge."""

    def upsert(
        self,
        content: str,
        key: str | None = None,
        *,
        memory_type: str = ...,
        importance: float | None = ...,
        metadata: Mapping[str, Any] | None = ...,
    ) -> UpsertResult: ...

    def get(self, key: str, *, agent_id: str | None = ...) -> KnowledgeEntry | None: ...

    def delete(self, key_or_id: str) -> bool: ...

    def list(
        self, *, agent_id: str | None = ..., all_agents: bool = ...
    ) -> list[KnowledgeEntry]: ...


class ToolMemory(Protocol):
    """What a tool needs of a bound memory (the public API of ``BoundMemory``)."""

    @property
    def user_id(self) -> str | None: ...

    @property
    def agent_id(self) -> str | None: ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def state(self) -> StateLike: ...

    @property
    def knowledge(self) -> KnowledgeLike: ...

    def recall(
        self,
        query: str,
        *,
        top_k: int = ...,
        kinds: Iterable[str] | str | None = ...,
        memory_types: Iterable[str] | str | None = ...,
        scope: str = ...,
        rerank: bool = ...,
        min_score: float | None = ...,
        token_budget: int | None = ...,
    ) -> RecallResult: ...

    def remember(
        self,
        content: str,
        *,
        memory_type: str = ...,
        scope: str = ...,
        importance: float | None = ...,
        metadata: Mapping[str, Any] | None = ...,
    ) -> RememberResult: ...

    def read_tool_output(self, key: str) -> str: ...

    def get(self, memory_id: str) -> MemoryItem: ...

    def forget(self, memory_id: str) -> bool: ...

    def answer(self, question: str, *, top_k: int = ...) -> AnswerResult: ...

    def session_detail(self, session_id: str) -> SessionDetail: ...

    def compact(self, *, keep: int | None = ...) -> CompactionResult: ...


#: Methods whose absence means "not a bound memory" (an ``AgentMemory`` has none of them).
_REQUIRED = ("recall", "remember", "read_tool_output", "get", "forget")


def check_memory(memory: object, caller: str) -> ToolMemory:
    """``memory`` if it has the bound-memory shape, else a TypeError naming what was passed.

    Only the class is inspected (no property runs), so a closed store does not raise here.
    """
    cls = type(memory)
    missing = [name for name in _REQUIRED if not callable(getattr(cls, name, None))]
    if missing:
        hint = (
            "; call .bind(tenant_id=..., user_id=..., agent_id=..., session_id=...) on it first"
            if callable(getattr(cls, "bind", None))
            else ""
        )
        raise TypeError(
            f"{caller} expects a bound memory (a BoundMemory from AgentMemory.bind(...)), "
            f"got {cls.__name__}{hint}"
        )
    return memory  # type: ignore[return-value]


__all__ = ["KnowledgeLike", "StateLike", "ToolMemory", "check_memory"]
