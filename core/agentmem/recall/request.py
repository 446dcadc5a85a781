"""A recall request: validated arguments, with the store's defaults filled in.

Every surface (the Python API, the tools, the server) goes through :func:`recall_request`, so
a bad argument is refused the same way everywhere, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import scopes as scope_rules
from .. import validation as v
from ..config import MemoryConfig
from ..errors import ValidationError
from ..models import KINDS, MEMORY_TYPES, RECALL_SCOPES, TIERS, Identity

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


def recall_request(
    config: MemoryConfig,
    identity: Identity,
    query: Any,
    *,
    top_k: Any = 5,
    kinds: Any = None,
    memory_types: Any = None,
    scope: Any = "any",
    rerank: Any = True,
    min_score: Any = None,
    token_budget: Any = None,
    filters: Any = None,
    include_superseded: Any = False,
    tiers: Any = None,
    target_agent: Any = None,
) -> RecallRequest:
    """Validate recall arguments for ``identity``; None means the configured default."""
    q = v.query(query)
    k = v.top_k(top_k)
    kind_filter = v.choices(kinds, "kinds", KINDS)
    type_filter = v.choices(memory_types, "memory_types", MEMORY_TYPES)
    scope = v.choice(scope, "scope", RECALL_SCOPES)
    if not isinstance(rerank, bool):
        raise ValidationError("rerank", "must be a bool")
    if not isinstance(include_superseded, bool):
        raise ValidationError("include_superseded", "must be a bool")
    threshold = v.unit_float(min_score, "min_score")
    budget = v.positive_int(token_budget, "token_budget")
    flt = v.metadata(filters, "filters")
    reserved = IDENTITY_KEYS & set(flt)
    if reserved:
        raise ValidationError(
            "filters",
            f"cannot filter on identity keys {sorted(reserved)}; identity comes from bind()",
        )
    if scope != "any":
        scope_rules.require(identity, scope)
    target = v.identity(target_agent, "target_agent")
    tier_filter = v.choices(tiers, "tiers", TIERS)
    if target is not None:
        scope_rules.plan(identity, scope, tier_filter, target)  # raises ScopeError if refused
    return RecallRequest(
        query=q,
        top_k=k,
        scope=scope,
        kinds=kind_filter,
        memory_types=type_filter,
        rerank=rerank,
        min_score=config.min_score if threshold is None else threshold,
        token_budget=config.token_budget if budget is None else budget,
        filters=flt,
        include_superseded=include_superseded,
        tiers=tier_filter,
        target_agent=target,
    )
