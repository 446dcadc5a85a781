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


def reaches_agent_state(pinned_user: str | None) -> bool:
    """Whether a key pinned to ``pinned_user`` (None: to no user) may read and write agent
    state (``state.get/set/delete/list``, the agent-state tools, the inspector's state).

    An agent's state is one set of values shared by every user the agent serves: a value
    set while serving one user is read while serving the next, and its time moves with
    each. A key that may act for one user only would read the others' activity there (and
    write into theirs), so it may not; a key pinned to the agent alone, or to nothing, may.
    """
    return pinned_user is None


def require_agent_state(pinned_user: str | None, *, key_id: str) -> None:
    """Raise unless the key ``key_id``, pinned to ``pinned_user``, may reach agent state
    (:func:`reaches_agent_state`).

    Raises:
        AuthError: the key is pinned to a user (``reason="forbidden"``).
    """
    if not reaches_agent_state(pinned_user):
        raise AuthError(
            f"this API key is pinned to user_id={pinned_user!r}; agent state is shared by "
            "every user of the agent, so a key pinned to a user cannot read or write it "
            "(use a key pinned to the agent, or one not pinned)",
            reason="forbidden",
            key_id=key_id,
        )


__all__ = ["reaches_agent_state", "require_agent_state", "resolve_identity"]
