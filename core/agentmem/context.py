"""The store context: what every operation of the core works with.

A :class:`StoreContext` holds one data dir's stores (records, keyword index, vector index),
its background indexer and recall engine, the models (embedder, reranker, LLM), the settings
read at open, per-key locks and the access counters. :func:`open_store` builds it; the
:class:`~agentmem.AgentMemory` facade owns it and closes it. The operation functions of
``write/``, ``recall/``, ``tiers/``, ``derived/`` and ``maintenance/`` take a context and an
:class:`~agentmem.models.Identity`; none of them imports the facades.

Example:
    >>> ctx = open_store(tmp_path, settings=Settings())  # doctest: +SKIP
    >>> ctx.records.archive.count_live()  # doctest: +SKIP
    0
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from pathlib import Path
from typing import Any

from .calibration import store as calibration_store
from .calibration.profile import CalibrationProfile
from .config import ChromaAddress, Settings
from .embedding_adapters import from_spec
from .embeddings import Embedder, default_embedder
from .errors import StorageError, ValidationError
from .llm import LLM, default_llm
from .recall.engine import RecallEngine
from .rerank import HttpReranker, Reranker
from .storage import fingerprint, vector_check
from .storage.access import AccessTracker
from .storage.datadir import (
    KEYWORDS_DIR,
    NODE_FILE,
    RECORDS_FILE,
    VECTORS_DIR,
    DataDirLock,
    discard_unreadable,
    remove_quarantined,
)
from .storage.fingerprint import EmbedderFingerprint
from .storage.keyword_index import KeywordIndex
from .storage.postgres import redact
from .storage.records import RecordStore
from .storage.records_check import blank_records_file, refuse_lost_records
from .storage.vector_check import VectorLoss
from .storage.vector_index import VectorIndex
from .telemetry import tracing
from .telemetry.recalls import RecallObservations
from .write.indexer import Indexer

log = logging.getLogger("agentmem")

#: Meta key naming the one node whose embedded Chroma holds a shared store's vectors.
EMBEDDED_VECTORS_KEY = "embedded_vectors_node"


class KeyedLocks:
    """One lock per key, created on first use (e.g. one per session being closed)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[tuple[Any, ...], threading.Lock] = {}

    def __call__(self, *key: Any) -> threading.Lock:
        with self._guard:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = threading.Lock()
            return lock


