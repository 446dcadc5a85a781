"""The shape of a memory, whichever way it runs: typing protocols for code that takes either.

:class:`~agentmem.BoundMemory` (embedded) and the remote bound memory of
:func:`agentmem.connect` both satisfy :class:`BoundMemoryProtocol`; :class:`~agentmem.AgentMemory`
and the client of :func:`agentmem.connect` both satisfy :class:`MemoryProtocol`. The adapters
(LangChain, LlamaIndex, the MCP tools) type their ``memory`` argument with these, so they run
unchanged on a memory served by ``agentmem serve``. Both protocols are runtime-checkable
(``isinstance(x, BoundMemoryProtocol)``), so a pydantic field typed with one accepts either.

These protocols are also the one declaration of the operation contract: the wire's
operation table (:data:`agentmem.wire.OPS`, hence the server's routes and their OpenAPI
schema) is read from them, both clients' methods are generated from them
(``make generate``), and ``tests/core/test_architecture.py`` fails when the embedded facade, a
client or the server disagrees with them on a name, parameter, default, type or result.
A new operation is declared here and implemented on :class:`~agentmem.BoundMemory`.
They sit at the bottom layer (models, results and errors only), so a client imports them
without the engine.

Example:
    >>> def remember_tea(memory: BoundMemoryProtocol) -> str:
    ...     return memory.remember("Prefers tea", memory_type="preference").id
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar, Unpack, runtime_checkable

from .models import (
    AnswerResult,
    ErasureReceipt,
    Identity,
    IngestResult,
    MemoryItem,
    RecallResult,
    RememberResult,
)
from .recall_options import RecallKwargs, RecallOptions
from .results import (
    ChatTurn,
    CloseResult,
    CompactionResult,
    KnowledgeEntry,
    PromptView,
    ReferenceSummary,
    SessionDetail,
    StateEntry,
    TokenCounts,
    UpsertResult,
    WorkingSnapshot,
)

_F = TypeVar("_F", bound=Callable[..., Any])


def local(method: _F) -> _F:
    """Mark a declared method as served by the caller's side alone (``knowledge.search`` is
    a ``recall`` with ``scope="knowledge"``): it has no operation of its own on the wire."""
    method.__agentmem_local__ = True  # type: ignore[attr-defined]
    return method


def is_local(method: Any) -> bool:
    return bool(getattr(method, "__agentmem_local__", False))


class KnowledgeProtocol(Protocol):
    """``memory.knowledge``: agent-managed knowledge (see :class:`agentmem.tiers.knowledge.Knowledge`)."""

    def upsert(
        self,
        content: str,
        key: str | None = None,
        *,
        memory_type: str = "note",
        importance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> UpsertResult: ...

    def delete(self, key_or_id: str) -> bool: ...

    def get(self, key: str, *, agent_id: str | None = None) -> KnowledgeEntry | None: ...

    def list(
        self, *, agent_id: str | None = None, all_agents: bool = False
    ) -> builtins.list[KnowledgeEntry]: ...

    @local
    def search(
        self, query: str, options: RecallOptions | None = None, **kwargs: Unpack[RecallKwargs]
    ) -> RecallResult: ...


class StateProtocol(Protocol):
    """``memory.state``: the bound agent's key-value state."""

    def get(self, key: str) -> StateEntry | None: ...

    def set(
        self,
        key: str,
        value: Any,
        *,
        user_id: str | None = None,
        about_agent_id: str | None = None,
    ) -> StateEntry: ...

    def delete(self, key: str) -> bool: ...

    def list(self, *, prefix: str | None = None) -> builtins.list[StateEntry]: ...


class WorkingProtocol(Protocol):
    """``memory.working``: the bound session's working memory (see
    :class:`agentmem.tiers.working.WorkingMemory`). Its prompt operations are the bound
    memory's own (``compact``, ``context_messages``, ``prompt_view``)."""

    @property
    def window(self) -> builtins.list[MemoryItem]: ...

    @property
    def pinned(self) -> builtins.list[MemoryItem]: ...

    @property
    def summary(self) -> ReferenceSummary: ...

    @property
    def tokens(self) -> TokenCounts: ...

    def snapshot(self) -> WorkingSnapshot: ...

    @local
    def compact(self, *, keep: int | None = None) -> CompactionResult: ...

    @local
    def context_messages(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> builtins.list[dict[str, Any]]: ...

    @local
    def prompt_view(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> PromptView: ...


@runtime_checkable
class BoundMemoryProtocol(Protocol):
    """One identity's memory: every operation of :class:`~agentmem.BoundMemory`."""

    @property
    def identity(self) -> Identity: ...

    @property
    def tenant_id(self) -> str: ...

    @property
    def user_id(self) -> str | None: ...

    @property
    def agent_id(self) -> str | None: ...

    @property
    def session_id(self) -> str | None: ...

    def add_message(
        self,
        role: str,
        content: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        event_time: datetime | str | None = None,
    ) -> MemoryItem: ...

    def add_messages(self, messages: Iterable[Mapping[str, Any]]) -> list[MemoryItem]: ...

    def add_tool_output(
        self,
        tool_call_id: str,
        content: str,
        *,
        tool_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryItem: ...

    def read_tool_output(self, key: str) -> str: ...

    def messages(self, *, limit: int | None = None) -> list[MemoryItem]: ...

    def clear_session(self) -> int: ...

    def add_document(
        self,
        text: str,
        *,
        source_ref: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[MemoryItem]: ...

    def remember(
        self,
        content: str,
        *,
        memory_type: str = "fact",
        scope: str = "user",
        importance: float | None = None,
        topic_key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RememberResult: ...

    def remember_many(self, items: Iterable[str | Mapping[str, Any]]) -> list[RememberResult]: ...

    def forget(self, memory_id: str) -> bool: ...

    def get(self, memory_id: str) -> MemoryItem: ...

    def get_many(self, memory_ids: Sequence[str]) -> list[MemoryItem]: ...

    def recall(
        self,
        query: str,
        options: RecallOptions | None = None,
        **kwargs: Unpack[RecallKwargs],
    ) -> RecallResult: ...

    def ingest(self, messages: Iterable[Mapping[str, Any] | ChatTurn]) -> IngestResult: ...

    def history(self, memory_id: str) -> list[MemoryItem]: ...

    def answer(self, question: str, *, top_k: int = 5) -> AnswerResult: ...

    def context_messages(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> list[dict[str, Any]]: ...

    def prompt_view(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> PromptView: ...

    def compact(self, *, keep: int | None = None) -> CompactionResult: ...

    def close_session(self, *, summary_timeout: float | None = None) -> CloseResult: ...

    def session_detail(
        self, session_id: str, *, target_agent: str | None = None
    ) -> SessionDetail: ...

    def sessions(self) -> list[str]: ...

    @property
    def working(self) -> WorkingProtocol: ...

    @property
    def knowledge(self) -> KnowledgeProtocol: ...

    @property
    def state(self) -> StateProtocol: ...


@runtime_checkable
class MemoryProtocol(Protocol):
    """A whole memory store: :class:`~agentmem.AgentMemory`, or a client of a server."""

    def bind(
        self,
        tenant_id: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> BoundMemoryProtocol: ...

    def flush(self, timeout: float | None = None) -> bool: ...

    def erase(
        self, *, tenant_id: str, user_id: str | None = None, agent_id: str | None = None
    ) -> ErasureReceipt: ...


__all__ = [
    "BoundMemoryProtocol",
    "KnowledgeProtocol",
    "MemoryProtocol",
    "StateProtocol",
    "WorkingProtocol",
]
