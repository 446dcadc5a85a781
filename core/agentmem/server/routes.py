"""One HTTP route per operation of the bound memory, derived from :data:`agentmem.wire.OPS`.

``POST /v1/ops/<name>`` with a JSON body ``{"identity": {...}, "args": {...}}``:

- ``identity``: ``user_id``, ``agent_id``, ``session_id`` (each optional) within the key's
  tenant; ``tenant_id`` may be given only as the key's own.
- ``args``: the keyword arguments of the Python method of the same name (``recall``:
  ``query``, ``top_k``, ...), checked against a model built from its signature (bad JSON, an
  unknown argument or a wrong type is a 422 naming the field), then by the operation itself
  exactly as in-process.

The answer is ``{"result": ...}``: the method's return value as JSON (see
:mod:`agentmem.wire.codec`). The route runs the operation through the same
:class:`~agentmem.BoundMemory` an embedded caller uses, on a worker thread. FastAPI's route
documents each operation; :class:`OpsFastPath` answers it (the same handler, without
FastAPI's per-request routing and dependency solving).
"""

from __future__ import annotations

import collections.abc
import inspect
import json
import time
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic import ValidationError as PydanticValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import AgentMemError, ValidationError
from ..memory import AgentMemory, BoundMemory
from ..tiers.agent_state import AgentState
from ..tiers.knowledge import Knowledge
from ..tiers.working import WorkingMemory
from ..wire.ops import OPS, Op
from .keys import ApiKey, resolve_identity
from .pins import carries_rows, check_operation, hide_others_activity
from .responses import error_response, json_response
from .state import Principal

_STRICT = ConfigDict(strict=True, extra="forbid")
#: The class implementing each part's operations (``Op.part``).
IMPLEMENTATIONS: dict[str | None, type] = {
    None: BoundMemory,
    "knowledge": Knowledge,
    "state": AgentState,
    "working": WorkingMemory,
}


class IdentityIn(BaseModel):
    """Who the call acts for, within the API key's tenant (pinned values of the key win)."""

    model_config = _STRICT

    tenant_id: str | None = Field(None, description="Only the key's own tenant is accepted.")
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None


def wire_type(tp: Any) -> Any:
    """The JSON-side type of a parameter annotation (iterables as lists, mappings as objects,
    dataclasses such as ``ChatTurn`` as objects)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        mapped = tuple(wire_type(a) for a in args)
        return typing.Union[mapped]  # noqa: UP007 - built from a runtime tuple
    if origin in (
        collections.abc.Iterable,
        collections.abc.Sequence,
        collections.abc.Collection,
        list,
        tuple,
        set,
        frozenset,
    ):
        return list[wire_type(args[0]) if args else Any]  # type: ignore[misc]
    if origin in (collections.abc.Mapping, dict):
        return dict[str, wire_type(args[1]) if len(args) == 2 else Any]  # type: ignore[misc]
    if isinstance(tp, type) and hasattr(tp, "__dataclass_fields__"):
        return dict[str, Any]
    return tp


def args_model(op: Op) -> type[BaseModel]:
    """A strict pydantic model of ``op``'s keyword arguments."""
    fields: dict[str, Any] = {}
    for name, param in op.parameters.items():
        if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        tp = wire_type(op.hints.get(name, Any))
        default = ... if param.default is param.empty else param.default
        fields[name] = (tp, default)
    model_name = "".join(p.title() for p in op.name.replace(".", "_").split("_")) + "Args"
    return create_model(model_name, __config__=_STRICT, **fields)


def body_model(op: Op) -> type[BaseModel]:
    args = args_model(op)
    required = any(f.is_required() for f in args.model_fields.values())
    name = args.__name__.removesuffix("Args") + "Request"
    return create_model(
        name,
        __config__=_STRICT,
        identity=(IdentityIn, Field(default_factory=lambda: IdentityIn.model_validate({}))),
        args=(args, ...) if required else (args, Field(default_factory=args)),
    )


def result_model(op: Op) -> type[BaseModel] | None:
    """``{"result": <return type>}`` for the OpenAPI document (None if pydantic cannot
    describe the type)."""
    name = "".join(p.title() for p in op.name.replace(".", "_").split("_")) + "Response"
    try:
        model = create_model(name, result=(op.returns, ...))
        model.model_json_schema()
    except Exception:
        return None
    return model


