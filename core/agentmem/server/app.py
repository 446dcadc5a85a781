"""The ASGI app of ``agentmem serve``: one open memory, many processes, over HTTP.

The app is a thin surface: it authenticates the request (:mod:`~agentmem.server.auth`),
resolves the identity the key allows, binds the one :class:`~agentmem.AgentMemory` of the
process to it and calls the same operation an embedded caller would (on a worker thread),
then serializes the result. It holds no business logic.

=============================  ==========================================================
route                          does
=============================  ==========================================================
``GET /health``                200 once the store is open and the embedder loaded (no key)
``GET /metrics``               Prometheus metrics (operator key; :mod:`.metrics`)
``POST /v1/ops/<operation>``   one operation of the bound memory (:mod:`.routes`)
``GET /v1/whoami``             the presented key (tenant, pins, admin), never its secret
``POST /v1/flush``             wait until both indexes caught up (``{"timeout": s}``)
``GET /v1/admin/stats``        the key's tenant's stats (admin key); the store's, background
                               jobs and server info (operator key)
``GET /v1/admin/doctor``       the doctor report of the key's tenant (admin key), of the
                               store (operator key)
``GET /v1/admin/export``       the key's tenant as import-ready JSON Lines (admin key)
``POST /v1/admin/import``      import JSON Lines into the key's tenant (admin key)
``POST /v1/admin/erase``       erase the key's tenant, or a user/agent of it (admin key)
``/mcp``                       MCP over streamable HTTP (:mod:`.mcp_http`)
``/ui``                        the inspector's pages (:mod:`agentmem.inspector`), behind the
                               key too (a login form keeps it in an HttpOnly cookie)
``GET /docs``, ``/openapi.json``  the API documentation, served offline (:mod:`.docs`)
=============================  ==========================================================

Example:
    >>> app = create_app(AgentMemory("/srv/agentmem"))  # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=8720)  # doctest: +SKIP
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager
from typing import Annotated, Any

import anyio
from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from .. import validation as v
from ..errors import AgentMemError, ValidationError
from ..inspector.access import KeyAccess
from ..inspector.app import ui_router
from ..maintenance.doctor import diagnose
from ..maintenance.stats import stats as stats_op
from ..maintenance.transfer import export_lines
from ..memory import AgentMemory
from ..models import KINDS
from ..wire.ops import OPS
from .auth import require_admin, require_operator
from .docs import docs_router
from .instrument import Instrumented
from .mcp_http import McpGateway
from .metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .responses import dumps, error_response, json_response, send_error
from .routes import ops_router
from .state import Principal, ServerState
from .transfer_routes import import_router

log = logging.getLogger("agentmem.server")

#: Longest ``POST /v1/flush`` wait a client may ask for, in seconds.
MAX_FLUSH_SECONDS = 300.0

FlushTimeout = Annotated[float | None, Body(embed=True, ge=0, le=MAX_FLUSH_SECONDS)]
ExportKinds = Annotated[list[str] | None, Query(description="Only these kinds (repeat).")]


class EraseRequest(BaseModel):
    """What ``POST /v1/admin/erase`` erases: a user and/or agent of the key's tenant, or (an
    empty object, or no body) all of it. Any other field is refused: a misspelt one must not
    widen an erasure to the whole tenant."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = Field(None, description="Erase this user of the tenant.")
    agent_id: str | None = Field(None, description="Erase this agent of the tenant.")


