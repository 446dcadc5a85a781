"""Session tiers (seed 003): the close-session pipeline, mid-term and long-term memory.

:func:`close_session` (``BoundMemory.close_session``) runs the shutdown pipeline of a session:

1. **Summary**: the store's LLM (``summarize``) in a worker thread with a timeout (default
   30 s, ``AGENTMEM_SUMMARY_TIMEOUT``); on timeout or failure the summary is skipped and the
   reason recorded (``summary_status``).
2. **Chunk**: the session's messages and tool outputs grouped into chunks: a group starts at
   each user message, so a tool sequence stays with the turn that triggered it; groups are
   packed into chunks of at most ``chunk_messages`` (8) messages and ``chunk_max_tokens``
   (400) tokens.
3. **Embed**: chunk rows are written ``vec_pending`` and the background indexer embeds them.
4. **Promote**: while the conversation has more than ``mid_term_sessions`` (10,
   ``AGENTMEM_MID_TERM_SESSIONS``) mid-term sessions, the oldest closed one becomes long-term.

Calling it again with no new messages does nothing (``already_closed``); with new messages it
re-runs the pipeline for the session (chunks and summary are brought in line, never doubled).

**Rows and tier states.** Raw messages are never changed. Derived rows carry a ``tier``
column (and ``metadata["tier"]``):

- ``mid_term``: session chunks (kind ``chat_message``, partition ``chunks:<conv>``,
  embedded) and the session summary (kind ``summary``, partition ``<conv>``, keyword-only:
  seed 003 embeds a summary when its session goes long-term).
- ``long_term_detail``: the chunks of a long-term session (keyword-only; their vectors are
  removed).
- ``long_term_summary``: the summary of a long-term session (embedded).

``conv`` is the conversation partition (``conv:u:<user>``), so the rows have the owner and
visibility of the session's messages. Chunks live in their own partition (and Chroma
collection), so default recall never searches them and they cannot crowd out message-level
hits; ``recall(tiers=("mid_term",))`` or ``("long_term",)`` targets them. Long-term detail
chunks stay keyword-searchable: the records store counts them out of the vector index
(:data:`~agentmem.records.VECTOR_LIVE`), so the indexer deletes their vectors and never
embeds them again (``reindex`` included). A chunk or summary hit carries the ids of the
messages it came from (``metadata["message_ids"]``, ``metadata["dia_ids"]`` when the messages
had ``dia_id`` metadata, and ``metadata["messages"]`` with each message's id, role and
metadata).

**Default recall** (no ``tiers``) searches what it always did (messages, explicit memories,
documents), plus knowledge and session summaries (one row per session), never chunks. Raw
messages stay embedded in every tier, so message-level recall of old sessions is unchanged;
what leaves the vector index in long-term is the redundant chunk copy.

Example:
    >>> m = mem.bind("acme", user_id="u1", session_id="s1")  # doctest: +SKIP
    >>> m.add_message("user", "Deploy the billing service on Friday")  # doctest: +SKIP
    >>> m.close_session().tier  # doctest: +SKIP
    'mid_term'
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import scopes as scope_rules
from . import validation as v
from .chunking import chunk_text, elide
from .config import _non_negative_float, _positive_int
from .errors import NotFoundError, ScopeError, ValidationError
from .models import MemoryItem
from .records import LIVE, VEC_PENDING, NewRecord, iso, now_utc
from .tokens import count_tokens

if TYPE_CHECKING:
    from .llm.base import LLM, ChatTurn
    from .memory import AgentMemory, BoundMemory

log = logging.getLogger("agentmem.tiers")

TIER_MID = "mid_term"
TIER_LONG = "long_term"
TIER_LONG_SUMMARY = "long_term_summary"
TIER_LONG_DETAIL = "long_term_detail"

#: Characters of one message kept in a chunk's text (the message itself is kept in full).
CHUNK_MESSAGE_CHARS = 2000
#: Session-summary input above this many tokens is cut to the working summary plus the
#: newest messages that fit.
SUMMARY_INPUT_TOKENS = 60_000
_MESSAGE_KINDS = "('chat_message', 'tool_output')"
#: (session_id, user_id, agent_id) owning a derived row.
Owner = tuple[str | None, str | None, str | None]
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class TierConfig:
    """Tunables of the memory tiers (seed 003) and of working memory (seeds 000, 003).

    Example:
        >>> TierConfig(mid_term_sessions=3).mid_term_sessions
        3
    """

    mid_term_sessions: int = 10
    """Closed sessions kept mid-term per conversation (``AGENTMEM_MID_TERM_SESSIONS``)."""
    summary_timeout: float = 30.0
    """Seconds the session summary may take before it is skipped
    (``AGENTMEM_SUMMARY_TIMEOUT``; 0 skips it)."""
    summary_max_words: int = 200
    """Length of a session summary."""
    chunk_messages: int = 8
    """Messages per session chunk at most (``AGENTMEM_CHUNK_MESSAGES``)."""
    chunk_max_tokens: int = 400
    """Tokens per session chunk at most (a single longer message is its own chunk)."""
    working_max_messages: int = 50
    """Window size: past this many messages the oldest roll off into the reference summary
    until half remain (``AGENTMEM_WORKING_MAX_MESSAGES``)."""
    working_tail: int = 4
    """Messages kept after a budget trip or a manual compaction (``AGENTMEM_WORKING_TAIL``)."""
    model_window: int = 200_000
    """Model context window (tokens) when ``context_messages`` is given none
    (``AGENTMEM_MODEL_WINDOW``)."""
    model_window_override: int | None = None
    """Forces the model window, to trip compaction in short test conversations
    (``AGENTMEM_MODEL_WINDOW_OVERRIDE``; logs a warning; never set it in production)."""
    reference_max_words: int = 400
    """A reference summary longer than this is condensed by the LLM."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> TierConfig:
        """Build from ``AGENTMEM_*`` variables; bad values fall back to defaults (logged)."""
        import os

        env = os.environ if environ is None else environ
        kwargs: dict[str, Any] = {}
        ints = {
            "mid_term_sessions": "AGENTMEM_MID_TERM_SESSIONS",
            "chunk_messages": "AGENTMEM_CHUNK_MESSAGES",
            "working_max_messages": "AGENTMEM_WORKING_MAX_MESSAGES",
            "working_tail": "AGENTMEM_WORKING_TAIL",
            "model_window": "AGENTMEM_MODEL_WINDOW",
            "model_window_override": "AGENTMEM_MODEL_WINDOW_OVERRIDE",
        }
        for name, var in ints.items():
            value = _positive_int(env.get(var), var)
            if value is not None:
                kwargs[name] = value
        timeout = _non_negative_float(
            env.get("AGENTMEM_SUMMARY_TIMEOUT"), "AGENTMEM_SUMMARY_TIMEOUT"
        )
        if timeout is not None:
            kwargs["summary_timeout"] = timeout
        if "model_window_override" in kwargs:
            log.warning(
                "AGENTMEM_MODEL_WINDOW_OVERRIDE=%s is set: the model window is forced for "
                "working-memory compaction; production must not set it",
                kwargs["model_window_override"],
            )
        kwargs.update(overrides)
        return dataclasses.replace(cls(), **kwargs)


