"""``AgentMemory`` (one data dir, its stores and indexer) and ``BoundMemory`` (an identity).

Example:
    >>> from agentmem import AgentMemory
    >>> with AgentMemory(tmp_path) as mem:  # doctest: +SKIP
    ...     m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")
    ...     m.remember("I prefer uv over pip", memory_type="preference")
    ...     mem.flush()
    ...     m.recall("which package manager?").items[0].content
    'I prefer uv over pip'
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from . import scopes as scope_rules
from . import validation as v
from .chunking import cap_utf8, chunk_text, elide
from .config import CHAT_COPY_MAX_BYTES, TOOL_OUTPUT_PREVIEW_CHARS, MemoryConfig
from .embeddings import Embedder, default_embedder
from .errors import DataDirLockedError, NotFoundError, StorageError, ValidationError
from .models import (
    KINDS,
    MEMORY_TYPES,
    RECALL_SCOPES,
    ROLES,
    TIERS,
    Identity,
    MemoryItem,
    RecallResult,
    RememberResult,
)
from .recall.engine import RecallEngine, RecallRequest
from .rerank import HttpReranker, Reranker
from .storage import fingerprint
from .storage.access import AccessTracker
from .storage.agent_state import AgentState
from .storage.fingerprint import EmbedderFingerprint
from .storage.keyword_index import KeywordIndex
from .storage.records import NewRecord, RecordStore
from .storage.vector_index import VectorIndex
from .tiers.sessions import TierConfig
from .write.indexer import Indexer

if TYPE_CHECKING:
    from .llm.base import LLM, ChatTurn
    from .models import AnswerResult, IngestResult, JudgeResult, RetentionResult
    from .tiers.knowledge import Knowledge
    from .tiers.sessions import CloseResult, SessionDetail
    from .tiers.working import CompactionResult, WorkingMemory

log = logging.getLogger("agentmem")

REMEMBER_SCOPES = ("user", "agent", "tenant", "session")
_RESERVED_FILTER_KEYS = frozenset({"tenant_id", "user_id", "agent_id", "session_id"})


def default_home() -> Path:
    """``$AGENTMEM_HOME``, else ``$XDG_DATA_HOME/agentmem``, else ``~/.local/share/agentmem``."""
    env = os.environ.get("AGENTMEM_HOME")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "agentmem"


def _sha(*parts: str | None) -> str:
    joined = "\x1f".join("" if p is None else p for p in parts)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Stats:
    """Counts for ``agentmem stats``."""

    live: int
    deleted: int
    superseded: int
    keyword_pending: int
    vector_pending: int
    vector_failed: int
    by_kind: dict[str, int]
    tenants: int
    disk_bytes: dict[str, int]
    #: The embedder recorded for the vectors (model_name, dimensions, origin); None until
    #: the first vectors are written.
    embedder: dict[str, Any] | None = None


class AgentMemory:
    """A memory store on one data dir: SQLite records, Tantivy keywords, Chroma vectors.

    Args:
        path: Data dir; ``None`` means ``$AGENTMEM_HOME`` or a per-user data dir.
        embedder: Any :class:`~agentmem.embeddings.Embedder`; default all-MiniLM-L6-v2 (int8 ONNX,
            offline), loaded on first use.
        reranker: Optional :class:`~agentmem.rerank.Reranker`; default an
            :class:`~agentmem.rerank.HttpReranker` when ``AGENTMEM_RERANKER_URL`` is set, else none.
        llm: The :class:`~agentmem.llm.LLM` for extraction, summaries, the judge and answers;
            default :func:`~agentmem.llm.default_llm` (Anthropic when ``ANTHROPIC_API_KEY`` is
            set, else the offline heuristics), built on first use.
        chroma_client: A Chroma client to use instead of the embedded one (e.g. ``HttpClient``).
        config: Tunables; default ``MemoryConfig.from_env()``.
        background: Index in a background thread (default). With False, indexing happens
            in :meth:`flush`.
        tier_config: Tunables of working memory and the session tiers; default
            ``TierConfig.from_env()`` (see :mod:`agentmem.tiers.sessions`).
        allow_embedder_change: The data dir records the embedder of its vectors (model name
            and dimensions, see :mod:`agentmem.storage.fingerprint`), and opening it with another
            one raises :class:`~agentmem.errors.EmbedderMismatchError` without changing
            anything. With True, another embedder is accepted instead: the old vectors are
            dropped, every row is queued to be embedded again and the new embedder is
            recorded; :meth:`reindex` (or the background indexer, or :meth:`flush`) then
            re-embeds them. Recall is keyword-only (``degraded``) until that is done.

    Only one process may open a data dir at a time; a second gets ``DataDirLockedError``.

    Example:
        >>> mem = AgentMemory("./memdata")  # doctest: +SKIP
        >>> m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        llm: LLM | None = None,
        chroma_client: Any = None,
        config: MemoryConfig | None = None,
        background: bool = True,
        tier_config: TierConfig | None = None,
        allow_embedder_change: bool = False,
    ) -> None:
        self.home = Path(path).expanduser() if path is not None else default_home()
        self.config = config or MemoryConfig.from_env()
        self.tier_config = tier_config or TierConfig.from_env()
        self.embedder: Embedder = embedder or default_embedder()
        #: Indexes found unreadable at open and rebuilt from the records (``agentmem doctor``).
        self.recovered: list[str] = []
        #: The embedder whose vectors this open dropped (``allow_embedder_change=True``).
        self.replaced_embedder: EmbedderFingerprint | None = None
        self._lock_file = self._acquire_lock()
        try:
            self.records = RecordStore(
                self.home / "records.sqlite3", durable=self.config.durable_writes
            )
            try:
                self.vectors = VectorIndex(self.home / "chroma", client=chroma_client)
                # before anything else touches the data dir: a refused open changes nothing
                embedder_recorded, self.replaced_embedder = fingerprint.check(
                    self.records,
                    self.vectors,
                    self.embedder,
                    self.home,
                    allow_change=allow_embedder_change,
                    drop_vectors=self._drop_vectors,
                )
                self.keywords = self._open_keywords()
            except BaseException:
                if hasattr(self, "vectors"):
                    self.vectors.close()
                self.records.close()
                raise
        except BaseException:
            self._release_lock()
            raise
        self.reranker = reranker if reranker is not None else HttpReranker.from_env()
        self.engine = RecallEngine(
            self.records, self.keywords, self.vectors, self.embedder, self.reranker, self.config
        )
        self.indexer = Indexer(
            self.records,
            self.keywords,
            self.vectors,
            self.embedder,
            batch_size=self.config.embed_batch_size,
            interval=self.config.index_interval,
            keyword_context=self.config.keyword_context,
            vector_context=self.config.vector_context,
            before_first_vectors=None if embedder_recorded else self._record_first_embedder,
        )
        self.access = AccessTracker(self.records)
        self.engine.access = self.access  # recall counts hits; flushed in batches (seed 001)
        self._llm = llm
        self._closed = False
        self._background = background
        if background:
            self.indexer.start()
            self.indexer.notify()  # pick up work left by an earlier process

    # -- lifecycle ---------------------------------------------------------------------------
    def _acquire_lock(self) -> IO[str]:
        try:
            self.home.mkdir(parents=True, exist_ok=True)
            probe = self.home / f".write-probe-{os.getpid()}"
            probe.write_text("ok")
            probe.unlink()
            handle = open(self.home / "LOCK", "a+")  # noqa: SIM115 - held for the lifetime
        except OSError as exc:
            raise StorageError(
                f"data dir {self.home} is not writable: {exc.strerror or exc}", path=str(self.home)
            ) from exc
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.close()
            raise DataDirLockedError(
                f"data dir {self.home} is open in another process or AgentMemory instance; "
                "agentmem allows one at a time (close it, or use a Chroma server for sharing)",
                path=str(self.home),
            ) from exc
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        return handle

    def _record_first_embedder(self) -> None:
        """The indexer calls this before it first writes vectors to this data dir."""
        first = EmbedderFingerprint.of(self.embedder, origin="first_write")
        fingerprint.record(self.records, first, replace=False)

    @property
    def recorded_embedder(self) -> EmbedderFingerprint | None:
        """The embedder recorded for this data dir's vectors; None before any are written."""
        return fingerprint.read(self.records)

    def _drop_vectors(self) -> None:
        """Drop every vector collection (an unreadable embedded index is set aside)."""
        try:
            names = self.vectors.collections()
        except StorageError:
            if self.vectors.path is None or not self.vectors.owns_client:
                raise
            self._set_aside(self.vectors.path, "vector index")  # unreadable: start afresh
            names = self.vectors.collections()
        for name in names:
            self.vectors.drop(name)

    def _open_keywords(self) -> KeywordIndex:
        """The keyword index; a corrupted one is set aside and rebuilt from the records."""
        path = self.home / "keywords"
        try:
            return KeywordIndex(path)
        except StorageError as exc:
            if not path.is_dir():
                raise
            self._set_aside(path, "keyword index", exc)
        index = KeywordIndex(path)
        with self.records.write() as conn:  # the indexer re-adds every row
            conn.execute("UPDATE memories SET kw_pending = 1, keyword_indexed = 0")
        return index

    def _set_aside(self, path: Path, what: str, exc: BaseException | None = None) -> None:
        aside = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%d%H%M%S')}")
        path.rename(aside)
        note = f"{what} at {path} was unreadable ({exc}); moved to {aside.name}, rebuilt"
        log.error(note)
        self.recovered.append(note)

    def _release_lock(self) -> None:
        try:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)
        finally:
            self._lock_file.close()

    def close(self) -> None:
        """Stop the indexer (pending work resumes on the next open) and release the data dir."""
        if self._closed:
            return
        self._closed = True
        self.indexer.stop()
        self.engine.close()
        self.access.flush()
        self.keywords.close()
        self.vectors.close()
        self.records.close()
        self._release_lock()

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError("this AgentMemory is closed", path=str(self.home))

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
            tenant_id=v.identity(tenant_id, "tenant_id", required=True),  # type: ignore[arg-type]
            user_id=v.identity(user_id, "user_id"),
            agent_id=v.identity(agent_id, "agent_id"),
            session_id=v.identity(session_id, "session_id"),
        )
        return BoundMemory(self, identity)

    # -- maintenance -------------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> bool:
        """Block until both indexes have caught up with the records (True if they did)."""
        self._check_open()
        return self.indexer.flush(timeout)

    def reindex(self, *, progress: Any = None) -> int:
        """Rebuild both indexes from the records; returns the number of live rows indexed.

        Every row is embedded again with this store's embedder, which is recorded as the
        data dir's embedder (to switch embedders, open with ``allow_embedder_change=True``).
        """
        self._check_open()
        self.indexer.stop()
        try:
            self.keywords.delete_all()
            self.keywords.commit()
            self._drop_vectors()
            self.records.mark_all_pending()
            # after the old vectors are gone: a crash from here on leaves only vectors of
            # this embedder (and rows queued for it), never old vectors under a new name
            current = EmbedderFingerprint.of(self.embedder, origin="reindex")
            fingerprint.record(self.records, current, replace=True)
            total = self.records.count("deleted_at IS NULL AND anonymized_at IS NULL")
            before = self.indexer.embedded_total
            while self.indexer.run_once():
                if progress is not None:
                    progress(self.indexer.embedded_total - before, total)
        finally:
            if self._background:  # background=False: indexing stays in flush()
                self.indexer.start()
        return total

    def stats(self) -> Stats:
        self._check_open()
        kw, vec, failed = self.records.pending_counts()
        recorded = self.recorded_embedder
        by_kind = {
            k: self.records.count("kind = ? AND deleted_at IS NULL AND anonymized_at IS NULL", (k,))
            for k in KINDS
        }
        disk = {
            name: dir_size(self.home / sub)
            for name, sub in (
                ("records", "records.sqlite3"),
                ("keywords", "keywords"),
                ("vectors", "chroma"),
            )
        }
        return Stats(
            live=self.records.count("deleted_at IS NULL AND anonymized_at IS NULL"),
            deleted=self.records.count("deleted_at IS NOT NULL"),
            superseded=self.records.count("superseded_by IS NOT NULL"),
            keyword_pending=kw,
            vector_pending=vec,
            vector_failed=failed,
            by_kind=by_kind,
            tenants=int(self.records.read("SELECT COUNT(DISTINCT tenant_id) FROM memories")[0][0]),
            disk_bytes=disk,
            embedder=None if recorded is None else recorded.to_dict(),
        )

    def export(
        self, *, tenant_id: str | None = None, kinds: Iterable[str] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every live record (of every tenant unless ``tenant_id``) as JSON-ready dicts."""
        self._check_open()
        where = "deleted_at IS NULL AND anonymized_at IS NULL"
        params: list[Any] = []
        if tenant_id is not None:
            where += " AND tenant_id = ?"
            params.append(tenant_id)
        kind_filter = v.choices(kinds, "kinds", KINDS)
        if kind_filter is not None:
            where += f" AND kind IN ({','.join('?' * len(kind_filter))})"
            params.extend(kind_filter)
        for row in self.records.iter_rows(where, params):
            yield item_to_dict(row.item)

    # -- derived memories (issue 3; logic in supersession.py / retention.py) -------------------
    @property
    def llm(self) -> LLM:
        """The LLM of this store (built on first use by :func:`~agentmem.llm.default_llm`)."""
        if self._llm is None:
            from .llm import default_llm

            self._llm = default_llm(embedder=self.embedder)
        return self._llm

    def judge_pending(self, *, limit: int | None = None) -> JudgeResult:
        """Run the supersession judge over facts/instructions not yet judged (seed 000).

        ``ingest`` judges its own memories synchronously; memories written with
        ``remember`` wait for this pass (call it from a maintenance job or ``agentmem judge``).
        """
        from .derived.supersession import judge_pending

        self._check_open()
        return judge_pending(self, limit=limit)

    def retention(
        self,
        *,
        dry_run: bool | None = None,
        now: datetime | None = None,
        tenant_id: str | None = None,
    ) -> RetentionResult:
        """Anonymize retired rows past their TTLs (seed 000); see :mod:`agentmem.derived.retention`."""
        from .derived.retention import RetentionPolicy, run_retention

        self._check_open()
        return run_retention(
            self, RetentionPolicy.from_env(), dry_run=dry_run, now=now, tenant_id=tenant_id
        )


def item_to_dict(item: MemoryItem) -> dict[str, Any]:
    """A JSON-ready dict of a stored item (timestamps as ISO strings)."""
    out: dict[str, Any] = {}
    for f in fields(MemoryItem):
        value = getattr(item, f.name)
        out[f.name] = value.isoformat() if isinstance(value, datetime) else value
    return out


def dir_size(path: Path) -> int:
    """Bytes of a file, or of every file under a directory (0 if missing)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += (Path(root) / f).stat().st_size
            except OSError:
                continue
    return total


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
    def state(self) -> AgentState:
        """Key-value state of the bound agent (needs ``agent_id``)."""
        return AgentState(self._store.records, self.identity)

    # -- tiers (issue 3; logic in working.py / tiers.py / knowledge.py) ---------------------------
    @property
    def working(self) -> WorkingMemory:
        """This session's working memory: window, reference summary, token counts."""
        from .tiers.working import WorkingMemory

        return WorkingMemory(self)

    def context_messages(
        self, *, model_window: int | None = None, budget_ratio: float = 0.8
    ) -> list[dict[str, str]]:
        """The messages to send to a model (pinned, reference summary, window); compacts
        first when the prompt passes ``budget_ratio`` of ``model_window``. See
        :meth:`agentmem.tiers.working.WorkingMemory.context_messages`."""
        return self.working.context_messages(model_window=model_window, budget_ratio=budget_ratio)

    def compact(self, *, keep: int | None = None) -> CompactionResult:
        """Fold this session's window into its reference summary, keeping a short tail."""
        return self.working.compact(keep=keep)

    def close_session(self, *, summary_timeout: float | None = None) -> CloseResult:
        """Run the session shutdown pipeline: summary, chunks, embedding, promotion (seed 003).

        Idempotent: a second call without new messages does nothing. See :mod:`agentmem.tiers.sessions`.
        """
        from .tiers.sessions import close_session

        return close_session(self, summary_timeout=summary_timeout)

    def session_detail(self, session_id: str) -> SessionDetail:
        """The full events (and summary) of one session of this conversation, any tier."""
        from .tiers.sessions import session_detail

        return session_detail(self, session_id)

    @property
    def knowledge(self) -> Knowledge:
        """Agent-managed knowledge: readable tenant-wide, writable by its own agent only."""
        from .tiers.knowledge import Knowledge

        return Knowledge(self)

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

    # -- helpers -----------------------------------------------------------------------------
    def _record(
        self,
        *,
        kind: str,
        scope: str,
        content: str,
        full_text: str | None = None,
        role: str | None = None,
        memory_type: str | None = None,
        source_ref: str | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        event_time: datetime | None = None,
        dedup_key: str | None = None,
        topic_key: str | None = None,
        payload_key: str | None = None,
        id: str | None = None,
    ) -> NewRecord:
        i = self.identity
        return NewRecord(
            id=id or uuid.uuid4().hex,
            tenant_id=i.tenant_id,
            user_id=i.user_id,
            agent_id=i.agent_id,
            session_id=i.session_id if scope == "session" else None,
            kind=kind,
            memory_type=memory_type,
            scope=scope,
            role=role,
            content=content,
            content_hash=_sha(full_text if full_text is not None else content),
            source_ref=source_ref,
            metadata=metadata or {},
            importance=importance,
            event_time=event_time,
            partition=scope_rules.home_partition(i, scope),
            dedup_key=dedup_key,
            topic_key=topic_key,
            payload=full_text if payload_key is not None else None,
            payload_key=payload_key,
        )

    def _write(self, records: list[NewRecord], event: str) -> list[tuple[str, bool]]:
        self._store._check_open()
        started = time.perf_counter()
        out = self._store.records.insert(records)
        self._store.indexer.notify()
        log.info(
            json.dumps(
                {
                    "event": event,
                    "correlation_id": uuid.uuid4().hex,
                    "tenant_hash": hashlib.sha256(self.tenant_id.encode()).hexdigest()[:16],
                    "count": len(records),
                    "new": sum(1 for _, new in out if new),
                    "latency_ms": round((time.perf_counter() - started) * 1000, 2),
                }
            )
        )
        return out

    def _items(self, ids: list[str]) -> list[MemoryItem]:
        rows = {r.item.id: r.item for r in self._store.records.get_many(self.tenant_id, ids)}
        return [rows[i] for i in ids if i in rows]

    # -- conversation ------------------------------------------------------------------------
    def _message_record(
        self,
        role: Any,
        content: Any,
        metadata: Any = None,
        event_time: Any = None,
    ) -> NewRecord:
        scope_rules.require(self.identity, "session")
        role = v.choice(role, "role", ROLES)
        text = v.text(content, "content")
        meta = v.metadata(metadata)
        when = v.event_time(event_time)
        id_ = uuid.uuid4().hex
        copy = cap_utf8(text, CHAT_COPY_MAX_BYTES)
        oversized = copy != text
        return self._record(
            id=id_,
            kind="tool_output" if role == "tool" else "chat_message",
            scope="session",
            role=role,
            content=copy,
            full_text=text,
            metadata=meta,
            event_time=when,
            payload_key=f"msg_{id_}" if oversized else None,
            source_ref=f"msg_{id_}" if oversized else None,
        )

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
        rec = self._message_record(role, content, metadata, event_time)
        ids = self._write([rec], "add_message")
        return self._items([ids[0][0]])[0]

    def add_messages(self, messages: Iterable[Mapping[str, Any]]) -> list[MemoryItem]:
        """Store many messages in one transaction; every dict is validated before any write."""
        if isinstance(messages, str | bytes | Mapping):
            raise ValidationError("messages", "must be an iterable of dicts")
        records: list[NewRecord] = []
        for n, msg in enumerate(messages):
            if not isinstance(msg, Mapping):
                raise ValidationError(f"messages[{n}]", f"must be a dict, got {type(msg).__name__}")
            unknown = set(msg) - {"role", "content", "metadata", "event_time"}
            if unknown:
                raise ValidationError(f"messages[{n}]", f"unknown keys {sorted(unknown)}")
            if "role" not in msg or "content" not in msg:
                raise ValidationError(f"messages[{n}]", "needs 'role' and 'content'")
            try:
                records.append(
                    self._message_record(
                        msg["role"], msg["content"], msg.get("metadata"), msg.get("event_time")
                    )
                )
            except ValidationError as exc:
                raise type(exc)(  # keeps ScopeError a ScopeError
                    f"messages[{n}].{exc.field}", str(exc).split(": ", 1)[-1]
                ) from exc
        ids: list[str] = []
        for start in range(0, len(records), 1000):
            ids.extend(i for i, _ in self._write(records[start : start + 1000], "add_messages"))
        return self._items(ids)

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
        scope_rules.require(self.identity, "session")
        call_id = v.identity(tool_call_id, "tool_call_id", required=True)
        text = v.text(content, "content")
        name = v.identity(tool_name, "tool_name")
        meta = v.metadata(metadata)
        meta.setdefault("tool_call_id", call_id)
        if name is not None:
            meta.setdefault("tool_name", name)
        # the conversation partition keeps two users (or agents) sharing a session id apart
        partition = scope_rules.home_partition(self.identity, "session")
        key = "tout_" + _sha(self.tenant_id, partition, self.session_id, call_id)[:24]
        preview = elide(text, key, TOOL_OUTPUT_PREVIEW_CHARS)
        rec = self._record(
            kind="tool_output",
            scope="session",
            role="tool",
            content=preview,
            full_text=text,
            source_ref=key,
            metadata=meta,
            dedup_key=key,
            payload_key=key,
        )
        ids = self._write([rec], "add_tool_output")
        return self._items([ids[0][0]])[0]

    def read_tool_output(self, key: str) -> str:
        """The full payload stored under ``key`` (a tool output's or long message's source_ref)."""
        key = v.identity(key, "key", required=True)  # type: ignore[assignment]
        found = self._store.records.payload(self.tenant_id, key)
        if found is not None:
            memory_id, content = found
            row = self._store.records.get(memory_id)
            if (
                row is not None
                and row.item.deleted_at is None
                and row.item.anonymized_at is None
                and self._visible(row) is not None
            ):
                return content
        raise NotFoundError(f"no tool output with key {key!r} is visible here", key=key)

    def _visible(self, row: Any) -> str | None:
        item = row.item
        return scope_rules.visible_scope(
            self.identity,
            tenant_id=item.tenant_id,
            scope=item.scope,
            partition=row.partition,
            session_id=item.session_id,
            user_id=item.user_id,
            agent_id=item.agent_id,
        )

    def messages(self, *, limit: int | None = None) -> list[MemoryItem]:
        """This session's chat messages and tool outputs, oldest first (the last ``limit``)."""
        scope_rules.require(self.identity, "session")
        n = v.positive_int(limit, "limit")
        partition = scope_rules.home_partition(self.identity, "session")
        sql = (
            "SELECT id FROM memories WHERE tenant_id = ? AND session_id = ? AND partition = ? "
            "AND scope = 'session' AND kind IN ('chat_message', 'tool_output') "
            "AND deleted_at IS NULL AND anonymized_at IS NULL ORDER BY seq DESC"
        )
        params: list[Any] = [self.tenant_id, self.session_id, partition]
        if n is not None:
            sql += " LIMIT ?"
            params.append(n)
        ids = [r[0] for r in self._store.records.read(sql, params)]
        ids.reverse()
        return self._items(ids)

    def clear_session(self) -> int:
        """Soft-delete this session's messages and tool outputs; returns how many."""
        items = self.messages()
        for item in items:
            self._store.records.soft_delete(self.tenant_id, item.id)
        if items:
            self._store.indexer.notify()
        return len(items)

    # -- documents ---------------------------------------------------------------------------
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
        body = v.text(text, "text")
        ref = v.identity(source_ref, "source_ref") or "doc_" + _sha(body)[:16]
        meta = v.metadata(metadata)
        chunks = chunk_text(body)
        revision = _sha(body)[:16]
        records = []
        for n, chunk in enumerate(chunks):
            chunk_meta = {**meta, "chunk_index": n, "chunk_count": len(chunks)}
            records.append(
                self._record(
                    kind="document_chunk",
                    scope="tenant",
                    content=chunk,
                    source_ref=ref,
                    metadata=chunk_meta,
                    dedup_key=_sha("doc", self.tenant_id, ref, revision, str(n)),
                )
            )
        ids = [i for i, _ in self._write(records, "add_document")]
        self._retire_old_revisions(ref, set(ids))
        return self._items(ids)

    def _retire_old_revisions(self, ref: str, keep: set[str]) -> None:
        old = self._store.records.read(
            "SELECT id FROM memories WHERE tenant_id = ? AND source_ref = ? AND "
            "kind = 'document_chunk' AND deleted_at IS NULL",
            (self.tenant_id, ref),
        )
        stale = [r[0] for r in old if r[0] not in keep]
        for id_ in stale:
            self._store.records.soft_delete(self.tenant_id, id_)
        if stale:
            self._store.indexer.notify()

    # -- explicit memories -------------------------------------------------------------------
    def _remember_record(
        self,
        content: Any,
        memory_type: Any = "fact",
        scope: Any = "user",
        importance: Any = None,
        topic_key: Any = None,
        metadata: Any = None,
    ) -> NewRecord:
        text = v.text(content, "content", max_bytes=CHAT_COPY_MAX_BYTES)
        mtype = v.choice(memory_type, "memory_type", MEMORY_TYPES)
        scope = v.choice(scope, "scope", REMEMBER_SCOPES)
        scope_rules.require(self.identity, scope)
        imp = v.unit_float(importance, "importance")
        topic = v.identity(topic_key, "topic_key")
        meta = v.metadata(metadata)
        partition = scope_rules.home_partition(self.identity, scope)
        owner_session = self.session_id if scope == "session" else None
        dedup = _sha("mem", self.tenant_id, partition, owner_session, mtype, text.strip())
        return self._record(
            kind="memory",
            scope=scope,
            content=text,
            memory_type=mtype,
            metadata=meta,
            importance=imp,
            dedup_key=dedup,
            topic_key=topic.strip().lower() if topic else None,
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
        memory: it leaves default recall but stays in the records (``superseded_by``).
        """
        rec = self._remember_record(content, memory_type, scope, importance, topic_key, metadata)
        ((id_, new),) = self._write([rec], "remember")
        return RememberResult(id=id_, was_new=new)

    def remember_many(self, items: Iterable[str | Mapping[str, Any]]) -> list[RememberResult]:
        """Store many memories in one transaction (strings, or dicts of remember's arguments)."""
        if isinstance(items, str | bytes | Mapping):
            raise ValidationError("items", "must be an iterable of strings or dicts")
        records: list[NewRecord] = []
        allowed = {"content", "memory_type", "scope", "importance", "topic_key", "metadata"}
        for n, item in enumerate(items):
            try:
                if isinstance(item, str):
                    records.append(self._remember_record(item))
                elif isinstance(item, Mapping):
                    unknown = set(item) - allowed
                    if unknown:
                        raise ValidationError("item", f"unknown keys {sorted(unknown)}")
                    if "content" not in item:
                        raise ValidationError("content", "is required")
                    records.append(self._remember_record(**item))
                else:
                    raise ValidationError(
                        "item", f"must be a str or dict, got {type(item).__name__}"
                    )
            except ValidationError as exc:
                raise type(exc)(  # keeps ScopeError a ScopeError
                    f"items[{n}].{exc.field}", str(exc).split(": ", 1)[-1]
                ) from exc
        out: list[RememberResult] = []
        for start in range(0, len(records), 1000):
            out.extend(
                RememberResult(id=i, was_new=new)
                for i, new in self._write(records[start : start + 1000], "remember_many")
            )
        return out

    def forget(self, memory_id: str) -> bool:
        """Soft-delete a record visible to this identity; False if there is none."""
        memory_id = v.identity(memory_id, "memory_id", required=True)  # type: ignore[assignment]
        self._store._check_open()
        row = self._store.records.get(memory_id)
        if row is None or row.item.tenant_id != self.tenant_id or self._visible(row) is None:
            return False
        done = self._store.records.soft_delete(self.tenant_id, memory_id)
        self._store.indexer.notify()
        return done

    def get(self, memory_id: str) -> MemoryItem:
        """A live record visible to this identity, by id."""
        memory_id = v.identity(memory_id, "memory_id", required=True)  # type: ignore[assignment]
        row = self._store.records.get(memory_id)
        if (
            row is None
            or row.item.deleted_at is not None
            or row.item.anonymized_at is not None
            or self._visible(row) is None
        ):
            raise NotFoundError(f"no memory {memory_id!r} is visible here", memory_id=memory_id)
        return row.item

    # -- recall ------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        top_k: int = 5,
        kinds: Iterable[str] | str | None = None,
        memory_types: Iterable[str] | str | None = None,
        scope: str = "any",
        rerank: bool = True,
        min_score: float | None = None,
        token_budget: int | None = None,
        filters: Mapping[str, Any] | None = None,
        include_superseded: bool = False,
        tiers: Iterable[str] | str | None = None,
    ) -> RecallResult:
        """Hybrid (keyword + vector) recall within this identity's scopes.

        Args:
            query: What to look for (longer than 8192 characters is truncated).
            top_k: At most this many items (1..20).
            kinds: Restrict to these kinds (chat_message, tool_output, document_chunk,
                memory, summary).
            memory_types: Restrict to these memory types.
            scope: session, history, user, agent, tenant, or any (all of them, fused).
            rerank: Use the configured reranker, if any (fail-open).
            min_score: Calibrated-score cut-off in [0, 1] (default from config, 0.3).
            token_budget: Max tokens of returned content (default from config, 1000).
            filters: Equality filters on the caller's stored metadata; identity keys are
                rejected (identity comes only from :meth:`AgentMemory.bind`).
            include_superseded: Audit callers only: include superseded memories.
            tiers: Only rows of these tiers (working, mid_term, long_term, knowledge); the
                default searches messages, memories, documents, knowledge and session
                summaries, but not session chunks (see :mod:`agentmem.tiers.sessions`).
        """
        self._store._check_open()
        q = v.query(query)
        k = v.top_k(top_k)
        kind_filter = v.choices(kinds, "kinds", KINDS)
        type_filter = v.choices(memory_types, "memory_types", MEMORY_TYPES)
        scope = v.choice(scope, "scope", RECALL_SCOPES)
        if not isinstance(rerank, bool):
            raise ValidationError("rerank", "must be a bool")
        threshold = v.unit_float(min_score, "min_score")
        budget = v.positive_int(token_budget, "token_budget")
        flt = v.metadata(filters, "filters")
        reserved = _RESERVED_FILTER_KEYS & set(flt)
        if reserved:
            raise ValidationError(
                "filters",
                f"cannot filter on identity keys {sorted(reserved)}; identity comes from bind()",
            )
        if scope != "any":
            scope_rules.require(self.identity, scope)
        req = RecallRequest(
            query=q,
            top_k=k,
            scope=scope,
            kinds=kind_filter,
            memory_types=type_filter,
            rerank=rerank,
            min_score=self._store.config.min_score if threshold is None else threshold,
            token_budget=self._store.config.token_budget if budget is None else budget,
            filters=flt,
            include_superseded=bool(include_superseded),
            tiers=v.choices(tiers, "tiers", TIERS),
        )
        return self._store.engine.recall(self.identity, req)

    # -- derived memories (issue 3; logic in ingest.py / supersession.py / answer.py) ---------
    def ingest(self, messages: Iterable[Mapping[str, Any] | ChatTurn]) -> IngestResult:
        """Store a conversation verbatim and the memories extracted from it (seed 002).

        Messages are content-addressed (re-ingesting creates no duplicates); without a bound
        session, one is derived from the conversation. See :mod:`agentmem.derived.ingest`.
        """
        from .derived.ingest import ingest

        self._store._check_open()
        return ingest(self, messages)

    def history(self, memory_id: str) -> list[MemoryItem]:
        """The supersession chain of a memory, oldest first (both directions)."""
        from .derived.supersession import history

        self._store._check_open()
        return history(self, memory_id)

    def answer(self, question: str, *, top_k: int = 5) -> AnswerResult:
        """A grounded answer from the top recalled memories, with the ids it used (seed 002).

        The answer is empty when nothing relevant was recalled.
        """
        from .derived.answer import answer

        self._store._check_open()
        return answer(self, question, top_k=top_k)
