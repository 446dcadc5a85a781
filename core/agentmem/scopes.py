"""Where rows live (partitions) and who may see them (scopes).

Every row has a home ``scope`` column and a ``partition`` (the owner of that scope):

=========  ==================================  =======================================
scope      rows                                partition
=========  ==================================  =======================================
session    chat messages, tool outputs          ``conv:u:<user>`` (or ``conv:a:<agent>``)
user       explicit user facts                  ``user:<user>``
agent      explicit agent facts                 ``agent:<agent>``
tenant     document chunks, tenant facts        ``tenant``
=========  ==================================  =======================================

Recall scopes are views over those rows: ``session`` is this session's conversation rows,
``history`` the same partition's other sessions, and ``any`` all five.
:func:`visible_scope` is the single gate every recalled row passes: it re-checks the row's
tenant and owner against the bound identity, whatever the indexes returned.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ScopeError
from .models import Identity


def conversation_partition(identity: Identity) -> str | None:
    if identity.user_id is not None:
        return f"conv:u:{identity.user_id}"
    if identity.agent_id is not None:
        return f"conv:a:{identity.agent_id}"
    return None


def home_partition(identity: Identity, scope: str) -> str:
    """Partition a new row of ``scope`` goes to; raises ScopeError if the identity lacks it."""
    if scope == "session":
        require(identity, "session")
        part = conversation_partition(identity)
        if part is None:
            # A session with neither user nor agent: its own conversation partition.
            return f"conv:s:{identity.session_id}"
        return part
    if scope == "user":
        require(identity, "user")
        return f"user:{identity.user_id}"
    if scope == "agent":
        require(identity, "agent")
        return f"agent:{identity.agent_id}"
    if scope == "tenant":
        return "tenant"
    raise ScopeError("scope", f"rows cannot be written to scope {scope!r}")


def require(identity: Identity, scope: str) -> None:
    """Raise ScopeError when ``scope`` needs an identity component that is not bound."""
    missing = {
        "session": ("session_id", identity.session_id),
        "user": ("user_id", identity.user_id),
        "agent": ("agent_id", identity.agent_id),
    }.get(scope)
    if missing is not None and missing[1] is None:
        raise ScopeError(
            "scope",
            f"scope {scope!r} needs {missing[0]}, but this memory is bound without one "
            f"(pass {missing[0]}= to AgentMemory.bind)",
        )
    if scope == "history" and identity.user_id is None and identity.agent_id is None:
        raise ScopeError(
            "scope",
            "scope 'history' needs user_id or agent_id, but this memory is bound with neither",
        )


@dataclass(frozen=True, slots=True)
class ScopePlan:
    """How to search one recall scope: its partition and the narrowing filters."""

    scope: str
    partition: str
    session: str | None = None
    not_session: str | None = None


def plan(identity: Identity, scope: str) -> list[ScopePlan]:
    """Partitions and filters for a recall ``scope`` (``any`` skips scopes it cannot serve)."""
    if scope == "any":
        plans: list[ScopePlan] = []
        for name in ("session", "history", "user", "agent", "tenant"):
            try:
                plans.extend(plan(identity, name))
            except ScopeError:
                continue
        return plans
    require(identity, scope)
    if scope == "session":
        return [ScopePlan("session", home_partition(identity, "session"), identity.session_id)]
    if scope == "history":
        part = conversation_partition(identity)
        assert part is not None
        return [ScopePlan("history", part, not_session=identity.session_id)]
    return [ScopePlan(scope, home_partition(identity, scope))]


def visible_scope(
    identity: Identity,
    *,
    tenant_id: str,
    scope: str,
    partition: str,
    session_id: str | None,
    user_id: str | None,
    agent_id: str | None,
) -> str | None:
    """The recall scope under which ``identity`` may see a row, or None if it may not."""
    if tenant_id != identity.tenant_id:
        return None
    if scope == "tenant":
        return "tenant" if partition == "tenant" else None
    if scope == "user":
        ok = identity.user_id is not None and user_id == identity.user_id
        return "user" if ok and partition == f"user:{identity.user_id}" else None
    if scope == "agent":
        ok = identity.agent_id is not None and agent_id == identity.agent_id
        return "agent" if ok and partition == f"agent:{identity.agent_id}" else None
    if scope == "session":
        if identity.session_id is not None and session_id == identity.session_id:
            try:
                own = home_partition(identity, "session")
            except ScopeError:
                return None
            return "session" if partition == own else None
        conv = conversation_partition(identity)
        if conv is None or partition != conv:
            return None
        if identity.user_id is not None and user_id != identity.user_id:
            return None
        if identity.user_id is None and agent_id != identity.agent_id:
            return None
        return "history"
    return None
