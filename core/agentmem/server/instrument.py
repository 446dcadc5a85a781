"""Every HTTP request of the server, timed for the metrics and, when tracing is on, wrapped
in a server span (``POST /v1/ops/recall``) that continues the caller's trace (a
``traceparent`` header) and is the parent of the operation's spans.

The route is named by its template, never the raw path: a path that is no route of the
server is counted as :data:`~agentmem.server.metrics.OTHER_ROUTE`.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..telemetry import tracing
from .metrics import OTHER_ROUTE, ServerMetrics


class Instrumented:
    """ASGI middleware: the outermost one, so it sees every answer (413, 429, 500 too).

    Args:
        app: The app to wrap.
        metrics: Where the request counts and latencies go.
        routes: The paths of the app's routes (all are plain paths, without parameters): a
            request refused before routing (413) is still counted under its route, and any
            other path as :data:`OTHER_ROUTE`.
    """

    def __init__(self, app: ASGIApp, metrics: ServerMetrics, routes: Collection[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = frozenset(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        method = str(scope.get("method", "GET"))
        status = 500  # unless the app answers

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        with tracing.span(method, **_server_span(scope)) as span:
            try:
                await self.app(scope, receive, sending)
            finally:
                route = self.route_of(scope)
                self.metrics.observe_request(route, method, status, time.perf_counter() - started)
                if span is not None:
                    span.update_name(f"{method} {route}")
                    span.set_attributes(
                        {
                            "http.request.method": method,
                            "http.route": route,
                            "http.response.status_code": status,
                        }
                    )
                    if status >= 500:
                        tracing.failed(span, str(status))

    def route_of(self, scope: Scope) -> str:
        """The template of the route that answered (or would have answered) the request."""
        matched = getattr(scope.get("route"), "path", None)
        if isinstance(matched, str):
            return matched
        path = scope.get("path", "")
        return path if path in self.routes else OTHER_ROUTE


def _server_span(scope: Scope) -> dict[str, Any]:
    """The span options of a request: a server span in the caller's trace, if it sent one
    (only worked out when tracing is on)."""
    if not tracing.enabled():
        return {}
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", ())}
    return {"kind": SpanKind.SERVER, "context": propagate.extract(headers)}
