"""``AgentMemMiddleware``: agentmem for ``langchain.agents.create_agent`` (extra
``langchain-agents``).

It does three things around the agent loop:

1. **Records** every message of the conversation (user input, model replies with their tool
   calls, tool results) into the bound session, once each (by message id), so the session
   is durable and recallable.
2. **Trims the prompt** to the last ``window`` messages (the agent's state keeps all of
   them) and, when it trimmed, tells the model in the system message that earlier turns
   are reachable with ``recall`` (compressed mode).
3. **Exposes** the ``recall`` and ``read_tool_output`` tools, bound to the same memory.

Example:
    >>> from langchain.agents import create_agent
    >>> m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")  # doctest: +SKIP
    >>> agent = create_agent(model, tools=[], middleware=[AgentMemMiddleware(m, window=20)])  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

from agentmem import BoundMemoryProtocol, ScopeError, ValidationError

from ._messages import store_messages
from .tools import ReadToolOutputTool, RecallTool

TRIMMED_NOTICE = (
    "Earlier turns of this conversation ({hidden} messages) are not shown here. Before "
    "answering anything that may depend on them, call the recall tool; do not guess."
)


class AgentMemMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Record the conversation into an agentmem session, trim the prompt, expose recall.

    Args:
        memory: A memory bound with a ``session_id`` (``AgentMemory.bind``).
        window: How many of the most recent messages the model sees (the working window).
            Leading tool results whose calling message fell outside are dropped too.
        record: Store the conversation's messages in the session (default True).
        tools: Expose ``recall`` and ``read_tool_output`` (default True).

    Example:
        >>> agent = create_agent(  # doctest: +SKIP
        ...     model, tools=[lookup_order], middleware=[AgentMemMiddleware(m, window=20)]
        ... )
        >>> agent.invoke({"messages": [HumanMessage("Where is order 4711?")]})  # doctest: +SKIP
    """

    def __init__(
        self,
        memory: BoundMemoryProtocol,
        *,
        window: int = 20,
        record: bool = True,
        tools: bool = True,
    ) -> None:
        if memory.session_id is None:
            raise ScopeError("memory", "AgentMemMiddleware needs a memory bound with a session_id")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValidationError("window", f"must be a positive integer; got {window!r}")
        self.memory = memory
        self.window = window
        self.record = record
        self.tools: Sequence[BaseTool] = (
            [RecallTool(memory=memory), ReadToolOutputTool(memory=memory)] if tools else []
        )
        self._lock = threading.Lock()
        self._recorded: set[str] | None = None

    # -- recording ---------------------------------------------------------------------------
    def _record(self, messages: Sequence[BaseMessage]) -> None:
        if not self.record or not messages:
            return
        with self._lock:
            if self._recorded is None:  # messages an earlier process already stored
                self._recorded = {
                    str(i.metadata["lc_id"])
                    for i in self.memory.messages()
                    if "lc_id" in i.metadata
                }
            new = [m for m in messages if m.id is None or m.id not in self._recorded]
            if not new:
                return
            store_messages(self.memory, new)
            self._recorded.update(m.id for m in new if m.id is not None)

    def _record_state(self, state: AgentState[Any]) -> None:
        self._record(list(state.get("messages", [])))

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Record the messages that arrived since the last model call."""
        self._record_state(state)
        return None

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        await asyncio.to_thread(self._record_state, state)
        return None

    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Record the model's reply (with its tool calls)."""
        self._record_state(state)
        return None

    async def aafter_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        await asyncio.to_thread(self._record_state, state)
        return None

    # -- trimming ----------------------------------------------------------------------------
    def trim(self, messages: Sequence[AnyMessage]) -> list[AnyMessage]:
        """The last ``window`` messages, without leading orphaned tool results."""
        kept = list(messages[-self.window :])
        while kept and isinstance(kept[0], ToolMessage):
            kept.pop(0)
        return kept

    def _trimmed_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        kept = self.trim(request.messages)
        hidden = len(request.messages) - len(kept)
        if hidden == 0:
            return request
        notice = TRIMMED_NOTICE.format(hidden=hidden)
        system = request.system_message
        if system is None:
            new_system = SystemMessage(content=notice)
        elif isinstance(system.content, str):
            new_system = SystemMessage(content=f"{system.content}\n\n{notice}")
        else:
            new_system = SystemMessage(content=[*system.content, {"type": "text", "text": notice}])
        return request.override(messages=kept, system_message=new_system)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Call the model with the prompt trimmed to the working window."""
        return handler(self._trimmed_request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(self._trimmed_request(request))