class OpHandler:
    """One operation over HTTP: the request's key checked, its body validated, the operation
    run as the identity the key allows (on a worker thread), the result as JSON.

    It is an ASGI app of its own (``__call__``, reached through :class:`OpsFastPath`) and
    the endpoint of the operation's documented FastAPI route (:meth:`respond`), which give
    the same answer to the same request.
    """

    def __init__(self, store: AgentMemory, op: Op, principal: Callable[[Headers], ApiKey]):
        self.store = store
        self.op = op
        self.principal = principal
        self.body_type = body_model(op)
        self.carries_rows = carries_rows(op.returns)

    def run(self, key: ApiKey, body: Any) -> Any:
        check_operation(key, self.op.part)
        i = body.identity
        identity = resolve_identity(
            key,
            tenant_id=i.tenant_id,
            user_id=i.user_id,
            agent_id=i.agent_id,
            session_id=i.session_id,
        )
        bound = self.store.bind(
            identity.tenant_id, identity.user_id, identity.agent_id, identity.session_id
        )
        method = getattr(self.op.target(bound), self.op.method)
        result = method(**body.args.model_dump(exclude_unset=True))
        return hide_others_activity(result, key) if self.carries_rows else result

    async def respond(self, key: ApiKey, body: Any) -> Response:
        started = time.perf_counter()
        result = await run_in_threadpool(self.run, key, body)
        # the operation's own time, so a client can tell it from the transport's
        took = (time.perf_counter() - started) * 1000
        return json_response({"result": result}, headers={"Server-Timing": f"op;dur={took:.2f}"})

    def parse(self, headers: Headers, raw: bytes) -> BaseModel:
        """The request body as the operation's body model, read as FastAPI reads a JSON body
        (parsed only when the content type is JSON; an empty body is a missing one).

        Raises:
            ValidationError: what FastAPI's validation would have said, named the same way.
        """
        if not raw:
            raise validation_error([{"type": "missing", "loc": ("body",)}])
        data: Any = raw
        if _is_json(headers.get("content-type")):
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise validation_error(
                    [{"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error"}]
                ) from exc
            except UnicodeDecodeError as exc:
                raise ValidationError("body", "not valid JSON: not UTF-8 text") from exc
        try:
            return self.body_type.model_validate(data)
        except PydanticValidationError as exc:
            raise validation_error(exc.errors()) from exc

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        try:
            key = self.principal(headers)
            body = self.parse(headers, await Request(scope, receive).body())
            response = await self.respond(key, body)
        except ClientDisconnect:
            return  # nobody to answer
        except AgentMemError as exc:
            response = error_response(exc)
        await response(scope, receive, send)


def _is_json(content_type: str | None) -> bool:
    """``application/json`` or ``application/<anything>+json`` (parameters ignored)."""
    if not content_type:
        return False
    main, _, sub = content_type.partition(";")[0].strip().lower().partition("/")
    return main == "application" and (sub == "json" or sub.endswith("+json"))


def validation_error(errors: Sequence[Mapping[str, Any]]) -> ValidationError:
    """The first problem request validation found, as a ValidationError naming the argument."""
    if not errors:
        return ValidationError("body", "invalid request")
    err = errors[0]
    loc = [str(p) for p in err.get("loc", ()) if p != "body"]
    if loc[:1] in (["args"], ["identity"]) and len(loc) > 1:  # name the argument itself
        loc = loc[1:]
    # a union's failed member is named in the location (kinds.list[str]); keep the field
    field = loc[0] if loc else "body"
    if err.get("type") == "json_invalid":
        return ValidationError("body", f"not valid JSON: {err.get('msg', '')}")
    if field == "body" and err.get("type") in ("model_attributes_type", "dict_type", "model_type"):
        return ValidationError(
            "body",
            'send a JSON object ({"identity": {...}, "args": {...}}) with '
            "Content-Type: application/json",
        )
    if err.get("type") == "extra_forbidden":
        return ValidationError(field, "is not an argument of this operation")
    if err.get("type") == "missing":
        return ValidationError(field, "is required")
    return ValidationError(field, str(err.get("msg", "is invalid")))


def op_handlers(store: AgentMemory, principal: Callable[[Headers], ApiKey]) -> list[OpHandler]:
    """A handler for every operation of a bound memory (:data:`agentmem.wire.OPS`)."""
    return [OpHandler(store, op, principal) for op in OPS.values()]


class OpsFastPath:
    """ASGI middleware: ``POST`` to an operation's path goes straight to its
    :class:`OpHandler`, past FastAPI's routing and dependency solving, which cost more than
    the rest of the request's handling (walking every route of the app, then the dependency
    graph, for each call); any other request goes on to the app (the FastAPI route still
    documents the operation and answers other methods with 405).
    """

    def __init__(self, app: ASGIApp, handlers: Sequence[OpHandler]) -> None:
        self.app = app
        self.handlers = {h.op.path: h for h in handlers}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.handlers.get(scope.get("path", "")) if scope["type"] == "http" else None
        if handler is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        await handler(scope, receive, send)


def ops_router(handlers: Sequence[OpHandler]) -> APIRouter:
    """The documented route of every operation (served by :class:`OpsFastPath`)."""
    router = APIRouter(tags=["memory"])
    for handler in handlers:
        _add(router, handler)
    return router


def _add(router: APIRouter, handler: OpHandler) -> None:
    op = handler.op

    async def endpoint(body: Any, key: Any) -> Response:
        return await handler.respond(key, body)

    # the body model is built at run time, so the annotations FastAPI reads are set here
    endpoint.__annotations__ = {"body": handler.body_type, "key": Principal, "return": Response}
    result = result_model(op)
    # the declaration carries the signature; the implementation the user-facing docs
    doc = inspect.getdoc(getattr(IMPLEMENTATIONS[op.part], op.method)) or op.doc
    summary, _, _ = doc.partition("\n")
    router.add_api_route(
        op.path,
        endpoint,
        methods=["POST"],
        name=op.name,
        summary=summary or op.name,
        description=doc,
        responses={200: {"model": result}} if result is not None else None,
        response_class=Response,
    )


__all__ = [
    "IdentityIn",
    "OpHandler",
    "OpsFastPath",
    "args_model",
    "body_model",
    "op_handlers",
    "ops_router",
    "validation_error",
    "wire_type",
]