class StoreContext:
    """One open data dir: stores, indexer, engine, models, settings (see the module docstring).

    Attributes:
        recovered: Notes on what the open repaired: indexes found unreadable or lost and
            rebuilt from the records, copies of indexes removed.
        replaced_embedder: The embedder whose vectors this open dropped
            (``allow_embedder_change=True``), if any.
        calibration: The calibration the recall engine scores with, where it comes from, and
            why the store is uncalibrated when it is (:mod:`agentmem.calibration.store`).
    """

    def __init__(
        self,
        *,
        home: Path,
        settings: Settings,
        records: RecordStore,
        keywords: KeywordIndex,
        vectors: VectorIndex,
        embedder: Embedder,
        reranker: Reranker | None,
        llm: LLM | None,
        lock: DataDirLock | None,
        embedder_recorded: bool,
        recovered: list[str],
        replaced_embedder: EmbedderFingerprint | None,
        calibration: calibration_store.Selected,
        vector_loss: VectorLoss | None = None,
    ) -> None:
        self.home = home
        self.settings = settings
        self.records = records
        self.keywords = keywords
        self.vectors = vectors
        self.embedder = embedder
        self.reranker = reranker
        self.recovered = recovered
        self.replaced_embedder = replaced_embedder
        #: Vectors found lost at a read-only open (a writer queues them again instead).
        self.vector_loss = vector_loss
        self.locks = KeyedLocks()
        self.pid = os.getpid()
        #: Opened beside the writing process: no lock, no indexing, writes raise.
        self.read_only = lock is None
        self._llm = llm
        self._lock = lock
        self._closed = False
        self.access = AccessTracker(records)
        self.calibration = calibration
        #: The last recalls of this store, as numbers (metrics, the inspector).
        self.recalls = RecallObservations()
        self.engine = RecallEngine(
            records, keywords, vectors, embedder, reranker, settings.memory, calibration.scoring
        )
        self.engine.access = None if self.read_only else self.access
        self.engine.vectors_lost = vector_loss is not None
        cfg = settings.memory
        if records.shared and not self.read_only:
            records.on_change(self._wake_indexer)
        self.indexer = Indexer(
            records,
            keywords,
            vectors,
            embedder,
            batch_size=cfg.embed_batch_size,
            interval=cfg.index_interval,
            keyword_context=cfg.keyword_context,
            context_similarity=cfg.keyword_context_similarity,
            vector_context=cfg.vector_context,
            before_first_vectors=self._before_first_vectors,
        )
        self._embedder_recorded = embedder_recorded

    def _wake_indexer(self) -> None:
        # the listener may hear a change before __init__ has built the indexer
        indexer = getattr(self, "indexer", None)
        if indexer is not None and indexer.running:
            indexer.notify()

    @property
    def llm(self) -> LLM:
        """The LLM of this store (built from the settings on first use)."""
        if self._llm is None:
            self._llm = default_llm(self.settings.llm, embedder=self.embedder)
        return self._llm

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        """Raise unless this context may serve a call in this process."""
        if self._closed:
            raise StorageError("this AgentMemory is closed", path=str(self.home))
        if os.getpid() != self.pid:
            raise StorageError(
                f"this AgentMemory was opened in process {self.pid} and is used in process "
                f"{os.getpid()}, a forked child: its database connections and indexer threads "
                "do not survive a fork. Open the AgentMemory in the child after the fork "
                "(e.g. no module-level AgentMemory with gunicorn --preload or multiprocessing "
                "'fork'), or share one memory through `agentmem serve`.",
                path=str(self.home),
                pid=os.getpid(),
            )

    def _before_first_vectors(self) -> None:
        """The indexer calls this before it first writes vectors in this process: the
        embedder is recorded with the first vectors of a data dir, and the vector index is
        marked as this store's (see :mod:`~agentmem.storage.vector_check`)."""
        if not self._embedder_recorded:
            first = EmbedderFingerprint.of(self.embedder, origin="first_write")
            fingerprint.record(self.records, first, replace=False)
            self._embedder_recorded = True
        vector_check.mark(self.records, self.vectors)

    def use_profile(self, profile: CalibrationProfile) -> None:
        """Keep ``profile`` as this store's own and score with it from the next recall on
        (other processes and nodes read it when they open the store).

        Raises:
            ValidationError: it was fitted for another embedder or other features.
        """
        if not profile.embedder.names(str(self.embedder.model_name), self.embedder.dimensions):
            raise ValidationError(
                "profile",
                f"fitted for {profile.embedder.describe()}, but this store embeds with "
                f"{self.embedder.model_name!r} ({self.embedder.dimensions}-d)",
            )
        scoring = profile.scoring()
        calibration_store.save(self.records, profile)
        self.calibration = calibration_store.Selected(scoring, profile, "store")
        self.engine.scoring = scoring

    def drop_vectors(self) -> None:
        """Drop every vector collection (an unreadable embedded index is removed)."""
        self.recovered.extend(_drop_vectors(self.vectors))

    def close(self) -> None:
        """Stop the indexer (pending work resumes at the next open) and release the dir.

        Idempotent; in a forked child only the lock handle is closed (the parent owns the
        stores).
        """
        if self._closed:
            return
        self._closed = True
        if os.getpid() != self.pid:
            return
        self.indexer.stop()
        self.engine.close()
        if not self.read_only:
            self.access.flush()
        self.keywords.close()
        self.vectors.close()
        self.records.close()
        if self._lock is not None:
            self._lock.release()


