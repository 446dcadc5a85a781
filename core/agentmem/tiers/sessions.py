"""Session tiers: the close-session pipeline, mid-term and long-term memory.

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
  a summary is embedded when its session goes long-term, where it stands for the session).
- ``long_term_detail``: the chunks of a long-term session (keyword-only; their vectors are
  removed).
- ``long_term_summary``: the summary of a long-term session (embedded).

``conv`` is the conversation partition (``conv:u:<user>``), so the rows have the owner and
visibility of the session's messages. Chunks live in their own partition (and Chroma
collection), so default recall never searches them and they cannot crowd out message-level
hits; ``recall(tiers=("mid_term",))`` or ``("long_term",)`` targets them. Long-term detail
chunks stay keyword-searchable: the records store counts them out of the vector index
(:data:`~agentmem.storage.rows.VECTOR_LIVE`), so the indexer deletes their vectors and never
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

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import scopes as scope_rules
from .. import validation
from ..chunking import chunk_text, elide
from ..config import TierConfig
from ..context import StoreContext
from ..errors import NotFoundError, ScopeError, ValidationError
from ..llm.base import LLM, ChatTurn, chat_turn
from ..llm.offline import OfflineLLM
from ..models import (
    TIER_LONG,
    TIER_LONG_DETAIL,
    TIER_LONG_SUMMARY,
    TIER_MID,
    Identity,
    MemoryItem,
)
from ..results import CloseResult as CloseResult  # re-exported: they lived here
from ..results import SessionDetail as SessionDetail
from ..speakers import metadata_speaker, resolve_speaker
from ..storage.rows import NewRecord
from ..storage.sessions import SessionInfo
from ..tokens import count_tokens
from ..write import conversation
from ..write.commit import retire
from ..write.records import new_record, sha
from .working import WorkingMemory

log = logging.getLogger("agentmem.tiers.sessions")

#: Characters of one message kept in a chunk's text (the message itself is kept in full).
CHUNK_MESSAGE_CHARS = 2000
#: Session-summary input above this many tokens is cut to the working summary plus the
#: newest messages that fit.
SUMMARY_INPUT_TOKENS = 60_000
#: (session_id, user_id, agent_id) owning a derived row.
Owner = tuple[str | None, str | None, str | None]
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+")


# -- reads ------------------------------------------------------------------------------------
def session_messages(
    ctx: StoreContext, tenant_id: str, partition: str, session_id: str
) -> list[tuple[int, MemoryItem]]:
    """(seq, item) of a session's live messages and tool outputs, oldest first."""
    rows = ctx.records.conversations.session_items(tenant_id, partition, session_id)
    return [(seq, row.item) for seq, row in rows]


def list_sessions(
    ctx: StoreContext, identity: Identity, *, tier: str | None = None
) -> list[SessionInfo]:
    """The closed sessions of ``identity``'s conversation, oldest closed first (optionally
    of one tier).

    Example:
        >>> [s.tier for s in list_sessions(ctx, identity)]  # doctest: +SKIP
        ['long_term', 'mid_term']
    """
    if tier is not None:
        tier = validation.choice(tier, "tier", (TIER_MID, TIER_LONG))
    ctx.check_open()
    return ctx.records.sessions.list(identity.tenant_id, _conversation(identity), tier=tier)


def conversation_sessions(ctx: StoreContext, identity: Identity) -> list[str]:
    """Session ids of ``identity``'s conversation with live messages, oldest first (for an
    identity with neither user nor agent: the sessions bound that way)."""
    ctx.check_open()
    return ctx.records.conversations.conversation_sessions(
        identity.tenant_id, scope_rules.conversation_partition(identity)
    )


def _conversation(identity: Identity) -> str:
    part = scope_rules.conversation_partition(identity)
    if part is None:
        if identity.session_id is None:
            raise ScopeError(
                "scope", "sessions need user_id, agent_id or session_id bound (AgentMemory.bind)"
            )
        part = scope_rules.home_partition(identity, "session")
    return part


