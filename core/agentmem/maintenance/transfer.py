"""Export and import: a data dir's contents as JSON Lines, one JSON object per line.

Two kinds of line
-----------------
**Records** (what ``export`` writes): a stored row as it is, with its ``id``. Importing one
restores that exact row (id, kind, identity, scope, tier, timestamps, supersession, keys,
the full text of a long message or tool output) unless a row with that id is already there;
importing an export twice, or into the store it came from, changes nothing. Session chunks and
summaries come back as themselves. Fields: every field of
:class:`~agentmem.models.MemoryItem` (``id``, ``kind``, ``tenant_id`` ... ``metadata``,
``superseded_by``, timestamps) plus ``type`` (``message``, ``tool_output``, ``document_chunk``,
``memory``, ``summary``, ``session_chunk``), ``partition``, ``tier``, ``topic_key``,
``dedup_key`` and ``full_content`` (when the indexed ``content`` is a capped copy or a
preview). Export also writes ``{"type": "session", ...}`` lines (closed sessions and their
tier) and ``{"type": "agent_state", ...}`` lines (with ``user_id`` and ``about_agent_id``
when the entry is about a user or another agent, so erasing them still reaches the restored
copy); both restore too. The working-memory state of open sessions is not exported (their
transcript is; the next compaction rebuilds it).

**Writes** (lines you write by hand; no ``id``): stored through the normal write path, so
they are validated, deduplicated and indexed like any API call; a message is also keyed by
its line's number, so importing the same file again (after an interruption, say) stores
none of its lines twice. By ``type``:

``message`` (or no ``type``, with ``role`` and ``content``)
    ``role`` (user|assistant|system|tool), ``content``; optional ``event_time`` (ISO-8601),
    ``metadata``. Needs a session (``session_id`` on the line or ``--session``).
``tool_output``
    ``tool_call_id``, ``content`` (the full output); optional ``tool_name``, ``metadata``.
    Needs a session.
``document``
    ``content`` (or ``text``): the whole document, chunked on import into tenant-scope
    chunks, which every user of the tenant can recall; optional ``source_ref``, ``metadata``.
``memory``
    ``content``; optional ``memory_type`` (default fact), ``scope`` (user|agent|tenant|session;
    default: user when a user is bound, else agent, else session; tenant only when the line
    says so), ``importance``,
    ``topic_key``, ``metadata``. A memory line with ``superseded_by`` is written only when a
    later line with its ``topic_key`` supersedes it again (it is history otherwise).

A write line may carry ``tenant_id``, ``user_id``, ``agent_id``, ``session_id``: a key that is
present (even ``null``) overrides the identity given to the import for that line.

Every line is read and validated before anything is written: a bad line stops the import with
its line number and nothing is stored. Then lines are applied in order, in batches.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

from .. import scopes, validation
from ..config import CHAT_COPY_MAX_BYTES
from ..context import StoreContext
from ..errors import StorageError, ValidationError
from ..models import (
    KINDS,
    MEMORY_TYPES,
    REMEMBER_SCOPES,
    ROLES,
    SCOPES,
    TIER_LONG,
    TIER_LONG_DETAIL,
    TIER_LONG_SUMMARY,
    TIER_MID,
    Identity,
    MemoryItem,
)
from ..results import ImportCounts as ImportCounts  # re-exported: it lived here
from ..storage.rows import Row, StoredRecord
from ..storage.sessions import SessionInfo
from ..write import conversation, documents, memories
from ..write.commit import commit
from ..write.records import memory_record, message_record, sha

#: ``type`` of a record line, by kind (a chat message with a tier is a session chunk).
RECORD_TYPES = ("message", "tool_output", "document_chunk", "memory", "summary", "session_chunk")
WRITE_TYPES = ("message", "tool_output", "document", "memory")
LINE_TYPES = (*RECORD_TYPES, "document", "session", "agent_state")
STORED_TIERS = (TIER_MID, TIER_LONG_SUMMARY, TIER_LONG_DETAIL)
_IDENTITY_KEYS = ("tenant_id", "user_id", "agent_id", "session_id")
_ITEM_FIELDS = frozenset(f.name for f in fields(MemoryItem))
_RECORD_EXTRAS = frozenset(
    {
        "type",
        "partition",
        "tier",
        "topic_key",
        "dedup_key",
        "full_content",
        "tool_call_id",
        "tool_name",
    }
)
_WRITE_KEYS: dict[str, frozenset[str]] = {
    "message": frozenset({"role", "content", "event_time", "metadata"}),
    "tool_output": frozenset({"tool_call_id", "tool_name", "content", "metadata"}),
    "document": frozenset({"content", "text", "source_ref", "metadata"}),
    "memory": frozenset(
        {"content", "memory_type", "scope", "importance", "topic_key", "metadata", "superseded_by"}
    ),
}
MAX_REPORTED_ERRORS = 20


class ImportFileError(ValidationError):
    """Lines of an import that cannot be used (each named by its number); nothing was
    written."""


# -- export ------------------------------------------------------------------------------------
def record_type(item: MemoryItem, tier: str | None) -> str:
    """The ``type`` of a record line."""
    if item.kind == "chat_message":
        return "session_chunk" if tier is not None else "message"
    return item.kind


def export_lines(
    ctx: StoreContext, *, tenant_id: str | None = None, kinds: Sequence[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Every live record (then closed sessions and agent state, unless ``kinds`` narrows
    the export to records) as JSON-ready lines, in insertion order."""
    ctx.check_open()
    kind_filter = validation.choices(kinds, "kinds", KINDS)
    for rec in ctx.records.archive.iter_records(tenant_id=tenant_id, kinds=kind_filter):
        item = rec.row.item
        line: dict[str, Any] = {"type": record_type(item, rec.row.tier), **item.to_dict()}
        line["partition"] = rec.row.partition
        line["tier"] = rec.row.tier
        line["topic_key"] = rec.topic_key
        line["dedup_key"] = rec.dedup_key
        if rec.payload is not None and rec.payload != item.content:
            line["full_content"] = rec.payload
        yield line
    if kind_filter is not None:
        return
    for tenant, partition, info in ctx.records.sessions.all(tenant_id):
        yield {
            "type": "session",
            "tenant_id": tenant,
            "partition": partition,
            **{
                f.name: _jsonable(getattr(info, f.name))
                for f in fields(SessionInfo)
                if f.name != "last_seq"
            },
        }
    for tenant, agent, key, value, at, user, about in ctx.records.agent_state.all(tenant_id):
        line = {
            "type": "agent_state",
            "tenant_id": tenant,
            "agent_id": agent,
            "key": key,
            "value": value,
            "updated_at": at.isoformat(),
        }
        # whom the entry is about: erasing them must still reach the restored copy
        if user is not None:
            line["user_id"] = user
        if about is not None:
            line["about_agent_id"] = about
        yield line


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    return value


