"""The one tool core: what every tool surface (LangChain, LlamaIndex, MCP) is built from.

=====================  ======================================================================
module                 owns
=====================  ======================================================================
``args``               the argument models (JSON schemas and field descriptions a model reads)
``handlers``           one handler per tool, calling public methods of the bound memory
``specs``              each tool's name, description, model and handler; the ``core``/``all`` sets
``calls``              validating a call, rejecting identity arguments, the error message
``render``             every text shown to a model (the advisory ``<memory>`` block, JSON, errors)
``memory_shape``       checks of what tools and adapters get: a bound memory, known arguments
``toolbox``            ``MemoryToolbox``: the selected tools of one memory, called by name
``mcp``                the MCP SDK glue (``build_server``, ``serve_stdio``)
=====================  ======================================================================

Example:
    >>> from agentmem.tools import SPECS, run_tool  # doctest: +SKIP
    >>> run_tool(SPECS["recall"], bound, {"query": "order 4711"}).text  # doctest: +SKIP
"""

from __future__ import annotations

from .calls import IDENTITY_ARGUMENTS, arguments_error, error_message, parse_arguments, run_tool
from .handlers import ToolOptions, ToolResult
from .memory_shape import check_memory
from .specs import ALL_TOOLS, CORE_TOOLS, SPECS, ToolSpec, select, tool_names
from .toolbox import MemoryToolbox, ToolCallError, UnknownToolError

__all__ = [
    "ALL_TOOLS",
    "CORE_TOOLS",
    "IDENTITY_ARGUMENTS",
    "SPECS",
    "MemoryToolbox",
    "ToolCallError",
    "ToolOptions",
    "ToolResult",
    "ToolSpec",
    "UnknownToolError",
    "arguments_error",
    "check_memory",
    "error_message",
    "parse_arguments",
    "run_tool",
    "select",
    "tool_names",
]
