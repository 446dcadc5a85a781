"""A session's transcript: chat messages and tool outputs in, the transcript back out.

Messages and tool outputs are ``session`` rows of the conversation partition
(:func:`~agentmem.scopes.home_partition`). An oversized message keeps a capped recallable copy
and its full text as a payload; a tool output is always kept whole as a payload, and indexed
as an elided preview when long. ``read_tool_output`` returns a payload to an identity that
may see its row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .. import scopes as scope_rules
from .. import validation
from ..chunking import elide
from ..config import TOOL_OUTPUT_PREVIEW_CHARS
from ..context import StoreContext
from ..errors import NotFoundError, ValidationError
from ..models import Identity, MemoryItem
from ..storage.rows import NewRecord
from .commit import commit, retire
from .records import message_record, new_record, sha

_MESSAGE_KEYS = frozenset({"role", "content", "metadata", "event_time"})


def items(ctx: StoreContext, tenant_id: str, ids: list[str]) -> list[MemoryItem]:
    """The live rows among ``ids``, in that order, as :class:`MemoryItem`."""
    return [r.item for r in ctx.records.memories.items(tenant_id, ids)]


def add_message(
    ctx: StoreContext,
    identity: Identity,
    role: str,
    content: str,
    *,
    metadata: Mapping[str, Any] | None = None,
    event_time: datetime | str | None = None,
) -> MemoryItem:
    """Store one chat message of the bound session (see ``BoundMemory.add_message``)."""
    rec = message_record(identity, role, content, metadata, event_time)
    ((id_, _),) = commit(ctx, [rec], "add_message")
    return items(ctx, identity.tenant_id, [id_])[0]


def add_messages(
    ctx: StoreContext, identity: Identity, messages: Iterable[Mapping[str, Any]]
) -> list[MemoryItem]:
    """Store many messages; every dict is validated before anything is written."""
    if isinstance(messages, str | bytes | Mapping):
        raise ValidationError("messages", "must be an iterable of dicts")
    records: list[NewRecord] = []
    for n, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            raise ValidationError(f"messages[{n}]", f"must be a dict, got {type(msg).__name__}")
        unknown = set(msg) - _MESSAGE_KEYS
        if unknown:
            raise ValidationError(f"messages[{n}]", f"unknown keys {sorted(unknown)}")
        if "role" not in msg or "content" not in msg:
            raise ValidationError(f"messages[{n}]", "needs 'role' and 'content'")
        try:
            records.append(
                message_record(
                    identity,
                    msg["role"],
                    msg["content"],
                    msg.get("metadata"),
                    msg.get("event_time"),
                )
            )
        except ValidationError as exc:
            raise exc.nested(f"messages[{n}]") from exc
    ids = [i for i, _ in commit(ctx, records, "add_messages")]
    return items(ctx, identity.tenant_id, ids)


def add_tool_output(
    ctx: StoreContext,
    identity: Identity,
    tool_call_id: str,
    content: str,
    *,
    tool_name: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> MemoryItem:
    """Store a tool result of the bound session (see ``BoundMemory.add_tool_output``)."""
    scope_rules.require(identity, "session")
    call_id = validation.identity(tool_call_id, "tool_call_id", required=True)
    assert call_id is not None
    text = validation.text(content, "content", allow_empty=True)  # a tool may return nothing
    name = validation.identity(tool_name, "tool_name")
    meta = validation.metadata(metadata)
    meta.setdefault("tool_call_id", call_id)
    if name is not None:
        meta.setdefault("tool_name", name)
    # the conversation partition keeps two users (or agents) sharing a session id apart
    partition = scope_rules.home_partition(identity, "session")
    key = "tout_" + sha(identity.tenant_id, partition, identity.session_id, call_id)[:24]
    rec = new_record(
        identity,
        kind="tool_output",
        scope="session",
        role="tool",
        content=elide(text, key, TOOL_OUTPUT_PREVIEW_CHARS),
        full_text=text,
        source_ref=key,
        metadata=meta,
        dedup_key=key,
        payload_key=key,
        vectorize=bool(text),
    )
    ((id_, _),) = commit(ctx, [rec], "add_tool_output")
    return items(ctx, identity.tenant_id, [id_])[0]


def read_tool_output(ctx: StoreContext, identity: Identity, key: str) -> str:
    """The full payload stored under ``key``, if its row is visible to ``identity``."""
    k = validation.identity(key, "key", required=True)
    assert k is not None
    ctx.check_open()
    found = ctx.records.memories.payload(identity.tenant_id, k)
    if found is not None:
        memory_id, content = found
        if scope_rules.readable(identity, ctx.records.memories.get(memory_id)):
            return content
    raise NotFoundError(f"no tool output with key {k!r} is visible here", key=k)


def messages(
    ctx: StoreContext, identity: Identity, *, limit: int | None = None
) -> list[MemoryItem]:
    """The bound session's messages and tool outputs, oldest first (the last ``limit``)."""
    scope_rules.require(identity, "session")
    n = validation.positive_int(limit, "limit")
    ctx.check_open()
    assert identity.session_id is not None
    partition = scope_rules.home_partition(identity, "session")
    rows = ctx.records.conversations.session_items(
        identity.tenant_id, partition, identity.session_id, limit=n
    )
    return [row.item for _, row in rows]


def clear_session(ctx: StoreContext, identity: Identity) -> int:
    """Soft-delete the bound session's messages and tool outputs; returns how many."""
    return retire(ctx, identity.tenant_id, [item.id for item in messages(ctx, identity)])