@dataclass(frozen=True, slots=True)
class CloseResult:
    """What :func:`close_session` did.

    Attributes:
        session_id: The closed session.
        tier: Its tier afterwards (``mid_term``, or ``long_term`` if it was promoted).
        already_closed: True when the session was closed before and has no new messages
            (nothing was done).
        messages: Messages and tool outputs in the session.
        chunk_ids: Ids of the session's chunk rows.
        summary_ids: Ids of the session's summary rows (empty when the summary was skipped).
        summary_status: ``ok``, ``timeout``, ``failed``, ``skipped`` (timeout 0) or ``empty``
            (no messages).
        summarizer: Name of the LLM that wrote the summary.
        promoted: Sessions promoted to long-term by this call, oldest first.
        error: Why the summary was skipped, if it was.
        elapsed_ms: Wall time of the pipeline.
    """

    session_id: str
    tier: str
    already_closed: bool
    messages: int
    chunk_ids: tuple[str, ...] = ()
    summary_ids: tuple[str, ...] = ()
    summary_status: str = "ok"
    summarizer: str | None = None
    promoted: tuple[str, ...] = ()
    error: str | None = None
    elapsed_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A closed session of a conversation (a row of the ``sessions`` table)."""

    session_id: str
    tier: str
    close_order: int
    closed_at: datetime
    promoted_at: datetime | None
    message_count: int
    chunk_count: int
    summary_status: str
    summarizer: str | None
    summary_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SessionDetail:
    """A session's full events (``BoundMemory.session_detail``).

    Attributes:
        session_id: The session.
        tier: ``mid_term`` or ``long_term`` when closed, None when never closed.
        closed_at: When it was (last) closed.
        summary: Its session summary, if one was written.
        summary_ids: Ids of the summary rows.
        events: Its messages and tool outputs, oldest first, each with its full content
            (an oversized message's or tool output's full payload, not the indexed copy).
    """

    session_id: str
    tier: str | None
    closed_at: datetime | None
    summary: str | None
    summary_ids: tuple[str, ...] = ()
    events: list[MemoryItem] = field(default_factory=list)


# -- locks ------------------------------------------------------------------------------------
_locks_guard = threading.Lock()
_locks: dict[tuple[Any, ...], threading.Lock] = {}


def _lock(*key: Any) -> threading.Lock:
    with _locks_guard:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = threading.Lock()
        return lock


def _sha(*parts: str | None) -> str:
    joined = "\x1f".join("" if p is None else p for p in parts)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


# -- reads ------------------------------------------------------------------------------------
def session_messages(
    store: AgentMemory, tenant_id: str, partition: str, session_id: str
) -> list[tuple[int, MemoryItem]]:
    """(seq, item) of a session's live messages and tool outputs, oldest first."""
    rows = store.records.read(
        f"SELECT seq, id FROM memories WHERE tenant_id = ? AND partition = ? AND session_id = ? "
        f"AND scope = 'session' AND kind IN {_MESSAGE_KINDS} AND {LIVE} ORDER BY seq",
        (tenant_id, partition, session_id),
    )
    seqs = {r[1]: r[0] for r in rows}
    items = store.records.get_many(tenant_id, [r[1] for r in rows])
    out = [(seqs[r.item.id], r.item) for r in items]
    out.sort(key=lambda pair: pair[0])
    return out


