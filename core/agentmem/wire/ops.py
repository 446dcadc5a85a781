"""The operations a remote bound memory offers: one table, read by the server and the client.

Each operation is a method of :class:`~agentmem.BoundMemory` (or of its ``knowledge`` and
``state`` parts). Its name on the wire is the method name (``recall``), prefixed for the parts
(``knowledge.upsert``, ``state.get``); its arguments and result type are those of the method,
read from its signature and type hints, so the wire cannot drift from the Python API.

Example:
    >>> OPS["recall"].returns.__name__
    'RecallResult'
    >>> OPS["state.get"].path
    '/v1/ops/state.get'
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..memory import BoundMemory
from ..tiers.agent_state import AgentState
from ..tiers.knowledge import Knowledge

#: Methods of BoundMemory served remotely (every operation of the embedded API but the
#: ``working`` view, whose snapshot is reached through ``context_messages``, ``prompt_view``
#: and ``compact``).
BOUND_OPS: tuple[str, ...] = (
    "add_message",
    "add_messages",
    "add_tool_output",
    "read_tool_output",
    "messages",
    "clear_session",
    "add_document",
    "remember",
    "remember_many",
    "forget",
    "get",
    "recall",
    "ingest",
    "history",
    "answer",
    "context_messages",
    "prompt_view",
    "compact",
    "close_session",
    "session_detail",
    "sessions",
)
#: Methods of ``BoundMemory.knowledge`` (``search`` is a recall with ``scope="knowledge"``).
KNOWLEDGE_OPS: tuple[str, ...] = ("upsert", "delete", "get", "list")
#: Methods of ``BoundMemory.state``.
STATE_OPS: tuple[str, ...] = ("get", "set", "delete", "list")

PREFIX = "/v1/ops/"


@dataclass(frozen=True)
class Op:
    """One remote operation.

    Attributes:
        name: Its wire name (``recall``, ``knowledge.upsert``).
        part: ``None`` for a BoundMemory method, else ``knowledge`` or ``state``.
        method: The method's name on that object.
        function: The unbound method (its signature and hints define the wire format).
    """

    name: str
    part: str | None
    method: str
    function: Callable[..., Any]

    @property
    def path(self) -> str:
        return PREFIX + self.name

    @functools.cached_property
    def hints(self) -> dict[str, Any]:
        return typing.get_type_hints(self.function)

    @property
    def returns(self) -> Any:
        return self.hints["return"]

    @functools.cached_property
    def parameters(self) -> dict[str, inspect.Parameter]:
        """The method's parameters, without ``self``."""
        params = dict(inspect.signature(self.function).parameters)
        params.pop("self", None)
        return params

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.function) or ""

    def target(self, bound: Any) -> Any:
        """The object of ``bound`` (a bound memory) this operation is a method of."""
        return bound if self.part is None else getattr(bound, self.part)


def _table() -> dict[str, Op]:
    ops: dict[str, Op] = {}
    for name in BOUND_OPS:
        ops[name] = Op(name, None, name, getattr(BoundMemory, name))
    for part, cls, names in (
        ("knowledge", Knowledge, KNOWLEDGE_OPS),
        ("state", AgentState, STATE_OPS),
    ):
        for name in names:
            ops[f"{part}.{name}"] = Op(f"{part}.{name}", part, name, getattr(cls, name))
    return ops


OPS: dict[str, Op] = _table()

__all__ = ["BOUND_OPS", "KNOWLEDGE_OPS", "OPS", "PREFIX", "STATE_OPS", "Op"]
