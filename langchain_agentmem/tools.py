"""Memory tools for LangChain agents: the tool core of :mod:`agentmem.tools` as ``BaseTool``s.

Names, descriptions, argument schemas, handlers and every text the model sees come from the
core, so these tools behave exactly like the LlamaIndex and MCP ones. What is LangChain's
here: each tool is a ``BaseTool`` with ``response_format="content_and_artifact"`` (the content
is the core's text; the artifact is the retrieved ``Document`` list for ``recall`` and the
result as a dict for the others), and a failure raises ``ToolException``, which with
``handle_tool_error=True`` (the default here) comes back to the model as the tool result
(``status="error"``) instead of ending the run. Malformed arguments come back the same way.

Every tool is bound to one :class:`agentmem.BoundMemory`: tenant, user, agent and session come
from it and never from tool arguments (a ``tenant_id`` argument is rejected, naming it).

Example:
    >>> m = mem.bind(tenant_id="acme", user_id="u1", agent_id="support", session_id="s1")  # doctest: +SKIP
    >>> tools = create_memory_tools(m)  # doctest: +SKIP
    >>> [t.name for t in tools]  # doctest: +SKIP
    ['recall', 'remember_fact', 'read_tool_output', 'get_agent_state', 'set_agent_state']
"""

from __future__ import annotations

import asyncio
import functools
from typing import Annotated, Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForToolRun,
    CallbackManagerForToolRun,
)
from langchain_core.tools import BaseTool, ToolException
from pydantic import ConfigDict, SkipValidation, field_validator
from pydantic import ValidationError as PydanticValidationError

from agentmem import AgentMemError, BoundMemoryProtocol
from agentmem.tools import (
    SPECS,
    ToolOptions,
    ToolSpec,
    arguments_error,
    check_memory,
    error_message,
    run_tool,
    select,
)
from agentmem.tools import args as core_args
from agentmem.tools.memory_shape import check_arguments
from agentmem.tools.render import error_text
from agentmem.tools.specs import Include

from ._convert import hit_to_document

# The argument models are the core's (LangChain's naming convention: ``<Tool>Input``).
RecallInput = core_args.RecallArgs
RememberFactInput = core_args.RememberFactArgs
ReadToolOutputInput = core_args.ReadToolOutputArgs
StoreMemoryInput = core_args.StoreMemoryArgs
SearchMemoryInput = core_args.SearchMemoryArgs
GetAgentStateInput = core_args.GetAgentStateArgs
SetAgentStateInput = core_args.SetAgentStateArgs
DeleteMemoryInput = core_args.DeleteMemoryArgs
UpsertKnowledgeInput = core_args.UpsertKnowledgeArgs
GetKnowledgeInput = core_args.GetKnowledgeArgs
ListKnowledgeInput = core_args.ListKnowledgeArgs
DeleteKnowledgeInput = core_args.DeleteKnowledgeArgs
SessionDetailInput = core_args.SessionDetailArgs
AnswerInput = core_args.AnswerArgs
CompactInput = core_args.CompactArgs


def _validation_text(tool: str, exc: PydanticValidationError) -> str:
    """LangChain validated the arguments first: the same text the core would show."""
    return error_text(error_message(tool, arguments_error(tool, exc)))


