"""How a store is doing: its counts and disk use (:mod:`.stats`), how far the indexes lag
behind the records, and what makes recall degraded right now.

Example:
    >>> h = health(mem.context)  # doctest: +SKIP
    >>> h.stats.vector_pending, h.problems  # doctest: +SKIP
    (0, ())
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..context import StoreContext
from .stats import Stats, stats

__all__ = ["Health", "health"]


@dataclass(frozen=True, slots=True)
class Health:
    """The state of a store.

    Attributes:
        stats: Counts, index backlog and disk use.
        oldest_unembedded: When the oldest row still waiting for its vector was written
            (None: nothing waits); recall reads such rows from the records, but reports
            ``degraded`` past its scan limit.
        indexing: Whether this process runs the background indexer (a read-only open does
            not: the writing process does).
        read_only: The store was opened beside the process that writes to it.
        problems: What degrades recall or needs ``agentmem reindex`` now, as sentences.
    """

    stats: Stats
    oldest_unembedded: datetime | None
    indexing: bool
    read_only: bool
    problems: tuple[str, ...]


def health(ctx: StoreContext, *, tenant_id: str | None = None) -> Health:
    """The :class:`Health` of the store, or of one tenant's rows (a tenant's admin on a
    server: its counts and backlog, nothing of the others, no disk use of the shared files,
    no notes naming the store's files)."""
    counts = stats(ctx, tenant_id=tenant_id)
    problems: list[str] = []
    if ctx.indexer.unavailable is not None:
        problems.append(f"the embedder cannot embed: {ctx.indexer.unavailable}")
    if ctx.vectors.guard.corrupt is not None:
        problems.append(ctx.vectors.guard.corrupt)
    if ctx.engine.vectors_lost:
        problems.append("the vector index lost vectors the records say it holds")
    if counts.vector_failed:
        problems.append(
            f"{counts.vector_failed} row(s) failed to embed; `agentmem reindex` retries them"
        )
    if tenant_id is None:
        problems.extend(f"rebuilt at open: {note}" for note in ctx.recovered)
    return Health(
        stats=counts,
        oldest_unembedded=ctx.records.browse.oldest_unembedded(tenant_id),
        indexing=ctx.indexer.running,
        read_only=ctx.read_only,
        problems=tuple(problems),
    )
