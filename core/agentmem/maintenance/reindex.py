"""``reindex``: rebuild both derived indexes from the records (or only the keyword index)."""

from __future__ import annotations

from collections.abc import Callable

from ..context import StoreContext
from ..storage import fingerprint, vector_check
from ..storage.fingerprint import EmbedderFingerprint


def reindex(
    ctx: StoreContext, *, progress: Callable[[int, int], None] | None = None, restart: bool
) -> int:
    """Rebuild both indexes from the records; returns the number of live rows indexed.

    Every row is embedded again with the store's embedder, which is recorded as the data
    dir's embedder. The background indexer is stopped meanwhile and started again after
    when ``restart``.
    """
    ctx.check_open()
    ctx.indexer.stop()
    try:
        ctx.keywords.delete_all()
        ctx.keywords.commit()
        ctx.drop_vectors()
        ctx.vectors.compact_files()  # Chroma leaves a dropped collection's files on disk
        vector_check.mark(ctx.records, ctx.vectors)  # a store removed as unreadable took its marker
        ctx.records.index.mark_all_pending()
        # after the old vectors are gone: a crash from here on leaves only vectors of
        # this embedder (and rows queued for it), never old vectors under a new name
        current = EmbedderFingerprint.of(ctx.embedder, origin="reindex")
        fingerprint.record(ctx.records, current, replace=True)
        total = ctx.records.count_live()
        before = ctx.indexer.embedded_total
        while ctx.indexer.run_once():
            if progress is not None:
                progress(ctx.indexer.embedded_total - before, total)
    finally:
        if restart:
            ctx.indexer.start()
    return total


def reindex_keywords(ctx: StoreContext) -> int:
    """Write the keyword index anew from the records and the stored vectors, without
    embedding anything: what a change of the turn-context settings
    (``keyword_context``, ``keyword_context_similarity``) needs. Returns the number of
    live rows indexed. The background indexer goes on meanwhile."""
    ctx.check_open()
    return ctx.indexer.rewrite_keywords()