# -- the pipeline -----------------------------------------------------------------------------
def close_session(
    ctx: StoreContext,
    identity: Identity,
    *,
    summary_timeout: float | None = None,
    llm: LLM | None = None,
) -> CloseResult:
    """Run the shutdown pipeline for ``identity``'s session (see the module docstring).

    Args:
        ctx: The store.
        identity: An identity with a ``session_id``.
        summary_timeout: Seconds for the summary (default from :class:`TierConfig`); 0 skips
            it.
        llm: Summariser (default: the store's LLM).
    """
    scope_rules.require(identity, "session")
    ctx.check_open()
    cfg = ctx.settings.tiers
    timeout = cfg.summary_timeout if summary_timeout is None else summary_timeout
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout < 0:
        raise ValidationError("summary_timeout", "must be a non-negative number of seconds")
    started = time.perf_counter()
    tenant = identity.tenant_id
    session_id = identity.session_id
    assert session_id is not None
    partition = scope_rules.home_partition(identity, "session")
    with session_lock(ctx, tenant, partition, session_id):
        msgs = session_messages(ctx, tenant, partition, session_id)
        last_seq = msgs[-1][0] if msgs else 0
        before = ctx.records.sessions.get(tenant, partition, session_id)
        if before is not None and before.last_seq == last_seq and before.message_count == len(msgs):
            info = before
            ctx.access.flush()
            return CloseResult(
                session_id=session_id,
                tier=info.tier,
                already_closed=True,
                messages=info.message_count,
                chunk_ids=_derived_ids(ctx, tenant, partition, session_id, chunks=True),
                summary_ids=info.summary_ids,
                summary_status=info.summary_status,
                summarizer=info.summarizer,
                elapsed_ms=_ms(started),
            )
        written = _write_session(
            ctx, identity, partition, session_id, msgs, before, timeout=timeout, llm=llm
        )
    tier = before.tier if before is not None else TIER_MID

    # 4. promote the oldest mid-term sessions beyond N
    promoted = promote(ctx, identity, partition, cfg.mid_term_sessions)
    ctx.access.flush()
    final_tier = TIER_LONG if session_id in promoted else tier
    log.info(
        json.dumps(
            {
                "event": "close_session",
                "correlation_id": uuid.uuid4().hex,
                "messages": len(written.items),
                "chunks": len(written.chunk_ids),
                "summary_status": written.status,
                "promoted": len(promoted),
                "latency_ms": _ms(started),
            }
        )
    )
    return CloseResult(
        session_id=session_id,
        tier=final_tier,
        already_closed=False,
        messages=len(written.items),
        chunk_ids=written.chunk_ids,
        summary_ids=written.summary_ids,
        summary_status=written.status,
        summarizer=written.summarizer,
        promoted=tuple(promoted),
        error=written.error,
        elapsed_ms=_ms(started),
    )


@dataclass(frozen=True, slots=True)
class _Written:
    items: list[MemoryItem]
    chunk_ids: tuple[str, ...]
    summary_ids: tuple[str, ...]
    status: str
    summarizer: str | None
    error: str | None


