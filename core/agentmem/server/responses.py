"""JSON responses of the server, and agentmem errors as responses.

Results are serialized once, by orjson, straight from the result dataclasses (orjson encodes
dataclasses, datetimes and tuples itself), with no intermediate dict.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import Response
from starlette.types import Receive, Scope, Send

from ..errors import AgentMemError
from ..wire.codec import orjson_default
from ..wire.errors import error_body, headers_of, status_of

_OPTIONS = orjson.OPT_NON_STR_KEYS


def dumps(data: Any) -> bytes:
    return orjson.dumps(data, default=orjson_default, option=_OPTIONS)


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(data), status_code=status, headers=headers, media_type="application/json")


def error_response(exc: AgentMemError) -> Response:
    """The response that carries ``exc`` (status, JSON body, ``Retry-After``...)."""
    return json_response(error_body(exc), status_of(exc), headers_of(exc))


async def send_error(exc: AgentMemError, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer an ASGI request with ``exc`` (for apps outside FastAPI's routing, e.g. /mcp)."""
    await error_response(exc)(scope, receive, send)


__all__ = ["dumps", "error_response", "json_response", "send_error"]
