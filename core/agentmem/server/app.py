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
``POST /v1/flush``             wait until both indexes caught up with the key's tenant
                               (``{"timeout": s}``); with the whole store (operator key)
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
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..errors import AgentMemError, ValidationError
from ..inspector.access import KeyAccess
from ..inspector.app import ui_router
from ..memory import AgentMemory
from ..wire.ops import OPS
from .admin_routes import admin_router, server_router
from .docs import docs_router
from .instrument import Instrumented
from .mcp_http import McpGateway
from .responses import error_response, send_error
from .routes import OpsFastPath, op_handlers, ops_router, validation_error
from .state import ServerState
from .transfer_routes import import_router

log = logging.getLogger("agentmem.server")


def create_app(store: AgentMemory, *, run_jobs: bool = True) -> FastAPI:
    """The ASGI app serving ``store`` (which it does not close: its opener does).

    Args:
        store: The open memory every request binds.
        run_jobs: Run the background jobs (judge, idle sessions, retention).
    """
    state = ServerState(store, run_jobs=run_jobs)
    gateway = McpGateway(state, send_error)

    app = FastAPI(
        **_no_native_telemetry(),
        title="agentmem",
        version=__version__,
        description="A shared agentmem memory over HTTP. Every route but /health and this "
        "documentation needs an API key (`Authorization: Bearer <key>`; the Authorize button "
        "takes it for the calls made from this page); the key's tenant is the only one "
        "reachable.",
        lifespan=_lifespan(state, gateway),
        docs_url=None,  # served by .docs, with Swagger UI's files from the package
        openapi_url=None,
    )
    app.state.agentmem = state

    @app.exception_handler(AgentMemError)
    async def _agentmem_error(request: Request, exc: AgentMemError) -> Response:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        return error_response(validation_error(exc.errors()))

    app.include_router(docs_router(app.openapi))

    app.include_router(server_router(state))
    handlers = op_handlers(store, state.principal)
    app.include_router(ops_router(handlers))
    jobs = state.jobs.status if run_jobs else None
    app.include_router(ui_router(store, KeyAccess(state.principal), jobs=jobs))
    app.include_router(admin_router(state))
    app.include_router(import_router(store))
    app.router.routes.append(Route("/mcp", endpoint=gateway, methods=["GET", "POST", "DELETE"]))
    app.add_middleware(OpsFastPath, handlers=handlers)
    app.add_middleware(BodyLimit, limit=store.settings.server.max_body_bytes)
    app.add_middleware(Unexpected)
    paths = [p for p in (getattr(r, "path", None) for r in app.routes) if isinstance(p, str)]
    paths += [op.path for op in OPS.values()]
    app.add_middleware(Instrumented, metrics=state.metrics, routes=paths)
    return app


def _lifespan(
    state: ServerState, gateway: McpGateway
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Start-up and shut-down of the app: the embedder warmed, the MCP gateway and the jobs
    running, then on shut-down the jobs stopped and the indexer caught up before the store
    closes."""
    store, run_jobs = state.store, state.run_jobs

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

    return lifespan


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
