"""Rendering the pages: the Jinja2 environment (every value escaped), the headers every page
carries, and the error pages.

Stored memories are untrusted input (an agent stores what users and tools said): the
templates never mark a value safe, so ``<script>`` or a quote that would close an attribute
arrives as text. The Content-Security-Policy allows no script at all and nothing from another
origin, so even markup that slipped through could not run or load anything; pages are not
cached (they show memory content) and not framed.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from ..errors import AgentMemError
from ..maintenance.browse import Viewer
from ..wire.errors import status_of
from .access import Access, Csrf, LoginRequired

log = logging.getLogger("agentmem.inspector")

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

#: Headers of every page (see the module docstring).
SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
#: Where the pages live.
PREFIX = "/ui"


def _when(value: datetime | None) -> str:
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _ago(value: datetime | None) -> str:
    if value is None:
        return "-"
    seconds = max((datetime.now(UTC) - value).total_seconds(), 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _short(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _pretty(value: Any, indent: int | None = 2) -> str:
    """JSON for people (``indent=None``: on one line); the page escapes it like any text."""
    return json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=True, default=str)


def _query(values: Mapping[str, Any]) -> str:
    """A query string of the values that are set."""
    return urlencode({k: v for k, v in values.items() if v not in (None, "")}, doseq=True)


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(("html",), default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=_when, ago=_ago, num=_num, size=_size, short=_short, pretty=_pretty, query=_query
    )
    env.globals["prefix"] = PREFIX
    return env


class Ui:
    """What every page needs: the store, who is looking, the CSRF tokens, the templates."""

    def __init__(self, store: Any, access: Access, *, jobs: Callable[[], Any] | None) -> None:
        self.store = store
        self.access = access
        self.csrf = Csrf()
        self.jobs = jobs
        self.env = environment()

    def viewer(self, request: Request) -> Viewer:
        return self.access.viewer(request)

    def page(
        self,
        request: Request,
        template: str,
        viewer: Viewer | None,
        status: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        body = self.env.get_template(template).render(
            viewer=viewer,
            csrf=self.csrf.token(viewer) if viewer is not None else "",
            login=self.access.login,
            path=request.url.path,
            **context,
        )
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)

    def error(self, request: Request, exc: AgentMemError) -> HTMLResponse:
        status = status_of(exc)
        if status >= 500:
            log.error("inspector page %s failed: %s", request.url.path, type(exc).__name__)
        return self.page(request, "error.html", None, status, status_code=status, message=str(exc))


Handler = TypeVar("Handler", bound=Callable[..., Response])


def guarded(handler: Handler) -> Handler:
    """Answer a page's failures as pages: the login form when the key is missing or wrong,
    an error page (with the error's HTTP status) for an agentmem error."""

    @functools.wraps(handler)
    def wrapper(self: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        try:
            return handler(self, request, *args, **kwargs)
        except LoginRequired:
            target = f"{PREFIX}/login?" + urlencode({"next": request.url.path})
            return RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)
        except AgentMemError as exc:
            ui: Ui = self.ui
            return ui.error(request, exc)

    return wrapper  # type: ignore[return-value]