def _info(r: Sequence[Any]) -> SessionInfo:
    return SessionInfo(
        session_id=r[0],
        tier=r[1],
        close_order=r[2],
        closed_at=datetime.fromisoformat(r[3]),
        promoted_at=datetime.fromisoformat(r[4]) if r[4] else None,
        message_count=r[5],
        chunk_count=r[6],
        summary_status=r[7],
        summarizer=r[8],
        summary_ids=tuple(json.loads(r[9])),
    )


_INFO_COLS = (
    "session_id, tier, close_order, closed_at, promoted_at, message_count, chunk_count, "
    "summary_status, summarizer, summary_ids"
)


def _session_info(
    store: AgentMemory, tenant_id: str, partition: str, session_id: str
) -> tuple[SessionInfo, int] | None:
    rows = store.records.read(
        f"SELECT {_INFO_COLS}, last_seq FROM sessions WHERE tenant_id = ? AND partition = ? "
        f"AND session_id = ?",
        (tenant_id, partition, session_id),
    )
    return (_info(rows[0]), int(rows[0][10])) if rows else None


def list_sessions(m: BoundMemory, *, tier: str | None = None) -> list[SessionInfo]:
    """The closed sessions of ``m``'s conversation, oldest closed first (optionally one tier).

    Example:
        >>> [s.tier for s in list_sessions(m)]  # doctest: +SKIP
        ['long_term', 'mid_term']
    """
    partition = _conversation(m)
    sql = f"SELECT {_INFO_COLS} FROM sessions WHERE tenant_id = ? AND partition = ?"
    params: list[Any] = [m.tenant_id, partition]
    if tier is not None:
        tier = v.choice(tier, "tier", (TIER_MID, TIER_LONG))
        sql += " AND tier = ?"
        params.append(tier)
    return [_info(r) for r in m.store.records.read(sql + " ORDER BY close_order", params)]


