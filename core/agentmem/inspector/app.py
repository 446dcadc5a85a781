"""The inspector's routes (:func:`ui_router`), mounted under ``/ui`` by ``agentmem serve``,
and the app of ``agentmem ui`` (:func:`create_ui_app`), which serves only them.

Example:
    >>> app = create_ui_app(AgentMemory("./memdata", read_only=True), writable=False)  # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=8721)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import PlainTextResponse, RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..memory import AgentMemory
from .access import Access, LocalAccess
from .actions import Actions
from .pages import Pages
from .render import PREFIX, Ui

__all__ = ["HostCheck", "create_ui_app", "hostname", "ui_router"]


def ui_router(
    store: AgentMemory, access: Access, *, jobs: Callable[[], Any] | None = None
) -> APIRouter:
    """The inspector's routes over ``store`` for viewers ``access`` decides; ``jobs`` gives
    the background jobs' status (the server's), if any."""
    ui = Ui(store, access, jobs=jobs)
    pages, actions = Pages(ui), Actions(ui)
    router = APIRouter(prefix=PREFIX, include_in_schema=False)
    get, post = ["GET"], ["POST"]
    for path, endpoint, methods in (
        ("", pages.start, get),
        ("/", pages.start, get),
        ("/static/style.css", pages.style, get),
        ("/tenants/{tenant}", pages.tenant, get),
        ("/rows", pages.rows, get),
        ("/state", pages.state, get),
        ("/memories/{memory_id}", pages.memory, get),
        ("/search", pages.search, get),
        ("/memories/{memory_id}/forget", actions.confirm_forget, get),
        ("/memories/{memory_id}/forget", actions.forget, post),
        ("/erase", actions.confirm_erase, get),
        ("/erase", actions.erase, post),
        ("/sessions/close", actions.confirm_close, get),
        ("/sessions/close", actions.close, post),
    ):
        router.add_api_route(path, endpoint, methods=methods)
    if access.login:
        router.add_api_route("/login", actions.login_form, methods=get)
        router.add_api_route("/login", actions.login, methods=post)
        router.add_api_route("/logout", actions.logout, methods=post)
    return router


def create_ui_app(
    store: AgentMemory, *, writable: bool, hosts: Collection[str] | None = None
) -> FastAPI:
    """The app of ``agentmem ui``: the inspector's pages over ``store``, for whoever reaches
    it (every tenant; changes only when ``writable``).

    Args:
        store: The open memory (opened read-only unless ``writable``).
        writable: Offer the changes (forget, erase a user, close a session again).
        hosts: The host names the app answers (its loopback names, whatever the port): a
            web page of another site that points a name of its own at 127.0.0.1 (DNS
            rebinding) cannot read the pages. None: any.
    """
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.include_router(ui_router(store, LocalAccess(writable=writable)))

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse(PREFIX)

    if hosts is not None:
        app.add_middleware(HostCheck, hosts=frozenset(hosts))
    return app


class HostCheck:
    """Answers 421 to a request whose ``Host`` header names a host not in ``hosts`` (the
    port does not matter)."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"host", b"").decode("latin-1").lower()
            if hostname(header) not in self.hosts:
                response = PlainTextResponse(
                    "this inspector answers on its loopback address only", status_code=421
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def hostname(host_header: str) -> str:
    """The host name of a ``Host`` header, without its port (``[::1]:80`` is ``::1``)."""
    if host_header.startswith("["):
        return host_header[1:].partition("]")[0]
    return host_header.rpartition(":")[0] if ":" in host_header else host_header
