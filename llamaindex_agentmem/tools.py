"""Memory tools for LlamaIndex agents: the tool core of :mod:`agentmem.tools` as ``FunctionTool``s.

Names, descriptions, argument schemas (``fn_schema``), handlers and every text the model sees
come from the core, so these tools behave exactly like the LangChain and MCP ones. What is
LlamaIndex's here: a call returns a ``ToolOutput`` whose content is the core's text and whose
``raw_output`` is the result as a dict.

Errors: a call the memory refuses (invalid arguments, an unknown id or key, a scope the bound
identity lacks, a storage failure: any ``AgentMemError``) does not raise. It returns a
``ToolOutput`` with ``is_error=True``, content ``"Error: <message>"`` written for the model,
and the exception on ``ToolOutput.exception``, so an agent loop can show the model what went
wrong and continue. The same holds for identity arguments (``tenant_id``, ``user_id``,
``agent_id``, ``session_id``, ...) and any other unknown argument: identity comes only from
the bound memory. Anything else (a bug) propagates as usual.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.tools import FunctionTool, ToolMetadata, ToolOutput

from agentmem import BoundMemoryProtocol
from agentmem.errors import AgentMemError
from agentmem.tools import ToolResult, ToolSpec, check_memory, error_message, run_tool
from agentmem.tools import args as core_args
from agentmem.tools.render import error_text
from agentmem.tools.specs import Include, select

# The argument models are the core's.
RecallInput = core_args.RecallArgs
RememberFactInput = core_args.RememberFactArgs
ReadToolOutputInput = core_args.ReadToolOutputArgs


class AgentMemFunctionTool(FunctionTool):
    """One tool of the core bound to a memory, as a LlamaIndex ``FunctionTool``.

    Args:
        spec: The core tool (:data:`agentmem.tools.SPECS`).
        memory: The bound memory every call acts for.
    """

    def __init__(self, spec: ToolSpec, memory: BoundMemoryProtocol) -> None:
        self.spec = spec
        self.memory = memory

        def fn(*args: Any, **kwargs: Any) -> ToolResult:
            # Positional arguments fill the fields in schema order, as with a plain function.
            arguments = {**dict(zip(spec.args.model_fields, args, strict=False)), **kwargs}
            return run_tool(spec, memory, arguments)

        async def async_fn(*args: Any, **kwargs: Any) -> ToolResult:
            return await asyncio.to_thread(fn, *args, **kwargs)

        metadata = ToolMetadata(name=spec.name, description=spec.description, fn_schema=spec.args)
        super().__init__(fn=fn, async_fn=async_fn, metadata=metadata)

    def _output(self, args: tuple[Any, ...], kwargs: dict[str, Any], outcome: Any) -> ToolOutput:
        raw_input = {"args": args, "kwargs": kwargs}
        if isinstance(outcome, AgentMemError):
            return ToolOutput(
                tool_name=self.spec.name,
                content=error_text(error_message(self.spec.name, outcome)),
                raw_input=raw_input,
                raw_output=None,
                is_error=True,
                exception=outcome,
            )
        assert isinstance(outcome, ToolResult)
        return ToolOutput(
            tool_name=self.spec.name,
            content=outcome.text,
            raw_input=raw_input,
            raw_output=outcome.data,
        )

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        try:
            outcome: Any = self._fn(*args, **kwargs)
        except AgentMemError as exc:
            outcome = exc
        return self._output(args, kwargs, outcome)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        try:
            outcome: Any = await self._async_fn(*args, **kwargs)
        except AgentMemError as exc:
            outcome = exc
        return self._output(args, kwargs, outcome)


def create_memory_tools(
    memory: BoundMemoryProtocol, include: Include = "core"
) -> list[FunctionTool]:
    """The memory tools for an agent, bound to ``memory``, as ``FunctionTool`` s.

    Args:
        memory: A bound memory (``AgentMemory(...).bind(...)``).
        include: ``"core"`` (default): the recommended set, ``recall``, ``remember_fact`` and
            ``read_tool_output``, plus ``get_agent_state`` and ``set_agent_state`` when
            ``memory`` has an ``agent_id``; ``"all"``: every tool, the same list
            ``agentmem mcp`` serves; or a list of tool names.

    Each call returns a ``ToolOutput`` whose content is the text for the model (recalled
    content as a delimited advisory ``<recalled-memories>`` block, other results as JSON) and
    whose ``raw_output`` is the result as a dict. Errors come back as
    ``ToolOutput(is_error=True)`` (see the module docstring).

    Raises:
        TypeError: ``memory`` is not a bound memory (e.g. an unbound ``AgentMemory``).
        agentmem.ValidationError: an unknown tool set or name (a ``ValueError``).

    Example:
        >>> tools = create_memory_tools(mem.bind("acme", user_id="u1", session_id="s1"))  # doctest: +SKIP
        >>> tools[0].call(query="order 4711").content  # doctest: +SKIP
    """
    bound = check_memory(memory, "create_memory_tools")
    return [AgentMemFunctionTool(spec, bound) for spec in select(bound, include)]


__all__ = [
    "AgentMemFunctionTool",
    "ReadToolOutputInput",
    "RecallInput",
    "RememberFactInput",
    "create_memory_tools",
]
