"""What identity a request made with an API key acts for (the server and the client check it
the same way, so a forbidden bind fails in the client at once, not at the first call).

Example:
    >>> from datetime import UTC, datetime
    >>> key = ApiKey("k1", "acme", "u1", None, None, False, datetime.now(UTC))
    >>> resolve_identity(key, session_id="s1").user_id
    'u1'
"""

from __future__ import annotations

from . import validation
from .errors import AuthError
from .models import Identity
from .results import ApiKey


def resolve_identity(
    key: ApiKey,
    *,
    tenant_id: str | None = None,
    user_id: str | None = None,
    agent_id: str | None = None,
    session_id: str | None = None,
) -> Identity:
    """The identity a request acts for: the key's tenant, and the asked-for user, agent and
    session within what the key allows (a pinned user or agent is used when none is asked).

    Raises:
        AuthError: another tenant, or another user/agent than the key is pinned to
            (``reason="forbidden"``).
        ValidationError: a malformed identity component.
    """
    if tenant_id is not None and tenant_id != key.tenant_id:
        raise AuthError(
            f"this API key belongs to tenant {key.tenant_id!r}; it cannot act for another "
            "tenant (bind without tenant_id, or use that tenant's key)",
            reason="forbidden",
            key_id=key.id,
        )
    user = _pinned(key.id, "user_id", key.user_id, validation.identity(user_id, "user_id"))
    agent = _pinned(key.id, "agent_id", key.agent_id, validation.identity(agent_id, "agent_id"))
    return Identity(
        tenant_id=key.tenant_id,
        user_id=user,
        agent_id=agent,
        session_id=validation.identity(session_id, "session_id"),
    )


def _pinned(key_id: str, field: str, pinned: str | None, asked: str | None) -> str | None:
    if pinned is None:
        return asked
    if asked is not None and asked != pinned:
        raise AuthError(
            f"this API key is pinned to {field}={pinned!r}; it cannot act for another "
            f"{field.removesuffix('_id')}",
            reason="forbidden",
            key_id=key_id,
            field=field,
        )
    return pinned


__all__ = ["resolve_identity"]
