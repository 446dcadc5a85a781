"""``MemoryToolbox``: a set of memory tools bound to one memory, called by name.

It is the tool core without a framework: the MCP server dispatches to it, and anything else
that receives tool calls as ``(name, arguments)`` can too.

Example:
    >>> box = MemoryToolbox(mem.bind("acme", user_id="u1", session_id="s1"))  # doctest: +SKIP
    >>> box.call("remember_fact", {"content": "Prefers tea"}).data  # doctest: +SKIP
    {'id': '...', 'was_new': True, 'scope': 'user'}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import AgentMemError, ScopeError
from ..protocols import BoundMemoryProtocol
from .calls import error_message, run_tool
from .handlers import DEFAULT_OPTIONS, ToolOptions, ToolResult
from .memory_shape import check_memory
from .specs import Include, ToolSpec, select


class ToolCallError(AgentMemError):
    """A tool call failed in a way the calling model should see (an error result).

    The message is the one every surface shows; the original error is ``__cause__``.
    """


class UnknownToolError(ToolCallError):
    """No tool of the toolbox has that name."""


@dataclass
class MemoryToolbox:
    """The tools ``include`` selects, bound to one memory, with no transport attached.

    Args:
        memory: The bound memory every call acts for.
        include: ``"all"`` (default), ``"core"`` or a list of tool names.
        options: Developer settings of the tools (never chosen by the model).
        identity_hint: How this surface's identity is chosen, added to the message of a
            call that failed for want of a bound user, agent or session (the core's own
            advice names ``AgentMemory.bind``, which a client of a server cannot call).

    Example:
        >>> box = MemoryToolbox(mem.bind("acme", user_id="u1", session_id="s1"))  # doctest: +SKIP
        >>> box.call("recall", {"query": "order 4711"}).text  # doctest: +SKIP
    """

    memory: BoundMemoryProtocol
    include: Include = "all"
    options: ToolOptions = DEFAULT_OPTIONS
    identity_hint: str | None = None
    specs: dict[str, ToolSpec] = field(init=False)

    def __post_init__(self) -> None:
        check_memory(self.memory, "MemoryToolbox")
        self.specs = {spec.name: spec for spec in select(self.memory, self.include)}

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        """Validate ``arguments`` and run tool ``name``.

        Raises:
            UnknownToolError: No tool of this toolbox is called ``name``.
            ToolCallError: The arguments are invalid or the memory refused the call; the
                message is written for the calling model.
        """
        spec = self.specs.get(name)
        if spec is None:
            raise UnknownToolError(f"unknown tool {name!r}; available: {', '.join(self.specs)}")
        try:
            return run_tool(spec, self.memory, arguments, self.options)
        except AgentMemError as exc:
            message = error_message(name, exc)
            if isinstance(exc, ScopeError) and self.identity_hint:
                message = f"{message}. {self.identity_hint}"
            raise ToolCallError(message) from exc


__all__ = ["MemoryToolbox", "ToolCallError", "UnknownToolError"]
