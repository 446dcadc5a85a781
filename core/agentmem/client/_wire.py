"""What the sync and async clients share: request bodies, responses, retries, binding.

Everything here is transport-free, so :mod:`.sync` (``httpx.Client``) and :mod:`.aio`
(``httpx.AsyncClient``) differ only in how they send a request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from .. import validation
from ..errors import AgentMemError, AuthError, RateLimitError, RemoteError, ValidationError
from ..key_identity import resolve_identity
from ..models import Identity
from ..results import ApiKey
from ..wire.codec import decode, orjson_default
from ..wire.errors import error_from, is_error_body
from ..wire.ops import OPS

#: Default seconds a request may take (connect, send, wait, read).
DEFAULT_TIMEOUT = 60.0
#: Retries of a request the server answered 429, or that could not connect at all.
DEFAULT_MAX_RETRIES = 3
#: Longest wait the client accepts from a ``Retry-After`` before giving up.
MAX_RETRY_AFTER = 30.0

_JSON = {"Content-Type": "application/json", "Accept": "application/json"}


@dataclass(frozen=True)
class ClientOptions:
    """How a client reaches its server."""

    url: str
    api_key: str = ""
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES

    def __repr__(self) -> str:  # never show the key
        return f"ClientOptions(url={self.url!r}, timeout={self.timeout!r})"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}", **_JSON}


def options(url: str, api_key: str, timeout: float, max_retries: int) -> ClientOptions:
    """Checked client options (raises ValidationError naming the bad argument)."""
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
        raise ValidationError("url", f"must be an http:// or https:// URL, got {url!r}")
    if not isinstance(api_key, str) or not api_key.strip():
        raise AuthError(
            "an API key is required (api_key=...; create one with `agentmem keys create`)",
            reason="missing",
        )
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ValidationError("timeout", "must be a positive number of seconds")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValidationError("max_retries", "must be a non-negative int")
    return ClientOptions(url.rstrip("/"), api_key.strip(), float(timeout), max_retries)


def bind_identity(
    key: ApiKey,
    tenant_id: str | None,
    user_id: str | None,
    agent_id: str | None,
    session_id: str | None,
) -> Identity:
    """The identity a bind asks for, checked against the key exactly as the server checks it
    (so a forbidden bind fails at once, not at the first call)."""
    return resolve_identity(
        key,
        tenant_id=validation.identity(tenant_id, "tenant_id"),
        user_id=user_id,
        agent_id=agent_id,
        session_id=session_id,
    )


def erase_body(key: ApiKey, tenant_id: str, user_id: str | None, agent_id: str | None) -> bytes:
    """The body of an erase, checked here as the server checks it: the tenant is the key's."""
    tenant = validation.identity(tenant_id, "tenant_id", required=True)
    if tenant != key.tenant_id:
        raise AuthError(
            f"this key belongs to tenant {key.tenant_id!r}; it cannot erase tenant {tenant!r}",
            reason="forbidden",
        )
    return orjson.dumps(
        {
            "user_id": validation.identity(user_id, "user_id"),
            "agent_id": validation.identity(agent_id, "agent_id"),
        }
    )


#: Arguments holding JSON values of the caller's own, checked here as the embedded API checks
#: them (string keys, JSON types, no NaN): encoding would turn a key 1 into "1" or a datetime
#: into a string, and the call would succeed remotely where it fails embedded.
JSON_VALUES = ("metadata", "filters")


def import_body(
    lines: Sequence[str],
    first_line: int,
    user_id: str | None,
    agent_id: str | None,
    session_id: str | None,
    batch_size: int,
) -> bytes:
    """The body of an import (the tenant is the key's, so it is not sent)."""
    if isinstance(lines, str) or not all(isinstance(line, str) for line in lines):
        raise ValidationError("lines", "must be a list of JSON text lines")
    who = {"user_id": user_id, "agent_id": agent_id, "session_id": session_id}
    body = {"lines": list(lines), "first_line": first_line, "identity": who}
    return orjson.dumps({**body, "batch_size": batch_size})


def _check_json_values(value: Any, path: str) -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # JSON cannot carry it: name the argument, as
            # the embedded API does, not the whole body
            raise ValidationError(
                path or "arguments", "contains a lone surrogate (not valid Unicode)"
            ) from exc
    elif isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            if key in JSON_VALUES and item is not None:
                validation.metadata(item, here)
            else:
                _check_json_values(item, here)
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value):
            _check_json_values(item, f"{path}[{n}]")


