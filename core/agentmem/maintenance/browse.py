"""Looking around a store: tenants, owners, tiers, sessions, rows and a row's whole story, for
whoever is looking (:class:`Viewer`), and the few changes the inspector offers.

A :class:`Viewer` is the data dir's owner (``agentmem ui``: every tenant) or an API key on the
server (its tenant, and the user or agent it is pinned to). Every read here checks the row
against the viewer (:func:`may_read`) the way the operations check a bound identity: a key
pinned to a user sees what that user could recall, an unpinned key its whole tenant. The
changes (forget, erase a user, close a session again) call the same operations the API does,
as an identity the viewer may act for.

Example:
    >>> viewer = Viewer.everyone(writable=False)
    >>> [t.key for t in tenants(ctx, viewer)]  # doctest: +SKIP
    ['acme', 'globex']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from .. import scopes as scope_rules
from .. import validation
from ..context import StoreContext
from ..derived import forget as forget_op
from ..derived import supersession
from ..errors import AuthError, NotFoundError, ValidationError
from ..key_identity import reaches_agent_state, require_agent_state
from ..models import (
    MESSAGE_KINDS,
    TIER_LONG_DETAIL,
    TIER_LONG_SUMMARY,
    TIER_MID,
    ErasureReceipt,
    Identity,
    MemoryItem,
)
from ..storage.browse import AuditEntry, GroupSpan, Span
from ..storage.rows import Row
from ..storage.sessions import SessionInfo
from ..tiers import sessions as session_tiers
from ..tiers.sessions import CloseResult
from . import erase as erase_op

__all__ = [
    "RowDetail",
    "SessionView",
    "StateEntry",
    "Supersession",
    "TenantOverview",
    "TierSpan",
    "Viewer",
    "agent_state",
    "close_again",
    "erase_user",
    "forget",
    "identity_for",
    "may_read",
    "overview",
    "row_detail",
    "rows",
    "tenants",
]

#: Rows per page of :func:`rows`.
PAGE = 50


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking, and what they may change.

    Attributes:
        tenant_id: The one tenant reachable; None: every tenant (the data dir's owner).
        user_id: The user a key is pinned to.
        agent_id: The agent a key is pinned to.
        operator: May list every tenant (names and counts).
        admin: May erase a user of the tenant.
        writable: May forget rows and close sessions.
        name: Who this is, for what binds to them (a key's id, ``local``).
    """

    tenant_id: str | None
    user_id: str | None = None
    agent_id: str | None = None
    operator: bool = False
    admin: bool = False
    writable: bool = False
    name: str = "local"

    @classmethod
    def everyone(cls, *, writable: bool) -> Viewer:
        """The owner of the data dir: every tenant, every row."""
        return cls(tenant_id=None, operator=True, admin=writable, writable=writable)

    @property
    def pinned(self) -> bool:
        """Pinned to a user or an agent: sees that identity's rows, not its tenant's."""
        return self.user_id is not None or self.agent_id is not None

    def reaches(self, tenant_id: str) -> bool:
        return self.tenant_id is None or self.tenant_id == tenant_id

    def require_tenant(self, tenant_id: str) -> None:
        if not self.reaches(tenant_id):
            raise AuthError(
                f"this key belongs to tenant {self.tenant_id!r}; it cannot read another",
                reason="forbidden",
            )

    def identity(
        self,
        tenant_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> Identity:
        """The identity asked for, within what the viewer may act for (a pinned user or
        agent is used when none is asked; the viewer's tenant when none is named).

        Raises:
            AuthError: another tenant, or another user or agent than a pin.
            ValidationError: no tenant (the data dir's owner must name one), or a malformed
                identity.
        """
        tenant = validation.identity(tenant_id, "tenant") or self.tenant_id
        if tenant is None:
            raise ValidationError("tenant", "name the tenant to act for")
        self.require_tenant(tenant)
        user = _pinned("user", self.user_id, validation.identity(user_id, "user"))
        agent = _pinned("agent", self.agent_id, validation.identity(agent_id, "agent"))
        return Identity(tenant, user, agent, validation.identity(session_id, "session"))

    def require(self, action: str) -> None:
        """Raise :class:`AuthError` unless the viewer may ``forget``/``close``/``erase``."""
        allowed = self.admin if action == "erase" else self.writable
        if not allowed:
            raise AuthError(
                f"{action} is not allowed here: the inspector is read-only (start it with "
                "--writable), or this key may not (erasing needs an admin key)",
                reason="forbidden",
            )


def _pinned(name: str, pinned: str | None, asked: str | None) -> str | None:
    if pinned is not None and asked not in (None, pinned):
        raise AuthError(f"this key is pinned to {name} {pinned!r}", reason="forbidden")
    return pinned or asked


def identity_for(viewer: Viewer, row: Row) -> Identity:
    """The identity ``viewer`` would act as to reach ``row`` (its pins win)."""
    item = row.item
    return Identity(
        tenant_id=item.tenant_id,
        user_id=viewer.user_id or item.user_id,
        agent_id=viewer.agent_id or item.agent_id,
        session_id=item.session_id,
    )


def may_read(viewer: Viewer, row: Row) -> bool:
    """Whether ``viewer`` may see ``row``: its tenant, and with a pinned key only a row the
    pinned identity could read (anonymized rows never)."""
    if row.item.anonymized_at is not None or not viewer.reaches(row.item.tenant_id):
        return False
    if not viewer.pinned:
        return True
    return scope_rules.visible_row(identity_for(viewer, row), row) is not None


# -- who has what ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TierSpan:
    """Live rows of one tier (or kind of row), with the inspector page (``rows`` or
    ``state``) and filters that list them."""

    name: str
    span: Span
    filters: Mapping[str, str]
    page: str = "rows"


@dataclass(frozen=True, slots=True)
class SessionView:
    """A session with messages, and its close (None while it was never closed)."""

    partition: str
    session_id: str
    user_id: str | None
    agent_id: str | None
    span: Span
    closed: SessionInfo | None


@dataclass(frozen=True, slots=True)
class TenantOverview:
    """What one tenant holds (for one user/agent when the viewer is pinned)."""

    tenant_id: str
    users: list[Span]
    agents: list[Span]
    tiers: list[TierSpan]
    sessions: list[SessionView]


def tenants(ctx: StoreContext, viewer: Viewer) -> list[Span]:
    """Every tenant with rows for an operator; the viewer's own tenant otherwise (for a
    pinned key, always, counting only its own rows: whether and when others wrote is not
    its business)."""
    ctx.check_open()
    browse = ctx.records.browse
    if viewer.pinned and viewer.tenant_id is not None:
        groups = browse.groups(viewer.tenant_id, user_id=viewer.user_id, agent_id=viewer.agent_id)
        return [_sum(viewer.tenant_id, [g.span for g in groups])]
    found = browse.tenants()
    if viewer.operator:
        return found
    return [t for t in found if t.key == viewer.tenant_id]


def overview(ctx: StoreContext, viewer: Viewer, tenant_id: str) -> TenantOverview:
    """Users, agents, tiers and sessions of ``tenant_id`` (see :class:`TenantOverview`)."""
    tenant = _tenant(tenant_id)
    viewer.require_tenant(tenant)
    ctx.check_open()
    browse = ctx.records.browse
    user, agent = viewer.user_id, viewer.agent_id
    closed = {(p, info.session_id): info for _, p, info in ctx.records.sessions.all(tenant)}
    sessions = [
        SessionView(s.partition, s.session_id, s.user_id, s.agent_id, s.span, closed.get(k))
        for s in browse.sessions(tenant, user_id=user, agent_id=agent)
        for k in [(s.partition, s.session_id)]
    ]
    states = browse.agent_state(tenant, agent) if reaches_agent_state(user) else []
    tiers = _tiers(browse.groups(tenant, user_id=user, agent_id=agent))
    if states:
        tiers.append(TierSpan("agent state", _sum(None, states), {}, page="state"))
    # a pinned key's counts and times are of its own rows: another user's writes under an
    # agent the key shares must not show up in that agent's count or last write
    return TenantOverview(
        tenant_id=tenant,
        users=browse.owners(tenant, "user_id", user_id=user, agent_id=agent),
        agents=browse.owners(tenant, "agent_id", user_id=user, agent_id=agent),
        tiers=tiers,
        sessions=sessions,
    )


@dataclass(frozen=True, slots=True)
class StateEntry:
    """One key of an agent's state (:attr:`agentmem.BoundMemory.state`)."""

    agent_id: str
    key: str
    value: object
    updated_at: datetime


def agent_state(
    ctx: StoreContext, viewer: Viewer, tenant_id: str, agent_id: str | None = None
) -> list[StateEntry]:
    """The state of ``agent_id`` (every agent's when None) in ``tenant_id``, key by key (a
    key pinned to an agent: that agent's only).

    Raises:
        AuthError: another tenant or agent than the viewer's, or a key pinned to a user
            (agent state is shared by every user of the agent).
    """
    tenant = _tenant(tenant_id)
    agent = viewer.identity(tenant, agent_id=agent_id).agent_id
    require_agent_state(viewer.user_id, key_id=viewer.name)
    ctx.check_open()
    return [
        StateEntry(a, key, value, at)
        for _, a, key, value, at, *_about in ctx.records.agent_state.all(tenant)
        if agent in (None, a)
    ]


def _tier_of(g: GroupSpan) -> tuple[str, dict[str, str]]:
    """The tier name of a group of rows, and the row filters that list it."""
    if g.tier == TIER_MID:
        kind = "chunks" if g.kind != "summary" else "summaries"
        return f"mid_term {kind}", {"tier": g.tier, "kind": g.kind}
    if g.tier == TIER_LONG_SUMMARY:
        return "long_term summaries", {"tier": g.tier}
    if g.tier == TIER_LONG_DETAIL:
        return "long_term chunks", {"tier": g.tier}
    if g.scope == "knowledge":
        return "knowledge", {"scope": "knowledge"}
    if g.scope == "session" and g.kind in MESSAGE_KINDS:
        return "working", {"tier": "none", "scope": "session"}
    if g.kind == "document_chunk":
        return "documents", {"kind": g.kind}
    plural = {"memory": "memories", "summary": "summaries"}.get(g.kind, f"{g.kind}s")
    return f"{plural} ({g.scope})", {"kind": g.kind, "scope": g.scope, "tier": "none"}


def _tiers(groups: list[GroupSpan]) -> list[TierSpan]:
    named: dict[str, tuple[dict[str, str], list[Span]]] = {}
    for g in groups:
        name, filters = _tier_of(g)
        named.setdefault(name, (filters, []))[1].append(g.span)
    return [TierSpan(name, _sum(name, spans), f) for name, (f, spans) in sorted(named.items())]


def _sum(key: str | None, spans: list[Span]) -> Span:
    firsts = [s.first for s in spans if s.first is not None]
    lasts = [s.last for s in spans if s.last is not None]
    return Span(
        key=key,
        rows=sum(s.rows for s in spans),
        first=min(firsts) if firsts else None,
        last=max(lasts) if lasts else None,
    )


def rows(
    ctx: StoreContext,
    viewer: Viewer,
    tenant_id: str,
    filters: Mapping[str, str | None],
    *,
    page: int = 0,
    live_only: bool = True,
) -> list[Row]:
    """A page (:data:`PAGE` rows, newest first) of the tenant's rows matching ``filters``
    that the viewer may read (a pinned key's pins are filters too)."""
    tenant = _tenant(tenant_id)
    viewer.require_tenant(tenant)
    ctx.check_open()
    wanted = {k: validation.identity(value, k) for k, value in filters.items()}
    for column, pin in (("user_id", viewer.user_id), ("agent_id", viewer.agent_id)):
        if pin is not None:
            if wanted.get(column) not in (None, pin):
                return []
            wanted[column] = pin
    found = ctx.records.browse.rows(
        tenant, wanted, live_only=live_only, offset=max(page, 0) * PAGE, limit=PAGE
    )
    return [r for r in found if may_read(viewer, r)]


# -- one row --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Supersession:
    """One step of a supersession chain: ``old`` was retired in favour of ``new``.

    Attributes:
        at: When (the audit entry's time; None when no entry survives).
        via: ``judge`` (the LLM judge decided SUPERSEDE) or ``topic_key`` (a newer memory
            with the same topic key).
        judge: The judge's name, when it decided.
    """

    old: MemoryItem
    new_id: str
    at: datetime | None
    via: str
    judge: str | None = None


@dataclass(frozen=True, slots=True)
class RowDetail:
    """Everything about one row: itself, where it came from, what it replaced and what
    replaced it.

    Attributes:
        state: ``live``, ``superseded``, ``deleted`` or ``forgotten``.
        access_count: Recalls that returned it (the stored count plus those not flushed yet);
            None for a pinned viewer when others recall the row too (a tenant's row, an
            agent's for a user's key, a user's for an agent's key), whose count is theirs too.
        sources: The messages it was derived from (an extracted memory, a chunk, a summary).
        derived: The rows made from it.
        replaced: The rows it superseded.
        replaced_by: What superseded it.
        history: Its whole supersession chain, oldest first (the rows the viewer may read).
        audit: The audit entries of the row.
    """

    item: MemoryItem
    partition: str
    tier: str | None
    state: str
    access_count: int | None
    sources: list[MemoryItem] = field(default_factory=list)
    derived: list[MemoryItem] = field(default_factory=list)
    replaced: list[Supersession] = field(default_factory=list)
    replaced_by: Supersession | None = None
    history: list[MemoryItem] = field(default_factory=list)
    audit: list[AuditEntry] = field(default_factory=list)


def row_detail(ctx: StoreContext, viewer: Viewer, memory_id: str) -> RowDetail:
    """The story of one row the viewer may read.

    Raises:
        NotFoundError: no such row, or not one the viewer may read (the same answer).
    """
    row = _readable_row(ctx, viewer, memory_id)
    item = row.item
    tenant = item.tenant_id
    records = ctx.records
    source_ids = sorted(records.sources.sources_of(tenant, [item.id]).get(item.id, ()))
    sources = _readable(viewer, records.memories.get_many(tenant, source_ids, live_only=False))
    derived_refs = records.sources.derived_from(tenant, [item.id])
    derived = _readable(viewer, records.memories.get_many(tenant, [d.id for d in derived_refs]))
    replaced = [
        _step(ctx, _seen(viewer, r.item), item.id) for r in records.browse.replaced(tenant, item.id)
    ]
    replaced_by = None
    if item.superseded_by is not None:
        replaced_by = _step(ctx, _seen(viewer, item), item.superseded_by)
    history: list[MemoryItem] = []
    if item.kind == "memory" and item.deleted_at is None:
        history = supersession.history(ctx, identity_for(viewer, row), item.id)
    return RowDetail(
        item=_seen(viewer, item),
        partition=row.partition,
        tier=row.tier,
        state=_state(row),
        access_count=_access_count(ctx, viewer, item),
        sources=[_seen(viewer, s.item) for s in sources],
        derived=[_seen(viewer, d.item) for d in derived],
        replaced=replaced,
        replaced_by=replaced_by,
        history=[_seen(viewer, h) for h in history],
        audit=records.browse.audit(tenant, [item.id]),
    )


def _seen(viewer: Viewer, item: MemoryItem) -> MemoryItem:
    """``item`` as the viewer is shown it: a pinned key sees no other user's or agent's id
    on a row shared with it (:func:`agentmem.scopes.as_seen_by`)."""
    return scope_rules.as_seen_by(item, viewer.user_id, viewer.agent_id)


def _access_count(ctx: StoreContext, viewer: Viewer, item: MemoryItem) -> int | None:
    """How often recall returned ``item``, unless the viewer is pinned and others recall the
    row too (:func:`agentmem.scopes.recalled_only_by`): the count would show their activity."""
    if not scope_rules.recalled_only_by(item, viewer.user_id, viewer.agent_id):
        return None
    return item.access_count + ctx.access.pending().get(item.id, 0)


def _state(row: Row) -> str:
    item = row.item
    if item.deleted_at is not None:
        forgotten = item.content == "" and not item.content_hash
        return "forgotten" if forgotten else "deleted"
    return "superseded" if item.superseded_by is not None else "live"


def _step(ctx: StoreContext, old: MemoryItem, new_id: str) -> Supersession:
    """The supersession of ``old`` by ``new_id``, with its audit entry's time and judge."""
    entries = [
        e
        for e in ctx.records.browse.audit(old.tenant_id, [old.id])
        if e.event == "memory.supersede" and e.detail.get("by") == new_id
    ]
    last = entries[-1] if entries else None
    via = "judge" if last is not None and last.detail.get("via") == "judge" else "topic_key"
    judge = last.detail.get("judge") if last is not None else None
    return Supersession(
        old=old,
        new_id=new_id,
        at=last.at if last is not None else None,
        via=via,
        judge=judge if isinstance(judge, str) else None,
    )


def _readable(viewer: Viewer, found: list[Row]) -> list[Row]:
    return [r for r in found if may_read(viewer, r)]


def _readable_row(ctx: StoreContext, viewer: Viewer, memory_id: str) -> Row:
    id_ = validation.identity(memory_id, "memory_id", required=True)
    assert id_ is not None
    ctx.check_open()
    row = ctx.records.memories.get(id_)
    if row is None or not may_read(viewer, row):
        raise NotFoundError(f"no memory {id_!r} is visible here", memory_id=id_)
    return row


def _tenant(tenant_id: str) -> str:
    tenant = validation.identity(tenant_id, "tenant_id", required=True)
    assert tenant is not None
    return tenant


# -- changes ----------------------------------------------------------------------------------
def forget(ctx: StoreContext, viewer: Viewer, memory_id: str) -> bool:
    """Forget a row the viewer may read, as ``BoundMemory.forget`` does (and what was derived
    from it); False if it was forgotten already."""
    viewer.require("forget")
    row = _readable_row(ctx, viewer, memory_id)
    return forget_op.forget(ctx, identity_for(viewer, row), row.item.id)


def erase_user(ctx: StoreContext, viewer: Viewer, tenant_id: str, user_id: str) -> ErasureReceipt:
    """Erase one user of a tenant, as ``AgentMemory.erase`` does (every byte, every store)."""
    viewer.require("erase")
    tenant = _tenant(tenant_id)
    viewer.require_tenant(tenant)
    user = validation.identity(user_id, "user_id", required=True)
    return erase_op.erase(ctx, tenant_id=tenant, user_id=user)


def close_again(ctx: StoreContext, viewer: Viewer, identity: Identity) -> CloseResult:
    """Run the close pipeline of ``identity``'s session (an identity from
    :meth:`Viewer.identity`); a session closed before with no new message gets its chunks
    and summary written again (after a summary that timed out or failed), where
    ``close_session`` would do nothing.

    Raises:
        AuthError: the viewer may not change the store, or not act for ``identity``.
    """
    viewer.require("close")
    i = identity
    identity = viewer.identity(i.tenant_id, i.user_id, i.agent_id, i.session_id)
    scope_rules.require(identity, "session")
    assert identity.session_id is not None
    ctx.check_open()
    partition = scope_rules.home_partition(identity, "session")
    tenant, session = identity.tenant_id, identity.session_id
    with session_tiers.session_lock(ctx, tenant, partition, session):
        session_tiers.refresh_session(ctx, tenant, partition, session)
    return session_tiers.close_session(ctx, identity)
