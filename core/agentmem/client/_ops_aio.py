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


class AsyncKnowledgeOps:
    """The operations of :class:`~agentmem.protocols.KnowledgeProtocol`, each one request."""

    async def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    async def upsert(
        self,
        content: str,
        key: str | None = None,
        *,
        memory_type: str = "note",
        importance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> UpsertResult:
        """See :meth:`agentmem.tiers.knowledge.Knowledge.upsert`."""
        result: UpsertResult = await self._call(
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

    async def delete(self, key_or_id: str) -> bool:
        """See :meth:`agentmem.tiers.knowledge.Knowledge.delete`."""
        result: bool = await self._call("knowledge.delete", {"key_or_id": key_or_id})
        return result

    async def get(self, key: str, *, agent_id: str | None = None) -> KnowledgeEntry | None:
        """See :meth:`agentmem.tiers.knowledge.Knowledge.get`."""
        result: KnowledgeEntry | None = await self._call(
            "knowledge.get", {"key": key, "agent_id": agent_id}
        )
        return result

    async def list(
        self, *, agent_id: str | None = None, all_agents: bool = False
    ) -> builtins.list[KnowledgeEntry]:
        """See :meth:`agentmem.tiers.knowledge.Knowledge.list`."""
        result: builtins.list[KnowledgeEntry] = await self._call(
            "knowledge.list", {"agent_id": agent_id, "all_agents": all_agents}
        )
        return result


class AsyncStateOps:
    """The operations of :class:`~agentmem.protocols.StateProtocol`, each one request."""

    async def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    async def get(self, key: str) -> StateEntry | None:
        """See :meth:`agentmem.tiers.agent_state.AgentState.get`."""
        result: StateEntry | None = await self._call("state.get", {"key": key})
        return result

    async def set(
        self, key: str, value: Any, *, user_id: str | None = None, about_agent_id: str | None = None
    ) -> StateEntry:
        """See :meth:`agentmem.tiers.agent_state.AgentState.set`."""
        result: StateEntry = await self._call(
            "state.set",
            {"key": key, "value": value, "user_id": user_id, "about_agent_id": about_agent_id},
        )
        return result

    async def delete(self, key: str) -> bool:
        """See :meth:`agentmem.tiers.agent_state.AgentState.delete`."""
        result: bool = await self._call("state.delete", {"key": key})
        return result

    async def list(self, *, prefix: str | None = None) -> builtins.list[StateEntry]:
        """See :meth:`agentmem.tiers.agent_state.AgentState.list`."""
        result: builtins.list[StateEntry] = await self._call("state.list", {"prefix": prefix})
        return result


class AsyncWorkingOps:
    """The operations of :class:`~agentmem.protocols.WorkingProtocol`, each one request."""

    async def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    async def snapshot(self) -> WorkingSnapshot:
        """See :meth:`agentmem.tiers.working.WorkingMemory.snapshot`."""
        result: WorkingSnapshot = await self._call("working.snapshot", {})
        return result


class AsyncBoundOps:
    """The operations of :class:`~agentmem.protocols.BoundMemoryProtocol`, each one request."""

    async def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    async def add_message(
        self,
        role: str,
        content: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        event_time: datetime | str | None = None,
    ) -> MemoryItem:
        """See :meth:`agentmem.BoundMemory.add_message`."""
        result: MemoryItem = await self._call(
            "add_message",
            {"role": role, "content": content, "metadata": metadata, "event_time": event_time},
        )
        return result

    async def add_messages(self, messages: Iterable[Mapping[str, Any]]) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.add_messages`."""
        result: list[MemoryItem] = await self._call("add_messages", {"messages": list(messages)})
        return result

    async def add_tool_output(
        self,
        tool_call_id: str,
        content: str,
        *,
        tool_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryItem:
        """See :meth:`agentmem.BoundMemory.add_tool_output`."""
        result: MemoryItem = await self._call(
            "add_tool_output",
            {
                "tool_call_id": tool_call_id,
                "content": content,
                "tool_name": tool_name,
                "metadata": metadata,
            },
        )
        return result

    async def read_tool_output(self, key: str) -> str:
        """See :meth:`agentmem.BoundMemory.read_tool_output`."""
        result: str = await self._call("read_tool_output", {"key": key})
        return result

    async def messages(self, *, limit: int | None = None) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.messages`."""
        result: list[MemoryItem] = await self._call("messages", {"limit": limit})
        return result

    async def clear_session(self) -> int:
        """See :meth:`agentmem.BoundMemory.clear_session`."""
        result: int = await self._call("clear_session", {})
        return result

    async def add_document(
        self, text: str, *, source_ref: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.add_document`."""
        result: list[MemoryItem] = await self._call(
            "add_document", {"text": text, "source_ref": source_ref, "metadata": metadata}
        )
        return result

    async def remember(
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
        result: RememberResult = await self._call(
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

    async def remember_many(self, items: Iterable[str | Mapping[str, Any]]) -> list[RememberResult]:
        """See :meth:`agentmem.BoundMemory.remember_many`."""
        result: list[RememberResult] = await self._call("remember_many", {"items": list(items)})
        return result

    async def forget(self, memory_id: str) -> bool:
        """See :meth:`agentmem.BoundMemory.forget`."""
        result: bool = await self._call("forget", {"memory_id": memory_id})
        return result

    async def get(self, memory_id: str) -> MemoryItem:
        """See :meth:`agentmem.BoundMemory.get`."""
        result: MemoryItem = await self._call("get", {"memory_id": memory_id})
        return result

    async def get_many(self, memory_ids: Sequence[str]) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.get_many`."""
        result: list[MemoryItem] = await self._call("get_many", {"memory_ids": memory_ids})
        return result

    async def recall(
        self, query: str, options: RecallOptions | None = None, **kwargs: Unpack[RecallKwargs]
    ) -> RecallResult:
        """See :meth:`agentmem.BoundMemory.recall`."""
        result: RecallResult = await self._call(
            "recall", {"query": query, **RecallOptions.of(options, **kwargs).as_dict()}
        )
        return result

    async def ingest(self, messages: Iterable[Mapping[str, Any] | ChatTurn]) -> IngestResult:
        """See :meth:`agentmem.BoundMemory.ingest`."""
        result: IngestResult = await self._call("ingest", {"messages": list(messages)})
        return result

    async def history(self, memory_id: str) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.history`."""
        result: list[MemoryItem] = await self._call("history", {"memory_id": memory_id})
        return result

    async def answer(self, question: str, *, top_k: int = 5) -> AnswerResult:
        """See :meth:`agentmem.BoundMemory.answer`."""
        result: AnswerResult = await self._call("answer", {"question": question, "top_k": top_k})
        return result

    async def context_messages(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> list[dict[str, Any]]:
        """See :meth:`agentmem.BoundMemory.context_messages`."""
        result: list[dict[str, Any]] = await self._call(
            "context_messages",
            {
                "model_window": model_window,
                "budget_ratio": budget_ratio,
                "max_messages": max_messages,
            },
        )
        return result

    async def prompt_view(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> PromptView:
        """See :meth:`agentmem.BoundMemory.prompt_view`."""
        result: PromptView = await self._call(
            "prompt_view",
            {
                "model_window": model_window,
                "budget_ratio": budget_ratio,
                "max_messages": max_messages,
            },
        )
        return result

    async def compact(self, *, keep: int | None = None) -> CompactionResult:
        """See :meth:`agentmem.BoundMemory.compact`."""
        result: CompactionResult = await self._call("compact", {"keep": keep})
        return result

    async def close_session(self, *, summary_timeout: float | None = None) -> CloseResult:
        """See :meth:`agentmem.BoundMemory.close_session`."""
        result: CloseResult = await self._call(
            "close_session", {"summary_timeout": summary_timeout}
        )
        return result

    async def session_detail(
        self, session_id: str, *, target_agent: str | None = None
    ) -> SessionDetail:
        """See :meth:`agentmem.BoundMemory.session_detail`."""
        result: SessionDetail = await self._call(
            "session_detail", {"session_id": session_id, "target_agent": target_agent}
        )
        return result

    async def sessions(self) -> list[str]:
        """See :meth:`agentmem.BoundMemory.sessions`."""
        result: list[str] = await self._call("sessions", {})
        return result
