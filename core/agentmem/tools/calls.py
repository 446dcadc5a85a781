"""Calling a tool: argument validation, identity-argument rejection, the error text.

Every surface calls :func:`run_tool` (or, when its framework validates the arguments first,
turns that framework's pydantic error into the same error with :func:`arguments_error`), and
shows a failure as :func:`error_message`, so a model gets the same words from LangChain,
LlamaIndex and MCP.

Example:
    >>> from agentmem.tools.specs import SPECS  # doctest: +SKIP
    >>> run_tool(SPECS["recall"], bound, {"query": "order 4711"}).text  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from ..errors import AgentMemError, NotFoundError, ScopeError, ValidationError
from ..protocols import BoundMemoryProtocol
from .handlers import DEFAULT_OPTIONS, ToolOptions, ToolResult
from .specs import ToolSpec

#: Argument names that would choose an identity; every tool rejects them.
IDENTITY_ARGUMENTS = frozenset(
    {"tenant_id", "user_id", "agent_id", "session_id", "tenant", "user", "agent", "session"}
)


def _identity_error(tool: str, names: list[str]) -> ValidationError:
    others = f" (nor can {', '.join(names[1:])})" if len(names) > 1 else ""
    return ValidationError(
        names[0],
        f"cannot be passed to {tool}{others}: identity (tenant, user, agent, session) is "
        "fixed when the tools are created (the bound memory, or the MCP server's flags), not "
        "by tool arguments. Call the tool again without it.",
        tool=tool,
    )


def arguments_error(tool: str, exc: PydanticValidationError) -> ValidationError:
    """A pydantic validation error of ``tool``'s arguments, as one agentmem error naming the
    first bad field (identity arguments get their own explanation)."""
    errors = exc.errors()
    identity = sorted(
        str(err["loc"][0])
        for err in errors
        if err["type"] == "extra_forbidden" and err["loc"] and err["loc"][0] in IDENTITY_ARGUMENTS
    )
    if identity:
        return _identity_error(tool, identity)
    parts = []
    for err in errors:
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        msg = "is not a parameter of this tool" if err["type"] == "extra_forbidden" else err["msg"]
        parts.append((loc, msg))
    field = str(errors[0]["loc"][0]) if errors and errors[0]["loc"] else "arguments"
    (first_loc, first_msg), *rest = parts
    if first_loc != field:  # a nested location (source_kinds.0): keep it in the message
        first_msg = f"{first_msg} (at {first_loc})"
    message = "; ".join([first_msg, *(f"{loc}: {msg}" for loc, msg in rest)])
    return ValidationError(field, message, tool=tool)


def parse_arguments(spec: ToolSpec, arguments: Mapping[str, Any] | None) -> BaseModel:
    """``arguments`` validated against ``spec``'s model.

    Raises:
        ValidationError: an identity argument, an unknown argument, or a bad value; the
            field is the first offending argument.
    """
    raw = dict(arguments or {})
    identity = sorted(IDENTITY_ARGUMENTS & set(raw))
    if identity:
        raise _identity_error(spec.name, identity)
    try:
        return spec.args.model_validate(raw)
    except PydanticValidationError as exc:
        raise arguments_error(spec.name, exc) from exc


def run_tool(
    spec: ToolSpec,
    memory: BoundMemoryProtocol,
    arguments: Mapping[str, Any] | None,
    options: ToolOptions = DEFAULT_OPTIONS,
) -> ToolResult:
    """Validate ``arguments`` and run ``spec``'s handler for ``memory``.

    Raises:
        AgentMemError: the arguments are invalid or the memory refused the call (the
            original error, e.g. :class:`~agentmem.errors.NotFoundError`); show it to the
            model with :func:`error_message`.
    """
    return spec.handler(memory, parse_arguments(spec, arguments), options)


def error_message(tool: str, exc: AgentMemError) -> str:
    """What a model is told about a failed call of ``tool`` (without the ``Error:`` prefix)."""
    if isinstance(exc, NotFoundError):
        return str(exc)
    if isinstance(exc, ValidationError) and not isinstance(exc, ScopeError):
        return f"invalid arguments for {tool}: {exc}"
    return f"{tool} failed: {exc}"


__all__ = [
    "IDENTITY_ARGUMENTS",
    "arguments_error",
    "error_message",
    "parse_arguments",
    "run_tool",
]
