"""``AgentMemMiddleware``: agentmem for ``langchain.agents.create_agent`` (extra
``langchain-agents``).

It does three things around the agent loop:

1. **Records** every message of the conversation (user input, model replies with their tool
   calls, tool results) into the bound session, once each (by message id), so the session
   is durable and recallable.
2. **Keeps the prompt within the model's window** with the session's working memory (the
   core's compressed mode, :mod:`agentmem.tiers.working`): while the conversation fits, the
   model sees all of it, and each call's prompt extends the previous one (a stable prefix,
   which prompt caches reward). When it passes 80% of the model window (or more than
   ``window`` messages), the older messages are folded into the session's reference summary,
   which joins the system message, and a short tail stays. The current turn's user message
   is never folded or trimmed, and a tool call is never shown without its results (or a
   result without its call). The agent's state keeps every message.
3. **Exposes** the ``recall`` and ``read_tool_output`` tools, bound to the same memory, so the
   model can look up what was folded away.

Example:
    >>> from langchain.agents import create_agent
    >>> m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")  # doctest: +SKIP
    >>> agent = create_agent(model, tools=[], middleware=[AgentMemMiddleware(m)])  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

from agentmem import BoundMemoryProtocol, ScopeError, ValidationError
from agentmem.tools import check_memory

from ._messages import store_messages
from .tools import ReadToolOutputTool, RecallTool

TRIMMED_NOTICE = (
    "Earlier turns of this conversation ({hidden} messages) are not shown here. Before "
    "answering anything that may depend on them, call the recall tool; do not guess."
)


class AgentMemMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Record the conversation into an agentmem session, keep the prompt in the model's
    window with the session's working memory, expose recall.

    Args:
        memory: A memory bound with a ``session_id`` (``AgentMemory.bind``, or the client of
            :func:`agentmem.connect`).
        window: Most conversation messages in the prompt: past it, the oldest are folded
            into the reference summary until about half remain (never fewer than the core's
            tail of 4, ``AGENTMEM_WORKING_TAIL``). ``None`` (the default) uses the store's
            ``working_max_messages`` (50). Before compressed mode this was a sliding window
            of the last ``window`` messages; a number given here still bounds the prompt, but
            the prompt now changes only when it trips, and the current question is kept.
        model_window: The model's context window in tokens; when the conversation passes
            ``budget_ratio`` of it, all but a short tail is folded into the summary. ``None``
            uses the store's ``model_window`` (``AGENTMEM_MODEL_WINDOW``, 200,000).
        budget_ratio: Share of ``model_window`` the conversation may fill (0.8).
        record: Store the conversation's messages in the session (default True). The prompt
            is built from what is stored, so with False the prompt is passed on unchanged.
        tools: Expose ``recall`` and ``read_tool_output`` (default True).

    Raises:
        TypeError: ``memory`` is not a bound memory (``AgentMemory.bind``).
        ScopeError: ``memory`` has no ``session_id``.
        ValidationError: A number is out of range.

    Example:
        >>> agent = create_agent(  # doctest: +SKIP
        ...     model, tools=[lookup_order], middleware=[AgentMemMiddleware(m, model_window=200_000)]
        ... )
        >>> agent.invoke({"messages": [HumanMessage("Where is order 4711?")]})  # doctest: +SKIP
    """

    def __init__(
        self,
        memory: BoundMemoryProtocol,
        *,
        window: int | None = None,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        record: bool = True,
        tools: bool = True,
    ) -> None:
        check_memory(memory, "AgentMemMiddleware")
        if memory.session_id is None:
            raise ScopeError("memory", "AgentMemMiddleware needs a memory bound with a session_id")
        for name, value in (("window", window), ("model_window", model_window)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValidationError(name, f"must be a positive integer or None; got {value!r}")
            if value is not None and value < 1:
                raise ValidationError(name, f"must be a positive integer or None; got {value!r}")
        if isinstance(budget_ratio, bool) or not 0 < budget_ratio <= 1:
            raise ValidationError("budget_ratio", f"must be in (0, 1]; got {budget_ratio!r}")
        self.memory = memory
        self.window = window
        self.model_window = model_window
        self.budget_ratio = budget_ratio
        self.record = record
        self.tools: Sequence[BaseTool] = (
            [RecallTool(memory=memory), ReadToolOutputTool(memory=memory)] if tools else []
        )
        self._lock = threading.Lock()
        self._recorded: set[str] | None = None

    # -- recording ---------------------------------------------------------------------------
    def _known_ids(self) -> set[str]:
        """Ids of the messages stored in the session (loaded once, then kept up to date)."""
        if self._recorded is None:  # messages an earlier process already stored
            self._recorded = {
                str(i.metadata["lc_id"]) for i in self.memory.messages() if "lc_id" in i.metadata
            }
        return self._recorded

    def _record(self, messages: Sequence[BaseMessage]) -> None:
        if not self.record or not messages:
            return
        with self._lock:
            known = self._known_ids()
            new = [m for m in messages if m.id is None or m.id not in known]
            if not new:
                return
            store_messages(self.memory, new)
            known.update(m.id for m in new if m.id is not None)

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

    # -- the prompt --------------------------------------------------------------------------
    def trim(self, messages: Sequence[AnyMessage]) -> list[AnyMessage]:
        """The messages of the prompt: ``messages`` without those the session's working
        memory has folded into its reference summary (compacting first when the budget or
        ``window`` trips), keeping each tool call together with its results."""
        return self._prompt(messages)[0]

    def _prompt(self, messages: Sequence[AnyMessage]) -> tuple[list[AnyMessage], str | None]:
        """(the messages to show, the summary text for the system message or None)."""
        if not self.record:
            return list(messages), None
        view = self.memory.prompt_view(
            model_window=self.model_window, budget_ratio=self.budget_ratio, max_messages=self.window
        )
        shown = {
            str(item.metadata["lc_id"])
            for item in (*view.pinned, *view.window)
            if "lc_id" in item.metadata
        }
        with self._lock:
            known = set(self._known_ids())
        keep = [m.id is None or m.id not in known or m.id in shown for m in messages]
        keep = _whole_tool_exchanges(messages, keep)
        kept = [m for m, k in zip(messages, keep, strict=True) if k]
        hidden = len(messages) - len(kept)
        if not view.summary.empty:
            return kept, view.summary.render()
        return kept, TRIMMED_NOTICE.format(hidden=hidden) if hidden else None

    def _prompt_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        kept, extra = self._prompt(request.messages)
        if extra is None and len(kept) == len(request.messages):
            return request
        system = request.system_message
        if extra is None:
            new_system = system
        elif system is None:
            new_system = SystemMessage(content=extra)
        elif isinstance(system.content, str):
            new_system = SystemMessage(content=f"{system.content}\n\n{extra}")
        else:
            new_system = SystemMessage(content=[*system.content, {"type": "text", "text": extra}])
        return request.override(messages=kept, system_message=new_system)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Call the model with the prompt the session's working memory allows."""
        return handler(self._prompt_request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(await asyncio.to_thread(self._prompt_request, request))


def _whole_tool_exchanges(messages: Sequence[AnyMessage], keep: list[bool]) -> list[bool]:
    """``keep`` widened so that a shown tool result brings back the AI message that called
    it, and a shown tool call all of its results: chat APIs reject either half alone."""
    caller: dict[str, int] = {}
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id"):
                    caller[str(call["id"])] = i
    results: dict[int, list[int]] = defaultdict(list)
    for i, message in enumerate(messages):
        if isinstance(message, ToolMessage) and message.tool_call_id in caller:
            results[caller[message.tool_call_id]].append(i)
    out = list(keep)
    for i, message in enumerate(messages):
        if out[i] and isinstance(message, ToolMessage) and message.tool_call_id in caller:
            out[caller[message.tool_call_id]] = True
    for call_index, result_indexes in results.items():
        if out[call_index]:
            for i in result_indexes:
                out[i] = True
    return out
