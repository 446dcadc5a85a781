"""The background indexer: the second phase of every write.

A write commits its row to SQLite and returns. This worker then

1. keyword-indexes every pending row (Tantivy add or delete, one commit per batch), so new
   rows become keyword-searchable within about ``index_interval`` seconds (plus the
   embedding of a chat message's context: see below), and
2. embeds pending rows in batches and upserts them into their Chroma partition (or deletes
   retired rows from it).

A chat message's keyword context (the messages before it) keeps only what is on its topic,
which takes both embeddings (:func:`~agentmem.write.index_text.on_topic`). The messages a
keyword batch needs are embedded before it is written, whatever its size, so that each entry
is written once (:meth:`Indexer._embed_ahead` says why); only a message that could not be
embedded first is written with all its context, and queued again by the embedder once it is.

The records carry the pending flags, so a crash at any point only means the work is done
again on the next start (both index writes are idempotent by id). Embedding failures retry
with exponential backoff; after the last retry the rows are flagged (``vec_pending = failed``,
``embed_error``) and stay keyword-searchable; ``reindex`` retries them. Unusable model files
(:class:`~agentmem.errors.ModelFilesError`) are not retried, since only a reinstall fixes
them: the rows are flagged at once and the problem is logged once (:attr:`Indexer.unavailable`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np

from ..embeddings import Embedder, FloatArray
from ..errors import AgentMemError, ModelFilesError, StorageError
from ..speakers import metadata_speaker
from ..storage import vector_check
from ..storage.index_queue import TEXT_FEATURES_DONE
from ..storage.keyword_index import KeywordDoc, KeywordIndex
from ..storage.records import RecordStore
from ..storage.rows import Row
from ..storage.vector_index import VectorIndex, collection_name
from ..telemetry import tracing
from .index_text import (
    context_text,
    keyword_doc,
    on_topic,
    text_features,
    vector_metadata,
    vector_text,
)

log = logging.getLogger("agentmem.write.indexer")

KEYWORD_BATCH = 2000
#: Seconds between looks while committed changes wait behind a transaction still running
#: (Postgres: see :class:`~agentmem.storage.index_queue.IndexQueue`); its commit may not
#: notify anyone.
HELD_BACK_POLL = 0.05
#: Texts per embedder call: a worker told to stop waits for one call at most.
EMBED_CHUNK = 64
#: Rows scanned per idle pass when filling in the text features of an older data dir.
BACKFILL_BATCH = 2000
#: Seconds before a tenant's flush looks at its pending rows again, at first (doubling up to
#: a second): the workers signal only once idle, which other tenants' backlog may put off.
TENANT_FLUSH_POLL = 0.05


class _Worker:
    """A daemon thread that runs ``step`` until it reports no work, then sleeps until
    notified (or for a second, to catch work left by a crash; or :data:`HELD_BACK_POLL`
    while ``soon()`` says work is about to become possible).

    ``step`` gets the worker's stop event and returns at its next batch boundary once it is
    set, so :meth:`join` after :meth:`signal_stop` waits for one batch, never a backlog."""

    def __init__(
        self,
        name: str,
        step: Callable[[threading.Event], bool],
        owner: Indexer,
        soon: Callable[[], bool] = lambda: False,
    ) -> None:
        self.name = name
        self.step = step
        self.owner = owner
        self.soon = soon
        self.thread: threading.Thread | None = None
        self.wake = threading.Event()
        self.idle = threading.Event()
        self.stopping = threading.Event()

    def start(self) -> None:
        if self.thread is None:
            self.stopping.clear()
            self.thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
            self.thread.start()

    def notify(self) -> None:
        self.idle.clear()
        self.wake.set()

    def signal_stop(self) -> None:
        self.stopping.set()
        self.wake.set()

    def join(self, timeout: float | None) -> bool:
        """Wait for the thread to end; False if it is still running after ``timeout``."""
        if self.thread is not None:
            self.thread.join(timeout)
            if self.thread.is_alive():
                return False
            self.thread = None
        return True

    def wait_idle(self, timeout: float) -> bool:
        return self.idle.wait(timeout)

    def _loop(self) -> None:
        while not self.stopping.is_set():
            try:
                did = self.step(self.stopping)
            except Exception as exc:  # keep the worker alive; rows stay pending
                log.exception("%s pass failed: %s", self.name, exc)
                did = False
                self.stopping.wait(min(self.owner.backoff, 1.0))
            if not did:
                self.idle.set()
                self.wake.wait(timeout=HELD_BACK_POLL if self.soon() else 1.0)
                self.wake.clear()
                if self.owner.interval:
                    # gather a batch of writes that arrive together
                    self.stopping.wait(self.owner.interval)


class Indexer:
    """Owns both index writers; runs in one daemon thread.

    Example:
        >>> indexer = Indexer(records, keywords, vectors, embedder)  # doctest: +SKIP
        >>> indexer.start(); indexer.notify(); indexer.flush(timeout=5)  # doctest: +SKIP
    """

    def __init__(
        self,
        records: RecordStore,
        keywords: KeywordIndex,
        vectors: VectorIndex,
        embedder: Embedder,
        *,
        batch_size: int = 64,
        interval: float = 0.05,
        keyword_context: int = 0,
        context_similarity: float = 0.0,
        vector_context: int = 0,
        retries: int = 3,
        backoff: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
        before_first_vectors: Callable[[], None] | None = None,
    ) -> None:
        self.records = records
        self.keywords = keywords
        self.vectors = vectors
        self.embedder = embedder
        self.batch_size = batch_size
        self.keyword_context = keyword_context
        #: A preceding statement is keyword context of a message from this cosine on
        #: (:func:`~agentmem.write.index_text.on_topic`; 0: every one is).
        self.context_similarity = context_similarity
        #: Rows the keyword pass is about to write (gated): the embedder need not requeue them
        #: (on SQLite; on Postgres the other nodes follow the requeue).
        self._writing: set[str] = set()
        #: Chat messages written with their context ungated because the vector index could
        #: not be read, or whose requeue to gate it failed (id -> tenant, partition): queued
        #: again once it can be read.
        self._ungated: dict[str, tuple[str, str]] = {}
        self._ungated_lock = threading.Lock()
        self.vector_context = vector_context
        self.interval = interval
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
        #: Called once, before this indexer first writes vectors (records the embedder).
        self.before_first_vectors = before_first_vectors
        # re-entrant: a caller holding both (paused) may run a synchronous pass
        self._kw_lock = threading.RLock()
        self._vec_lock = threading.RLock()
        self._workers = [
            _Worker(
                "agentmem-keywords",
                self._keyword_step,
                self,
                soon=lambda: self.records.index.held_back,
            ),
            _Worker("agentmem-embedder", self._vector_step, self),
        ]
        self.embedded_total = 0
        #: Where the text-feature backfill goes on (None: done, or not started: 0).
        self._backfill_after: int | None = 0
        self._backfill_checked = False
        #: Why the embedder cannot run (its model files are unusable), once known; set by the
        #: store when its open-time check already reported it, so it is said only once.
        self.unavailable: str | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return any(w.thread is not None for w in self._workers)

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` has told the workers to stop (until the next start)."""
        return any(w.thread is not None and w.stopping.is_set() for w in self._workers)

    def start(self) -> None:
        """Start the two workers: keyword indexing never waits for the embedder's backlog (a
        keyword pass embeds only what the context of its own chat messages needs, waiting at
        most for the embedder pass under way, its retries included)."""
        for worker in self._workers:
            worker.start()

    def notify(self) -> None:
        for worker in self._workers:
            worker.notify()

    def stop(self, timeout: float | None = None) -> None:
        """Stop both workers and wait for them (pending rows stay queued for the next start).

        Each worker stops at its next batch boundary (a keyword batch, one embedder call of
        at most :data:`EMBED_CHUNK` texts), so this waits about one batch however long the
        backlog. It waits for them to end: a worker left inside Tantivy or onnxruntime while
        the indexes close, or when the interpreter exits, aborts the process.
        """
        for worker in self._workers:
            worker.signal_stop()
        for worker in self._workers:
            if not worker.join(timeout):
                log.warning("%s still running %s s after stop", worker.name, timeout)

    def flush(self, timeout: float | None = None, *, tenant_id: str | None = None) -> bool:
        """Block until no row (of ``tenant_id``; None: of any tenant) is pending; True if
        caught up within ``timeout`` seconds.

        A tenant's flush waits for its own rows only: it returns as soon as they are indexed,
        whatever other tenants still have queued, so it neither waits for their writes nor
        learns whether they have any. A vector index found corrupt
        (:mod:`~agentmem.storage.chroma_guard`) is not waited for: only ``reindex`` makes it
        writable again, so its rows stay queued (False).
        """
        if not self.running:
            self.run_once(drain=True)
            return (
                self.vectors.guard.corrupt is None
                or self.records.index.pending_counts(tenant_id)[1] == 0
            )
        # the workers signal only when idle, which other tenants' backlog may put off: a
        # tenant's flush looks at its own rows at once, and again after each wait, the waits
        # growing to a second (a look counts a backlog: ~0.1-0.2 s at 100k rows pending)
        step = 1.0 if tenant_id is None else TENANT_FLUSH_POLL
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if tenant_id is not None and (done := self._caught_up(tenant_id)) is not None:
                return done
            self.notify()
            remaining = step if deadline is None else max(deadline - time.monotonic(), 0.0)
            idle = all(w.wait_idle(min(remaining, step)) for w in self._workers)
            if idle and (done := self._caught_up(tenant_id)) is not None:
                return done
            if deadline is not None and time.monotonic() >= deadline:
                return False
            step = min(step * 2, 1.0)

    def _caught_up(self, tenant_id: str | None) -> bool | None:
        """True when no row (of ``tenant_id``) is pending, False when only rows a corrupt
        vector index cannot take are, None while there is work left to wait for."""
        kw, vec, _ = self.records.index.pending_counts(tenant_id)
        if kw == 0 and vec == 0:
            return True
        if kw == 0 and self.vectors.guard.corrupt is not None:
            return False
        return None

    # -- work --------------------------------------------------------------------------------
    def _keyword_step(self, stop: threading.Event) -> bool:
        with self._kw_lock:
            did = self._keywords_mended(stop)
            if not did:
                # idle: one batch of the text-feature backfill (not counted as work, so
                # flush() does not wait for it; recall computes what is still missing)
                self._backfill_text_features()
            return did

    def _keywords_mended(self, stop: threading.Event | None = None) -> bool:
        """:meth:`_keyword_pass`; an index whose files were deleted under this process is
        started anew, every row queued for it again (Tantivy would fail every commit)."""
        try:
            return self._keyword_pass(stop)
        except StorageError:
            if not self.keywords.recreate_if_lost():
                raise
            log.error(
                "keyword index at %s was deleted while in use; started anew, every row "
                "queued to be indexed again",
                self.keywords.path,
            )
            self.records.index.mark_keywords_pending()
            return True

    def _backfill_text_features(self) -> None:
        """Store the text features of rows indexed before they were stored, a batch per
        idle pass; marks the data dir complete at the end."""
        if not self._backfill_checked:
            self._backfill_checked = True
            if self.records.meta.get(TEXT_FEATURES_DONE) is not None:
                self._backfill_after = None
        if self._backfill_after is None:
            return
        last, rows = self.records.index.missing_text_features(self._backfill_after, BACKFILL_BATCH)
        if rows:
            analyze = self.keywords.analyze
            self.records.index.set_text_features(
                {
                    seq: text_features(analyze, content, metadata_speaker(json.loads(meta)))
                    for seq, content, meta in rows
                }
            )
        if last is None:
            self.records.meta.set(TEXT_FEATURES_DONE, "1")
        self._backfill_after = last

    def _vector_step(self, stop: threading.Event) -> bool:
        with self._vec_lock:
            return self._vectors_mended(stop=stop)

    def _vectors_mended(
        self, *, stop: threading.Event | None = None, retry_failed: bool = False
    ) -> bool:
        """:meth:`_vector_pass`; an embedded store whose files were deleted under this process
        is started anew, every row queued to be embedded again."""
        try:
            return self._vector_pass(stop=stop, retry_failed=retry_failed)
        except StorageError:
            if not self.vectors.recreate_if_lost():
                raise
            log.error(
                "vector index at %s was deleted while in use; started anew, every row "
                "queued to be embedded again",
                self.vectors.location,
            )
            # queues the rows whose vectors were lost and marks the new store (mark
            # again: verify marks nothing when no row was embedded yet)
            vector_check.verify(self.records, self.vectors, repair=True)
            vector_check.mark(self.records, self.vectors)
            return True

    def run_once(self, *, drain: bool = False, retry_failed: bool = False) -> bool:
        """One pass in the caller's thread: keyword-index all pending rows, embed one batch.

        With ``drain``, repeat until nothing is pending. True if any work was done.
        """
        did = False
        while True:
            with self._kw_lock:
                kw = self._keywords_mended()
            with self._vec_lock:
                vec = self._vectors_mended(retry_failed=retry_failed)
            did = did or kw or vec
            if not drain or not (kw or vec):
                return did

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Hold both index writers: no background pass runs until the block ends (a pass
        under way finishes first). The caller may run :meth:`sync` meanwhile."""
        with self._kw_lock, self._vec_lock:
            yield

    def sync(self, ids: Sequence[str]) -> None:
        """Bring the index entries of ``ids`` in line with their rows now, in the caller's
        thread: entries of retired rows removed, entries of live rows whose text changed
        written again (embedding them if their vectors are pending)."""
        if not ids:
            return
        with self._kw_lock, self._vec_lock:
            state = self.records.index.state_of(ids)
            keyword = [(seq, row, live) for seq, row, live, kw, _, _ in state if kw]
            vector = [(seq, row, vec_live) for seq, row, _, _, vec, vec_live in state if vec]
            if keyword:
                self._apply_keyword(keyword)
            if vector:
                self._apply_vector(vector)

    def rewrite_keywords(self) -> int:
        """Write the keyword index anew from the live records, in one commit, so no entry of a
        deleted row stays in its files (see :meth:`KeywordIndex.rewrite`); returns how many
        rows it holds. Rows still queued for the keyword index are written too (the queue
        writes them again, harmlessly)."""

        n = self.keyword_context

        def docs(
            rows: list[Row], recent: dict[tuple[str, str, str], deque[Row]]
        ) -> list[KeywordDoc]:
            # the rows stream in insertion order, so each chat message's context (the live
            # messages before it in its session, as _preceding reads them one query per
            # message) is kept here as it goes: one pass instead of a query per message
            preceding: dict[str, list[Row]] = {}
            for row in rows:
                item = row.item
                if n > 0 and item.kind == "chat_message" and item.session_id is not None:
                    key = (item.tenant_id, row.partition, item.session_id)
                    before = recent.get(key)
                    if before:
                        preceding[item.id] = list(before)
                    if row.tier is None:
                        recent.setdefault(key, deque(maxlen=n)).append(row)
            contexts, _ = self._keyword_contexts(rows, preceding)
            return [keyword_doc(row, contexts.get(row.item.id, "")) for row in rows]

        def batches() -> Iterator[list[KeywordDoc]]:
            recent: dict[tuple[str, str, str], deque[Row]] = {}
            rows: list[Row] = []
            for row in self.records.archive.iter_rows(live_only=True):
                rows.append(row)
                if len(rows) >= KEYWORD_BATCH:
                    yield docs(rows, recent)
                    rows = []
            if rows:
                yield docs(rows, recent)

        with self._kw_lock:
            return self.keywords.rewrite(batches())

    def _keyword_pass(self, stop: threading.Event | None = None) -> bool:
        """Keyword-index the pending rows, a batch at a time, until none is left, a batch had
        rows embedded first (:meth:`_embed_ahead`), or ``stop`` is set (the rest stays
        queued)."""
        did = False
        embedded = False
        self._retry_ungated()
        while True:
            if stop is not None and stop.is_set():
                return did
            pending = self.records.index.pending_keyword(KEYWORD_BATCH)
            removed = self.records.index.keyword_removals()
            if not pending and not removed:
                return did
            if removed:  # first: a row deleted and written again is in ``pending``
                with tracing.span(
                    "agentmem.index.keywords", {"agentmem.index.deleted": len(removed)}
                ):
                    self.keywords.delete(removed)
                    self.keywords.commit()
            if pending:
                pending, embedded = self._embed_ahead(pending, stop)
                self._apply_keyword(pending)
            self.records.index.keyword_read_done()
            did = True
            if embedded:
                return did  # an embedder pass's worth: the index writers are free again
            if len(pending) < KEYWORD_BATCH and not self.records.index.follows_changes:
                return did

    def _embed_ahead(
        self, pending: list[tuple[int, Row, bool]], stop: threading.Event | None
    ) -> tuple[list[tuple[int, Row, bool]], bool]:
        """Embed the chat messages of a keyword batch that have context, and the messages
        before them, unless they are already, so that their context is decided (gated by
        :func:`on_topic`) when they are written; returns the rows of ``pending`` to write now,
        and whether any row was sent to the embedder. Nothing is embedded while the vector
        index is known corrupt (the vectors could not be stored: ``reindex`` rebuilds it).

        Each entry is then written once, however many rows arrive at once: a burst of writes
        that outruns the indexer gives the same keyword index as the same writes one at a
        time. An entry written again stays in Tantivy's BM25 statistics (the document count,
        a term's document frequency, the average length) until a merge rewrites its segment,
        which happens when Tantivy decides; recall would rank the same rows differently until
        then.

        A pass embeds at most :attr:`batch_size` rows, so that it holds the index writers
        about as long as an embedder pass: past that, only the first rows of the batch are
        written now, the rest on the next pass. On Postgres, where a node moves past all it
        read, such a batch is written at once with all its context, and the embedder queues
        the messages again for every node, as it does a message not embedded here (its
        embedding failed, the indexer is stopping, or another node holds it).
        """
        if (
            self.context_similarity <= 0
            or self.keyword_context <= 0
            or self.vectors.guard.corrupt is not None
        ):
            return pending, False
        first: set[str] = set()  # to embed first: rows of the messages' context with no vector
        for n, (_, row, live) in enumerate(pending):
            if not live or row.item.kind != "chat_message":
                continue
            before = self._preceding([row], self.keyword_context).get(row.item.id)
            if not before:
                continue
            wants = {r.item.id for r in (row, *before) if not r.item.embedded}
            if first and len(first | wants) > self.batch_size:
                if self.records.index.follows_changes:
                    return pending, False
                pending = pending[:n]
                break
            first |= wants
        if not first:
            return pending, False
        # the embedder need not requeue what this pass is about to write gated
        self._writing = {row.item.id for _, row, _ in pending}
        todo: list[tuple[int, Row, bool]] = []
        try:
            with self._vec_lock:
                todo = self.records.index.pending_vector_of(sorted(first))
                if todo:
                    self._apply_vector(todo, stop)
        except AgentMemError as exc:
            log.warning("embedding ahead of the keyword index failed: %s", exc)
        finally:
            self._writing = set()
        return pending, bool(todo)

    def _keyword_contexts(
        self, rows: Sequence[Row], preceding: Mapping[str, Sequence[Row]]
    ) -> tuple[dict[str, str], list[Row]]:
        """The keyword context of each chat message of ``rows`` with ``preceding`` messages
        (those on its topic once it is embedded: :func:`on_topic`), and the messages whose
        context is provisional because they are not embedded yet."""
        with_context = [r for r in rows if r.item.id in preceding]
        vectors = self._stored_vectors(
            with_context + [p for before in preceding.values() for p in before], with_context
        )
        out = {}
        for row in with_context:
            kept = on_topic(row, preceding[row.item.id], vectors, self.context_similarity)
            if kept:
                out[row.item.id] = context_text(kept)
        gated = self.context_similarity > 0
        return out, [r for r in with_context if gated and r.item.id not in vectors]

    def _stored_vectors(self, rows: Iterable[Row], gating: Iterable[Row]) -> dict[str, np.ndarray]:
        """The vectors of ``rows`` already embedded (none when context is not gated), read to
        gate the context of ``gating``. An unreadable vector index leaves their context
        ungated for now (keyword indexing does not wait on it): they are queued again once
        it can be read (:meth:`_retry_ungated`)."""
        if self.context_similarity <= 0:
            return {}
        by_collection: dict[str, dict[str, None]] = defaultdict(dict)
        for row in rows:
            by_collection[collection_name(row.item.tenant_id, row.partition)][row.item.id] = None
        out: dict[str, np.ndarray] = {}
        try:
            for name, ids in by_collection.items():
                out.update(self.vectors.vectors(name, list(ids)))
        except AgentMemError as exc:
            log.warning("turn context left ungated, vectors unreadable: %s", exc)
            self._queue_later(gating)
            return {}
        return out

    def _queue_later(self, rows: Iterable[Row]) -> None:
        """Have :meth:`_retry_ungated` queue ``rows`` for the keyword index again."""
        with self._ungated_lock:
            self._ungated.update((r.item.id, (r.item.tenant_id, r.partition)) for r in rows)

    def _retry_ungated(self) -> None:
        """Queue again the messages whose context was left ungated (:meth:`_stored_vectors`)
        once the vector index answers (one vector read per collection while it does not)."""
        with self._ungated_lock:
            ungated = dict(self._ungated)
        if not ungated:
            return
        by_collection: dict[str, list[str]] = defaultdict(list)
        for id_, (tenant, partition) in ungated.items():
            by_collection[collection_name(tenant, partition)].append(id_)
        try:
            for name, ids in by_collection.items():
                self.vectors.vectors(name, ids[:1])
        except AgentMemError:
            return
        # forgotten only once queued: a failed requeue leaves them here for the next pass
        self.records.index.requeue(list(ungated), vectors=False)
        with self._ungated_lock:
            for id_ in ungated:
                self._ungated.pop(id_, None)

    def _apply_keyword(self, pending: Sequence[tuple[int, Row, bool]]) -> None:
        """Write (seq, row, live) to the keyword index: add live rows, delete the others."""
        live = [row for _, row, is_live in pending if is_live]
        dead = [row.item.id for _, row, is_live in pending if not is_live]
        counts = {"agentmem.index.rows": len(pending), "agentmem.index.deleted": len(dead)}
        with tracing.span("agentmem.index.keywords", counts):
            self._write_keywords(pending, live, dead)

    def _write_keywords(
        self, pending: Sequence[tuple[int, Row, bool]], live: list[Row], dead: list[str]
    ) -> None:
        features = {}
        provisional: list[Row] = []
        if live:
            contexts, provisional = self._keyword_contexts(
                live, self._preceding(live, self.keyword_context)
            )
            self.keywords.add([keyword_doc(r, contexts.get(r.item.id, "")) for r in live])
            analyze = self.keywords.analyze
            features = {
                seq: text_features(analyze, row.item.content, metadata_speaker(row.item.metadata))
                for seq, row, is_live in pending
                if is_live
            }
        if dead:
            self.keywords.delete(dead)
        self.keywords.commit()
        self.records.index.mark_keyword_done(
            [(seq, is_live) for seq, _, is_live in pending], features
        )
        if provisional:
            # embedded while this pass ran: the embedder's requeue was cleared just now
            embedded = self._stored_vectors(provisional, provisional)
            if embedded:
                try:
                    self.records.index.requeue(list(embedded), vectors=False)
                except AgentMemError:
                    # marked done above: nothing else would queue them again
                    self._queue_later(r for r in provisional if r.item.id in embedded)
                    raise

    def _preceding(self, rows: Sequence[Row], n: int) -> dict[str, list[Row]]:
        """The ``n`` messages before each chat message of ``rows`` in its session.

        A reply like "Yes, last Tuesday!" is findable by what it answers. Only preceding
        messages are used: later ones may not exist yet when a message is indexed.
        """
        if n <= 0:
            return {}
        out: dict[str, list[Row]] = {}
        for row in rows:
            item = row.item
            if item.kind != "chat_message" or item.session_id is None:
                continue
            before = self.records.conversations.preceding_messages(
                item.tenant_id, item.session_id, row.partition, item.id, n
            )
            if before:
                out[item.id] = before
        return out

    def _vector_pass(
        self, *, retry_failed: bool = False, stop: threading.Event | None = None
    ) -> bool:
        if self.vectors.guard.corrupt is not None:
            return False  # the rows stay queued: `reindex` builds the index anew, then embeds
        pending = self.records.index.pending_vector(self.batch_size, retry_failed=retry_failed)
        if not pending:
            return False
        self._apply_vector(pending, stop)
        return True

    def _apply_vector(
        self, pending: Sequence[tuple[int, Row, bool]], stop: threading.Event | None = None
    ) -> None:
        """Write (seq, row, belongs in the vector index) to the vector index: embed and store
        the rows that belong there, delete the others' vectors."""
        live = [(seq, row) for seq, row, is_live in pending if is_live]
        dead = [(seq, row) for seq, row, is_live in pending if not is_live]
        counts = {"agentmem.index.rows": len(pending), "agentmem.index.deleted": len(dead)}
        with tracing.span("agentmem.index.vectors", counts) as span:
            by_collection: dict[str, list[str]] = defaultdict(list)
            for _, row in dead:
                name = collection_name(row.item.tenant_id, row.partition)
                by_collection[name].append(row.item.id)
            for collection, ids in by_collection.items():
                self.vectors.delete(collection, ids)
            if dead:
                self.records.index.mark_vector_done([(seq, False) for seq, _ in dead])
            embedded = self._embed_and_store(live, stop) if live else 0
            if span is not None:
                span.set_attributes(
                    {
                        "agentmem.index.embedded": embedded,
                        "agentmem.index.failed": len(live) - embedded,
                    }
                )

    def _embed_and_store(
        self, live: list[tuple[int, Row]], stop: threading.Event | None = None
    ) -> int:
        """Embed ``live`` and write their vectors; how many were embedded (0: the batch
        failed and is flagged, or ``stop`` was set between two embedder calls: the rows stay
        pending)."""
        ctx = self._preceding([row for _, row in live], self.vector_context)
        texts = []
        for _, row in live:
            text = vector_text(row)
            before = ctx.get(row.item.id)
            texts.append(f"{context_text(before)}\n{text}" if before else text)
        vectors = None
        error: BaseException | None = None
        for attempt in range(self.retries + 1):
            try:
                vectors = self._embed(texts, stop)
                error = None  # a stop before a retry is not a failure
                break
            except ModelFilesError as exc:  # retrying cannot fix a missing or corrupt file
                error = exc
                if self.unavailable is None:
                    self.unavailable = str(exc)
                    log.error(
                        "cannot embed: %s. Rows stay keyword-searchable without vectors and "
                        "recall is degraded; after the fix, `agentmem reindex` embeds them",
                        exc,
                    )
                break
            except Exception as exc:
                error = exc
                if attempt < self.retries:
                    delay = self.backoff * (2**attempt)
                    log.warning(
                        "embedding batch of %d failed (attempt %d/%d), retrying in %.1fs: %s",
                        len(texts),
                        attempt + 1,
                        self.retries + 1,
                        delay,
                        exc,
                    )
                    if stop is None or not stop.is_set():
                        self._sleep(delay)
        if vectors is None and error is None:  # stopped
            self.records.index.release_claims([seq for seq, _ in live])
            return 0
        if vectors is None:
            if not isinstance(error, ModelFilesError):
                log.error("embedding batch of %d failed permanently: %s", len(texts), error)
            self.records.index.mark_vector_failed([seq for seq, _ in live], f"{error}")
            return 0
        if self.before_first_vectors is not None:
            self.before_first_vectors()  # raises: rows stay pending, the pass is retried
            self.before_first_vectors = None
        groups: dict[str, list[int]] = defaultdict(list)
        for i, (_, row) in enumerate(live):
            tenant, partition = row.item.tenant_id, row.partition
            name = collection_name(tenant, partition)
            if name not in groups:
                self.records.partitions.register(tenant, partition, name)
            groups[name].append(i)
        try:
            for name, idxs in groups.items():
                self.vectors.upsert(
                    name,
                    [live[i][1].item.id for i in idxs],
                    vectors[idxs],
                    [vector_metadata(live[i][1]) for i in idxs],
                )
        except AgentMemError as exc:
            log.error("vector upsert failed, rows stay pending: %s", exc)
            raise
        rows = [row for _, row in live]
        # before the rows leave the queue, so a flush waits for their keyword entries too
        self._regate(rows, {row.item.id: vec for row, vec in zip(rows, vectors, strict=True)})
        self.records.index.mark_vector_done([(seq, True) for seq, _ in live])
        self.embedded_total += len(live)
        return len(live)

    def _embed(self, texts: Sequence[str], stop: threading.Event | None) -> FloatArray | None:
        """The vectors of ``texts``, in calls of at most :data:`EMBED_CHUNK` texts of about
        the same length (little padding); None if ``stop`` is set between two calls."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        parts = []
        for start in range(0, len(order), EMBED_CHUNK):
            if stop is not None and stop.is_set():
                return None
            chunk = order[start : start + EMBED_CHUNK]
            parts.append(self.embedder.embed_documents([texts[i] for i in chunk]))
        stacked = np.concatenate(parts)
        out: FloatArray = np.empty_like(stacked)
        out[order] = stacked
        return out

    def _regate(self, rows: list[Row], fresh: Mapping[str, np.ndarray]) -> None:
        """Queue for the keyword index again the chat messages just embedded that were keyword
        indexed with context off their topic: the keyword pass, which reads their vectors
        now, leaves that context out."""
        if self.context_similarity <= 0:
            return
        # this node's keyword pass is about to write those gated; other nodes may have
        # written them before they were embedded, and follow the requeue
        writing = set() if self.records.index.follows_changes else self._writing
        rows = [row for row in rows if row.item.id not in writing]
        preceding = self._preceding(rows, self.keyword_context)
        if not preceding:
            return
        stored = self._stored_vectors(
            (p for before in preceding.values() for p in before if p.item.id not in fresh),
            [row for row in rows if row.item.id in preceding],
        )
        vectors = {**stored, **fresh}
        off_topic = [
            row.item.id
            for row in rows
            if (before := preceding.get(row.item.id))
            and len(on_topic(row, before, vectors, self.context_similarity)) < len(before)
        ]
        if off_topic:
            self.records.index.requeue(off_topic, vectors=False)
            self._workers[0].notify()