def _write_session(
    ctx: StoreContext,
    identity: Identity,
    partition: str,
    session_id: str,
    msgs: Sequence[tuple[int, MemoryItem]],
    before: SessionInfo | None,
    *,
    timeout: float,
    llm: LLM | None,
) -> _Written:
    """Steps 1-3 of the pipeline (summary, chunks, embedding) for a session's messages
    ``msgs``, under the caller's session lock; the session's row is written last."""
    cfg = ctx.settings.tiers
    tenant = identity.tenant_id
    last_seq = msgs[-1][0] if msgs else 0
    tier = before.tier if before is not None else TIER_MID
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
        model = llm or ctx.llm
        summarizer = model.name
        turns = _summary_turns(ctx, identity, items)
        summary, status, error = _summarize(model, turns, cfg.summary_max_words, timeout)
        if error is not None:
            log.warning(
                json.dumps({"event": "session_summary_skipped", "status": status, "error": error})
            )

    # 2. chunks + summary rows, written together; stale ones (an earlier close) retired
    chunk_recs = _chunk_records(identity, partition, items, tier, cfg)
    summary_recs = (
        _summary_records(identity, partition, items, summary, summarizer, tier) if summary else []
    )
    written = ctx.records.memories.insert([*chunk_recs, *summary_recs]) if items else []
    chunk_ids = tuple(i for i, _ in written[: len(chunk_recs)])
    summary_ids = tuple(i for i, _ in written[len(chunk_recs) :])
    replace_summaries = summary is not None or status == "empty"
    _retire_stale(
        ctx,
        tenant,
        partition,
        session_id,
        keep=set(chunk_ids) | set(summary_ids),
        summaries=replace_summaries,
    )
    if not replace_summaries and before is not None:
        # the new summary failed: the earlier one (if any) stays
        summary_ids = _derived_ids(ctx, tenant, partition, session_id, chunks=False)
        if not summary_ids and tier == TIER_LONG and items:
            # a long-term session is found by its summary's vector: never leave it without
            summary_ids = tuple(_fallback_summary(ctx, identity, partition, items, before))

    # 3. embed: the background indexer picks the rows up
    ctx.indexer.notify()
    ctx.records.sessions.record_close(
        tenant,
        partition,
        session_id,
        user_id=identity.user_id,
        agent_id=identity.agent_id,
        tier=tier,
        last_seq=last_seq,
        messages=len(items),
        chunks=len(chunk_ids),
        summary_status=status,
        summarizer=summarizer,
        summary_ids=summary_ids,
    )
    return _Written(items, chunk_ids, summary_ids, status, summarizer, error)


def clear_session(ctx: StoreContext, identity: Identity) -> int:
    """Soft-delete the bound session's messages and tool outputs; returns how many. A closed
    session is written again from what is left (nothing): the chunks and summary that carried
    the cleared messages go too."""
    scope_rules.require(identity, "session")
    assert identity.session_id is not None
    partition = scope_rules.home_partition(identity, "session")
    tenant, session_id = identity.tenant_id, identity.session_id
    with session_lock(ctx, tenant, partition, session_id):
        cleared = conversation.clear_session(ctx, identity)
        if cleared:
            refresh_session(ctx, tenant, partition, session_id)
    return cleared


def session_lock(
    ctx: StoreContext, tenant_id: str, partition: str, session_id: str
) -> threading.Lock:
    """The lock a session's close pipeline runs under (also held to forget its messages)."""
    return ctx.locks("close_session", tenant_id, partition, session_id)


def refresh_session(ctx: StoreContext, tenant_id: str, partition: str, session_id: str) -> bool:
    """Write a closed session's chunks and summary again from the messages it still has.

    Called with :func:`session_lock` held, after one of its messages was forgotten or erased
    and the chunks and summaries that held it were removed. Its tier and close order stay.
    False when the session was never closed in ``partition``.
    """
    ctx.check_open()
    info = ctx.records.sessions.get(tenant_id, partition, session_id)
    if info is None:
        return False
    owner = Identity(
        tenant_id=tenant_id, user_id=info.user_id, agent_id=info.agent_id, session_id=session_id
    )
    if scope_rules.home_partition(owner, "session") != partition:
        log.warning(json.dumps({"event": "session_refresh_skipped", "reason": "owner"}))
        return False
    # only what its last close covered: messages added since are working memory until the
    # next close (cross-agent reads and the idle closer rely on that)
    msgs = [
        m for m in session_messages(ctx, tenant_id, partition, session_id) if m[0] <= info.last_seq
    ]
    timeout = ctx.settings.tiers.summary_timeout
    _write_session(ctx, owner, partition, session_id, msgs, info, timeout=timeout, llm=None)
    return True


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _summary_turns(
    ctx: StoreContext, identity: Identity, items: Sequence[MemoryItem]
) -> list[ChatTurn]:
    """All messages; a session too long for one call: its working summary + the newest."""
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
    ref = WorkingMemory(ctx, identity).summary
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
    role = "tool" if item.kind == "tool_output" else item.role
    speaker, text = resolve_speaker(role, text, metadata_speaker(item.metadata))
    if speaker is not None:
        who = speaker
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