def open_store(
    home: Path,
    *,
    settings: Settings,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    llm: LLM | None = None,
    chroma_client: Any = None,
    allow_embedder_change: bool = False,
    read_only: bool = False,
) -> StoreContext:
    """Open a data dir: take its lock, open the three stores, check the embedder, recover an
    unreadable keyword index and a lost vector index. A refused open changes nothing on disk
    and holds nothing.

    With ``read_only``, the dir is opened beside the process that writes to it: no lock, no
    migration, no recovery, no indexing, and every write raises ``StorageError``.

    Raises:
        DataDirLockedError: another process holds the dir.
        RecordsMissingError: the records store is missing or new beside indexes with entries.
        EmbedderMismatchError: the dir's vectors were made by another embedder.
        ConfigError: the vector index holds another records store's vectors.
        StorageError: a store cannot be opened.
    """
    tracing.setup()  # spans on if the application or OTEL_* configured OpenTelemetry
    emb = embedder or settings_embedder(settings)
    if read_only:
        return _open_read_only(home, settings, emb, reranker, llm, chroma_client)
    url = records_url(settings)
    lock = DataDirLock(home)
    recovered: list[str] = []
    records: RecordStore | None = None
    vectors: VectorIndex | None = None
    try:
        _check_node_home(home, url)
        vectors = _vector_index(home, settings, chroma_client, read_only=False)
        records = _open_records(home, settings, url, vectors)
        index = vectors

        def drop() -> None:
            recovered.extend(_drop_vectors(index))
            index.compact_files()  # Chroma leaves the old model's collections' files

        # before anything else touches the data dir: a refused open changes nothing
        embedder_recorded, replaced = fingerprint.check(
            records,
            vectors,
            emb,
            home,
            allow_change=allow_embedder_change,
            drop_vectors=drop,
            forget=(calibration_store.META_KEY,),  # the old model's weights
        )
        _finish_switch_if_done(records)
        calibration = calibration_store.select(records, emb)
        keywords = _open_keywords(home / KEYWORDS_DIR, records, recovered)
        _recover(home, records, vectors, recovered)
    except BaseException:
        if vectors is not None:
            vectors.close()
        if records is not None:
            records.close()
        lock.release()
        raise
    return StoreContext(
        home=home,
        settings=settings,
        records=records,
        keywords=keywords,
        vectors=vectors,
        embedder=emb,
        reranker=reranker if reranker is not None else HttpReranker.from_config(settings.rerank),
        llm=llm,
        lock=lock,
        embedder_recorded=embedder_recorded,
        recovered=recovered,
        replaced_embedder=replaced,
        calibration=calibration,
    )


def _open_records(
    home: Path, settings: Settings, url: str | None, vectors: VectorIndex
) -> RecordStore:
    """Open (and migrate) the records store, refusing a lost one: missing, or new, beside
    indexes with entries. On a cluster, check the vector index is this store's."""
    blank = url is None and blank_records_file(home / RECORDS_FILE)
    if blank:  # before SQLite creates (or writes) the file
        refuse_lost_records(home, vectors)
    records = RecordStore(
        home / RECORDS_FILE,
        durable=settings.memory.durable_writes,
        url=url,
        node_id=None if url is None else node_id(home),
    )
    try:
        if not blank and not records.archive.holds_history():
            refuse_lost_records(home, vectors, records)
        if records.shared:
            _check_vector_owner(records, embedded=vectors.owns_client)
    except BaseException:
        records.close()
        raise
    return records


def _recover(home: Path, records: RecordStore, vectors: VectorIndex, recovered: list[str]) -> None:
    """Remove copies of unreadable indexes an earlier version kept, and queue again the rows
    whose vectors the vector index lost; say so in ``recovered``."""
    for name in remove_quarantined(home):
        recovered.append(
            f"removed {name}, the copy of an unreadable index an earlier version kept (its "
            "content was out of reach of forget and erase; the index was rebuilt)"
        )
    loss = _check_vectors(records, vectors, repair=True)
    if loss is not None:
        log.error(loss.describe())
        recovered.append(loss.describe())


