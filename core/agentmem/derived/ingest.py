"""``ingest()``: a conversation in, raw messages and derived memories out.

Pipeline (all for one bound identity):

1. **Messages, content-addressed.** Each message gets a deterministic id from the tenant,
   the conversation partition, the session and either the caller's message ``id`` or the
   message's role, content and position; re-ingesting the same conversation stores nothing
   twice. Without a bound session one is derived from the identity and the conversation's
   first message, so the same conversation (also when it grows) maps to the same session.
   Messages are stored verbatim as ``chat_message`` rows (``tool`` turns as
   ``tool_output``), in one transaction, before any extraction.
2. **Extraction** by the store's LLM over windows of the conversation that contain messages
   not extracted before (``ingest_log``): discrete memories, each classified (memory type
   and its class fact/event/instruction/task), with a topic key, keywords and search
   queries. A failed or malformed window is reported in :attr:`IngestResult.errors` with the
   model's raw reply, and logged; it is retried by the next ingest of the same messages.
3. **Deduplication** against the batch and the store: a memory's id is derived from its
   owner, type, content and source messages, and its dedup key from owner, type and content
   (the same key ``remember`` uses), so a memory already stored is counted as a duplicate.
4. **Storage with supersession.** Facts, preferences, decisions, instructions and notes
   supersede a live memory of the same owner with the same topic key inside the insert
   (``superseded_by`` + an audit entry); events and tasks accumulate (their topic key is kept
   in ``metadata["topic_key"]``).
   Then the judge (:mod:`agentmem.derived.supersession`) runs synchronously over the new facts,
   preferences and instructions, for contradictions without a shared topic key; it is
   fail-open.

Every derived memory records its extractor (``metadata["extractor"]``, e.g.
``offline-heuristic-v1``), its class, keywords, queries and source message ids.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import scopes as scope_rules
from .. import validation
from ..context import StoreContext
from ..errors import LLMError, ValidationError
from ..llm.base import ChatTurn, Extracted
from ..models import MEMORY_TYPES, ROLES, Identity, IngestError, IngestResult
from ..speakers import metadata_speaker
from ..storage.rows import NewRecord, now_utc
from ..write.commit import commit
from ..write.records import memory_record, message_record, sha
from .supersession import judge_rows

if TYPE_CHECKING:
    from ..llm.base import LLM

log = logging.getLogger("agentmem.derived.ingest")

#: The class (fact, event, instruction, task) of each memory type.
MEMORY_CLASS: dict[str, str] = {
    "fact": "fact",
    "preference": "fact",
    "note": "fact",
    "decision": "event",
    "event": "event",
    "instruction": "instruction",
    "task": "task",
}
#: Extraction windows: at most this many turns / characters per LLM call.
WINDOW_TURNS = 40
WINDOW_CHARS = 24_000
_MESSAGE_KEYS = frozenset({"role", "content", "id", "event_time", "metadata"})


@dataclasses.dataclass(frozen=True, slots=True)
class _Message:
    role: str
    content: str
    source_id: str | None
    event_time: datetime | None
    metadata: dict[str, Any]


def _validate(messages: Iterable[Mapping[str, Any] | ChatTurn]) -> list[_Message]:
    if isinstance(messages, str | bytes | Mapping):
        raise ValidationError("messages", "must be an iterable of dicts or ChatTurns")
    out: list[_Message] = []
    for n, msg in enumerate(messages):
        field = f"messages[{n}]"
        if isinstance(msg, ChatTurn):
            # its speaker and time are kept as a message dict carries them
            msg = {
                "role": msg.role,
                "content": msg.content,
                "id": msg.id,
                "event_time": msg.time,
                "metadata": {"speaker": msg.speaker} if msg.speaker else None,
            }
        if not isinstance(msg, Mapping):
            raise ValidationError(field, f"must be a dict or ChatTurn, got {type(msg).__name__}")
        unknown = set(msg) - _MESSAGE_KEYS
        if unknown:
            raise ValidationError(field, f"unknown keys {sorted(unknown)}")
        if "role" not in msg or "content" not in msg:
            raise ValidationError(field, "needs 'role' and 'content'")
        try:
            role = validation.choice(msg["role"], "role", ROLES)
            content = validation.text(msg["content"], "content")
            source_id = validation.identity(msg.get("id"), "id")
            when = validation.event_time(msg.get("event_time"))
            meta = validation.metadata(msg.get("metadata"))
        except ValidationError as exc:
            raise type(exc)(f"{field}.{exc.field}", str(exc).split(": ", 1)[-1]) from exc
        out.append(_Message(role, content, source_id, when, meta))
    if not out:
        raise ValidationError("messages", "is empty")
    return out


def derive_session_id(identity: Identity, messages: Sequence[_Message]) -> str:
    """A session id from the identity and the conversation's first message (stable as the
    conversation grows)."""
    i = identity
    first = messages[0]
    anchor = first.source_id or f"{first.role}\x1f{first.content}"
    return "ses_" + sha("session", i.tenant_id, i.user_id, i.agent_id, anchor)[:24]


def ingest(
    ctx: StoreContext, identity: Identity, messages: Iterable[Mapping[str, Any] | ChatTurn]
) -> IngestResult:
    """See the module docstring; called by :meth:`BoundMemory.ingest`."""
    msgs = _validate(messages)
    ctx.check_open()
    if identity.session_id is None:
        identity = dataclasses.replace(identity, session_id=derive_session_id(identity, msgs))
    llm = ctx.llm
    session_id = identity.session_id
    assert session_id is not None
    partition = scope_rules.home_partition(identity, "session")

    # 1. messages, content-addressed
    msg_ids: list[str] = []
    records: list[NewRecord] = []
    for pos, msg in enumerate(msgs):
        if msg.source_id is not None:
            anchor = sha("id", msg.source_id)
        else:
            anchor = sha("pos", str(pos), msg.role, msg.content)
        msg_id = "msg_" + sha(identity.tenant_id, partition, session_id, anchor)[:32]
        msg_ids.append(msg_id)
        meta = dict(msg.metadata)
        if msg.source_id is not None:
            meta.setdefault("message_id", msg.source_id)
        rec = message_record(identity, msg.role, msg.content, meta, msg.event_time)
        oversized = rec.payload_key is not None
        records.append(
            dataclasses.replace(
                rec,
                id=msg_id,
                dedup_key=msg_id,
                payload_key=f"msg_{msg_id}" if oversized else None,
                source_ref=f"msg_{msg_id}" if oversized else None,
            )
        )
    existing = ctx.records.memories.existing_ids(msg_ids)
    fresh = [r for r in records if r.id not in existing]
    written = commit(ctx, fresh, "ingest") if fresh else []
    messages_new = sum(1 for _, new in written if new)

    # 2. extraction over windows holding messages not extracted before
    done = ctx.records.ingest_log.extracted(identity.tenant_id, msg_ids)
    received = now_utc()  # resolves "yesterday" in a message given without an event time
    turns = [
        ChatTurn(
            role=msg.role,
            content=msg.content,
            id=mid,
            speaker=metadata_speaker(msg.metadata),
            time=msg.event_time or received,
        )
        for msg, mid in zip(msgs, msg_ids, strict=True)
    ]
    times = {mid: msg.event_time for msg, mid in zip(msgs, msg_ids, strict=True)}
    errors: list[IngestError] = []
    created: list[str] = []
    duplicates = 0
    for window in _windows(turns):
        pending = [t.id for t in window if t.id is not None and t.id not in done]
        if not pending:
            continue
        try:
            extracted = llm.extract(window)
        except LLMError as exc:
            raw = exc.context.get("raw")
            errors.append(
                IngestError(
                    stage="extract",
                    message=str(exc),
                    source_ids=tuple(pending),
                    raw=raw if isinstance(raw, str) else None,
                )
            )
            log.warning(
                json.dumps(
                    {
                        "event": "ingest_extract_failed",
                        "extractor": llm.name,
                        "messages": len(pending),
                        "error": str(exc)[:300],
                        "has_raw_reply": raw is not None,
                    }
                )
            )
            continue
        new_ids, dup, problems = _store_memories(
            ctx, identity, llm, extracted, set(pending), done, times
        )
        created.extend(new_ids)
        duplicates += dup
        errors.extend(problems)
        ctx.records.ingest_log.mark(identity.tenant_id, pending, llm.name)
        done.update(pending)

    # 4b. the judge, synchronously, over this ingest's new facts/preferences/instructions
    superseded = ctx.records.supersession.count_superseded_by(identity.tenant_id, created)
    if created:
        judged = judge_rows(ctx, created, llm)
        superseded += len(judged.superseded)
        errors.extend(judged.errors)
    result = IngestResult(
        session_id=session_id,
        messages_stored=len(msg_ids),
        messages_new=messages_new,
        memories_created=len(created),
        memories_duplicate=duplicates,
        memories_superseded=superseded,
        message_ids=tuple(msg_ids),
        memory_ids=tuple(created),
        errors=tuple(errors),
        extractor=llm.name,
    )
    log.info(
        json.dumps(
            {
                "event": "ingest",
                "tenant_hash": hashlib.sha256(identity.tenant_id.encode()).hexdigest()[:16],
                "messages": result.messages_stored,
                "messages_new": result.messages_new,
                "memories_created": result.memories_created,
                "memories_duplicate": result.memories_duplicate,
                "memories_superseded": result.memories_superseded,
                "errors": len(result.errors),
                "extractor": llm.name,
            }
        )
    )
    return result


def _windows(turns: Sequence[ChatTurn]) -> list[list[ChatTurn]]:
    out: list[list[ChatTurn]] = []
    cur: list[ChatTurn] = []
    size = 0
    for t in turns:
        if cur and (len(cur) >= WINDOW_TURNS or size + len(t.content) > WINDOW_CHARS):
            out.append(cur)
            cur, size = [], 0
        cur.append(t)
        size += len(t.content)
    if cur:
        out.append(cur)
    return out


def _scope_for(identity: Identity, item: Extracted) -> str:
    """The requested scope if this identity can hold it, else the nearest one it can."""
    wanted = "session" if item.memory_type == "task" else (item.scope or "user")
    order = {
        "user": ("user", "agent", "session"),
        "agent": ("agent", "user", "session"),
        "session": ("session",),
        "tenant": ("user", "agent", "session"),
    }.get(wanted, ("user", "agent", "session"))
    for scope in order:
        try:
            scope_rules.require(identity, scope)
        except ValidationError:
            continue
        return scope
    return "session"


def _store_memories(
    ctx: StoreContext,
    identity: Identity,
    llm: LLM,
    extracted: Sequence[Extracted],
    pending: set[str],
    done: set[str],
    times: Mapping[str, datetime | None],
) -> tuple[list[str], int, list[IngestError]]:
    """Validate, dedup and insert one window's memories: (created ids, duplicates, errors)."""
    errors: list[IngestError] = []
    records: list[NewRecord] = []
    duplicates = 0
    for item in extracted:
        sources = tuple(s for s in item.source_ids if s)
        if sources and all(s in done and s not in pending for s in sources):
            duplicates += 1  # stated in messages extracted by an earlier ingest
            continue
        mtype = item.memory_type if item.memory_type in MEMORY_TYPES else None
        if mtype is None:
            errors.append(
                IngestError(
                    stage="validate",
                    message=f"memory_type {item.memory_type!r} is not one of {MEMORY_TYPES}",
                    source_ids=sources,
                    raw=repr(item),
                )
            )
            continue
        scope = _scope_for(identity, item)
        meta: dict[str, Any] = {
            "extractor": llm.name,
            "class": MEMORY_CLASS[mtype],
            "keywords": list(item.keywords),
            "queries": list(item.queries),
            "source_message_ids": list(sources),
        }
        try:
            rec = memory_record(identity, item.content, mtype, scope, None, item.topic_key, meta)
        except ValidationError as exc:
            errors.append(
                IngestError(stage="validate", message=str(exc), source_ids=sources, raw=repr(item))
            )
            continue
        when = max((t for s in sources if (t := times.get(s)) is not None), default=None)
        mem_id = "mem_" + sha(rec.tenant_id, rec.partition, rec.dedup_key, *sources)[:32]
        records.append(dataclasses.replace(rec, id=mem_id, event_time=when))
    if not records:
        return [], duplicates, errors
    existing = ctx.records.memories.existing_ids([r.id for r in records])
    fresh = []
    seen: set[str] = set()
    for r in records:
        if r.id in existing or r.id in seen:
            duplicates += 1
            continue
        seen.add(r.id)
        fresh.append(r)
    created: list[str] = []
    if fresh:
        for id_, new in commit(ctx, fresh, "ingest_memories"):
            if new:
                created.append(id_)
            else:
                duplicates += 1
    return created, duplicates, errors