def _chunk_records(
    identity: Identity,
    partition: str,
    items: Sequence[MemoryItem],
    tier: str,
    cfg: TierConfig,
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
        content = "\n".join(_line(i) for i in chunk)
        out.append(
            new_record(
                identity,
                kind="chat_message",
                scope="session",
                partition=scope_rules.chunk_partition(partition),
                content=content,
                metadata=meta,
                dedup_key=sha("chunk", identity.tenant_id, partition, identity.session_id, *ids),
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
    identity: Identity,
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
    owner = owner or (identity.session_id, identity.user_id, identity.agent_id)
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
            new_record(
                identity,
                kind="summary",
                scope="session",
                partition=partition,
                content=part,
                metadata=meta,
                dedup_key=sha("summary", identity.tenant_id, partition, owner[0], str(n), part),
                tier=TIER_LONG_SUMMARY if long_term else TIER_MID,
                event_time=items[-1].event_time,
                # a summary is embedded when its session goes long-term; before that the
                # session's chunks carry its meaning in the vector index
                vectorize=long_term,
                owner=owner,
            )
        )
    return out


def _derived_ids(
    ctx: StoreContext, tenant: str, partition: str, session_id: str, *, chunks: bool
) -> tuple[str, ...]:
    if chunks:
        return ctx.records.conversations.derived_ids(
            tenant, scope_rules.chunk_partition(partition), session_id, kind="chat_message"
        )
    return ctx.records.conversations.derived_ids(tenant, partition, session_id, kind="summary")


def _retire_stale(
    ctx: StoreContext,
    tenant: str,
    partition: str,
    session_id: str,
    *,
    keep: set[str],
    summaries: bool,
) -> None:
    stale = [
        i for i in _derived_ids(ctx, tenant, partition, session_id, chunks=True) if i not in keep
    ]
    if summaries:
        stale += [
            i
            for i in _derived_ids(ctx, tenant, partition, session_id, chunks=False)
            if i not in keep
        ]
    retire(ctx, tenant, stale)


# -- promotion --------------------------------------------------------------------------------
def promote(ctx: StoreContext, identity: Identity, partition: str, keep: int) -> list[str]:
    """Promote the oldest mid-term sessions of ``partition`` to long-term until ``keep`` remain.

    Per session, in one transaction: its chunks become ``long_term_detail`` (the indexer
    deletes their vectors; they stay keyword-searchable) and its summary
    ``long_term_summary`` (embedded). A session closed without a summary (timeout, failure)
    gets an extractive offline one here, so every long-term session is vector-searchable.
    """
    promoted: list[str] = []
    tenant = identity.tenant_id
    with ctx.locks("promote", tenant, partition):
        mid = ctx.records.sessions.list(tenant, partition, tier=TIER_MID)
        for info in mid[: max(len(mid) - keep, 0)]:
            # under its own lock: a close (or refresh) of it under way writes mid-term
            # chunks from the tier it read, so it finishes first and is promoted with them
            with session_lock(ctx, tenant, partition, info.session_id):
                now = ctx.records.sessions.get(tenant, partition, info.session_id)
                if now is None or now.tier != TIER_MID:
                    continue
                _promote_one(ctx, identity, partition, now)
            promoted.append(info.session_id)
    if promoted:
        ctx.indexer.notify()
    return promoted


def _promote_one(ctx: StoreContext, identity: Identity, partition: str, info: SessionInfo) -> None:
    tenant = identity.tenant_id
    session_id = info.session_id
    fallback: list[str] = []
    if not _derived_ids(ctx, tenant, partition, session_id, chunks=False):
        items = [item for _, item in session_messages(ctx, tenant, partition, session_id)]
        fallback = _fallback_summary(ctx, identity, partition, items, info)
    ctx.records.conversations.promote_session(
        tenant,
        partition,
        session_id,
        moves=(
            (scope_rules.chunk_partition(partition), TIER_MID, TIER_LONG_DETAIL, None),
            (partition, TIER_MID, TIER_LONG_SUMMARY, "summary"),
        ),
        summary_ids=fallback or None,
        summarizer="offline-fallback",
    )


def _fallback_summary(
    ctx: StoreContext,
    identity: Identity,
    partition: str,
    items: Sequence[MemoryItem],
    info: SessionInfo,
) -> list[str]:
    """An extractive offline summary of a long-term session that has none; its row ids."""
    if not items:
        return []
    offline = OfflineLLM()
    text = offline.summarize(
        [_turn(i) for i in items], max_words=ctx.settings.tiers.summary_max_words
    )
    if not text.strip():
        return []
    recs = _summary_records(
        identity,
        partition,
        items,
        text.strip(),
        offline.name,
        TIER_LONG,
        owner=(info.session_id, info.user_id, info.agent_id),
    )
    return [i for i, _ in ctx.records.memories.insert(recs)]


def _turn(item: MemoryItem) -> ChatTurn:
    return chat_turn(item)  # the speaker and time travel as fields, not inside the text


# -- session detail ---------------------------------------------------------------------------
def session_detail(
    ctx: StoreContext, identity: Identity, session_id: str, *, target_agent: str | None = None
) -> SessionDetail:
    """The full events of one session of ``identity``'s conversation (any tier), with its
    summary. Raises NotFoundError when there is none visible.

    With ``target_agent`` (an agent bound without a user reading another agent), the session
    is one of that agent's own closed sessions: its events up to the last close (later ones
    are its working memory, readable by its own session only) and its summary.
    """
    sid = validation.identity(session_id, "session_id", required=True)
    assert sid is not None
    target = validation.identity(target_agent, "target_agent")
    ctx.check_open()
    closed_up_to: int | None = None
    if target is not None:
        own = scope_rules.cross_agent_partition(identity, target)
        closed = ctx.records.sessions.get(identity.tenant_id, own, sid)
        if closed is None:
            raise NotFoundError(f"no closed session {sid!r} of agent {target!r}", session_id=sid)
        closed_up_to = closed.last_seq
    else:
        part = scope_rules.conversation_partition(identity)
        if part is None:
            if identity.session_id != sid:
                raise NotFoundError(f"no session {sid!r} is visible here", session_id=sid)
            part = scope_rules.home_partition(identity, "session")
        own = part
    events: list[MemoryItem] = []
    for seq, row in ctx.records.conversations.session_items(identity.tenant_id, own, sid):
        if target is not None:
            assert closed_up_to is not None
            if seq > closed_up_to or not scope_rules.cross_agent_message(identity, row, target):
                continue
        elif scope_rules.visible_row(identity, row) is None:
            continue
        item = row.item
        if item.source_ref:
            payload = ctx.records.memories.payload(identity.tenant_id, item.source_ref)
            if payload is not None and payload[0] == item.id:
                item = replace(item, content=payload[1])
        events.append(item)
    info = ctx.records.sessions.get(identity.tenant_id, own, sid)
    summary_ids = _derived_ids(ctx, identity.tenant_id, own, sid, chunks=False)
    summaries = [
        r.item.content
        for r in ctx.records.memories.items(identity.tenant_id, list(summary_ids))
        if scope_rules.visible_row(identity, r, target) is not None
    ]
    if not events and info is None:
        raise NotFoundError(f"no session {sid!r} is visible here", session_id=sid)
    return SessionDetail(
        session_id=sid,
        tier=info.tier if info else None,
        closed_at=info.closed_at if info else None,
        summary="\n".join(summaries) if summaries else None,
        summary_ids=summary_ids,
        events=events,
    )