def create_app(store: AgentMemory, *, run_jobs: bool = True) -> FastAPI:
    """The ASGI app serving ``store`` (which it does not close: its opener does).

    Args:
        store: The open memory every request binds.
        run_jobs: Run the background jobs (judge, idle sessions, retention).
    """
    state = ServerState(store, run_jobs=run_jobs)
    gateway = McpGateway(state, send_error)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # load the embedder now, so /health means the first request is served at full speed
        await run_in_threadpool(store.embedder.embed_query, "agentmem warm-up")
        with ExitStack() as cleanup:  # closed last, after the indexer caught up
            cleanup.callback(store.context.recalls.subscribe(state.metrics.observe_recall))
            cleanup.callback(_serve_metrics(state, store.settings.server.metrics_port))
            async with anyio.create_task_group() as tg:
                await tg.start(gateway.run)
                if run_jobs:
                    state.jobs.start()
                state.ready = True
                log.info("agentmem server ready on %s", store.home)
                try:
                    yield
                finally:
                    # uvicorn has drained the in-flight requests: stop the jobs, then let the
                    # indexer catch up with every acknowledged write before the store closes
                    state.ready = False
                    drain = store.settings.server.drain_seconds or None
                    await run_in_threadpool(state.jobs.stop, drain)
                    if not await run_in_threadpool(store.flush, drain):
                        log.warning(
                            "indexer not caught up after %s s; it resumes at next start", drain
                        )
                    tg.cancel_scope.cancel()

    app = FastAPI(
        **_no_native_telemetry(),
        title="agentmem",
        version=__version__,
        description="A shared agentmem memory over HTTP. Every route but /health and this "
        "documentation needs an API key (`Authorization: Bearer <key>`; the Authorize button "
        "takes it for the calls made from this page); the key's tenant is the only one "
        "reachable.",
        lifespan=lifespan,
        docs_url=None,  # served by .docs, with Swagger UI's files from the package
        openapi_url=None,
    )
    app.state.agentmem = state

    @app.exception_handler(AgentMemError)
    async def _agentmem_error(request: Request, exc: AgentMemError) -> Response:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        return error_response(_validation_error(exc))

    app.include_router(docs_router(app.openapi))

    @app.get("/health", tags=["server"], summary="Readiness (no key needed)")
    async def health() -> Response:
        if not state.ready:
            return json_response({"status": "starting"}, 503)
        return json_response({"status": "ok", "version": __version__})

    app.include_router(ops_router(store))
    jobs = state.jobs.status if run_jobs else None
    app.include_router(ui_router(store, KeyAccess(state.principal), jobs=jobs))

    @app.get("/metrics", tags=["server"], summary="Prometheus metrics (operator key)")
    async def metrics(key: Principal) -> Response:
        require_operator(key)
        body = await run_in_threadpool(state.metrics.render)
        return Response(body, media_type=METRICS_CONTENT_TYPE)

    @app.get("/v1/whoami", tags=["server"], summary="The presented key (never its secret)")
    async def whoami(key: Principal) -> Response:
        return json_response(key)

    @app.post("/v1/flush", tags=["server"], summary="Wait until both indexes caught up")
    async def flush(key: Principal, timeout: FlushTimeout = None) -> Response:
        done = await run_in_threadpool(store.flush, timeout)
        return json_response({"result": done})

    @app.get("/v1/admin/stats", tags=["admin"], summary="Stats of the tenant, or of the store")
    async def stats(key: Principal) -> Response:
        if not key.operator:  # a tenant's admin: its own rows, nothing of the others
            require_admin(key)
            counts = await run_in_threadpool(stats_op, store.context, tenant_id=key.tenant_id)
            return json_response({"tenant_id": key.tenant_id, "stats": counts})
        counts = await run_in_threadpool(store.stats)
        return json_response(
            {
                "home": str(store.home),
                "stats": counts,
                "jobs": state.jobs.status() if run_jobs else [],
                "server": state.info(),
            }
        )

    @app.get("/v1/admin/doctor", tags=["admin"], summary="The doctor report of the tenant/store")
    async def doctor(key: Principal) -> Response:
        if not key.operator:
            require_admin(key)
            report = await run_in_threadpool(diagnose, store.context, tenant_id=key.tenant_id)
            return json_response({"tenant_id": key.tenant_id, "report": report})
        report = await run_in_threadpool(diagnose, store.context)
        return json_response({"home": str(store.home), "report": report})

    @app.get("/v1/admin/export", tags=["admin"], summary="The key's tenant as JSON Lines")
    async def export(key: Principal, kind: ExportKinds = None) -> Response:
        require_admin(key)
        kinds = v.choices(kind, "kind", KINDS) if kind else None
        return StreamingResponse(
            _jsonl(store, key.tenant_id, kinds), media_type="application/x-ndjson"
        )

    app.include_router(import_router(store))

    @app.post("/v1/admin/erase", tags=["admin"], summary="Erase the tenant, or a user/agent of it")
    async def erase(key: Principal, target: EraseRequest | None = None) -> Response:
        require_admin(key)
        target = target or EraseRequest(user_id=None, agent_id=None)
        receipt = await run_in_threadpool(
            store.erase, tenant_id=key.tenant_id, user_id=target.user_id, agent_id=target.agent_id
        )
        return json_response({"receipt": receipt})

    app.router.routes.append(Route("/mcp", endpoint=gateway, methods=["GET", "POST", "DELETE"]))
    app.add_middleware(BodyLimit, limit=store.settings.server.max_body_bytes)
    app.add_middleware(Unexpected)
    paths = [p for p in (getattr(r, "path", None) for r in app.routes) if isinstance(p, str)]
    paths += [op.path for op in OPS.values()]
    app.add_middleware(Instrumented, metrics=state.metrics, routes=paths)
    return app