def settings_embedder(settings: Settings) -> Embedder:
    """The embedder the settings name (``AGENTMEM_EMBEDDER``), else the default MiniLM.

    Raises:
        ValidationError: the setting names no usable embedder.
    """
    if settings.embedder is None:
        if settings.embedder_name is not None:
            raise ValidationError("embedder_name", "names the model of an AGENTMEM_EMBEDDER")
        return default_embedder()
    return from_spec(settings.embedder, name=settings.embedder_name)


def _finish_switch_if_done(records: RecordStore) -> None:
    """A re-embedding whose every row was embedded meanwhile (by the background indexer of an
    earlier open) is over."""
    if fingerprint.read_switch(records) is not None and records.index.pending_counts()[1] == 0:
        fingerprint.finish_switch(records)


def _open_read_only(
    home: Path,
    settings: Settings,
    embedder: Embedder,
    reranker: Reranker | None,
    llm: LLM | None,
    chroma_client: Any,
) -> StoreContext:
    url = records_url(settings)
    _check_node_home(home, url)
    vectors = _vector_index(home, settings, chroma_client, read_only=True)
    try:
        has_records = url is not None or not blank_records_file(home / RECORDS_FILE)
        if not has_records:
            refuse_lost_records(home, vectors)
        if not has_records or not (home / KEYWORDS_DIR).is_dir():
            raise StorageError(f"{home} is not an agentmem data dir", path=str(home))
        records = RecordStore(
            home / RECORDS_FILE,
            read_only=True,
            url=url,
            node_id=None if url is None else node_id(home, create=False),
        )
    except BaseException:
        vectors.close()
        raise
    try:
        if not records.archive.holds_history():
            refuse_lost_records(home, vectors, records)
        recorded = fingerprint.read(records)
        current = None if recorded is None else fingerprint.differs(recorded, embedder)
        if recorded is not None and current is not None:
            raise fingerprint.mismatch_error(home, recorded, current)
        calibration = calibration_store.select(records, embedder)
        # absolute: on read-only media the index is read through links made in a temp dir,
        # where a relative path (`agentmem --home ./mem stats`) would point at nothing
        keywords = KeywordIndex((home / KEYWORDS_DIR).absolute(), read_only=True)
        loss = _check_vectors(records, vectors, repair=False)
    except BaseException:
        records.close()
        vectors.close()
        raise
    return StoreContext(
        home=home,
        settings=settings,
        records=records,
        keywords=keywords,
        vectors=vectors,
        embedder=embedder,
        reranker=reranker if reranker is not None else HttpReranker.from_config(settings.rerank),
        llm=llm,
        lock=None,
        embedder_recorded=True,
        recovered=[],
        replaced_embedder=None,
        calibration=calibration,
        vector_loss=loss,
    )


def _vector_index(
    home: Path, settings: Settings, chroma_client: Any, *, read_only: bool
) -> VectorIndex:
    """The caller's Chroma client, else the configured Chroma server, else the embedded
    store in the data dir."""
    url = settings.chroma_url
    server = ChromaAddress.parse(url) if chroma_client is None and url is not None else None
    return VectorIndex(
        home / VECTORS_DIR,
        client=chroma_client,
        server=server,
        read_only=read_only,
        exact_search_bytes=settings.memory.exact_search_mb * 2**20,
    )


def _check_vectors(
    records: RecordStore, vectors: VectorIndex, *, repair: bool
) -> VectorLoss | None:
    """:func:`~agentmem.storage.vector_check.verify`; an index that cannot be read now
    is left to recall (which then answers from keywords, ``degraded``) and to doctor."""
    try:
        return vector_check.verify(records, vectors, repair=repair)
    except StorageError as exc:
        log.warning("could not check the vector index at %s: %s", vectors.location, exc)
        return None