# -- parsing ------------------------------------------------------------------------------------
@dataclass
class Op:
    """One validated line: a restore (``record``, ``session``, ``agent_state``) or a write."""

    type: str
    line: int
    identity: Identity
    args: dict[str, Any]
    superseded: bool = False

    @property
    def restored_tenant(self) -> str | None:
        """The tenant a restore line puts its row in (the exported one, kept as it was);
        None for a write, which takes the identity of the import."""
        if self.type == "record":
            return str(self.args["record"].row.item.tenant_id)
        if self.type in ("session", "agent_state"):
            return str(self.args["tenant_id"])
        return None


@dataclass
class ImportPlan:
    """A validated import: what to apply, in order, and what was left out."""

    ops: list[Op]
    lines: int
    superseded_skipped: int = 0


def parse_lines(lines: Iterable[str], base: Identity, *, first_line: int = 1) -> ImportPlan:
    """Validate every line (JSON text) and plan the import; ``first_line`` is the number of
    the first (a part of a file keeps the file's numbers, which messages are keyed by).

    Raises:
        ImportFileError: naming every bad line (up to :data:`MAX_REPORTED_ERRORS`) by number.
    """
    ops: list[Op] = []
    errors: list[str] = []
    bad = 0
    count = 0
    for n, raw in enumerate(lines, first_line):
        if not raw.strip():
            continue
        count += 1
        try:
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise _LineError(f"not valid JSON: {exc.msg} (column {exc.colno})") from exc
            try:
                ops.append(_parse(obj, n, base))
            except ValidationError as exc:
                raise _LineError(str(exc)) from exc
        except _LineError as exc:
            bad += 1
            if len(errors) < MAX_REPORTED_ERRORS:
                errors.append(f"line {n}: {exc}")
    if bad:
        more = f"\n... and {bad - len(errors)} more bad line(s)" if bad > len(errors) else ""
        raise ImportFileError(
            "lines", f"{bad} bad line(s); nothing was imported:\n" + "\n".join(errors) + more
        )
    _key_messages(ops)
    kept = _drop_stale_history(ops)
    return ImportPlan(kept, count, len(ops) - len(kept))


