"""``AgentMemChatStore``: a LlamaIndex ``BaseChatStore`` whose keys are agentmem sessions."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.storage.chat_store import BaseChatStore

from agentmem import BoundMemoryProtocol, MemoryProtocol, validation
from agentmem.errors import NotFoundError, ValidationError
from agentmem.models import MemoryItem
from agentmem.tools.memory_shape import check_store, store_tenant

from ._messages import from_item, to_agentmem


class AgentMemChatStore(BaseChatStore):
    """Chat history of LlamaIndex ``ChatMemoryBuffer`` (or any chat-store user) in agentmem.

    **Key mapping:** a chat-store key *is* an agentmem session id. Key ``k`` reads and
    writes the messages of ``memory.bind(tenant_id, user_id, agent_id, session_id=k)``, so
    the history is also recallable (``scope="session"`` for that key, ``"history"`` from the
    same user's other sessions) and visible to every other agentmem adapter bound to that
    session. Keys must be valid agentmem identity strings (non-empty, at most 256 printable
    characters). ``get_keys`` lists the sessions with live messages in this store's
    conversation partition: the user's when ``user_id`` is set, else the agent's, else the
    sessions bound with neither.

    Messages keep their LlamaIndex role and JSON-serialisable ``additional_kwargs`` (in the
    message metadata); only text blocks are stored. Deletes are soft deletes in agentmem
    (the rows leave recall and history at once). ``set_messages`` replaces a session's
    history by deleting it and then adding the new messages (two transactions). The async
    methods of ``BaseChatStore`` run these in a worker thread (``asyncio.to_thread``).

    Args:
        memory: The open :class:`~agentmem.AgentMemory`, or the client of
            :func:`agentmem.connect`.
        tenant_id: Tenant every key belongs to (with a client, by default its API key's).
        user_id: Optional user owning the sessions.
        agent_id: Optional agent owning the sessions.

    Example:
        >>> from llama_index.core.memory import ChatMemoryBuffer  # doctest: +SKIP
        >>> store = AgentMemChatStore(AgentMemory("./memdata"), "acme", user_id="u1")  # doctest: +SKIP
        >>> buffer = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="s1")  # doctest: +SKIP
    """

    tenant_id: str = Field(description="Tenant every key belongs to.")
    user_id: str | None = Field(default=None, description="User owning the sessions.")
    agent_id: str | None = Field(default=None, description="Agent owning the sessions.")
    _store: MemoryProtocol = PrivateAttr()

    def __init__(
        self,
        memory: MemoryProtocol,
        tenant_id: str | None = None,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        check_store(memory, "AgentMemChatStore", why="it binds one session per chat-store key")
        tenant_id = store_tenant(memory, tenant_id, "AgentMemChatStore")
        fields: dict[str, Any] = {
            "tenant_id": validation.identity(tenant_id, "tenant_id", required=True),
            "user_id": validation.identity(user_id, "user_id"),
            "agent_id": validation.identity(agent_id, "agent_id"),
        }
        super().__init__(**fields)
        self._store = memory

    @classmethod
    def class_name(cls) -> str:
        return "AgentMemChatStore"

    @property
    def memory(self) -> MemoryProtocol:
        """The underlying :class:`~agentmem.AgentMemory`."""
        return self._store

    def session(self, key: str) -> BoundMemoryProtocol:
        """The bound memory of chat-store key ``key`` (its session id)."""
        return self._store.bind(self.tenant_id, self.user_id, self.agent_id, session_id=key)

    def _to_message(self, bound: BoundMemoryProtocol, item: MemoryItem) -> ChatMessage:
        full: str | None = None
        if item.source_ref is not None:
            try:
                full = bound.read_tool_output(item.source_ref)
            except NotFoundError:
                full = None
        return from_item(item, full)

    def _dicts(self, messages: list[ChatMessage]) -> list[dict[str, Any]]:
        out = []
        for n, message in enumerate(messages):
            if not isinstance(message, ChatMessage):
                raise ValidationError(
                    f"messages[{n}]",
                    f"must be a LlamaIndex ChatMessage; got {type(message).__name__}",
                )
            item = to_agentmem(message, keep_empty=True)
            assert item is not None
            out.append(item)
        return out

    # -- BaseChatStore --------------------------------------------------------------------
    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace the session's messages with ``messages``."""
        bound = self.session(key)
        batch = self._dicts(messages)  # convert (and fail) before deleting anything
        bound.clear_session()
        if batch:
            bound.add_messages(batch)

    def get_messages(self, key: str) -> list[ChatMessage]:
        """The session's messages, oldest first."""
        bound = self.session(key)
        return [self._to_message(bound, item) for item in bound.messages()]

    def add_message(self, key: str, message: ChatMessage) -> None:
        """Append ``message`` to the session."""
        self.session(key).add_messages(self._dicts([message]))

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete the session's messages; returns them (None when there were none)."""
        bound = self.session(key)
        items = bound.messages()
        if not items:
            return None
        messages = [self._to_message(bound, item) for item in items]
        bound.clear_session()
        return messages

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the ``idx``-th message (0 = oldest, -1 = newest, as a list indexes);
        None when there is no such message."""
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise ValidationError("idx", f"must be an int; got {idx!r}")
        bound = self.session(key)
        items = bound.messages()
        if not -len(items) <= idx < len(items):
            return None
        message = self._to_message(bound, items[idx])
        bound.forget(items[idx].id)
        return message

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the newest message; None when the session is empty."""
        bound = self.session(key)
        items = bound.messages(limit=1)
        if not items:
            return None
        message = self._to_message(bound, items[-1])
        bound.forget(items[-1].id)
        return message

    def get_keys(self) -> list[str]:
        """Session ids with live messages in this store's conversation, oldest session first."""
        return self._store.bind(self.tenant_id, self.user_id, self.agent_id).sessions()
