"""A recall request: validated arguments, with the store's defaults filled in.

Every surface (the Python API, the tools, the server) goes through :func:`recall_request`, so
a bad argument is refused the same way everywhere, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Unpack

from .. import scopes as scope_rules
from .. import validation as v
from ..config import MemoryConfig
from ..errors import ValidationError
from ..models import KINDS, MEMORY_TYPES, RECALL_SCOPES, TIERS, Identity
from ..recall_options import RecallKwargs, RecallOptions

#: The candidate retrievers; recall uses both (a request may name one, e.g. to measure it).
RETRIEVERS: tuple[str, ...] = ("keyword", "vector")
#: Identity keys: never accepted as metadata filters (identity comes only from ``bind``).
IDENTITY_KEYS = frozenset({"tenant_id", "user_id", "agent_id", "session_id"})


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """A validated recall (see ``BoundMemory.recall`` for the meaning of each field)."""

    query: str
    top_k: int
    scope: str
    kinds: tuple[str, ...] | None
    memory_types: tuple[str, ...] | None
    rerank: bool
    min_score: float
    token_budget: int
    filters: Mapping[str, Any]
    include_superseded: bool = False
    tiers: tuple[str, ...] | None = None
    retrievers: tuple[str, ...] = RETRIEVERS
    """Which retrievers gather candidates (a subset of :data:`RETRIEVERS`)."""
    target_agent: str | None = None
    floors: bool = True
    """Whether the profile's floors (``Scoring.chat_floor``, ``item_floor``) may keep items
    below ``min_score``: only when ``min_score`` is the store's default. A ``min_score`` the
    caller gave is a promise about every item returned (``score >= min_score``), as a
    retriever's score threshold is."""


def recall_request(
    config: MemoryConfig,
    identity: Identity,
    query: Any,
    options: RecallOptions | None = None,
    **kwargs: Unpack[RecallKwargs],
) -> RecallRequest:
    """Validate a recall for ``identity``: ``options`` with ``kwargs`` laid over it; None
    means the configured default."""
    o = RecallOptions.of(options, **kwargs)
    q = v.query(query)
    k = v.top_k(o.top_k)
    kind_filter = v.choices(o.kinds, "kinds", KINDS)
    type_filter = v.choices(o.memory_types, "memory_types", MEMORY_TYPES)
    scope = v.choice(o.scope, "scope", RECALL_SCOPES)
    if not isinstance(o.rerank, bool):
        raise ValidationError("rerank", "must be a bool")
    if not isinstance(o.include_superseded, bool):
        raise ValidationError("include_superseded", "must be a bool")
    threshold = v.unit_float(o.min_score, "min_score")
    budget = v.positive_int(o.token_budget, "token_budget")
    flt = v.metadata(o.filters, "filters")
    reserved = IDENTITY_KEYS & set(flt)
    if reserved:
        raise ValidationError(
            "filters",
            f"cannot filter on identity keys {sorted(reserved)}; identity comes from bind()",
        )
    if scope != "any":
        scope_rules.require(identity, scope)
    target = v.identity(o.target_agent, "target_agent")
    tier_filter = v.choices(o.tiers, "tiers", TIERS)
    if target is not None:
        scope_rules.plan(identity, scope, tier_filter, target)  # raises ScopeError if refused
    return RecallRequest(
        query=q,
        top_k=k,
        scope=scope,
        kinds=kind_filter,
        memory_types=type_filter,
        rerank=o.rerank,
        min_score=config.min_score if threshold is None else threshold,
        token_budget=config.token_budget if budget is None else budget,
        filters=flt,
        include_superseded=o.include_superseded,
        tiers=tier_filter,
        target_agent=target,
        floors=threshold is None,
    )
