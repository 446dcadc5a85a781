"""Where rows live (partitions) and who may see them (scopes).

Every row has a home ``scope`` column and a ``partition`` (the owner of that scope):

=========  ==================================  =======================================
scope      rows                                partition
=========  ==================================  =======================================
session    chat messages, tool outputs          ``conv:u:<user>`` (or ``conv:a:<agent>``)
user       explicit user facts                  ``user:<user>``
agent      explicit agent facts                 ``agent:<agent>``
tenant     document chunks, tenant facts        ``tenant``
knowledge  agent-managed knowledge entries      ``knowledge`` (one per tenant; rows carry
                                                their agent)
=========  ==================================  =======================================

Session chunks written by ``close_session`` are ``session`` rows in the
conversation's chunk partition ``chunks:<conversation partition>``: the same owner, but a
separate partition (and Chroma collection), so default recall never searches them; only
``recall(tiers=...)`` naming ``mid_term`` or ``long_term`` does.

Recall scopes are views over those rows: ``session`` is this session's conversation rows,
``history`` the same partition's other sessions, ``knowledge`` every agent's knowledge of the
tenant (readable by all, written only by the owning agent), and ``any`` all six.
:func:`visible_scope` is the single gate every recalled row passes: it re-checks the row's
tenant and owner against the bound identity, whatever the indexes returned.

**Cross-agent reads** (``target_agent``): an agent bound without a user may read another
agent's closed sessions (their chunks and summaries: the mid-term and long-term tiers;
``session_detail`` also their messages up to the last close) and that agent's knowledge.
Never its working memory (an open session), never a user's conversation, never another
tenant: :func:`visible_scope` with ``target_agent`` admits only rows of the target's own
conversations (``conv:a:<agent>``, no user) that carry a tier, and knowledge of that agent.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .errors import ScopeError
from .models import Identity, MemoryItem
from .storage.rows import Row

KNOWLEDGE_PARTITION = "knowledge"
CHUNK_PREFIX = "chunks:"
#: Tiers kept in the conversation partition (working rows, session summaries) and in the
#: chunk partition (session chunks).
_CONVERSATION_TIERS = frozenset({"working", "mid_term", "long_term"})
_CHUNK_TIERS = frozenset({"mid_term", "long_term"})


def chunk_partition(conversation: str) -> str:
    """The partition holding the session chunks of a conversation partition."""
    return CHUNK_PREFIX + conversation


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
    if scope == "knowledge":
        if identity.agent_id is None:
            raise ScopeError(
                "scope",
                "knowledge is written by an agent, but this memory is bound without one "
                "(pass agent_id= to AgentMemory.bind)",
            )
        return KNOWLEDGE_PARTITION
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


#: Where a new memory goes when the caller names no scope: the narrowest audience bound
#: that outlives the conversation (a user sees only their own; an agent's memory reaches
#: every user it serves; a session's only that conversation). Never tenant: a memory every
#: user of the tenant sees is written only when asked for by name.
MEMORY_DEFAULT_SCOPES: tuple[str, ...] = ("user", "agent", "session")


def default_memory_scope(
    identity: Identity, order: tuple[str, ...] = MEMORY_DEFAULT_SCOPES
) -> str | None:
    """The first scope of ``order`` whose identity component is bound, else None."""
    bound = {"user": identity.user_id, "agent": identity.agent_id, "session": identity.session_id}
    return next((scope for scope in order if bound[scope] is not None), None)


@dataclass(frozen=True, slots=True)
class ScopePlan:
    """How to search one recall scope: its partition and the narrowing filters."""

    scope: str
    partition: str
    session: str | None = None
    not_session: str | None = None


def cross_agent_partition(identity: Identity, target_agent: str) -> str:
    """The conversation partition of ``target_agent`` that ``identity`` reads from.

    Raises:
        ScopeError: ``identity`` is not an agent bound without a user.
    """
    if identity.agent_id is None or identity.user_id is not None:
        raise ScopeError(
            "target_agent",
            "cross-agent reads are for an agent bound without a user (bind agent_id= and "
            "no user_id); a user's conversations are never read across agents",
        )
    return f"conv:a:{target_agent}"


def plan(
    identity: Identity,
    scope: str,
    tiers: tuple[str, ...] | None = None,
    target_agent: str | None = None,
) -> list[ScopePlan]:
    """Partitions and filters for a recall ``scope`` (``any`` skips scopes it cannot serve).

    With ``tiers``, only the partitions that can hold rows of those tiers are planned, plus
    the conversation's chunk partition when ``mid_term`` or ``long_term`` is asked for;
    :func:`row_tier` then admits the rows of the wanted tiers only. With ``target_agent``,
    the plan covers that agent's closed sessions (``history``) and knowledge only.
    """
    if target_agent is not None:
        return _plan_target(identity, scope, tiers, target_agent)
    plans = _plan(identity, scope)
    if tiers is None:
        return plans
    wanted = set(tiers)
    # which tiers each planned scope can serve (history: other sessions' summaries)
    serves = {"knowledge": {"knowledge"}, "session": _CONVERSATION_TIERS, "history": _CHUNK_TIERS}
    out = [p for p in plans if wanted & serves.get(p.scope, set())]
    if wanted & _CHUNK_TIERS:
        out.extend(
            ScopePlan(p.scope, chunk_partition(p.partition), p.session, p.not_session)
            for p in plans
            if p.scope in ("session", "history")
        )
    return out


def _plan_target(
    identity: Identity, scope: str, tiers: tuple[str, ...] | None, target: str
) -> list[ScopePlan]:
    conv = cross_agent_partition(identity, target)
    if scope not in ("any", "history", "knowledge"):
        raise ScopeError(
            "scope",
            "with target_agent, scope is 'any', 'history' (the agent's closed sessions) or "
            f"'knowledge' (its knowledge), not {scope!r}",
        )
    wanted = set(tiers) if tiers is not None else {*_CHUNK_TIERS, "knowledge"}
    if "working" in wanted:
        raise ScopeError("tiers", "working memory is readable by its own session only")
    plans: list[ScopePlan] = []
    if scope != "knowledge" and wanted & _CHUNK_TIERS:
        plans += [ScopePlan("history", conv), ScopePlan("history", chunk_partition(conv))]
    if scope != "history" and "knowledge" in wanted:
        plans.append(ScopePlan("knowledge", KNOWLEDGE_PARTITION))
    return plans


def _plan(identity: Identity, scope: str) -> list[ScopePlan]:
    if scope == "any":
        plans: list[ScopePlan] = []
        for name in ("session", "history", "user", "agent", "tenant", "knowledge"):
            try:
                plans.extend(_plan(identity, name))
            except ScopeError:
                continue
        return plans
    require(identity, scope)
    if scope == "knowledge":
        return [ScopePlan("knowledge", KNOWLEDGE_PARTITION)]
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
    tier: str | None = None,
    target_agent: str | None = None,
) -> str | None:
    """The recall scope under which ``identity`` may see a row, or None if it may not.

    With ``target_agent`` (a cross-agent read), only that agent's knowledge and the tiered
    rows (``tier``: chunks, summaries) of its own conversations are visible.
    """
    if tenant_id != identity.tenant_id:
        return None
    if target_agent is not None:
        if identity.agent_id is None or identity.user_id is not None:
            return None
        if agent_id != target_agent:
            return None
        if scope == "knowledge":
            return "knowledge" if partition == KNOWLEDGE_PARTITION else None
        target_conv = f"conv:a:{target_agent}"
        if scope != "session" or user_id is not None or tier is None:
            return None
        return "history" if partition.removeprefix(CHUNK_PREFIX) == target_conv else None
    if scope == "tenant":
        return "tenant" if partition == "tenant" else None
    if scope == "knowledge":  # readable by every identity of the tenant
        return "knowledge" if partition == KNOWLEDGE_PARTITION else None
    if scope == "user":
        ok = identity.user_id is not None and user_id == identity.user_id
        return "user" if ok and partition == f"user:{identity.user_id}" else None
    if scope == "agent":
        ok = identity.agent_id is not None and agent_id == identity.agent_id
        return "agent" if ok and partition == f"agent:{identity.agent_id}" else None
    if scope == "session":
        # a session chunk has its conversation's owner; only its partition name differs
        partition = partition.removeprefix(CHUNK_PREFIX)
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


def visible_row(identity: Identity, row: Row, target_agent: str | None = None) -> str | None:
    """:func:`visible_scope` of a stored row."""
    item = row.item
    return visible_scope(
        identity,
        tenant_id=item.tenant_id,
        scope=item.scope,
        partition=row.partition,
        session_id=item.session_id,
        user_id=item.user_id,
        agent_id=item.agent_id,
        tier=row.tier,
        target_agent=target_agent,
    )


def cross_agent_message(identity: Identity, row: Row, target_agent: str) -> bool:
    """True if ``row`` is a live message of ``target_agent``'s own conversation (no user)
    in ``identity``'s tenant, and ``identity`` is an agent bound without a user. Whether its
    session is closed (readable) is the caller's check."""
    item = row.item
    return (
        identity.agent_id is not None
        and identity.user_id is None
        and item.tenant_id == identity.tenant_id
        and item.scope == "session"
        and row.partition == f"conv:a:{target_agent}"
        and row.tier is None
        and item.user_id is None
        and item.agent_id == target_agent
        and item.deleted_at is None
        and item.anonymized_at is None
    )