class AgentMemTool(BaseTool):
    """One tool of the core (``spec``) bound to a memory, as a LangChain ``BaseTool``.

    The named subclasses (:class:`RecallTool`, ...) fix ``spec``; ``AgentMemTool(spec=...,
    memory=...)`` builds any tool of :data:`agentmem.tools.SPECS`. Name, description and
    ``args_schema`` come from the spec. ``handle_tool_error`` defaults to True and
    ``handle_validation_error`` to the core's message naming the bad argument, so failures
    come back to the model as the tool result (a ``ToolMessage`` with ``status="error"``).

    Example:
        >>> tool = AgentMemTool(spec=SPECS["list_knowledge"], memory=m)  # doctest: +SKIP
        >>> tool.invoke({"all_agents": True})  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # Filled from ``spec`` when not given (BaseTool requires them).
    name: str = ""
    description: str = ""
    memory: Annotated[BoundMemoryProtocol, SkipValidation]
    """The bound memory whose identity every call uses."""
    spec: Annotated[ToolSpec, SkipValidation]
    """The core tool this wraps."""
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    def __init__(self, **kwargs: Any) -> None:
        check_arguments(type(self).__name__, kwargs, type(self).model_fields)
        spec = kwargs.get("spec") or type(self).model_fields["spec"].default
        if not isinstance(spec, ToolSpec):
            raise TypeError(f"{type(self).__name__} needs spec= (a tool of agentmem.tools.SPECS)")
        kwargs["spec"] = spec
        kwargs.setdefault("name", spec.name)
        kwargs.setdefault("description", spec.description)
        kwargs.setdefault("args_schema", spec.args)
        kwargs.setdefault("handle_tool_error", True)
        kwargs.setdefault("handle_validation_error", functools.partial(_validation_text, spec.name))
        super().__init__(**kwargs)

    @field_validator("memory", mode="before")
    @classmethod
    def _check_memory(cls, value: Any) -> Any:
        return check_memory(value, cls.__name__)

    def _options(self) -> ToolOptions:
        return ToolOptions()

    def _run(
        self, run_manager: CallbackManagerForToolRun | None = None, **kwargs: Any
    ) -> tuple[str, Any]:
        try:
            result = run_tool(self.spec, self.memory, kwargs, self._options())
        except AgentMemError as exc:
            raise ToolException(error_text(error_message(self.spec.name, exc))) from exc
        if result.hits is not None:
            return result.text, [hit_to_document(hit) for hit in result.hits]
        return result.text, result.data

    async def _arun(
        self, run_manager: AsyncCallbackManagerForToolRun | None = None, **kwargs: Any
    ) -> tuple[str, Any]:
        # The core is synchronous: run it in a worker thread.
        return await asyncio.to_thread(self._run, **kwargs)


class RecallTool(AgentMemTool):
    """``recall``: hybrid search of everything this identity may see.

    The content is the advisory ``<recalled-memories>`` block; the artifact is the list of
    ``Document`` s (as :class:`AgentMemRetriever` returns them).

    Example:
        >>> RecallTool(memory=m).invoke({"query": "order 4711"})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["recall"]
    min_score: float | None = None
    """Calibrated-score cut-off; ``None`` uses the store's default."""
    token_budget: int | None = None
    """Max tokens of recalled content; ``None`` uses the store's default (1000)."""

    def _options(self) -> ToolOptions:
        return ToolOptions(min_score=self.min_score, token_budget=self.token_budget)


class RememberFactTool(AgentMemTool):
    """``remember_fact``: save a durable fact about the user (or for the agent); idempotent.

    Example:
        >>> RememberFactTool(memory=m).invoke({"content": "The user is vegetarian"})  # doctest: +SKIP
        '{"id": "3f2c...", "was_new": true, "scope": "user"}'
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["remember_fact"]


class ReadToolOutputTool(AgentMemTool):
    """``read_tool_output``: the full payload of an elided tool output or long message.

    Example:
        >>> ReadToolOutputTool(memory=m).invoke({"key": "tout_ab12..."})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["read_tool_output"]


class StoreMemoryTool(AgentMemTool):
    """``store_memory``: save a typed memory with optional importance.

    Example:
        >>> StoreMemoryTool(memory=m).invoke({"content": "Prefers email", "importance": 0.8})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["store_memory"]


class SearchMemoryTool(AgentMemTool):
    """``search_memory``: search saved memories only, by type and minimum importance.

    Example:
        >>> SearchMemoryTool(memory=m).invoke({"query": "contact preferences"})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["search_memory"]


class GetAgentStateTool(AgentMemTool):
    """``get_agent_state``: a named state value of the bound agent (needs ``agent_id``).

    Example:
        >>> GetAgentStateTool(memory=m).invoke({"key": "current_task"})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["get_agent_state"]


class SetAgentStateTool(AgentMemTool):
    """``set_agent_state``: set or replace a named state value of the bound agent.

    Example:
        >>> SetAgentStateTool(memory=m).invoke({"key": "current_task", "value": "Q4"})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["set_agent_state"]


class DeleteMemoryTool(AgentMemTool):
    """``delete_memory``: delete one saved memory by id (not conversation rows or documents).

    Example:
        >>> DeleteMemoryTool(memory=m).invoke({"memory_id": "3f2c..."})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["delete_memory"]


class UpsertKnowledgeTool(AgentMemTool):
    """``upsert_knowledge``: add or replace (by key) an entry of the tenant's knowledge base.

    Example:
        >>> UpsertKnowledgeTool(memory=m).invoke({"content": "SLA is 5 days", "key": "sla"})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["upsert_knowledge"]