def _key_messages(ops: list[Op]) -> None:
    """Give each message line a dedup key, so importing a file again (after an interrupted
    run, say) stores none of its messages twice: the line's identity, role, text, time,
    metadata and number in the file (a conversation may say "ok" twice; a file imported in
    parts, as over HTTP, keeps its numbers)."""
    for op in ops:
        if op.type != "message":
            continue
        i, a = op.identity, op.args
        when = a["event_time"].isoformat() if a["event_time"] is not None else ""
        a["dedup_key"] = sha(
            "import-message",
            i.tenant_id,
            scopes.home_partition(i, "session"),
            i.session_id,
            a["role"],
            a["content"],
            when,
            json.dumps(a["metadata"], sort_keys=True, ensure_ascii=False),
            str(op.line),
        )


def tenant_of(op: Op) -> str:
    """The tenant a planned line writes to."""
    if op.type == "record":
        return str(op.args["record"].row.item.tenant_id)
    if op.type in ("session", "agent_state"):
        return str(op.args["tenant_id"])
    return op.identity.tenant_id


class _LineError(Exception):
    pass


def _parse(obj: Any, line: int, base: Identity) -> Op:
    if not isinstance(obj, dict):
        raise _LineError(f"must be a JSON object, got {type(obj).__name__}")
    typ = obj.get("type")
    if typ is None:
        if "id" in obj and "kind" in obj:
            typ = "record"
        elif "role" in obj and "content" in obj:
            typ = "message"
        else:
            raise _LineError(f"needs a 'type' (one of {', '.join(WRITE_TYPES)})")
    elif typ not in LINE_TYPES:
        raise _LineError(f"type: must be one of {', '.join(LINE_TYPES)}; got {typ!r}")
    if typ == "session":
        return Op("session", line, base, _session(obj))
    if typ == "agent_state":
        return Op("agent_state", line, base, _agent_state(obj))
    if "id" in obj:
        return Op("record", line, base, {"record": _record(obj)})
    if typ not in WRITE_TYPES:
        raise _LineError(f"a {typ} line is an exported record: it needs its 'id'")
    unknown = sorted(set(obj) - _WRITE_KEYS[typ] - set(_IDENTITY_KEYS) - {"type"})
    if unknown:
        raise _LineError(f"unknown keys {unknown} for type {typ!r}")
    return _write(typ, obj, line, _line_identity(obj, base))


def _line_identity(obj: Mapping[str, Any], base: Identity) -> Identity:
    values = {k: getattr(base, k) for k in _IDENTITY_KEYS}
    for key in _IDENTITY_KEYS:
        if key in obj:
            values[key] = obj[key]
    tenant = validation.identity(values["tenant_id"], "tenant_id", required=True)
    assert tenant is not None
    return Identity(
        tenant_id=tenant,
        user_id=validation.identity(values["user_id"], "user_id"),
        agent_id=validation.identity(values["agent_id"], "agent_id"),
        session_id=validation.identity(values["session_id"], "session_id"),
    )


def _write(typ: str, obj: Mapping[str, Any], line: int, identity: Identity) -> Op:
    metadata = validation.metadata(obj.get("metadata"))
    content = obj.get("content")
    if typ in ("message", "tool_output") and identity.session_id is None:
        raise _LineError(f"a {typ} needs a session: session_id on the line or --session")
    args: dict[str, Any]
    if typ == "message":
        args = {
            "role": validation.choice(obj.get("role"), "role", ROLES),
            "content": validation.text(content, "content"),
            "metadata": metadata,
            "event_time": validation.event_time(obj.get("event_time")),
        }
        return Op(typ, line, identity, args)
    if typ == "tool_output":
        args = {
            "tool_call_id": validation.identity(
                obj.get("tool_call_id"), "tool_call_id", required=True
            ),
            "content": validation.text(content, "content"),
            "tool_name": validation.identity(obj.get("tool_name"), "tool_name"),
            "metadata": metadata,
        }
        return Op(typ, line, identity, args)
    if typ == "document":
        text = content if content is not None else obj.get("text")
        args = {
            "text": validation.text(text, "content"),
            "source_ref": validation.identity(obj.get("source_ref"), "source_ref"),
            "metadata": metadata,
        }
        return Op(typ, line, identity, args)
    scope = obj.get("scope") or scopes.default_memory_scope(identity)
    if scope is None:
        raise _LineError(
            "a memory line with no user_id, agent_id or session_id would be seen by every "
            'user of the tenant: name its owner (on the line or with --user), or say "scope": '
            '"tenant" to mean that'
        )
    scope = validation.choice(scope, "scope", REMEMBER_SCOPES)
    needs = {"user": "user_id", "agent": "agent_id", "session": "session_id"}.get(scope)
    if needs is not None and getattr(identity, needs) is None:
        flag = "--" + needs.removesuffix("_id")
        raise _LineError(f"a {scope}-scope memory needs {needs} (on the line or {flag})")
    args = {
        "content": validation.text(content, "content", max_bytes=CHAT_COPY_MAX_BYTES),
        "memory_type": validation.choice(
            obj.get("memory_type") or "fact", "memory_type", MEMORY_TYPES
        ),
        "scope": scope,
        "importance": validation.unit_float(obj.get("importance"), "importance"),
        "topic_key": validation.identity(obj.get("topic_key"), "topic_key"),
        "metadata": metadata,
    }
    return Op(typ, line, identity, args, superseded=obj.get("superseded_by") is not None)