def _open_keywords(path: Path, records: RecordStore, recovered: list[str]) -> KeywordIndex:
    """The keyword index; a corrupted one is removed and rebuilt from the records, a lost one
    (its dir, or its ``meta.json``, deleted: Tantivy starts an empty index there) rebuilt."""
    try:
        index = KeywordIndex(path)
    except StorageError as exc:
        if not path.is_dir():
            raise
        recovered.append(discard_unreadable(path, "keyword index", exc))
        index = KeywordIndex(path)
    else:
        # only an empty index is compared with the records (a count of the rows there)
        expected = 0 if index.num_docs() else records.index.keyword_indexed_count()
        if not expected:
            return index
        note = (
            f"keyword index at {path} was lost (empty, while the records say {expected} "
            "row(s) are in it); every row queued to be indexed again in the background"
        )
        log.error(note)
        recovered.append(note)
    records.index.mark_keywords_pending()  # the indexer re-adds every row
    return index


def _drop_vectors(vectors: VectorIndex) -> list[str]:
    """Drop every collection; an unreadable embedded store is removed instead. Returns the
    notes of what was removed."""
    try:
        for name in vectors.collections():
            vectors.drop(name)
    except StorageError as exc:
        if vectors.path is None or not vectors.owns_client:
            raise
        return [vectors.discard(exc)]
    return []


def records_url(settings: Settings) -> str | None:
    """The Postgres URL of the records, checked, or None (SQLite in the data dir).

    Raises:
        ValidationError: the URL is not a ``postgresql://`` URL.
    """
    url = settings.records_url
    if url is None:
        return None
    if not url.startswith(("postgresql://", "postgres://")):
        raise ValidationError("records_url", f"must be a postgresql:// URL, got {redact(url)!r}")
    return url


def _check_node_home(home: Path, url: str | None) -> None:
    """Refuse to open a cluster node's home without its records URL: it holds no records
    of its own, so opening it alone would start an empty SQLite store beside its index."""
    if url is None and (home / NODE_FILE).is_file() and not (home / RECORDS_FILE).exists():
        raise StorageError(
            f"{home} is the home of a node whose records are in a shared Postgres store: pass "
            "its records URL (records_url=, --records-url or AGENTMEM_RECORDS_URL)",
            path=str(home),
        )


def node_id(home: Path, *, create: bool = True) -> str:
    """This node's name in the shared records (its keyword-index progress, the owner of an
    embedded vector store), kept in ``home/NODE_ID``."""
    path = home / NODE_FILE
    if path.is_file():
        return path.read_text().strip()
    name = f"{socket.gethostname()}-{uuid.uuid4().hex[:12]}"
    if create:
        try:
            path.write_text(name)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc}", path=str(path)) from exc
    return name


def _check_vector_owner(records: RecordStore, *, embedded: bool) -> None:
    """Refuse a second node with its own embedded Chroma over shared records.

    The records say which rows are embedded, once for the whole cluster; an embedded Chroma
    lives in one node's home, so only that node has the vectors. Nodes that share Postgres
    share a Chroma server (``chroma_client`` or ``chroma_url``) instead.

    Raises:
        StorageError: another node keeps this store's vectors in its embedded Chroma.
    """
    if not embedded:
        return
    me = records.index.node_id or ""
    records.meta.set(EMBEDDED_VECTORS_KEY, me, replace=False)
    owner = records.meta.get(EMBEDDED_VECTORS_KEY)
    if owner != me:
        raise StorageError(
            f"the vectors of the records store {records.location} are in the embedded Chroma of "
            f"node {owner}; every node sharing a Postgres records store needs the same Chroma "
            "server: pass chroma_client=chromadb.HttpClient(...) (or --chroma-url)",
            path=records.location,
        )