def _conversation(m: BoundMemory) -> str:
    part = scope_rules.conversation_partition(m.identity)
    if part is None:
        if m.session_id is None:
            raise ScopeError(
                "scope", "sessions need user_id, agent_id or session_id bound (AgentMemory.bind)"
            )
        part = scope_rules.home_partition(m.identity, "session")
    return part


# -- the pipeline -----------------------------------------------------------------------------
def close_session(
    m: BoundMemory, *, summary_timeout: float | None = None, llm: LLM | None = None
) -> CloseResult:
    """Run the shutdown pipeline for ``m``'s session (see the module docstring).

    Args:
        m: A memory bound with a ``session_id``.
        summary_timeout: Seconds for the summary (default from :class:`TierConfig`); 0 skips
            it.
        llm: Summariser (default: the store's LLM).
    """
    scope_rules.require(m.identity, "session")
    store = m.store
    store._check_open()
    cfg: TierConfig = store.tier_config
    timeout = cfg.summary_timeout if summary_timeout is None else summary_timeout
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout < 0:
        raise ValidationError("summary_timeout", "must be a non-negative number of seconds")
    started = time.perf_counter()
    tenant = m.tenant_id
    session_id = m.session_id
    assert session_id is not None
    partition = scope_rules.home_partition(m.identity, "session")
    with _lock(id(store), tenant, partition, session_id):
        msgs = session_messages(store, tenant, partition, session_id)
        last_seq = msgs[-1][0] if msgs else 0
        before = _session_info(store, tenant, partition, session_id)
        if before is not None and before[1] == last_seq and before[0].message_count == len(msgs):
            info = before[0]
            store.access.flush()
            return CloseResult(
                session_id=session_id,
                tier=info.tier,
                already_closed=True,
                messages=info.message_count,
                chunk_ids=_derived_ids(store, tenant, partition, session_id, chunks=True),
                summary_ids=info.summary_ids,
                summary_status=info.summary_status,
                summarizer=info.summarizer,
                elapsed_ms=_ms(started),
            )
        tier = before[0].tier if before is not None else TIER_MID
        items = [item for _, item in msgs]

        # 1. summary (skipped on timeout or failure)
        error: str | None = None
        summarizer: str | None = None
        summary: str | None = None
        if not items:
            status = "empty"
        elif timeout == 0:
            status = "skipped"
        else:
            model = llm or store.llm
            summarizer = model.name
            turns = _summary_turns(m, items)
            summary, status, error = _summarize(model, turns, cfg.summary_max_words, timeout)
            if error is not None:
                log.warning(
                    json.dumps(
                        {"event": "session_summary_skipped", "status": status, "error": error}
                    )
                )

        # 2. chunks + summary rows, written together; stale ones (an earlier close) retired
        chunk_recs = _chunk_records(m, partition, items, tier, cfg)
        summary_recs = (
            _summary_records(m, partition, items, summary, summarizer, tier) if summary else []
        )
        written = store.records.insert([*chunk_recs, *summary_recs]) if items else []
        chunk_ids = tuple(i for i, _ in written[: len(chunk_recs)])
        summary_ids = tuple(i for i, _ in written[len(chunk_recs) :])
        replace_summaries = summary is not None or status == "empty"
        _retire_stale(
            store,
            tenant,
            partition,
            session_id,
            keep=set(chunk_ids) | set(summary_ids),
            summaries=replace_summaries,
        )
        if not replace_summaries and before is not None:
            # the new summary failed: the earlier one (if any) stays
            summary_ids = _derived_ids(store, tenant, partition, session_id, chunks=False)

        # 3. embed: the background indexer picks the rows up
        store.indexer.notify()
        _record_session(
            m,
            partition,
            tier,
            last_seq,
            len(items),
            len(chunk_ids),
            status,
            summarizer,
            summary_ids,
        )

    # 4. promote the oldest mid-term sessions beyond N
    promoted = promote(store, m, partition, cfg.mid_term_sessions)
    store.access.flush()
    final_tier = TIER_LONG if session_id in promoted else tier
    log.info(
        json.dumps(
            {
                "event": "close_session",
                "correlation_id": uuid.uuid4().hex,
                "messages": len(items),
                "chunks": len(chunk_ids),
                "summary_status": status,
                "promoted": len(promoted),
                "latency_ms": _ms(started),
            }
        )
    )
    return CloseResult(
        session_id=session_id,
        tier=final_tier,
        already_closed=False,
        messages=len(items),
        chunk_ids=chunk_ids,
        summary_ids=summary_ids,
        summary_status=status,
        summarizer=summarizer,
        promoted=tuple(promoted),
        error=error,
        elapsed_ms=_ms(started),
    )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _summary_turns(m: BoundMemory, items: Sequence[MemoryItem]) -> list[ChatTurn]:
    """All messages; a session too long for one call: its working summary + the newest."""
    from .llm.base import ChatTurn

    turns = [_turn(i) for i in items]
    total = sum(count_tokens(t.content) for t in turns)
    if total <= SUMMARY_INPUT_TOKENS:
        return turns
    kept: list[ChatTurn] = []
    used = 0
    for t in reversed(turns):
        n = count_tokens(t.content)
        if used + n > SUMMARY_INPUT_TOKENS // 2:
            break
        kept.append(t)
        used += n
    kept.reverse()
    ref = m.working.summary
    head = [ChatTurn("system", f"Earlier in this session: {ref.summary}")] if ref.summary else []
    return [*head, *kept]


