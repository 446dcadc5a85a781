"""Who a page is shown to (:class:`~agentmem.maintenance.browse.Viewer`), and the CSRF token
of the changes.

- :class:`LocalAccess` (``agentmem ui``): whoever reaches the loopback port owns the data dir;
  every tenant, writable only when started ``--writable``.
- :class:`KeyAccess` (``/ui`` on ``agentmem serve``): an API key, like every route. A browser
  sends no ``Authorization`` header when it opens a page, so the login form
  (``POST /ui/login``) checks the key and keeps it in a cookie the pages' scripts cannot
  read (``HttpOnly``), sent to ``/ui`` only and never from another site
  (``SameSite=Strict``). Each request checks the key again (a revoked key stops at once)
  and counts against its rate limit. An ``Authorization: Bearer`` header works too.

A change is a POST carrying :meth:`Csrf.token` of its viewer: an HMAC of the viewer's name
under a secret of the process, which another site can neither read nor forge.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping
from typing import Protocol

from fastapi import Request

from ..errors import AuthError
from ..maintenance.browse import Viewer
from ..server.keys import ApiKey

#: The cookie holding the API key of a ``/ui`` session on the server.
COOKIE = "agentmem_ui_key"
#: Answers a missing, wrong or revoked key gets by redirecting to the login form.
LOGIN_REASONS = frozenset({"missing", "invalid", "revoked"})


class LoginRequired(Exception):
    """The request presented no usable key: show the login form."""


class Access(Protocol):
    """How the pages learn who is looking."""

    #: Whether the pages have a login form (the server's do).
    login: bool

    def viewer(self, request: Request) -> Viewer: ...


class LocalAccess:
    """The data dir's owner: every tenant (see the module docstring)."""

    login = False

    def __init__(self, *, writable: bool) -> None:
        self._viewer = Viewer.everyone(writable=writable)

    def viewer(self, request: Request) -> Viewer:
        return self._viewer


class KeyAccess:
    """An API key of the server, from the login cookie or a bearer header.

    Args:
        principal: Checks a request's headers and returns its key (rate limit included):
            :meth:`agentmem.server.state.ServerState.principal`.
    """

    login = True

    def __init__(self, principal: Callable[[Mapping[str, str]], ApiKey]) -> None:
        self._principal = principal

    def viewer(self, request: Request) -> Viewer:
        cookie = request.cookies.get(COOKIE)
        headers: Mapping[str, str] = (
            {"authorization": f"Bearer {cookie}"} if cookie else request.headers
        )
        try:
            return viewer_of(self._principal(headers))
        except AuthError as exc:
            if exc.reason in LOGIN_REASONS:
                raise LoginRequired from exc
            raise

    def check(self, key: str) -> ApiKey:
        """The live key ``key`` is (for the login form)."""
        return self._principal({"authorization": f"Bearer {key.strip()}"})


def viewer_of(key: ApiKey) -> Viewer:
    """What a key may see and do in the pages: its tenant and pins; the changes the API lets
    it make (forget and close for every key, erase for an admin key); the tenant list for an
    operator key."""
    return Viewer(
        tenant_id=key.tenant_id,
        user_id=key.user_id,
        agent_id=key.agent_id,
        operator=key.operator,
        admin=key.admin,
        writable=True,
        name=key.id,
    )


class Csrf:
    """CSRF tokens bound to a viewer, under a secret of this process."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)

    def token(self, viewer: Viewer) -> str:
        return hmac.new(self._secret, viewer.name.encode(), hashlib.sha256).hexdigest()

    def check(self, viewer: Viewer, presented: str | None) -> None:
        """Raise :class:`AuthError` unless ``presented`` is the viewer's token."""
        if not presented or not hmac.compare_digest(presented, self.token(viewer)):
            raise AuthError(
                "this form is stale or did not come from this page (CSRF token missing or "
                "wrong): reload the page and try again",
                reason="forbidden",
            )