def _no_native_telemetry() -> dict[str, Any]:
    """FastAPI's own telemetry, turned off. From 0.165 FastAPI traces every request once a
    tracer provider is set, with the raw path and query (``?user_id=`` of an MCP URL) and
    the messages of exceptions; this app's spans (:mod:`.instrument`) name the route and
    carry ids and counts only."""
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "metrics": False, "logs": False}}


def _serve_metrics(state: ServerState, port: int | None) -> Callable[[], None]:
    """Start the metrics port, if one is set; returns the function that stops it."""
    if port is None:
        return lambda: None
    state.metrics_url, stop = state.metrics.serve(port)
    log.info("metrics on %s (no key: loopback only)", state.metrics_url)
    return stop


def _jsonl(store: AgentMemory, tenant_id: str, kinds: Any) -> Iterator[bytes]:
    for line in export_lines(store.context, tenant_id=tenant_id, kinds=kinds):
        yield dumps(line) + b"\n"


def _validation_error(exc: RequestValidationError) -> ValidationError:
    """The first problem FastAPI found, as a ValidationError naming the argument."""
    errors = exc.errors()
    if not errors:
        return ValidationError("body", "invalid request")
    err = errors[0]
    loc = [str(p) for p in err.get("loc", ()) if p != "body"]
    if loc[:1] in (["args"], ["identity"]):
        loc = loc[1:]
    # a union's failed member is named in the location (kinds.list[str]); keep the field
    field = loc[0] if loc else "body"
    if err.get("type") == "json_invalid":
        return ValidationError("body", f"not valid JSON: {err.get('msg', '')}")
    if field == "body" and err.get("type") in ("model_attributes_type", "dict_type"):
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


class Unexpected:
    """Answers 500 for an exception a route did not expect, logged with its traceback, and
    keeps the connection. (Starlette's outermost handler sends the same answer but raises the
    exception again, and the HTTP server then closes the connection: the client's next call
    on it failed with a reset.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:  # too late for an answer of its own
                raise
            log.error(
                "internal error in %s %s: %s",
                scope.get("method"),
                scope.get("path"),
                type(exc).__name__,
                exc_info=exc,
            )
            name = type(exc).__name__
            err = AgentMemError(f"internal server error ({name}); see the server log")
            await send_error(err, scope, receive, send)


class BodyLimit:
    """Answers 413 for a request body over ``limit`` bytes, before the app reads any of it.

    A declared ``Content-Length`` is checked at once (the HTTP server holds the body to that
    length); a chunked body is read up to the limit first and then handed to the app.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunked = False
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = int(value) if value.isdigit() else 0
                if declared > self.limit:
                    await send_error(self._too_large(declared), scope, receive, send)
                    return
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if not chunked:
            await self.app(scope, receive, send)
            return
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            part = message.get("body", b"")
            size += len(part)
            if size > self.limit:
                await send_error(self._too_large(size), scope, receive, send)
                return
            parts.append(part)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(parts), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self, size: int) -> ValidationError:
        return ValidationError(
            "body",
            f"the request body is at least {size} bytes; this server accepts at most "
            f"{self.limit} (AGENTMEM_MAX_BODY_BYTES)",
            too_large=True,
        )


__all__ = ["BodyLimit", "ServerState", "create_app"]
