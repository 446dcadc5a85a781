"""``reindex``: rebuild both derived indexes from the records, re-embed every row with the
store's embedder (``reindex --embeddings``, resumable), or write only the keyword index."""

from __future__ import annotations

from collections.abc import Callable

from ..calibration import store as calibration_store
from ..context import StoreContext
from ..errors import EmbeddingError
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
        total = ctx.records.archive.count_live()
        before = ctx.indexer.embedded_total
        while ctx.indexer.run_once():
            if progress is not None:
                progress(ctx.indexer.embedded_total - before, total)
        fingerprint.finish_switch(ctx.records)  # every row is embedded with it now
    finally:
        if restart:
            ctx.indexer.start()
    return total


def reindex_embeddings(
    ctx: StoreContext, *, progress: Callable[[int, int], None] | None = None, restart: bool
) -> int:
    """Embed every live row again with the store's embedder; returns the rows queued.

    Resumable: the first run drops every vector and queues every row (a
    :class:`~agentmem.storage.fingerprint.Switch`, also left by opening with
    ``allow_embedder_change=True`` and another embedder); a run that finds a switch to this
    embedder under way continues it, embedding only the rows still queued (each row's flag
    is its progress). When every row is embedded, the switch is over. The keyword index is
    not touched. ``progress(done, total)`` is called after each batch.

    Raises:
        EmbeddingError: some rows could not be embedded (they stay keyword-searchable and
            queued: run it again to retry them).
    """
    ctx.check_open()
    ctx.indexer.stop()
    try:
        current = EmbedderFingerprint.of(ctx.embedder, origin="reindex")
        switch = fingerprint.read_switch(ctx.records)
        if switch is None or not switch.target.matches(current):
            recorded = fingerprint.read(ctx.records)
            same = recorded is None or recorded.matches(current)
            ctx.drop_vectors()
            ctx.vectors.compact_files()
            vector_check.mark(ctx.records, ctx.vectors)
            forget = () if same else (calibration_store.META_KEY,)
            switch = fingerprint.start_switch(ctx.records, recorded, current, forget=forget)
        else:
            ctx.records.index.requeue_failed_vectors()  # a resumed run retries them
        left = ctx.records.index.pending_counts()[1]
        total = max(switch.total, left)
        if progress is not None:
            progress(total - left, total)
        while ctx.indexer.run_once():
            if progress is not None:
                progress(total - ctx.records.index.pending_counts()[1], total)
        _, left, failed = ctx.records.index.pending_counts()
        if left or failed:
            raise EmbeddingError(
                f"{left + failed} of {total} rows could not be embedded with "
                f"{current.describe()} (they stay keyword-searchable); run `agentmem reindex "
                f"--embeddings` again to retry them",
                model_name=current.model_name,
                failed=failed,
            )
        fingerprint.finish_switch(ctx.records)
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