def _drop_stale_history(ops: list[Op]) -> list[Op]:
    """Leave out written memories marked superseded unless a later line with the same tenant,
    partition and topic key supersedes them again (a fact the judge retired, or one whose
    replacement is not in the file, must not come back as current)."""
    kept: list[Op] = []
    later: set[tuple[str, str, str]] = set()
    for op in reversed(ops):
        if op.type == "memory":
            topic = op.args["topic_key"]
            key = None
            if topic is not None:
                partition = scopes.home_partition(op.identity, op.args["scope"])
                key = (op.identity.tenant_id, partition, topic.strip().lower())
            if op.superseded and (key is None or key not in later):
                continue
            if key is not None:
                later.add(key)
        kept.append(op)
    kept.reverse()
    return kept


def _time(obj: Mapping[str, Any], name: str, *, required: bool = True) -> datetime | None:
    when = validation.event_time(obj.get(name), name)
    if when is None and required:
        raise ValidationError(name, "is required")
    return when


def _record(obj: Mapping[str, Any]) -> StoredRecord:
    """An exported record, checked: identity, vocabulary, and a partition that matches its
    owner (an import cannot put a row where its identity could not have written it)."""
    unknown = sorted(set(obj) - _ITEM_FIELDS - _RECORD_EXTRAS)
    if unknown:
        raise _LineError(f"unknown keys {unknown} for an exported record")
    identity = Identity(
        tenant_id=validation.identity(obj.get("tenant_id"), "tenant_id", required=True),  # type: ignore[arg-type]
        user_id=validation.identity(obj.get("user_id"), "user_id"),
        agent_id=validation.identity(obj.get("agent_id"), "agent_id"),
        session_id=validation.identity(obj.get("session_id"), "session_id"),
    )
    kind = validation.choice(obj.get("kind"), "kind", KINDS)
    scope = validation.choice(obj.get("scope"), "scope", SCOPES)
    tier = obj.get("tier")
    if (
        tier is None
        and isinstance(obj.get("metadata"), dict)
        and kind in ("chat_message", "summary")
    ):
        tier = _legacy_tier(obj["metadata"], kind)  # exports from before tiers were exported
    if tier is not None:
        validation.choice(tier, "tier", STORED_TIERS)
    partition = obj.get("partition") or _home(identity, scope, kind, tier)
    if partition not in _allowed_partitions(identity, scope, kind, tier):
        raise ValidationError(
            "partition", f"{partition!r} is not where a {scope}-scope {kind} of this identity lives"
        )
    role = obj.get("role")
    memory_type = obj.get("memory_type")
    item = MemoryItem(
        id=validation.identity(obj.get("id"), "id", required=True),  # type: ignore[arg-type]
        tenant_id=identity.tenant_id,
        user_id=identity.user_id,
        agent_id=identity.agent_id,
        session_id=identity.session_id,
        kind=kind,
        memory_type=None
        if memory_type is None
        else validation.choice(memory_type, "memory_type", MEMORY_TYPES),
        scope=scope,
        role=None if role is None else validation.choice(role, "role", ROLES),
        # a tool may have returned nothing (add_tool_output accepts it, so the export has it)
        content=validation.text(obj.get("content"), "content", allow_empty=kind == "tool_output"),
        content_hash=str(obj.get("content_hash") or ""),
        source_ref=validation.identity(obj.get("source_ref"), "source_ref"),
        metadata=validation.metadata(obj.get("metadata")),
        importance=validation.unit_float(obj.get("importance"), "importance"),
        event_time=_time(obj, "event_time"),  # type: ignore[arg-type]
        created_at=_time(obj, "created_at"),  # type: ignore[arg-type]
        updated_at=_time(obj, "updated_at"),  # type: ignore[arg-type]
        access_count=int(obj.get("access_count") or 0),
        last_accessed=_time(obj, "last_accessed", required=False),
        superseded_by=validation.identity(obj.get("superseded_by"), "superseded_by"),
    )
    full = obj.get("full_content")
    payload = None if full is None else validation.text(full, "full_content")
    if payload is None and item.kind == "tool_output" and item.source_ref:
        payload = item.content  # a tool output always has its payload
    return StoredRecord(
        Row(item, partition, tier),
        topic_key=validation.identity(obj.get("topic_key"), "topic_key"),
        dedup_key=validation.identity(obj.get("dedup_key"), "dedup_key"),
        payload=payload,
    )


