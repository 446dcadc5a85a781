"""agentmem errors on the wire: an HTTP status and a JSON body, and back to the same class.

The body of every error response is::

    {"error": {"type": "ValidationError", "message": "top_k: must be ...",
               "field": "top_k", "reason": "must be ...", "context": {...}}}

``type`` names a class of :mod:`agentmem.errors`; the client raises that class again with the
same fields (``field`` and ``reason`` of a ``ValidationError``, ``context``), so code written
against the embedded API catches the same exceptions from a remote memory.

====================================  ======
error                                 status
====================================  ======
ValidationError, ScopeError           422
NotFoundError                         404
AuthError                             401 (403 when the key is valid but may not do that)
RateLimitError                        429 (with ``Retry-After``)
request body over the limit           413 (a ValidationError of field ``body``)
StorageError                          503
any other AgentMemError               500
====================================  ======
"""

from __future__ import annotations

import math
from typing import Any

from .. import errors as errors_module
from ..errors import (
    AgentMemError,
    AuthError,
    NotFoundError,
    RateLimitError,
    RemoteError,
    StorageError,
    ValidationError,
)
from .codec import encode

_FORBIDDEN = frozenset({"forbidden", "admin_required", "operator_required"})


def status_of(exc: AgentMemError) -> int:
    """The HTTP status that carries ``exc``."""
    if isinstance(exc, ValidationError):
        return 413 if exc.context.get("too_large") else 422
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, AuthError):
        return 403 if exc.reason in _FORBIDDEN else 401
    if isinstance(exc, RateLimitError):
        return 429
    if isinstance(exc, StorageError):
        return 503
    return 500


def _jsonable(value: Any) -> Any:
    try:
        return encode(value)
    except TypeError:
        return str(value)


def error_body(exc: AgentMemError) -> dict[str, Any]:
    """The JSON body of the response that carries ``exc``."""
    err: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ValidationError):
        err["field"] = exc.field
        err["reason"] = exc.reason
    context = {k: _jsonable(v) for k, v in exc.context.items() if k != "field"}
    if context:
        err["context"] = context
    return {"error": err}


def headers_of(exc: AgentMemError) -> dict[str, str]:
    """Extra response headers for ``exc`` (``Retry-After`` of a 429)."""
    if isinstance(exc, RateLimitError):
        return {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
    if isinstance(exc, AuthError) and exc.reason not in _FORBIDDEN:
        return {"WWW-Authenticate": "Bearer"}
    return {}


def _classes() -> dict[str, type[AgentMemError]]:
    out: dict[str, type[AgentMemError]] = {}
    for name in dir(errors_module):
        obj = getattr(errors_module, name)
        if isinstance(obj, type) and issubclass(obj, AgentMemError):
            out[obj.__name__] = obj
    return out


_CLASSES = _classes()


def is_error_body(body: Any) -> bool:
    """Whether a response's JSON ``body`` is an agentmem error (not a proxy's page, say)."""
    err = body.get("error") if isinstance(body, dict) else None
    return isinstance(err, dict) and isinstance(err.get("type"), str)


def error_from(status: int, body: Any) -> AgentMemError:
    """The exception a response of ``status`` with JSON ``body`` carries.

    A body that is not an agentmem error (a proxy's error page) becomes a
    :class:`~agentmem.errors.RemoteError` with the status.
    """
    if not is_error_body(body):
        return RemoteError(
            f"the server answered HTTP {status} without an agentmem error", status=status
        )
    err = body["error"]
    message = str(err.get("message", ""))
    raw_context = err.get("context")
    context: dict[str, Any] = raw_context if isinstance(raw_context, dict) else {}
    cls = _CLASSES.get(err["type"], AgentMemError)
    try:
        if issubclass(cls, ValidationError):
            field = str(err.get("field", "arguments"))
            reason = str(err.get("reason", message))
            return cls(field, reason, **context)
        return cls(message, **context)
    except TypeError:  # a class whose constructor needs more than the wire carries
        return AgentMemError(message, type=err["type"], **context)


__all__ = ["error_body", "error_from", "headers_of", "is_error_body", "status_of"]
