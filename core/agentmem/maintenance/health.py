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


def health(ctx: StoreContext) -> Health:
    """The :class:`Health` of the store."""
    counts = stats(ctx)
    problems: list[str] = []
    if ctx.indexer.unavailable is not None:
        problems.append(f"the embedder cannot embed: {ctx.indexer.unavailable}")
    if counts.vector_failed:
        problems.append(
            f"{counts.vector_failed} row(s) failed to embed; `agentmem reindex` retries them"
        )
    problems.extend(f"rebuilt at open: {note}" for note in ctx.recovered)
    return Health(
        stats=counts,
        oldest_unembedded=ctx.records.browse.oldest_unembedded(),
        indexing=ctx.indexer.running,
        read_only=ctx.read_only,
        problems=tuple(problems),
    )
