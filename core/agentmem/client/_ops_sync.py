# GENERATED from _ops_aio.py by tools/async_to_sync.py: do not edit, run `make generate`
"""The operations of a remote bound memory, one async method each, generated from the
contract (:mod:`agentmem.protocols`) by tools/generate_client.py: do not edit; change
the contract and run ``make generate``."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Unpack

from ..models import AnswerResult, IngestResult, MemoryItem, RecallResult, RememberResult
from ..recall_options import RecallKwargs, RecallOptions
from ..results import (
    ChatTurn,
    CloseResult,
    CompactionResult,
    KnowledgeEntry,
    PromptView,
    SessionDetail,
    StateEntry,
    UpsertResult,
    WorkingSnapshot,
)


class KnowledgeOps:
    """The operations of :class:`~agentmem.protocols.KnowledgeProtocol`, each one request."""

    def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def upsert(
        self,
        content: str,
        key: str | None = None,
        *,
        memory_type: str = "note",
        importance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> UpsertResult:
        """See :meth:`agentmem.tiers.knowledge.Knowledge.upsert`."""
        result: UpsertResult = self._call(
            "knowledge.upsert",
            {
                "content": content,
                "key": key,
                "memory_type": memory_type,
                "importance": importance,
                "metadata": metadata,
            },
        )
        return result

    def delete(self, key_or_id: str) -> bool:
        """See :meth:`agentmem.tiers.knowledge.Knowledge.delete`."""
        result: bool = self._call("knowledge.delete", {"key_or_id": key_or_id})
        return result

    def get(self, key: str, *, agent_id: str | None = None) -> KnowledgeEntry | None:
        """See :meth:`agentmem.tiers.knowledge.Knowledge.get`."""
        result: KnowledgeEntry | None = self._call(
            "knowledge.get", {"key": key, "agent_id": agent_id}
        )
        return result

    def list(
        self, *, agent_id: str | None = None, all_agents: bool = False
    ) -> builtins.list[KnowledgeEntry]:
        """See :meth:`agentmem.tiers.knowledge.Knowledge.list`."""
        result: builtins.list[KnowledgeEntry] = self._call(
            "knowledge.list", {"agent_id": agent_id, "all_agents": all_agents}
        )
        return result


class StateOps:
    """The operations of :class:`~agentmem.protocols.StateProtocol`, each one request."""

    def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def get(self, key: str) -> StateEntry | None:
        """See :meth:`agentmem.tiers.agent_state.AgentState.get`."""
        result: StateEntry | None = self._call("state.get", {"key": key})
        return result

    def set(
        self, key: str, value: Any, *, user_id: str | None = None, about_agent_id: str | None = None
    ) -> StateEntry:
        """See :meth:`agentmem.tiers.agent_state.AgentState.set`."""
        result: StateEntry = self._call(
            "state.set",
            {"key": key, "value": value, "user_id": user_id, "about_agent_id": about_agent_id},
        )
        return result

    def delete(self, key: str) -> bool:
        """See :meth:`agentmem.tiers.agent_state.AgentState.delete`."""
        result: bool = self._call("state.delete", {"key": key})
        return result

    def list(self, *, prefix: str | None = None) -> builtins.list[StateEntry]:
        """See :meth:`agentmem.tiers.agent_state.AgentState.list`."""
        result: builtins.list[StateEntry] = self._call("state.list", {"prefix": prefix})
        return result


class WorkingOps:
    """The operations of :class:`~agentmem.protocols.WorkingProtocol`, each one request."""

    def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def snapshot(self) -> WorkingSnapshot:
        """See :meth:`agentmem.tiers.working.WorkingMemory.snapshot`."""
        result: WorkingSnapshot = self._call("working.snapshot", {})
        return result


class BoundOps:
    """The operations of :class:`~agentmem.protocols.BoundMemoryProtocol`, each one request."""

    def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    def add_message(
        self,
        role: str,
        content: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        event_time: datetime | str | None = None,
    ) -> MemoryItem:
        """See :meth:`agentmem.BoundMemory.add_message`."""
        result: MemoryItem = self._call(
            "add_message",
            {"role": role, "content": content, "metadata": metadata, "event_time": event_time},
        )
        return result

    def add_messages(self, messages: Iterable[Mapping[str, Any]]) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.add_messages`."""
        result: list[MemoryItem] = self._call("add_messages", {"messages": list(messages)})
        return result

    def add_tool_output(
        self,
        tool_call_id: str,
        content: str,
        *,
        tool_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryItem:
        """See :meth:`agentmem.BoundMemory.add_tool_output`."""
        result: MemoryItem = self._call(
            "add_tool_output",
            {
                "tool_call_id": tool_call_id,
                "content": content,
                "tool_name": tool_name,
                "metadata": metadata,
            },
        )
        return result

    def read_tool_output(self, key: str) -> str:
        """See :meth:`agentmem.BoundMemory.read_tool_output`."""
        result: str = self._call("read_tool_output", {"key": key})
        return result

    def messages(self, *, limit: int | None = None) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.messages`."""
        result: list[MemoryItem] = self._call("messages", {"limit": limit})
        return result

    def clear_session(self) -> int:
        """See :meth:`agentmem.BoundMemory.clear_session`."""
        result: int = self._call("clear_session", {})
        return result

    def add_document(
        self, text: str, *, source_ref: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.add_document`."""
        result: list[MemoryItem] = self._call(
            "add_document", {"text": text, "source_ref": source_ref, "metadata": metadata}
        )
        return result

    def remember(
        self,
        content: str,
        *,
        memory_type: str = "fact",
        scope: str = "user",
        importance: float | None = None,
        topic_key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RememberResult:
        """See :meth:`agentmem.BoundMemory.remember`."""
        result: RememberResult = self._call(
            "remember",
            {
                "content": content,
                "memory_type": memory_type,
                "scope": scope,
                "importance": importance,
                "topic_key": topic_key,
                "metadata": metadata,
            },
        )
        return result

    def remember_many(self, items: Iterable[str | Mapping[str, Any]]) -> list[RememberResult]:
        """See :meth:`agentmem.BoundMemory.remember_many`."""
        result: list[RememberResult] = self._call("remember_many", {"items": list(items)})
        return result

    def forget(self, memory_id: str) -> bool:
        """See :meth:`agentmem.BoundMemory.forget`."""
        result: bool = self._call("forget", {"memory_id": memory_id})
        return result

    def get(self, memory_id: str) -> MemoryItem:
        """See :meth:`agentmem.BoundMemory.get`."""
        result: MemoryItem = self._call("get", {"memory_id": memory_id})
        return result

    def get_many(self, memory_ids: Sequence[str]) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.get_many`."""
        result: list[MemoryItem] = self._call("get_many", {"memory_ids": memory_ids})
        return result

    def recall(
        self, query: str, options: RecallOptions | None = None, **kwargs: Unpack[RecallKwargs]
    ) -> RecallResult:
        """See :meth:`agentmem.BoundMemory.recall`."""
        result: RecallResult = self._call(
            "recall", {"query": query, **RecallOptions.of(options, **kwargs).as_dict()}
        )
        return result

    def ingest(self, messages: Iterable[Mapping[str, Any] | ChatTurn]) -> IngestResult:
        """See :meth:`agentmem.BoundMemory.ingest`."""
        result: IngestResult = self._call("ingest", {"messages": list(messages)})
        return result

    def history(self, memory_id: str) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.history`."""
        result: list[MemoryItem] = self._call("history", {"memory_id": memory_id})
        return result

    def answer(self, question: str, *, top_k: int = 5) -> AnswerResult:
        """See :meth:`agentmem.BoundMemory.answer`."""
        result: AnswerResult = self._call("answer", {"question": question, "top_k": top_k})
        return result

    def context_messages(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> list[dict[str, Any]]:
        """See :meth:`agentmem.BoundMemory.context_messages`."""
        result: list[dict[str, Any]] = self._call(
            "context_messages",
            {
                "model_window": model_window,
                "budget_ratio": budget_ratio,
                "max_messages": max_messages,
            },
        )
        return result

    def prompt_view(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> PromptView:
        """See :meth:`agentmem.BoundMemory.prompt_view`."""
        result: PromptView = self._call(
            "prompt_view",
            {
                "model_window": model_window,
                "budget_ratio": budget_ratio,
                "max_messages": max_messages,
            },
        )
        return result

    def compact(self, *, keep: int | None = None) -> CompactionResult:
        """See :meth:`agentmem.BoundMemory.compact`."""
        result: CompactionResult = self._call("compact", {"keep": keep})
        return result

    def close_session(self, *, summary_timeout: float | None = None) -> CloseResult:
        """See :meth:`agentmem.BoundMemory.close_session`."""
        result: CloseResult = self._call("close_session", {"summary_timeout": summary_timeout})
        return result

    def session_detail(self, session_id: str, *, target_agent: str | None = None) -> SessionDetail:
        """See :meth:`agentmem.BoundMemory.session_detail`."""
        result: SessionDetail = self._call(
            "session_detail", {"session_id": session_id, "target_agent": target_agent}
        )
        return result

    def sessions(self) -> list[str]:
        """See :meth:`agentmem.BoundMemory.sessions`."""
        result: list[str] = self._call("sessions", {})
        return result
