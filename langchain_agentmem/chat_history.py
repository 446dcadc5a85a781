"""``AgentMemChatMessageHistory``: a session's messages as a LangChain chat history."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from agentmem import BoundMemoryProtocol, ScopeError, validation
from agentmem.tools import check_memory

from ._messages import load_messages, store_messages


class AgentMemChatMessageHistory(BaseChatMessageHistory):
    """Chat history persisted in an agentmem session (``BoundMemory`` with ``session_id``).

    Every message added becomes a row of the session, so it is durable and recallable
    (``recall(..., scope="session")`` now, ``scope="history"`` from the user's later
    sessions). ``ToolMessage`` becomes a tool output keyed by its ``tool_call_id``; an
    ``AIMessage``'s ``tool_calls``, ids and names are kept, so reading the history back
    reproduces the messages that were added.

    Args:
        memory: A memory bound with a ``session_id`` (``AgentMemory.bind``).
        window: Return only the last ``window`` messages from :attr:`messages` (the
            working window); leading tool results whose calling AI message is outside the
            window are dropped so the history stays valid for a chat model. ``None``
            (default) returns the whole session.

    Example:
        >>> from langchain_core.runnables.history import RunnableWithMessageHistory
        >>> m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")  # doctest: +SKIP
        >>> history = AgentMemChatMessageHistory(memory=m, window=20)  # doctest: +SKIP
        >>> history.add_user_message("My order 4711 arrived damaged")  # doctest: +SKIP
        >>> chain = RunnableWithMessageHistory(  # doctest: +SKIP
        ...     prompt | model,
        ...     lambda session_id: AgentMemChatMessageHistory(
        ...         memory=mem.bind(tenant_id="acme", user_id="u1", session_id=session_id)
        ...     ),
        ...     input_messages_key="question",
        ...     history_messages_key="history",
        ... )
    """

    def __init__(self, *, memory: BoundMemoryProtocol, window: int | None = None) -> None:
        check_memory(memory, "AgentMemChatMessageHistory")
        if memory.session_id is None:
            raise ScopeError(
                "memory",
                "AgentMemChatMessageHistory needs a memory bound with a session_id "
                "(AgentMemory.bind(..., session_id=...))",
            )
        self.memory = memory
        self.window = validation.positive_int(window, "window")

    @property
    def session_id(self) -> str:
        """The session this history reads and writes."""
        assert self.memory.session_id is not None
        return self.memory.session_id

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's messages, oldest first (the last ``window`` when it is set)."""
        return load_messages(self.memory, self.window)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store ``messages`` in order (chat messages in bulk, one core call per run)."""
        if messages:
            store_messages(self.memory, list(messages))

    def clear(self) -> None:
        """Delete the session's messages and tool outputs (soft delete: audit trail kept)."""
        self.memory.clear_session()

    async def aget_messages(self) -> list[BaseMessage]:
        return await asyncio.to_thread(load_messages, self.memory, self.window)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await asyncio.to_thread(self.add_messages, list(messages))

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    def __repr__(self) -> str:
        return f"AgentMemChatMessageHistory(memory={self.memory!r}, window={self.window!r})"
