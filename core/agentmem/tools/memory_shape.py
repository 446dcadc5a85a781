"""Checking what the tools and adapters are built with: a bound memory, known arguments.

The tool handlers call only the public methods of
:class:`~agentmem.protocols.BoundMemoryProtocol`, so they work on :class:`agentmem.BoundMemory`
and on the remote bound memory of :func:`agentmem.connect` alike.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ValidationError
from ..protocols import BoundMemoryProtocol, MemoryProtocol

#: Methods whose absence means "not a bound memory" (an ``AgentMemory`` has none of them).
_REQUIRED = ("recall", "remember", "read_tool_output", "get", "forget")


def check_memory(memory: object, caller: str) -> BoundMemoryProtocol:
    """``memory`` if it has the bound-memory shape, else a TypeError naming what was passed.

    Only the class is inspected (no property runs), so a closed store does not raise here.
    """
    cls = type(memory)
    if _is_async(cls):
        raise TypeError(
            f"{caller} expects a bound memory with blocking methods, got {cls.__name__} (its "
            "methods are coroutines): use agentmem.connect(...), not connect_async, here"
        )
    missing = [name for name in _REQUIRED if not callable(getattr(cls, name, None))]
    if missing:
        hint = (
            "; call .bind(tenant_id=..., user_id=..., agent_id=..., session_id=...) on it first"
            if callable(getattr(cls, "bind", None))
            else ""
        )
        raise TypeError(
            f"{caller} expects a bound memory (a BoundMemory from AgentMemory.bind(...)), "
            f"got {cls.__name__}{hint}"
        )
    return memory  # type: ignore[return-value]


def check_store(memory: object, caller: str, *, why: str) -> MemoryProtocol:
    """``memory`` if it is a memory to bind (an :class:`agentmem.AgentMemory` or the client of
    :func:`agentmem.connect`), else a TypeError naming what was passed; for the adapters that
    bind an identity per call (the LangGraph store, the LlamaIndex chat store).
    """
    if _is_async(type(memory)):
        raise TypeError(
            f"{caller} expects an AgentMemory ({why}), got {type(memory).__name__} (its "
            "methods are coroutines): use agentmem.connect(...), not connect_async, here"
        )
    if isinstance(memory, MemoryProtocol):
        return memory
    hint = ""
    if isinstance(memory, BoundMemoryProtocol):
        hint = "; pass memory.store" if hasattr(type(memory), "store") else "; pass its client"
    raise TypeError(f"{caller} expects an AgentMemory ({why}), got {type(memory).__name__}{hint}")


def store_tenant(memory: MemoryProtocol, tenant_id: str | None, caller: str) -> str:
    """``tenant_id``; when None, the tenant of the API key a client of :func:`agentmem.connect`
    presents (a key reaches one tenant), else a ValidationError: an embedded store holds many.
    """
    if tenant_id is not None:
        return tenant_id
    whoami = getattr(memory, "whoami", None)
    if callable(whoami):
        return str(whoami().tenant_id)
    raise ValidationError(
        "tenant_id",
        f"{caller} needs a tenant_id with an embedded AgentMemory (a client of "
        "agentmem.connect takes its API key's tenant)",
    )


def check_arguments(
    caller: str,
    given: Iterable[str],
    fields: Mapping[str, Any],
    *,
    hints: Mapping[str, str] | None = None,
) -> None:
    """Raise a TypeError naming the arguments of ``given`` that are not ``fields`` (a
    pydantic model's ``model_fields``: their names and aliases), with the ``hints`` said for
    them. Pydantic models ignore unknown arguments by default, so a misspelt or foreign
    setting (``top_k=`` for ``k=``) would be dropped without a word.
    """
    accepted = set(fields) | {
        alias for f in fields.values() if isinstance(alias := getattr(f, "alias", None), str)
    }
    unknown = sorted(set(given) - accepted)
    if not unknown:
        return
    advice = "".join(f"; {hints[name]}" for name in unknown if hints and name in hints)
    raise TypeError(
        f"{caller} got unexpected keyword arguments {unknown}{advice} "
        f"(accepted: {', '.join(sorted(accepted))})"
    )


def _is_async(cls: type) -> bool:
    """Whether ``cls`` is an asyncio memory or client (its recall, or its flush, is a
    coroutine function)."""
    return any(inspect.iscoroutinefunction(getattr(cls, n, None)) for n in ("recall", "flush"))


__all__ = ["check_arguments", "check_memory", "check_store"]