def readable(identity: Identity, row: Row | None) -> bool:
    """True if ``row`` is live (not deleted or anonymized) and visible to ``identity``."""
    return (
        row is not None
        and row.item.deleted_at is None
        and row.item.anonymized_at is None
        and visible_row(identity, row) is not None
    )


def recalled_only_by(item: MemoryItem, user_id: str | None, agent_id: str | None) -> bool:
    """Whether only identities within the pins ``user_id`` and/or ``agent_id`` (those given;
    neither: anyone) recall ``item``, so that how often and when recall returned it (its
    access count and last access) are their own activity.

    A user's own facts and conversation are recalled for that user only, with any agent;
    an agent's own facts for that agent only, with any user. Other rows are recalled for
    others too: a tenant's rows and knowledge for everyone, an agent's facts for its other
    users (those a pinned user wrote as well), a user's rows for their other agents, and
    for a key pinned to both a user and an agent, any row (the user talks to other agents,
    the agent to other users). An agent's own conversation (no user) counts as shared: other
    agents recall its chunks and summaries (``target_agent``), and a :class:`MemoryItem`
    does not tell those from its messages.
    """
    if user_id is None and agent_id is None:
        return True
    if user_id is not None and agent_id is not None:
        return False
    if user_id is not None:
        return item.user_id == user_id and item.scope in ("user", "session")
    return item.agent_id == agent_id and item.scope == "agent"