def op_body(op: str, identity: Identity, args: Mapping[str, Any]) -> bytes:
    """The JSON body of an operation call (the tenant is the key's, so it is not sent)."""
    _check_json_values(args, "")
    if op == "state.set":
        validation.metadata({"value": args.get("value")}, "value")
    who = {
        "user_id": identity.user_id,
        "agent_id": identity.agent_id,
        "session_id": identity.session_id,
    }
    for name, value in args.items():  # JSON would carry them as null: the call would change
        if (bad := _not_finite(value)) is not None:
            raise ValidationError(name, f"must be a finite number; got {bad}")
    try:
        return orjson.dumps(
            {"identity": who, "args": dict(args)},
            default=orjson_default,
            option=orjson.OPT_NON_STR_KEYS,
        )
    except TypeError as exc:
        raise ValidationError("arguments", f"cannot be sent as JSON: {exc}") from exc


def _not_finite(value: Any) -> float | None:
    """A NaN or infinite float in ``value`` (nested in dicts, lists and tuples), if any."""
    if isinstance(value, float):
        return None if math.isfinite(value) else value
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list | tuple):
        for item in value:
            if (bad := _not_finite(item)) is not None:
                return bad
    return None


def json_body(data: Any) -> bytes:
    return orjson.dumps(data, default=orjson_default)


def error_of(response: httpx.Response) -> AgentMemError:
    """The agentmem error a non-2xx response carries."""
    try:
        body = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        body = None
    if not is_error_body(body):
        return _not_agentmem(response, "without an agentmem error")
    exc = error_from(response.status_code, body)
    if isinstance(exc, RateLimitError):
        exc.retry_after = retry_after(response)
    return exc


def _not_agentmem(response: httpx.Response, what: str) -> RemoteError:
    """An answer no agentmem server gives: where the request went, and the likely cause."""
    request = response.request
    return RemoteError(
        f"the server answered HTTP {response.status_code} {what} to {request.method} "
        f"{request.url}: is the URL that of an `agentmem serve` (its root, without a path), "
        "and no proxy in between answering for it?",
        status=response.status_code,
    )


def retry_after(response: httpx.Response) -> float:
    raw = response.headers.get("retry-after", "1")
    try:
        return max(0.0, float(raw))
    except ValueError:
        return 1.0


def payload(response: httpx.Response) -> Any:
    """The JSON of a 2xx response, or the error it carries raised."""
    if response.is_success:
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            raise _not_agentmem(response, "with something that is not JSON") from exc
    raise error_of(response)


def result_of(op_name: str, response: httpx.Response) -> Any:
    """The decoded result of an operation call (the same type the embedded API returns)."""
    data = payload(response)
    try:
        return decode(OPS[op_name].returns, data["result"])
    except (KeyError, TypeError, ValueError) as exc:
        raise RemoteError(
            f"the server's answer to {op_name} does not have the expected shape: {exc}",
            status=response.status_code,
        ) from exc


def transport_error(exc: httpx.HTTPError, options: ClientOptions) -> RemoteError:
    """What went wrong on the wire, said so that the caller knows whether the server may
    have acted on the request (only a connection never made is certain not to have)."""
    url = options.url
    if isinstance(exc, httpx.ConnectTimeout):
        return RemoteError(
            f"cannot reach the agentmem server at {url}: connecting timed out after "
            f"{options.timeout:g} s"
        )
    if isinstance(exc, httpx.TimeoutException):
        return RemoteError(
            f"agentmem server at {url} timed out ({type(exc).__name__}): no answer within "
            f"{options.timeout:g} s, so the call may or may not have taken effect there; "
            "a longer call needs a larger timeout= in agentmem.connect"
        )
    if isinstance(exc, httpx.ConnectError):
        return RemoteError(
            f"cannot reach the agentmem server at {url}: {exc} (is `agentmem serve` running there?)"
        )
    # the request went out and the connection broke before the answer: the server stopped,
    # or restarted, while it held the call
    return RemoteError(
        f"the connection to the agentmem server at {url} broke during the call ({exc}): the "
        "server may have stopped or restarted, and the call may or may not have taken effect "
        "there"
    )


def should_retry(
    exc: BaseException | None, response: httpx.Response | None, attempt: int
) -> float | None:
    """Seconds to wait before retrying, or None for no retry.

    Only requests that never reached the server (connection refused, DNS, a connect timeout)
    and 429 answers are retried, so a write is never applied twice.
    """
    if exc is not None:
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return 0.25 * float(2**attempt)
        return None
    if response is not None and response.status_code == 429:
        wait: float = retry_after(response)
        return wait if wait <= MAX_RETRY_AFTER else None
    return None


def key_of(response: httpx.Response) -> ApiKey:
    data = payload(response)
    try:
        key: ApiKey = decode(ApiKey, data)
    except (TypeError, ValueError) as exc:
        raise RemoteError(f"unexpected answer to /v1/whoami: {exc}") from exc
    return key


__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "ClientOptions",
    "bind_identity",
    "error_of",
    "json_body",
    "key_of",
    "op_body",
    "options",
    "payload",
    "result_of",
    "should_retry",
    "transport_error",
]