def _legacy_tier(metadata: Mapping[str, Any], kind: str) -> str | None:
    label = metadata.get("tier")
    if label not in (TIER_MID, TIER_LONG):
        return None
    if kind == "summary":
        return TIER_MID if label == TIER_MID else TIER_LONG_SUMMARY
    return TIER_MID if label == TIER_MID else TIER_LONG_DETAIL


def _home(identity: Identity, scope: str, kind: str, tier: str | None) -> str:
    home = scopes.home_partition(identity, scope)
    if scope == "session" and kind == "chat_message" and tier is not None:
        return scopes.chunk_partition(home)
    return home


def _allowed_partitions(identity: Identity, scope: str, kind: str, tier: str | None) -> set[str]:
    if scope == "knowledge":
        return {scopes.KNOWLEDGE_PARTITION}
    try:
        return {_home(identity, scope, kind, tier)}
    except ValidationError:
        return set()


def _session(obj: Mapping[str, Any]) -> dict[str, Any]:
    tenant = validation.identity(obj.get("tenant_id"), "tenant_id", required=True)
    partition = validation.identity(obj.get("partition"), "partition", required=True)
    ids = obj.get("summary_ids") or []
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValidationError("summary_ids", "must be a list of ids")
    info = SessionInfo(
        session_id=validation.identity(obj.get("session_id"), "session_id", required=True),  # type: ignore[arg-type]
        tier=validation.choice(obj.get("tier"), "tier", (TIER_MID, TIER_LONG)),
        close_order=_int(obj, "close_order"),
        closed_at=_time(obj, "closed_at"),  # type: ignore[arg-type]
        promoted_at=_time(obj, "promoted_at", required=False),
        message_count=_int(obj, "message_count"),
        chunk_count=_int(obj, "chunk_count"),
        summary_status=str(obj.get("summary_status") or "ok"),
        summarizer=obj.get("summarizer"),
        summary_ids=tuple(ids),
        user_id=validation.identity(obj.get("user_id"), "user_id"),
        agent_id=validation.identity(obj.get("agent_id"), "agent_id"),
    )
    return {"tenant_id": tenant, "partition": partition, "info": info}


def _agent_state(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "tenant_id": validation.identity(obj.get("tenant_id"), "tenant_id", required=True),
        "agent_id": validation.identity(obj.get("agent_id"), "agent_id", required=True),
        "key": validation.identity(obj.get("key"), "key", required=True),
        "value": validation.metadata({"value": obj.get("value")}, "value")["value"],
        "updated_at": _time(obj, "updated_at"),
        "user_id": validation.identity(obj.get("user_id"), "user_id"),
        "about_agent_id": validation.identity(obj.get("about_agent_id"), "about_agent_id"),
    }


def _int(obj: Mapping[str, Any], name: str) -> int:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(name, f"must be a non-negative integer; got {value!r}")
    return value