def as_seen_by(item: MemoryItem, user_id: str | None, agent_id: str | None) -> MemoryItem:
    """``item`` as a key pinned to ``user_id`` and/or ``agent_id`` (those given) is shown it:
    without what would tell it what other users or agents of its tenant do. That is the
    access count and last access of a row others recall too (:func:`recalled_only_by`:
    0 and None), and the id of another user (for a user's key) or another agent (for an
    agent's key; knowledge aside, whose owner is part of it) who wrote a row shared with
    the key (None). ``item`` itself when nothing is hidden."""
    hidden: dict[str, Any] = {}
    if not recalled_only_by(item, user_id, agent_id) and (item.access_count or item.last_accessed):
        hidden.update(access_count=0, last_accessed=None)
    if user_id is not None and item.user_id not in (None, user_id):
        hidden["user_id"] = None
    if agent_id is not None and item.agent_id not in (None, agent_id) and item.scope != "knowledge":
        hidden["agent_id"] = None
    return dataclasses.replace(item, **hidden) if hidden else item


def row_tier(tier: str | None, scope: str) -> str | None:
    """The tier (``working``, ``mid_term``, ``long_term``, ``knowledge``) of an admitted row.

    ``tier`` is the row's stored tier column (session chunks and summaries); ``scope`` the
    recall scope :func:`visible_scope` gave it. Rows of no tier (other sessions' raw messages,
    explicit memories, documents) return None: only default recall (no ``tiers``) shows them.
    """
    if tier in ("long_term_summary", "long_term_detail"):
        return "long_term"
    if tier is not None:
        return tier
    if scope == "knowledge":
        return "knowledge"
    if scope == "session":
        return "working"
    return None