def _summarize(
    llm: LLM, turns: Sequence[ChatTurn], max_words: int, timeout: float
) -> tuple[str | None, str, str | None]:
    """(summary, status, error) of ``llm.summarize`` run in a daemon thread with a timeout."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["text"] = llm.summarize(turns, max_words=max_words)
        except BaseException as exc:  # reported below; the pipeline goes on without it
            box["error"] = exc

    worker = threading.Thread(target=run, name="agentmem-session-summary", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return None, "timeout", f"the summary took longer than {timeout:g}s"
    if "error" in box:
        exc = box["error"]
        return None, "failed", f"{type(exc).__name__}: {exc}"[:500]
    text = box.get("text")
    if not isinstance(text, str) or not text.strip():
        return None, "failed", f"the summariser returned {type(text).__name__} without text"
    return text.strip(), "ok", None


def _line(item: MemoryItem) -> str:
    text = elide(item.content, item.source_ref or item.id, CHUNK_MESSAGE_CHARS)
    speaker = item.metadata.get("speaker") if item.metadata else None
    if isinstance(speaker, str) and speaker.strip():
        who = speaker.strip()
    elif item.kind == "tool_output":
        name = item.metadata.get("tool_name")
        who = f"tool {name}" if isinstance(name, str) else "tool"
    else:
        who = item.role or "message"
    return f"{who}: {text}"


def group_messages(
    items: Sequence[MemoryItem], max_messages: int, max_tokens: int
) -> list[list[MemoryItem]]:
    """Chunk a session: turn groups (a user message and what followed it) packed into chunks
    of at most ``max_messages`` messages and ``max_tokens`` tokens (a longer group is split).
    """
    groups: list[list[MemoryItem]] = []
    for item in items:
        if not groups or item.role == "user":
            groups.append([])
        groups[-1].append(item)
    tokens = {item.id: count_tokens(_line(item)) for item in items}
    pieces: list[list[MemoryItem]] = []
    for group in groups:
        piece: list[MemoryItem] = []
        used = 0
        for item in group:
            n = tokens[item.id]
            if piece and (len(piece) >= max_messages or used + n > max_tokens):
                pieces.append(piece)
                piece, used = [], 0
            piece.append(item)
            used += n
        if piece:
            pieces.append(piece)
    chunks: list[list[MemoryItem]] = []
    current: list[MemoryItem] = []
    used = 0
    for piece in pieces:
        n = sum(tokens[i.id] for i in piece)
        if current and (len(current) + len(piece) > max_messages or used + n > max_tokens):
            chunks.append(current)
            current, used = [], 0
        current.extend(piece)
        used += n
    if current:
        chunks.append(current)
    return chunks


def source_metadata(items: Iterable[MemoryItem]) -> dict[str, Any]:
    """``message_ids``, ``dia_ids`` and ``messages`` (id, role, metadata) of source messages."""
    items = list(items)
    dia_ids: list[str] = []
    for item in items:
        for key in ("dia_id", "dia_ids"):
            raw = item.metadata.get(key) if item.metadata else None
            values = raw if isinstance(raw, list) else [raw]
            for value in values:
                if isinstance(value, str) and value and value not in dia_ids:
                    dia_ids.append(value)
    out: dict[str, Any] = {
        "message_ids": [i.id for i in items],
        "messages": [{"id": i.id, "role": i.role, "metadata": i.metadata} for i in items],
    }
    if dia_ids:
        out["dia_ids"] = dia_ids
    return out


def _derived_record(
    m: BoundMemory,
    *,
    kind: str,
    partition: str,
    content: str,
    metadata: dict[str, Any],
    dedup: str,
    tier: str,
    event_time: datetime,
    vectorize: bool,
    owner: Owner | None = None,
) -> NewRecord:
    i = m.identity
    session_id, user_id, agent_id = owner or (i.session_id, i.user_id, i.agent_id)
    return NewRecord(
        id=uuid.uuid4().hex,
        tenant_id=i.tenant_id,
        user_id=user_id,
        agent_id=agent_id,
        session_id=session_id,
        kind=kind,
        memory_type=None,
        scope="session",
        role=None,
        content=content,
        content_hash=_sha(content),
        source_ref=None,
        metadata=metadata,
        importance=None,
        event_time=event_time,
        partition=partition,
        dedup_key=dedup,
        vectorize=vectorize,
        tier=tier,
    )


def _chunk_records(
    m: BoundMemory, partition: str, items: Sequence[MemoryItem], tier: str, cfg: TierConfig
) -> list[NewRecord]:
    chunks = group_messages(items, cfg.chunk_messages, cfg.chunk_max_tokens)
    long_term = tier == TIER_LONG
    out: list[NewRecord] = []
    for n, chunk in enumerate(chunks):
        ids = [i.id for i in chunk]
        meta = {
            "chunk": True,
            "tier": TIER_LONG if long_term else TIER_MID,
            "chunk_index": n,
            "chunk_count": len(chunks),
            **source_metadata(chunk),
        }
        out.append(
            _derived_record(
                m,
                kind="chat_message",
                partition=scope_rules.chunk_partition(partition),
                content="\n".join(_line(i) for i in chunk),
                metadata=meta,
                dedup=_sha("chunk", m.tenant_id, partition, m.session_id, *ids),
                tier=TIER_LONG_DETAIL if long_term else TIER_MID,
                event_time=chunk[-1].event_time,
                vectorize=not long_term,
            )
        )
    return out


def summary_sources(summary: str, items: Sequence[MemoryItem]) -> list[MemoryItem]:
    """The messages a summary quotes (any sentence of 3+ words found verbatim, ignoring case
    and spacing); all of them when it quotes none (an abstractive summary)."""
    flat = " ".join(_WORD.findall(summary.lower()))
    found = []
    for item in items:
        for sentence in _SENTENCE.split(item.content):
            words = _WORD.findall(sentence.lower())
            if len(words) >= 3 and " ".join(words) in flat:
                found.append(item)
                break
    return found or list(items)


def _summary_records(
    m: BoundMemory,
    partition: str,
    items: Sequence[MemoryItem],
    summary: str,
    summarizer: str | None,
    tier: str,
    *,
    owner: Owner | None = None,
) -> list[NewRecord]:
    parts = chunk_text(summary, max_tokens=300, overlap_sentences=0) or [summary]
    long_term = tier == TIER_LONG
    sid = owner[0] if owner else m.session_id
    out = []
    for n, part in enumerate(parts):
        meta = {
            "session_summary": True,
            "tier": TIER_LONG if long_term else TIER_MID,
            "summarizer": summarizer,
            "part": n,
            "parts": len(parts),
            "message_count": len(items),
            **source_metadata(summary_sources(part, items)),
        }
        out.append(
            _derived_record(
                m,
                kind="summary",
                partition=partition,
                content=part,
                metadata=meta,
                dedup=_sha("summary", m.tenant_id, partition, sid, str(n), part),
                tier=TIER_LONG_SUMMARY if long_term else TIER_MID,
                event_time=items[-1].event_time,
                vectorize=long_term,  # seed 003: a summary is embedded when it goes long-term
                owner=owner,
            )
        )
    return out


def _derived_ids(
    store: AgentMemory, tenant: str, partition: str, session_id: str, *, chunks: bool
) -> tuple[str, ...]:
    if chunks:
        where = "partition = ? AND kind = 'chat_message'"
        part = scope_rules.chunk_partition(partition)
    else:
        where = "partition = ? AND kind = 'summary'"
        part = partition
    rows = store.records.read(
        f"SELECT id FROM memories WHERE tenant_id = ? AND {where} AND session_id = ? "
        f"AND tier IS NOT NULL AND {LIVE} ORDER BY seq",
        (tenant, part, session_id),
    )
    return tuple(r[0] for r in rows)


def _retire_stale(
    store: AgentMemory,
    tenant: str,
    partition: str,
    session_id: str,
    *,
    keep: set[str],
    summaries: bool,
) -> None:
    stale = [
        i for i in _derived_ids(store, tenant, partition, session_id, chunks=True) if i not in keep
    ]
    if summaries:
        stale += [
            i
            for i in _derived_ids(store, tenant, partition, session_id, chunks=False)
            if i not in keep
        ]
    for id_ in stale:
        store.records.soft_delete(tenant, id_)


def _record_session(
    m: BoundMemory,
    partition: str,
    tier: str,
    last_seq: int,
    messages: int,
    chunks: int,
    status: str,
    summarizer: str | None,
    summary_ids: Sequence[str],
) -> None:
    now = iso(now_utc())
    i = m.identity
    with m.store.records.write() as conn:
        order = conn.execute(
            "SELECT COALESCE(MAX(close_order), 0) + 1 FROM sessions WHERE tenant_id = ? AND "
            "partition = ?",
            (i.tenant_id, partition),
        ).fetchone()[0]
        conn.execute(
            "INSERT INTO sessions (tenant_id, partition, session_id, user_id, agent_id, status, "
            "tier, close_order, closed_at, last_seq, message_count, chunk_count, "
            "summary_status, summarizer, summary_ids) VALUES (?,?,?,?,?,'closed',?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT (tenant_id, partition, session_id) DO UPDATE SET "
            "closed_at = excluded.closed_at, last_seq = excluded.last_seq, "
            "message_count = excluded.message_count, chunk_count = excluded.chunk_count, "
            "summary_status = excluded.summary_status, summarizer = excluded.summarizer, "
            "summary_ids = excluded.summary_ids",
            (
                i.tenant_id,
                partition,
                i.session_id,
                i.user_id,
                i.agent_id,
                tier,
                order,
                now,
                last_seq,
                messages,
                chunks,
                status,
                summarizer,
                json.dumps(list(summary_ids)),
            ),
        )


# -- promotion --------------------------------------------------------------------------------
def promote(store: AgentMemory, m: BoundMemory, partition: str, keep: int) -> list[str]:
    """Promote the oldest mid-term sessions of ``partition`` to long-term until ``keep`` remain.

    Per session, in one transaction: its chunks become ``long_term_detail`` (the indexer
    deletes their vectors; they stay keyword-searchable) and its summary
    ``long_term_summary`` (embedded). A session closed without a summary (timeout, failure)
    gets an extractive offline one here, so every long-term session is vector-searchable.
    """
    promoted: list[str] = []
    with _lock(id(store), m.tenant_id, partition):
        rows = store.records.read(
            "SELECT session_id, user_id, agent_id FROM sessions WHERE tenant_id = ? AND "
            "partition = ? AND tier = ? ORDER BY close_order",
            (m.tenant_id, partition, TIER_MID),
        )
        for session_id, user_id, agent_id in rows[: max(len(rows) - keep, 0)]:
            _promote_one(store, m, partition, session_id, user_id, agent_id)
            promoted.append(session_id)
    if promoted:
        store.indexer.notify()
    return promoted


def _promote_one(
    store: AgentMemory,
    m: BoundMemory,
    partition: str,
    session_id: str,
    user_id: str | None,
    agent_id: str | None,
) -> None:
    tenant = m.tenant_id
    fallback: list[str] = []
    if not _derived_ids(store, tenant, partition, session_id, chunks=False):
        items = [item for _, item in session_messages(store, tenant, partition, session_id)]
        if items:
            from .llm.offline import OfflineLLM

            offline = OfflineLLM()
            text = offline.summarize(
                [_turn(i) for i in items], max_words=store.tier_config.summary_max_words
            )
            if text.strip():
                recs = _summary_records(
                    m,
                    partition,
                    items,
                    text.strip(),
                    offline.name,
                    TIER_LONG,
                    owner=(session_id, user_id, agent_id),
                )
                fallback = [i for i, _ in store.records.insert(recs)]
    now = iso(now_utc())
    chunk_part = scope_rules.chunk_partition(partition)
    with store.records.write() as conn:
        conn.execute(
            f"UPDATE memories SET tier = ?, vec_pending = {VEC_PENDING}, updated_at = ?, "
            f"metadata = json_set(metadata, '$.tier', ?) WHERE tenant_id = ? AND partition = ? "
            f"AND session_id = ? AND tier = ? AND {LIVE}",
            (TIER_LONG_DETAIL, now, TIER_LONG, tenant, chunk_part, session_id, TIER_MID),
        )
        conn.execute(
            f"UPDATE memories SET tier = ?, vec_pending = {VEC_PENDING}, updated_at = ?, "
            f"metadata = json_set(metadata, '$.tier', ?) WHERE tenant_id = ? AND partition = ? "
            f"AND session_id = ? AND kind = 'summary' AND tier = ? AND {LIVE}",
            (TIER_LONG_SUMMARY, now, TIER_LONG, tenant, partition, session_id, TIER_MID),
        )
        if fallback:
            conn.execute(
                "UPDATE sessions SET summary_ids = ?, summarizer = COALESCE(summarizer, ?) "
                "WHERE tenant_id = ? AND partition = ? AND session_id = ?",
                (json.dumps(fallback), "offline-fallback", tenant, partition, session_id),
            )
        conn.execute(
            "UPDATE sessions SET tier = ?, promoted_at = ? WHERE tenant_id = ? AND "
            "partition = ? AND session_id = ?",
            (TIER_LONG, now, tenant, partition, session_id),
        )


def _turn(item: MemoryItem) -> ChatTurn:
    from .llm.base import chat_turn

    return chat_turn(item)  # the speaker and time travel as fields, not inside the text


# -- session detail ---------------------------------------------------------------------------
def session_detail(m: BoundMemory, session_id: str) -> SessionDetail:
    """The full events of one session of ``m``'s conversation (any tier; seed 003
    ``session_detail``), with its summary. Raises NotFoundError when there is none visible.
    """
    sid = v.identity(session_id, "session_id", required=True)
    assert sid is not None
    store = m.store
    store._check_open()
    own = scope_rules.conversation_partition(m.identity)
    if own is None:
        if m.session_id != sid:
            raise NotFoundError(f"no session {sid!r} is visible here", session_id=sid)
        own = scope_rules.home_partition(m.identity, "session")
    events: list[MemoryItem] = []
    rows = store.records.read(
        f"SELECT id FROM memories WHERE tenant_id = ? AND partition = ? AND session_id = ? "
        f"AND scope = 'session' AND kind IN {_MESSAGE_KINDS} AND {LIVE} ORDER BY seq",
        (m.tenant_id, own, sid),
    )
    ids = [r[0] for r in rows]
    found = {r.item.id: r for r in store.records.get_many(m.tenant_id, ids)}
    for id_ in ids:
        row = found.get(id_)
        if row is None or m._visible(row) is None:
            continue
        item = row.item
        if item.source_ref:
            payload = store.records.payload(m.tenant_id, item.source_ref)
            if payload is not None and payload[0] == item.id:
                item = replace(item, content=payload[1])
        events.append(item)
    info = _session_info(store, m.tenant_id, own, sid)
    summary_ids = _derived_ids(store, m.tenant_id, own, sid, chunks=False)
    summaries = [
        r.item.content
        for r in store.records.get_many(m.tenant_id, list(summary_ids))
        if m._visible(r) is not None
    ]
    if not events and info is None:
        raise NotFoundError(f"no session {sid!r} is visible here", session_id=sid)
    return SessionDetail(
        session_id=sid,
        tier=info[0].tier if info else None,
        closed_at=info[0].closed_at if info else None,
        summary="\n".join(summaries) if summaries else None,
        summary_ids=summary_ids,
        events=events,
    )
