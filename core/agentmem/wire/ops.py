"""The operations a remote bound memory offers: one table, read by the server and the client.

The table is read from the contract, :mod:`agentmem.protocols`: every method declared on
:class:`~agentmem.protocols.BoundMemoryProtocol` is an operation named after it
(``recall``), and every method of its ``knowledge``, ``state`` and ``working`` parts one
prefixed with the part (``knowledge.upsert``, ``state.get``, ``working.snapshot``); a method
marked ``@local`` is not. Arguments and result type are those declared, so the wire cannot
drift from the Python API. A parameter typed with an options value (``recall(query,
options: RecallOptions | None, **kwargs)``) travels as its fields, one argument each, as the
keywords always did.

Example:
    >>> OPS["recall"].returns.__name__
    'RecallResult'
    >>> OPS["state.get"].path
    '/v1/ops/state.get'
    >>> "top_k" in OPS["recall"].parameters
    True
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..protocols import (
    BoundMemoryProtocol,
    KnowledgeProtocol,
    StateProtocol,
    WorkingProtocol,
    is_local,
)
from ..recall_options import RecallOptions

#: Values that travel as their fields, one argument each (see the module docstring).
OPTION_TYPES: tuple[type, ...] = (RecallOptions,)
#: The parts of a bound memory with operations of their own, and their declarations.
PARTS: dict[str | None, type] = {
    None: BoundMemoryProtocol,
    "knowledge": KnowledgeProtocol,
    "state": StateProtocol,
    "working": WorkingProtocol,
}

PREFIX = "/v1/ops/"


@dataclass(frozen=True)
class Op:
    """One remote operation.

    Attributes:
        name: Its wire name (``recall``, ``knowledge.upsert``).
        part: ``None`` for a BoundMemory method, else ``knowledge``, ``state`` or ``working``.
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
        """Types of the wire arguments and ``return``."""
        hints = typing.get_type_hints(self.function)
        for name, param in inspect.signature(self.function).parameters.items():
            if param.kind is param.VAR_KEYWORD:
                hints.pop(name, None)
            elif (options := _options_type(hints.get(name))) is not None:
                del hints[name]
                hints.update(typing.get_type_hints(options))
        return hints

    @property
    def returns(self) -> Any:
        return self.hints["return"]

    @functools.cached_property
    def parameters(self) -> dict[str, inspect.Parameter]:
        """The arguments on the wire: the declared parameters without ``self`` and
        ``**kwargs``, an options value expanded into its fields (keyword-only)."""
        declared = typing.get_type_hints(self.function)
        params: dict[str, inspect.Parameter] = {}
        for name, param in inspect.signature(self.function).parameters.items():
            if name == "self" or param.kind is param.VAR_KEYWORD:
                continue
            options = _options_type(declared.get(name))
            if options is None:
                params[name] = param
                continue
            for f in dataclasses.fields(options):
                kind = inspect.Parameter.KEYWORD_ONLY
                params[f.name] = inspect.Parameter(f.name, kind, default=f.default)
        return params

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.function) or ""

    def target(self, bound: Any) -> Any:
        """The object of ``bound`` (a bound memory) this operation is a method of."""
        return bound if self.part is None else getattr(bound, self.part)


def _options_type(tp: Any) -> type | None:
    """The options class ``tp`` (``RecallOptions | None``) stands for, if any."""
    for arg in (tp, *typing.get_args(tp)):
        if arg in OPTION_TYPES:
            return typing.cast(type, arg)
    return None


def declared_methods(protocol: type) -> dict[str, Callable[..., Any]]:
    """The methods ``protocol`` declares, in order (properties and private names aside)."""
    return {
        name: member
        for name, member in vars(protocol).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }


def _table() -> dict[str, Op]:
    ops: dict[str, Op] = {}
    for part, protocol in PARTS.items():
        for method, function in declared_methods(protocol).items():
            if is_local(function):
                continue
            name = method if part is None else f"{part}.{method}"
            ops[name] = Op(name, part, method, function)
    return ops


OPS: dict[str, Op] = _table()

__all__ = ["OPS", "OPTION_TYPES", "PARTS", "PREFIX", "Op", "declared_methods"]
