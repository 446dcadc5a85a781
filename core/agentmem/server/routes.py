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
:class:`~agentmem.BoundMemory` an embedded caller uses, on a worker thread.
"""

from __future__ import annotations

import collections.abc
import inspect
import time
import types
import typing
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, create_model
from starlette.concurrency import run_in_threadpool

from ..memory import AgentMemory, BoundMemory
from ..tiers.agent_state import AgentState
from ..tiers.knowledge import Knowledge
from ..wire.ops import OPS, Op
from .keys import ApiKey, resolve_identity
from .responses import json_response
from .state import Principal

_STRICT = ConfigDict(strict=True, extra="forbid")
#: The class implementing each part's operations (``Op.part``).
IMPLEMENTATIONS: dict[str | None, type] = {
    None: BoundMemory,
    "knowledge": Knowledge,
    "state": AgentState,
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


def ops_router(store: AgentMemory) -> APIRouter:
    """The router of every operation of a bound memory."""
    router = APIRouter(tags=["memory"])
    for op in OPS.values():
        _add(router, store, op)
    return router


def _add(router: APIRouter, store: AgentMemory, op: Op) -> None:
    body_type = body_model(op)

    def run(key: ApiKey, body: Any) -> Any:
        i = body.identity
        identity = resolve_identity(
            key,
            tenant_id=i.tenant_id,
            user_id=i.user_id,
            agent_id=i.agent_id,
            session_id=i.session_id,
        )
        bound = store.bind(
            identity.tenant_id, identity.user_id, identity.agent_id, identity.session_id
        )
        method = getattr(op.target(bound), op.method)
        return method(**body.args.model_dump(exclude_unset=True))

    async def endpoint(body: Any, key: Any) -> Response:
        started = time.perf_counter()
        result = await run_in_threadpool(run, key, body)
        # the operation's own time, so a client can tell it from the transport's
        took = (time.perf_counter() - started) * 1000
        return json_response({"result": result}, headers={"Server-Timing": f"op;dur={took:.2f}"})

    # the body model is built at run time, so the annotations FastAPI reads are set here
    endpoint.__annotations__ = {"body": body_type, "key": Principal, "return": Response}
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


__all__ = ["IdentityIn", "args_model", "body_model", "ops_router", "wire_type"]
