"""The changes the inspector offers, each confirmed on a page of its own (``GET``) and made
by posting that page's form (``POST``, with the viewer's CSRF token):

===================================  ===========================================================
``/ui/memories/<id>/forget``         forget a row and what was derived from it (``forget``)
``/ui/erase?tenant=T&user=U``        erase a user, every byte in every store; the form asks for
                                     the user id typed again; the answer is the receipt
``/ui/sessions/close?tenant=...``    run a session's close pipeline again
``/ui/login``, ``/ui/logout``        (server) keep the API key in the HttpOnly cookie, or drop it
===================================  ===========================================================

Each needs the inspector started ``--writable`` (``agentmem ui``) or a key the API lets do it
(``agentmem serve``; erasing needs an admin key). A read-only inspector shows no form and
refuses the posts.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import parse_qs, urlsplit

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ..errors import AuthError, ValidationError
from ..maintenance import browse
from .access import COOKIE, KeyAccess
from .render import PREFIX, SECURITY_HEADERS, Ui, guarded


async def read_form(request: Request) -> dict[str, str]:
    """The fields of a posted ``application/x-www-form-urlencoded`` form (first values)."""
    body = (await request.body()).decode("utf-8", errors="replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


Form = Annotated[dict[str, str], Depends(read_form)]


def _field(form: dict[str, str], name: str) -> str | None:
    value = form.get(name, "").strip()
    return value or None


class Actions:
    """The confirmation pages and the posts (see the module docstring)."""

    def __init__(self, ui: Ui) -> None:
        self.ui = ui

    @property
    def ctx(self) -> Any:
        return self.ui.store.context

    # -- forget ---------------------------------------------------------------------------
    @guarded
    def confirm_forget(self, request: Request, memory_id: str) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        viewer.require("forget")
        detail = browse.row_detail(self.ctx, viewer, memory_id)
        return self.ui.page(request, "forget.html", viewer, detail=detail)

    @guarded
    def forget(self, request: Request, memory_id: str, form: Form) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        self.ui.csrf.check(viewer, form.get("csrf"))
        done = browse.forget(self.ctx, viewer, memory_id)
        return self.ui.page(
            request, "done.html", viewer, action="forget", memory_id=memory_id, done=done
        )

    # -- erase a user -----------------------------------------------------------------------
    @guarded
    def confirm_erase(self, request: Request) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        viewer.require("erase")
        tenant = viewer.identity(request.query_params.get("tenant")).tenant_id
        user = request.query_params.get("user", "").strip()
        if not user:
            raise ValidationError("user", "name the user to erase")
        owned = browse.rows(self.ctx, viewer, tenant, {"user_id": user})
        return self.ui.page(
            request, "erase.html", viewer, tenant=tenant, user=user, sample=owned[:10]
        )

    @guarded
    def erase(self, request: Request, form: Form) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        self.ui.csrf.check(viewer, form.get("csrf"))
        tenant = viewer.identity(_field(form, "tenant")).tenant_id
        user = _field(form, "user")
        if user is None or _field(form, "confirm") != user:
            raise ValidationError("confirm", "type the user id again to confirm the erasure")
        receipt = browse.erase_user(self.ctx, viewer, tenant, user)
        return self.ui.page(request, "done.html", viewer, action="erase", receipt=receipt)

    # -- close a session again --------------------------------------------------------------
    @guarded
    def confirm_close(self, request: Request) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        viewer.require("close")
        q = request.query_params
        identity = viewer.identity(q.get("tenant"), q.get("user"), q.get("agent"), q.get("session"))
        return self.ui.page(request, "close.html", viewer, identity=identity)

    @guarded
    def close(self, request: Request, form: Form) -> HTMLResponse:
        viewer = self.ui.viewer(request)
        self.ui.csrf.check(viewer, form.get("csrf"))
        identity = viewer.identity(
            _field(form, "tenant"),
            _field(form, "user"),
            _field(form, "agent"),
            _field(form, "session"),
        )
        result = browse.close_again(self.ctx, viewer, identity)
        return self.ui.page(
            request, "done.html", viewer, action="close", identity=identity, result=result
        )

    # -- login (server) -----------------------------------------------------------------------
    def login_form(self, request: Request) -> HTMLResponse:
        return self.ui.page(
            request, "login.html", None, next=_next(request.query_params.get("next"))
        )

    def login(self, request: Request, form: Form) -> Response:
        access = self.ui.access
        assert isinstance(access, KeyAccess)
        key = form.get("key", "").strip()
        target = _next(form.get("next"))
        try:
            access.check(key)
        except AuthError as exc:
            return self.ui.page(request, "login.html", None, 401, next=target, problem=str(exc))
        response = RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)
        response.set_cookie(
            COOKIE,
            key,
            httponly=True,
            samesite="strict",
            path=PREFIX,
            secure=request.url.scheme == "https",
        )
        return response

    def logout(self, request: Request) -> Response:
        response = RedirectResponse(f"{PREFIX}/login", status_code=303, headers=SECURITY_HEADERS)
        response.delete_cookie(COOKIE, path=PREFIX, httponly=True, samesite="strict")
        return response


def _next(value: str | None) -> str:
    """Where to go after logging in: a page of the inspector, never another site."""
    if value:
        parts = urlsplit(value)
        if not parts.scheme and not parts.netloc and parts.path.startswith(PREFIX):
            return parts.path
    return PREFIX
