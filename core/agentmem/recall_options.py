"""The options of a recall as one typed value, passed unchanged through every surface.

Users keep the keyword form (``m.recall("tea", top_k=3, scope="user")``); every surface
(the embedded facade, both clients, the tools, the server) turns it into a
:class:`RecallOptions` with :meth:`RecallOptions.of` and hands that value down, so the
options are declared here once. :class:`RecallKwargs` is the same set of fields as a
``TypedDict``, for ``**kwargs: Unpack[RecallKwargs]`` (type checkers and IDEs show each
keyword with its type); a test keeps the two in step. On the wire the fields travel as
separate arguments (``{"query": ..., "top_k": ...}``), as they always did.

Values are checked where the recall runs (``recall.request.recall_request``), so a bad one
is refused the same way whichever surface it came through, naming the field.

Example:
    >>> RecallOptions.of(top_k=3).top_k
    3
    >>> RecallOptions.of(RecallOptions(scope="user"), top_k=2)
    ... # doctest: +ELLIPSIS
    RecallOptions(top_k=2, kinds=None, memory_types=None, scope='user', ...)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

from .errors import ValidationError

#: The scope ``knowledge.search`` recalls in.
KNOWLEDGE_SCOPE = "knowledge"


class RecallKwargs(TypedDict, total=False):
    """The keyword form of :class:`RecallOptions` (see there for each field)."""

    top_k: int
    kinds: Iterable[str] | str | None
    memory_types: Iterable[str] | str | None
    scope: str
    rerank: bool
    min_score: float | None
    token_budget: int | None
    filters: Mapping[str, Any] | None
    include_superseded: bool
    tiers: Iterable[str] | str | None
    target_agent: str | None


@dataclass(frozen=True, slots=True)
class RecallOptions:
    """How a recall searches (everything but the query).

    Attributes:
        top_k: At most this many items (1..20).
        kinds: Restrict to these kinds (chat_message, tool_output, document_chunk, memory,
            summary).
        memory_types: Restrict to these memory types.
        scope: session, history, user, agent, tenant, knowledge, or any (all of them, fused).
        rerank: Use the configured reranker, if any (fail-open).
        min_score: Calibrated score in [0, 1] every item returned reaches. None: the
            configured default (0.3), which the best candidate must reach for recall to
            return anything, items then coming down to the profile's share of the best
            score (``chat_floor``, ``item_floor``; see
            :func:`agentmem.recall.ranking.kept_indices`).
        token_budget: Max tokens of returned content (None: the configured default, 1000).
        filters: Equality filters on the caller's stored metadata; identity keys are
            rejected (identity comes only from ``bind``).
        include_superseded: Audit callers only: include superseded memories.
        tiers: Only rows of these tiers (working, mid_term, long_term, knowledge); the
            default searches messages, memories, documents, knowledge and session
            summaries, but not session chunks (see :mod:`agentmem.tiers.sessions`).
        target_agent: Read another agent of the tenant instead (the memory must be bound to
            an agent and no user): its closed sessions' chunks and summaries
            (``scope="history"``) and its knowledge (``scope="knowledge"``); never its
            working memory, a user's rows or another tenant.
    """

    top_k: int = 5
    kinds: Iterable[str] | str | None = None
    memory_types: Iterable[str] | str | None = None
    scope: str = "any"
    rerank: bool = True
    min_score: float | None = None
    token_budget: int | None = None
    filters: Mapping[str, Any] | None = None
    include_superseded: bool = False
    tiers: Iterable[str] | str | None = None
    target_agent: str | None = None

    @classmethod
    def of(
        cls, options: RecallOptions | None = None, **kwargs: Unpack[RecallKwargs]
    ) -> RecallOptions:
        """``options`` (or the defaults) with the keyword arguments laid over it.

        Raises:
            ValidationError: ``options`` is not a :class:`RecallOptions`.
            TypeError: a keyword that is not an option (as for any unknown keyword).
        """
        if options is None:
            return cls(**kwargs)
        if not isinstance(options, RecallOptions):
            raise ValidationError(
                "options", f"must be a RecallOptions, got {type(options).__name__}"
            )
        return dataclasses.replace(options, **kwargs) if kwargs else options

    def as_dict(self) -> dict[str, Any]:
        """The options as keyword arguments (their form on the wire)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def knowledge_options(
    options: RecallOptions | None = None, **kwargs: Unpack[RecallKwargs]
) -> RecallOptions:
    """The options of ``knowledge.search``: a recall whose scope is always ``knowledge``.

    Raises:
        ValidationError: another scope was asked for.
    """
    if kwargs.get("scope", KNOWLEDGE_SCOPE) != KNOWLEDGE_SCOPE:
        raise ValidationError("scope", "knowledge.search always searches scope 'knowledge'")
    return dataclasses.replace(RecallOptions.of(options, **kwargs), scope=KNOWLEDGE_SCOPE)


__all__ = ["KNOWLEDGE_SCOPE", "RecallKwargs", "RecallOptions", "knowledge_options"]