# -- applying ---------------------------------------------------------------------------------
def apply_plan(
    ctx: StoreContext,
    plan: ImportPlan,
    *,
    batch_size: int = 500,
    progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> ImportCounts:
    """Apply a validated plan in order, in batches; ``progress(done, total)`` after each.

    Every kind of line is idempotent (records by id, sessions and agent state by key and
    time, messages by their import key, tool outputs by call id, documents by revision,
    memories by text), so applying a plan again, whole or after an interruption, stores
    nothing twice. ``should_stop()`` is asked between batches: when it says so, the import
    stops there with ``interrupted`` set and the counts of what was stored.

    Raises:
        ValidationError: ``batch_size`` is not a positive integer.
        StorageError: a batch could not be stored (a full disk, say); the message says how
            many lines were stored before it (they are kept) and that the same import, run
            again, stores the rest.
    """
    validation.positive_int(batch_size, "batch_size", allow_none=False)
    counts = ImportCounts(
        lines=plan.lines, planned=len(plan.ops), superseded_skipped=plan.superseded_skipped
    )
    for batch in _batches(plan.ops, batch_size):
        if should_stop is not None and should_stop():
            counts.interrupted = True
            break
        try:
            _apply(ctx, batch, counts)
        except StorageError as exc:
            raise type(exc)(
                f"{exc}; import stopped at line {batch[0].line}, {counts.applied} of "
                f"{counts.planned} line(s) stored before it are kept: run the same import "
                "again once that is fixed (nothing already stored is stored twice)",
                **exc.context,
            ) from exc
        counts.applied += len(batch)
        if progress is not None:
            progress(counts.applied, counts.planned)
    if counts.restored:
        ctx.indexer.notify()
    return counts


def _batches(ops: Sequence[Op], size: int) -> Iterator[list[Op]]:
    """Consecutive ops of one type and identity, at most ``size`` at a time."""
    batch: list[Op] = []
    for op in ops:
        batchable = op.type in ("message", "memory", "record")
        if batch and (
            not batchable
            or op.type != batch[0].type
            or op.identity != batch[0].identity
            or len(batch) >= size
        ):
            yield batch
            batch = []
        batch.append(op)
        if not batchable:
            yield batch
            batch = []
    if batch:
        yield batch


def _apply(ctx: StoreContext, batch: list[Op], counts: ImportCounts) -> None:
    first = batch[0]
    i = first.identity
    a = first.args
    if first.type == "record":
        inserted = ctx.records.archive.restore([op.args["record"] for op in batch])
        counts.restored += sum(inserted)
        counts.already_present += len(inserted) - sum(inserted)
    elif first.type == "session":
        if ctx.records.sessions.restore(a["tenant_id"], a["partition"], a["info"]):
            counts.sessions += 1
    elif first.type == "agent_state":
        counts.agent_state += ctx.records.agent_state.set(
            a["tenant_id"],
            a["agent_id"],
            a["key"],
            a["value"],
            a["updated_at"],
            user_id=a["user_id"],
            about_agent_id=a["about_agent_id"],
            only_if_newer=True,
        )
    elif first.type == "message":
        records = [
            replace(
                message_record(i, a["role"], a["content"], a["metadata"], a["event_time"]),
                dedup_key=a["dedup_key"],
            )
            for a in (op.args for op in batch)
        ]
        stored = commit(ctx, records, "import")
        counts.messages += len(batch)
        counts.messages_new += sum(1 for _, new in stored if new)
    elif first.type == "memory":
        fresh = _not_stored_before(ctx, i, [op.args for op in batch])
        results = memories.remember_many(ctx, i, fresh)
        counts.memories += len(batch)
        counts.memories_new += sum(1 for r in results if r.was_new)
    elif first.type == "tool_output":
        conversation.add_tool_output(
            ctx,
            i,
            a["tool_call_id"],
            a["content"],
            tool_name=a["tool_name"],
            metadata=a["metadata"],
        )
        counts.tool_outputs += 1
    else:  # document
        items = documents.add_document(
            ctx, i, a["text"], source_ref=a["source_ref"], metadata=a["metadata"]
        )
        counts.documents += 1
        counts.document_chunks += len(items)


def _not_stored_before(
    ctx: StoreContext, identity: Identity, batch: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The memories of ``batch`` whose text is not already stored and superseded (a later
    line of the same file superseded it the first time; remembering it again would make it
    current once more and store it twice)."""
    records = [
        memory_record(
            identity,
            a["content"],
            a["memory_type"],
            a["scope"],
            a["importance"],
            a["topic_key"],
            a["metadata"],
        )
        for a in batch
    ]
    owners: dict[tuple[str, str | None], list[str]] = {}
    for rec in records:
        owners.setdefault((rec.partition, rec.session_id), []).append(rec.content_hash)
    stored = {
        (partition, session, *found)
        for (partition, session), hashes in owners.items()
        for found in ctx.records.supersession.superseded_hashes(
            identity.tenant_id, partition, session, hashes
        )
    }
    return [
        a
        for a, rec in zip(batch, records, strict=True)
        if (rec.partition, rec.session_id, rec.memory_type, rec.content_hash) not in stored
    ]