class GetKnowledgeTool(AgentMemTool):
    """``get_knowledge``: a knowledge entry by key (this agent's or ``owner_agent``'s).

    Example:
        >>> GetKnowledgeTool(memory=m).invoke({"key": "sla"})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["get_knowledge"]


class ListKnowledgeTool(AgentMemTool):
    """``list_knowledge``: knowledge entries of this agent, one agent, or all agents.

    Example:
        >>> ListKnowledgeTool(memory=m).invoke({"all_agents": True})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["list_knowledge"]


class DeleteKnowledgeTool(AgentMemTool):
    """``delete_knowledge``: delete one of this agent's knowledge entries.

    Example:
        >>> DeleteKnowledgeTool(memory=m).invoke({"key_or_id": "sla"})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["delete_knowledge"]


class SessionDetailTool(AgentMemTool):
    """``session_detail``: one session of this conversation in full, with its summary.

    Example:
        >>> SessionDetailTool(memory=m).invoke({"session_ref": "s0"})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["session_detail"]


class AnswerTool(AgentMemTool):
    """``answer``: a short answer grounded in recalled memories, with the ids it used.

    Example:
        >>> AnswerTool(memory=m).invoke({"question": "Where is staging?"})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["answer"]


class CompactTool(AgentMemTool):
    """``compact``: fold the session's working window into its running summary.

    Example:
        >>> CompactTool(memory=m).invoke({"keep": 4})  # doctest: +SKIP
    """

    spec: Annotated[ToolSpec, SkipValidation] = SPECS["compact"]


#: Every tool class, by tool name, in the order of the ``"all"`` set.
TOOL_CLASSES: dict[str, type[AgentMemTool]] = {
    cls.model_fields["spec"].default.name: cls
    for cls in (
        RecallTool,
        RememberFactTool,
        ReadToolOutputTool,
        StoreMemoryTool,
        SearchMemoryTool,
        GetAgentStateTool,
        SetAgentStateTool,
        DeleteMemoryTool,
        UpsertKnowledgeTool,
        GetKnowledgeTool,
        ListKnowledgeTool,
        DeleteKnowledgeTool,
        SessionDetailTool,
        AnswerTool,
        CompactTool,
    )
}


def create_memory_tools(
    memory: BoundMemoryProtocol, include: Include = "core"
) -> list[AgentMemTool]:
    """The memory tools for an agent, bound to ``memory``.

    Args:
        memory: A bound memory (``AgentMemory(...).bind(...)``).
        include: ``"core"`` (default): the recommended set, ``recall``, ``remember_fact`` and
            ``read_tool_output``, plus ``get_agent_state`` and ``set_agent_state`` when
            ``memory`` has an ``agent_id``; ``"all"``: every tool, the same list
            ``agentmem mcp`` serves; or a list of tool names (any of :data:`TOOL_CLASSES`).

    Raises:
        TypeError: ``memory`` is not a bound memory (e.g. an unbound ``AgentMemory``).
        agentmem.ValidationError: an unknown tool set or name (a ``ValueError``).

    Example:
        >>> create_memory_tools(m, include=["recall", "delete_memory"])  # doctest: +SKIP
    """
    bound = check_memory(memory, "create_memory_tools")
    return [TOOL_CLASSES[spec.name](memory=bound) for spec in select(bound, include)]


__all__ = [
    "TOOL_CLASSES",
    "AgentMemTool",
    "AnswerInput",
    "AnswerTool",
    "CompactInput",
    "CompactTool",
    "DeleteKnowledgeInput",
    "DeleteKnowledgeTool",
    "DeleteMemoryInput",
    "DeleteMemoryTool",
    "GetAgentStateInput",
    "GetAgentStateTool",
    "GetKnowledgeInput",
    "GetKnowledgeTool",
    "ListKnowledgeInput",
    "ListKnowledgeTool",
    "ReadToolOutputInput",
    "ReadToolOutputTool",
    "RecallInput",
    "RecallTool",
    "RememberFactInput",
    "RememberFactTool",
    "SearchMemoryInput",
    "SearchMemoryTool",
    "SessionDetailInput",
    "SessionDetailTool",
    "SetAgentStateInput",
    "SetAgentStateTool",
    "StoreMemoryInput",
    "StoreMemoryTool",
    "UpsertKnowledgeInput",
    "UpsertKnowledgeTool",
    "create_memory_tools",
]
