"""The public facades: ``AgentMemory`` (one data dir) and ``BoundMemory`` (one identity).

Both are thin: they document the API and delegate to the operation layer, which takes the
store context (:mod:`agentmem.context`) and an :class:`~agentmem.models.Identity`. Every
other surface (the tools, the CLI, the server) calls the same operations.

Example:
    >>> from agentmem import AgentMemory
    >>> with AgentMemory(tmp_path) as mem:  # doctest: +SKIP
    ...     m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")
    ...     m.remember("I prefer uv over pip", memory_type="preference")
    ...     m.recall("which Python package manager do I prefer?").items[0].content
    'I prefer uv over pip'
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Unpack

from . import validation
from .calibration.fit import CalibrationReport, Labelled
from .calibration.profile import CalibrationProfile, UncalibratedEmbedderWarning
from .config import MemoryConfig, Settings, TierConfig, default_home
from .context import StoreContext, open_store
from .derived import answer as answer_op
from .derived import forget as forget_op
from .derived import ingest as ingest_op
from .derived import retention as retention_op
from .derived import supersession
from .embedding_adapters import as_embedder
from .embeddings import Embedder, ModelFilesWarning, model_files_problem
from .errors import DataDirLockedError, StorageError, ValidationError
from .llm.base import LLM, ChatTurn
from .maintenance import calibrate as calibrate_op
from .maintenance import erase as erase_op
from .maintenance import reindex as reindex_op
from .maintenance import stats as stats_op
from .maintenance.stats import Stats
from .models import (
    KINDS,
    AnswerResult,
    ErasureReceipt,
    Identity,
    IngestResult,
    JudgeResult,
    MemoryItem,
    RecallResult,
    RememberResult,
    RetentionResult,
)
from .recall.api import recall as recall_op
from .recall.engine import RecallEngine
from .recall_options import RecallKwargs, RecallOptions
from .rerank import Reranker
from .storage import fingerprint
from .storage.access import AccessTracker
from .storage.fingerprint import EmbedderFingerprint
from .storage.keyword_index import KeywordIndex
from .storage.records import RecordStore
from .storage.vector_index import VectorIndex
from .tiers import sessions as session_tiers
from .tiers.agent_state import AgentState
from .tiers.knowledge import Knowledge
from .tiers.sessions import CloseResult, SessionDetail
from .tiers.working import CompactionResult, PromptView, WorkingMemory
from .write import conversation, documents, memories
from .write.indexer import Indexer

__all__ = ["AgentMemory", "BoundMemory", "Stats"]

log = logging.getLogger("agentmem")


# -- one open context per data dir and process ---------------------------------------------------
@dataclass
class _Open:
    ctx: StoreContext
    key: tuple[Any, ...]
    users: int = 0


_open_lock = threading.Lock()
_open: dict[Path, _Open] = {}


def _acquire(home: Path, key: tuple[Any, ...], opener: Callable[[], StoreContext]) -> StoreContext:
    """The open context of ``home`` in this process, or a new one.

    A second ``AgentMemory`` on a dir this process already has open shares its context (a
    notebook cell re-run, two components of one app) when it asks for nothing different;
    otherwise it is refused, naming the fix.
    """
    real = home.resolve()
    with _open_lock:
        entry = _open.get(real)
        if entry is not None and (entry.ctx.closed or entry.ctx.pid != os.getpid()):
            del _open[real]
            entry = None
        if entry is None:
            entry = _open[real] = _Open(opener(), key)
        elif entry.key != key:
            raise DataDirLockedError(
                f"data dir {home} is already open in this process (pid {os.getpid()}) with "
                "other components or settings (embedder, LLM, reranker, Chroma client, "
                "configuration or background indexing); reuse that AgentMemory, or close it "
                "first",
                path=str(home),
                pid=os.getpid(),
            )
        entry.users += 1
        return entry.ctx


def _release(home: Path, ctx: StoreContext, shared: bool) -> None:
    """One user of ``ctx`` is gone (closed or collected); the last one closes it."""
    if not shared:
        ctx.close()
        return
    real = home.resolve()
    with _open_lock:
        entry = _open.get(real)
        if entry is None or entry.ctx is not ctx:
            last = True
        else:
            entry.users -= 1
            last = entry.users <= 0
            if last:
                del _open[real]
    if last:
        ctx.close()


def _model_files_message(embedder: Embedder) -> str | None:
    """What to say when the default embedder's model files are missing or the wrong size (a
    cheap check; checksums are verified at first load), instead of letting every write fail
    to embed quietly in the background."""
    problem = model_files_problem(embedder)
    if problem is None:
        return None
    return (
        f"agentmem cannot embed with its default model: {problem}. Until this is fixed, "
        f"writes get no vectors and recall matches by keywords only (degraded=True); "
        f"afterwards `agentmem reindex` embeds what was written meanwhile"
    )


def _finish_erasures(ctx: StoreContext) -> None:
    """Finish the erasures a crash interrupted (before anything else uses the store)."""
    try:
        erase_op.resume_unfinished(ctx)
    except Exception as exc:  # the store stays usable; doctor reports the erasure unfinished
        log.error("an interrupted erasure could not be finished at open: %s", exc)


class AgentMemory:
    """A memory store on one data dir: SQLite records, Tantivy keywords, Chroma vectors.

    With ``records_url`` the records live in Postgres instead, shared by every node (each
    with its own data dir for its keyword index) opened on the same database.

    Args:
        path: Data dir; ``None`` means ``$AGENTMEM_HOME`` or a per-user data dir.
        embedder: Any :class:`~agentmem.embeddings.Embedder`, or a LangChain ``Embeddings`` or
            LlamaIndex ``BaseEmbedding`` object as it is (e.g. ``OpenAIEmbeddings()``; see
            :mod:`agentmem.embedding_adapters`); default all-MiniLM-L6-v2 (int8 ONNX,
            offline), loaded on first use. An embedder without a calibration profile (none
            stored for this data dir, none shipped for its model) scores recall by rank until
            :meth:`calibrate` fits one (:class:`~agentmem.UncalibratedEmbedderWarning`).
        embedder_name: The model name of a LangChain or LlamaIndex ``embedder`` that names
            none itself (``model``, ``model_name``): the data dir records it, and refuses
            vectors of another model.
        reranker: Optional :class:`~agentmem.rerank.Reranker`; default an
            :class:`~agentmem.rerank.HttpReranker` when ``AGENTMEM_RERANKER_URL`` is set, else
            none.
        llm: The :class:`~agentmem.llm.LLM` for extraction, summaries, the judge and answers;
            default Anthropic when ``ANTHROPIC_API_KEY`` is set, else the offline heuristics,
            built on first use.
        chroma_client: A Chroma client to use instead of the embedded one, e.g.
            ``chromadb.HttpClient(...)``: the vectors then live on that server, nothing of
            them in ``path``. Without one, ``settings.chroma_url`` (``AGENTMEM_CHROMA_URL``)
            names a Chroma server to reach; without either, Chroma is embedded in ``path``.
        records_url: A ``postgresql://`` URL: the records, and every other piece of state,
            live in that database, shared by every agentmem node opened on it (each on its
            own ``path``, which then holds only that node's keyword index and local state).
            Default ``settings.records_url`` (``AGENTMEM_RECORDS_URL``); None there too means
            a SQLite file in ``path``.
        config: Recall, indexing and durability settings (shortcut for ``settings.memory``).
        background: Index in background threads (default). With False, indexing happens in
            :meth:`flush`.
        tier_config: Working memory and session tiers (shortcut for ``settings.tiers``).
        allow_embedder_change: The data dir records the embedder of its vectors (model name
            and dimensions), and opening it with another one raises
            :class:`~agentmem.errors.EmbedderMismatchError` without changing anything. With
            True, another embedder is accepted instead: the old vectors are dropped, every row
            is queued to be embedded again and the new embedder is recorded; :meth:`reindex`
            (or the background indexer, or :meth:`flush`) then re-embeds them.
        settings: Every setting (:class:`~agentmem.config.Settings`); default read from the
            environment once, at open. ``config`` and ``tier_config`` replace its parts.
        read_only: Open beside the process that writes to the dir (``agentmem stats``,
            ``export``, ``doctor``, an inspection from a notebook), or on read-only media:
            no lock, no indexing, nothing written in the dir; reads and recall work, writes
            raise :class:`~agentmem.errors.StorageError`.

    A data dir whose indexes hold entries while its records store is missing or new is
    refused (:class:`~agentmem.errors.RecordsMissingError`); a vector index found lost at
    open is rebuilt in the background (see :attr:`recovered`).

    One process writes to a data dir at a time; another process gets
    :class:`~agentmem.errors.DataDirLockedError`. A second ``AgentMemory`` on the same dir in
    the same process shares the open store; it is released when the last one is closed or
    garbage-collected (and at interpreter exit).

    Example:
        >>> mem = AgentMemory("./memdata")  # doctest: +SKIP
        >>> m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | Any | None = None,
        reranker: Reranker | None = None,
        llm: LLM | None = None,
        chroma_client: Any = None,
        config: MemoryConfig | None = None,
        background: bool = True,
        tier_config: TierConfig | None = None,
        allow_embedder_change: bool = False,
        settings: Settings | None = None,
        read_only: bool = False,
        records_url: str | None = None,
        embedder_name: str | None = None,
    ) -> None:
        if isinstance(path, str | bytes) and not path.strip():
            # Path("") is the working directory: the store's files would land beside the
            # caller's own
            raise ValidationError(
                "path",
                "must not be empty: name a data dir, or pass None for $AGENTMEM_HOME or the "
                "per-user default",
            )
        home = Path(path).expanduser() if path is not None else default_home()
        if embedder is None and embedder_name is not None:
            raise ValidationError("embedder_name", "names the model of an embedder= object")
        emb = None if embedder is None else as_embedder(embedder, name=embedder_name)
        resolved = (settings or Settings.from_env()).replace(
            memory=config, tiers=tier_config, records_url=records_url
        )

        unusable: list[tuple[str, type[UserWarning]]] = []

        def opener() -> StoreContext:
            ctx = open_store(
                home,
                settings=resolved,
                embedder=emb,
                reranker=reranker,
                llm=llm,
                chroma_client=chroma_client,
                allow_embedder_change=allow_embedder_change,
                read_only=read_only,
            )
            problem = _model_files_message(ctx.embedder)
            if problem is not None:
                ctx.indexer.unavailable = problem  # the indexer does not repeat it per batch
                unusable.append((problem, ModelFilesWarning))
            if ctx.calibration.warning is not None:
                unusable.append((ctx.calibration.warning, UncalibratedEmbedderWarning))
            if not read_only:
                _finish_erasures(ctx)
            if background and not read_only:
                ctx.indexer.start()
                ctx.indexer.notify()  # pick up work left by an earlier process
            return ctx

        key = (
            resolved,
            embedder,
            embedder_name,
            reranker,
            llm,
            chroma_client,
            background,
            allow_embedder_change,
        )
        # a read-only open shares nothing: it may sit beside this process's own writer
        self._ctx = opener() if read_only else _acquire(home, key, opener)
        for problem, category in unusable:  # said once, when the dir is opened (not shared)
            warnings.warn(problem, category, stacklevel=2)
        self._background = background
        self._finalizer = weakref.finalize(self, _release, home, self._ctx, not read_only)

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def context(self) -> StoreContext:
        """The store context the operations work on (for surfaces built on this store)."""
        return self._ctx

    def close(self) -> None:
        """Release this store; the last user of a data dir stops its indexer (pending work
        resumes at the next open) and releases the dir. Idempotent."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _live(self) -> StoreContext:
        if not self._finalizer.alive:
            raise StorageError("this AgentMemory is closed", path=str(self.home))
        self._ctx.check_open()
        return self._ctx

    # -- what it is made of ------------------------------------------------------------------
    @property
    def home(self) -> Path:
        return self._ctx.home

    @property
    def settings(self) -> Settings:
        return self._ctx.settings

    @property
    def config(self) -> MemoryConfig:
        return self._ctx.settings.memory

    @property
    def tier_config(self) -> TierConfig:
        return self._ctx.settings.tiers

    @property
    def embedder(self) -> Embedder:
        return self._ctx.embedder

    @property
    def reranker(self) -> Reranker | None:
        return self._ctx.reranker

    @property
    def llm(self) -> LLM:
        """The LLM of this store (built on first use when none was passed in)."""
        return self._ctx.llm

    @property
    def records(self) -> RecordStore:
        """The records store (:class:`~agentmem.storage.records.RecordStore`)."""
        return self._ctx.records

    @property
    def keywords(self) -> KeywordIndex:
        """The keyword index (:class:`~agentmem.storage.keyword_index.KeywordIndex`)."""
        return self._ctx.keywords

    @property
    def vectors(self) -> VectorIndex:
        """The vector index (:class:`~agentmem.storage.vector_index.VectorIndex`)."""
        return self._ctx.vectors

    @property
    def indexer(self) -> Indexer:
        """The background indexer (:class:`~agentmem.write.indexer.Indexer`)."""
        return self._ctx.indexer

    @property
    def engine(self) -> RecallEngine:
        """The recall engine (:class:`~agentmem.recall.engine.RecallEngine`)."""
        return self._ctx.engine

    @property
    def access(self) -> AccessTracker:
        """The recall-hit counters (:class:`~agentmem.storage.access.AccessTracker`)."""
        return self._ctx.access

    @property
    def recovered(self) -> list[str]:
        """What the open repaired (``agentmem doctor`` reports it): indexes found unreadable
        or lost and being rebuilt from the records, copies of indexes removed."""
        return self._ctx.recovered

    @property
    def replaced_embedder(self) -> EmbedderFingerprint | None:
        """The embedder whose vectors this open dropped (``allow_embedder_change=True``)."""
        return self._ctx.replaced_embedder

    @property
    def calibration(self) -> CalibrationProfile | None:
        """The calibration profile recall scores with: fitted for this store
        (:meth:`calibrate`) or shipped with agentmem for its embedder; None when there is none
        (rank-based scores, ``min_score`` on keyword evidence only; see
        :class:`~agentmem.calibration.UncalibratedEmbedderWarning`)."""
        return self._ctx.calibration.profile

    @property
    def recorded_embedder(self) -> EmbedderFingerprint | None:
        """The embedder recorded for this data dir's vectors; None before any are written."""
        return fingerprint.read(self._ctx.records)

    # -- identity ----------------------------------------------------------------------------
    def bind(
        self,
        tenant_id: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> BoundMemory:
        """A view of this store for one identity. Only ``tenant_id`` is required."""
        identity = Identity(
            tenant_id=validation.identity(tenant_id, "tenant_id", required=True),  # type: ignore[arg-type]
            user_id=validation.identity(user_id, "user_id"),
            agent_id=validation.identity(agent_id, "agent_id"),
            session_id=validation.identity(session_id, "session_id"),
        )
        return BoundMemory(self, identity)

    # -- maintenance -------------------------------------------------------------------------
    def flush(self, timeout: float | None = None, *, tenant_id: str | None = None) -> bool:
        """Block until both indexes have caught up with the records (True if they did).

        Recall does not need it (it reads rows not indexed yet itself); use it before a
        benchmark, a backup of the indexes, or to measure indexing.

        Args:
            timeout: Seconds to wait at most (None: until caught up).
            tenant_id: Wait for this tenant's rows only (what a server does for a tenant's
                key); None: for every row.
        """
        tenant = validation.identity(tenant_id, "tenant_id")
        ctx = self._live()
        return True if ctx.read_only else ctx.indexer.flush(timeout, tenant_id=tenant)

    def reindex(
        self,
        *,
        progress: Callable[[int, int], None] | None = None,
        keywords_only: bool = False,
        embeddings: bool = False,
    ) -> int:
        """Rebuild both indexes from the records; returns the number of live rows indexed.

        Every row is embedded again with this store's embedder, which is recorded as the
        data dir's embedder (to switch embedders, open with ``allow_embedder_change=True``).
        With ``keywords_only``, only the keyword index is written anew, from the records and
        the stored vectors (seconds instead of minutes per 100k rows): enough after a change
        of ``keyword_context`` or ``keyword_context_similarity``.

        With ``embeddings``, only the vectors are made anew, and resumably: the way to switch
        a data dir to another embedder (``agentmem reindex --embeddings``). Open the store
        with the new embedder and ``allow_embedder_change=True`` (which drops the old vectors
        and the old embedder's calibration profile and queues every row), then call this; an
        interrupted run is continued by the next one, which embeds only the rows still
        queued. ``progress(done, total)`` follows each batch.

        Raises:
            EmbeddingError: (``embeddings``) some rows could not be embedded; they stay
                queued and keyword-searchable, and the next run retries them.

        Example:
            >>> mem = AgentMemory(path, embedder=E5Embedder(), allow_embedder_change=True)  # doctest: +SKIP
            >>> mem.reindex(embeddings=True)  # doctest: +SKIP
            1200
        """
        ctx = self._live()
        if keywords_only:
            return reindex_op.reindex_keywords(ctx)
        if embeddings:
            return reindex_op.reindex_embeddings(ctx, progress=progress, restart=self._background)
        return reindex_op.reindex(ctx, progress=progress, restart=self._background)

    def calibrate(
        self,
        queries: Sequence[Labelled] | None = None,
        *,
        fitted_on: str = "",
        folds: int = 5,
        progress: Callable[[int, int], None] | None = None,
    ) -> CalibrationReport:
        """Fit a calibration profile for this store's embedder, save it in the data dir and
        score recall with it from now on (``agentmem calibrate``).

        The labelled cases shipped with agentmem are written into scratch stores with this
        store's embedder (this store is not touched); recall's candidates for each are
        collected and labelled. The calibrated score and the score gap are fitted on the
        golden set and the calibration cases, the ordering on those and every task family
        of the evaluation suite (implicit recall, paraphrase-only facts, identifiers, tool
        outputs, documents, temporal questions), every family weighing alike (see
        :mod:`agentmem.evaluation.calibration_data`). Every later open of this data dir
        (another process, a restarted server, every node sharing its Postgres records)
        scores with the profile. Minutes for a local model; a remote embedder is called
        for every text of the cases.

        Args:
            queries: Labelled candidates to fit on instead (collected with this embedder).
            fitted_on: What ``queries`` are, kept in the profile.
            folds: Folds of the held-out figures (2 or more).
            progress: ``progress(done, total)``: sets of cases collected so far.

        Returns:
            The profile and its figures per family, in-sample and held out: Recall@5,
            Precision@5, expect-empty cases left empty, the expected calibration error, the
            shares of relevant and irrelevant candidates kept by ``min_score``.

        Raises:
            ValidationError: fewer than 2 folds.
            StorageError: the store is open read-only.

        Example:
            >>> report = mem.calibrate()  # doctest: +SKIP
            >>> report.families["all"].held_out.expect_empty  # doctest: +SKIP
            1.0
        """
        ctx = self._live()
        if ctx.read_only:
            raise StorageError("a read-only store cannot save a profile", path=str(self.home))
        return calibrate_op.calibrate(
            ctx, queries, fitted_on=fitted_on, folds=folds, progress=progress
        )

    def stats(self) -> Stats:
        """Row counts, index backlog, the recorded embedder and disk use of the data dir."""
        return stats_op.stats(self._live())

    def export(
        self, *, tenant_id: str | None = None, kinds: Iterable[str] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every live record (of every tenant unless ``tenant_id``) as JSON-ready dicts."""
        ctx = self._live()
        kind_filter = validation.choices(kinds, "kinds", KINDS)
        for row in ctx.records.archive.iter_rows(tenant_id=tenant_id, kinds=kind_filter):
            yield row.item.to_dict()

    def judge_pending(self, *, limit: int | None = None) -> JudgeResult:
        """Run the supersession judge over facts/instructions not yet judged.

        ``ingest`` judges its own memories synchronously; memories written with
        ``remember`` wait for this pass (call it from a maintenance job or ``agentmem judge``).
        """
        return supersession.judge_pending(self._live(), limit=limit)

    def erase(
        self,
        *,
        tenant_id: str,
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> ErasureReceipt:
        """Erase a whole tenant, or everything of one user and/or agent of a tenant, from
        every store: records, derived rows, payloads, sessions, working and agent state, both
        indexes, and the space the databases keep after a delete (see
        :mod:`agentmem.maintenance.erase`). Irreversible.

        Args:
            tenant_id: The tenant; alone, the whole tenant is erased.
            user_id: Erase the rows this user owns in the tenant.
            agent_id: Erase the rows this agent owns (with ``user_id``: the rows of that
                user with that agent).

        Returns:
            What was removed from each store. Erasing again finds nothing and removes
            nothing; an erasure interrupted by a crash is finished at the next open.

        Example:
            >>> mem.erase(tenant_id="acme", user_id="u1").records["memories"]  # doctest: +SKIP
            42
        """
        return erase_op.erase(self._live(), tenant_id=tenant_id, user_id=user_id, agent_id=agent_id)

    def retention(
        self,
        *,
        dry_run: bool | None = None,
        now: datetime | None = None,
        tenant_id: str | None = None,
    ) -> RetentionResult:
        """Anonymize retired rows past their TTLs; see :mod:`agentmem.derived.retention`."""
        return retention_op.run_retention(
            self._live(), dry_run=dry_run, now=now, tenant_id=tenant_id
        )


class BoundMemory:
    """One identity's view of an :class:`AgentMemory`: every read and write is scoped by it.

    Obtain it with :meth:`AgentMemory.bind`; identity cannot be changed or widened by any
    argument of its methods.

    Example:
        >>> m = mem.bind(tenant_id="acme", user_id="u1", agent_id="support", session_id="s1")  # doctest: +SKIP
        >>> m.add_message("user", "My order 4711 arrived damaged")  # doctest: +SKIP
        >>> m.recall("damaged order").items  # doctest: +SKIP
    """

    def __init__(self, store: AgentMemory, identity: Identity) -> None:
        self._store = store
        self.identity = identity

    @property
    def store(self) -> AgentMemory:
        return self._store

    @property
    def _ctx(self) -> StoreContext:
        return self._store._live()

    @property
    def tenant_id(self) -> str:
        return self.identity.tenant_id

    @property
    def user_id(self) -> str | None:
        return self.identity.user_id

    @property
    def agent_id(self) -> str | None:
        return self.identity.agent_id

    @property
    def session_id(self) -> str | None:
        return self.identity.session_id

    def __repr__(self) -> str:
        i = self.identity
        return (
            f"BoundMemory(tenant_id={i.tenant_id!r}, user_id={i.user_id!r}, "
            f"agent_id={i.agent_id!r}, session_id={i.session_id!r})"
        )

    # -- conversation ------------------------------------------------------------------------
    def add_message(
        self,
        role: str,
        content: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        event_time: datetime | str | None = None,
    ) -> MemoryItem:
        """Store one chat message of this session (kind ``chat_message``).

        The recallable copy is capped at 16 KiB; a longer message is kept in full under
        ``item.source_ref`` (readable with :meth:`read_tool_output`).
        """
        return conversation.add_message(
            self._ctx, self.identity, role, content, metadata=metadata, event_time=event_time
        )

    def add_messages(self, messages: Iterable[Mapping[str, Any]]) -> list[MemoryItem]:
        """Store many messages in one transaction; every dict is validated before any write."""
        return conversation.add_messages(self._ctx, self.identity, messages)

    def add_tool_output(
        self,
        tool_call_id: str,
        content: str,
        *,
        tool_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryItem:
        """Store a tool result of this session (kind ``tool_output``).

        The full payload is always kept; the indexed copy of an oversized payload is an elided
        preview. ``item.source_ref`` is the key for :meth:`read_tool_output`. Storing the same
        ``tool_call_id`` twice in a session returns the first item.
        """
        return conversation.add_tool_output(
            self._ctx, self.identity, tool_call_id, content, tool_name=tool_name, metadata=metadata
        )

    def read_tool_output(self, key: str) -> str:
        """The full payload stored under ``key`` (a tool output's or long message's source_ref)."""
        return conversation.read_tool_output(self._ctx, self.identity, key)

    def messages(self, *, limit: int | None = None) -> list[MemoryItem]:
        """This session's chat messages and tool outputs, oldest first (the last ``limit``)."""
        return conversation.messages(self._ctx, self.identity, limit=limit)

    def clear_session(self) -> int:
        """Soft-delete this session's messages and tool outputs; returns how many (a closed
        session's chunks and summary, which carry them, go too)."""
        return session_tiers.clear_session(self._ctx, self.identity)

    # -- documents and explicit memories -----------------------------------------------------
    def add_document(
        self,
        text: str,
        *,
        source_ref: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Chunk a document into tenant-scope ``document_chunk`` rows.

        Adding the same text under the same ``source_ref`` again returns the existing chunks;
        a new revision under an existing ``source_ref`` retires the old revision's chunks.
        """
        return documents.add_document(
            self._ctx, self.identity, text, source_ref=source_ref, metadata=metadata
        )

    def remember(
        self,
        content: str,
        *,
        memory_type: str = "fact",
        scope: str = "user",
        importance: float | None = None,
        topic_key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RememberResult:
        """Store an explicit memory. Idempotent: the same identity, scope, type and content
        return the same id with ``was_new=False``.

        A ``topic_key`` shared with a live memory of the same scope and owner supersedes that
        memory (it leaves default recall but stays in the records, ``superseded_by``) for
        facts, preferences, decisions, instructions and notes; events and tasks accumulate.
        """
        return memories.remember(
            self._ctx,
            self.identity,
            content,
            memory_type=memory_type,
            scope=scope,
            importance=importance,
            topic_key=topic_key,
            metadata=metadata,
        )

    def remember_many(self, items: Iterable[str | Mapping[str, Any]]) -> list[RememberResult]:
        """Store many memories in one transaction (strings, or dicts of remember's arguments)."""
        return memories.remember_many(self._ctx, self.identity, items)

    def forget(self, memory_id: str) -> bool:
        """Delete a record visible to this identity, irreversibly, from every store at once,
        with what was derived from it (memories extracted from it, the chunks and summary of
        its session, rebuilt without it; its working-memory summary). A tombstone of ids,
        kind and times stays. False if there is none. See :mod:`agentmem.derived.forget`.
        """
        return forget_op.forget(self._ctx, self.identity, memory_id)

    def get(self, memory_id: str) -> MemoryItem:
        """A live record visible to this identity, by id."""
        return memories.get(self._ctx, self.identity, memory_id)

    def get_many(self, memory_ids: Sequence[str]) -> list[MemoryItem]:
        """The live records visible to this identity among ``memory_ids``, in their order;
        the ids of none (forgotten, deleted, anonymized, not visible here) are left out."""
        return memories.get_many(self._ctx, self.identity, memory_ids)

    # -- recall ------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        options: RecallOptions | None = None,
        **kwargs: Unpack[RecallKwargs],
    ) -> RecallResult:
        """Hybrid (keyword + vector) recall within this identity's scopes.

        A write is recallable as soon as its call returns (rows the indexes have not caught
        up with are read from the records store and scored on the spot).

        Args:
            query: What to look for (longer than 8192 characters is truncated).
            options: How to search (:class:`~agentmem.RecallOptions`: ``top_k``, ``kinds``,
                ``memory_types``, ``scope``, ``rerank``, ``min_score``, ``token_budget``,
                ``filters``, ``include_superseded``, ``tiers``, ``target_agent``; each
                documented there).
            **kwargs: The same options as keywords (``top_k=3, scope="user"``), laid over
                ``options``.
        """
        return recall_op(self._ctx, self.identity, query, options, **kwargs)

    # -- derived memories --------------------------------------------------------------------
    def ingest(self, messages: Iterable[Mapping[str, Any] | ChatTurn]) -> IngestResult:
        """Store a conversation verbatim and the memories extracted from it.

        Messages are content-addressed (re-ingesting creates no duplicates); without a bound
        session, one is derived from the conversation. See :mod:`agentmem.derived.ingest`.
        """
        return ingest_op.ingest(self._ctx, self.identity, messages)

    def history(self, memory_id: str) -> list[MemoryItem]:
        """The supersession chain of a memory, oldest first (both directions)."""
        return supersession.history(self._ctx, self.identity, memory_id)

    def answer(self, question: str, *, top_k: int = 5) -> AnswerResult:
        """A grounded answer from the top recalled memories, with the ids it used.

        The answer is empty when nothing relevant was recalled.
        """
        return answer_op.answer(self._ctx, self.identity, question, top_k=top_k)

    # -- tiers -------------------------------------------------------------------------------
    @property
    def working(self) -> WorkingMemory:
        """This session's working memory: window, reference summary, token counts."""
        return WorkingMemory(self._ctx, self.identity)

    def context_messages(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> list[dict[str, Any]]:
        """The messages to send to a model (pinned, reference summary, window); compacts
        first when the prompt passes ``budget_ratio`` of ``model_window`` or the window holds
        more than ``max_messages``. See
        :meth:`agentmem.tiers.working.WorkingMemory.context_messages`."""
        return self.working.context_messages(
            model_window=model_window, budget_ratio=budget_ratio, max_messages=max_messages
        )

    def prompt_view(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> PromptView:
        """What :meth:`context_messages` would send, as stored rows (pinned, reference summary,
        shown window), after the same trips; for callers that build the prompt from their own
        message objects (``AgentMemMiddleware``). See
        :meth:`agentmem.tiers.working.WorkingMemory.prompt_view`."""
        return self.working.prompt_view(
            model_window=model_window, budget_ratio=budget_ratio, max_messages=max_messages
        )

    def compact(self, *, keep: int | None = None) -> CompactionResult:
        """Fold this session's window into its reference summary, keeping a short tail."""
        return self.working.compact(keep=keep)

    def close_session(self, *, summary_timeout: float | None = None) -> CloseResult:
        """Run the session shutdown pipeline: summary, chunks, embedding, promotion.

        Idempotent: a second call without new messages does nothing. See
        :mod:`agentmem.tiers.sessions`.
        """
        return session_tiers.close_session(
            self._ctx, self.identity, summary_timeout=summary_timeout
        )

    def session_detail(self, session_id: str, *, target_agent: str | None = None) -> SessionDetail:
        """The full events (and summary) of one session of this conversation, any tier.

        With ``target_agent`` (this memory bound to an agent and no user), one of that
        agent's closed sessions instead: its events up to the last close and its summary.
        """
        return session_tiers.session_detail(
            self._ctx, self.identity, session_id, target_agent=target_agent
        )

    def sessions(self) -> list[str]:
        """Session ids of this conversation with live messages, oldest first."""
        return session_tiers.conversation_sessions(self._ctx, self.identity)

    @property
    def knowledge(self) -> Knowledge:
        """Agent-managed knowledge: readable tenant-wide, writable by its own agent only."""
        return Knowledge(self._ctx, self.identity)

    @property
    def state(self) -> AgentState:
        """Key-value state of the bound agent (needs ``agent_id``)."""
        return AgentState(self._ctx.records.agent_state, self.identity)
