"""Building the rows a write inserts: identity, partition, dedup keys, payloads.

Every write path (messages, tool outputs, documents, memories, knowledge, session chunks and
summaries, extracted memories) builds its rows here, from an :class:`~agentmem.models.Identity`
and validated arguments, so the owner columns and partition of a row always agree with the
identity that wrote it (:mod:`agentmem.scopes`).
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Any

from .. import scopes as scope_rules
from .. import tool_calls, validation
from ..chunking import cap_utf8
from ..config import CHAT_COPY_MAX_BYTES
from ..errors import ValidationError
from ..models import MEMORY_TYPES, REMEMBER_SCOPES, ROLES, SUPERSEDING_TYPES, Identity
from ..storage.rows import NewRecord

#: Metadata key that keeps the topic of a memory whose type does not supersede (events and
#: tasks accumulate, but their topic is not lost).
TOPIC_METADATA = "topic_key"


def sha(*parts: str | None) -> str:
    """Hex sha256 of the parts joined by a unit separator (None counts as empty)."""
    joined = "\x1f".join("" if p is None else p for p in parts)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()


def new_record(
    identity: Identity,
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
    partition: str | None = None,
    tier: str | None = None,
    vectorize: bool = True,
    owner: tuple[str | None, str | None, str | None] | None = None,
) -> NewRecord:
    """A row owned by ``identity`` (or by ``owner`` = (session, user, agent) of the same
    tenant) in the home partition of ``scope`` unless ``partition`` is given."""
    session_id, user_id, agent_id = owner or (
        identity.session_id if scope == "session" else None,
        identity.user_id,
        identity.agent_id,
    )
    return NewRecord(
        id=id or uuid.uuid4().hex,
        tenant_id=identity.tenant_id,
        user_id=user_id,
        agent_id=agent_id,
        session_id=session_id,
        kind=kind,
        memory_type=memory_type,
        scope=scope,
        role=role,
        content=content,
        content_hash=sha(full_text if full_text is not None else content),
        source_ref=source_ref,
        metadata=metadata or {},
        importance=importance,
        event_time=event_time,
        partition=partition or scope_rules.home_partition(identity, scope),
        dedup_key=dedup_key,
        topic_key=topic_key,
        payload=full_text if payload_key is not None else None,
        payload_key=payload_key,
        vectorize=vectorize,
        tier=tier,
    )


def message_record(
    identity: Identity,
    role: Any,
    content: Any,
    metadata: Any = None,
    event_time: Any = None,
    *,
    id: str | None = None,
) -> NewRecord:
    """A chat message (``tool`` role: a tool output) of the bound session.

    The content may be empty when the metadata says what the message is (an assistant turn
    that only calls tools, its calls under ``metadata["tool_calls"]``: see
    :mod:`agentmem.tool_calls`): such a row is kept in the transcript but never recalled. The
    recallable copy is capped at :data:`~agentmem.config.CHAT_COPY_MAX_BYTES`; a longer
    message is kept whole as a payload under ``msg_<id>`` (its ``source_ref``).
    """
    scope_rules.require(identity, "session")
    role = validation.choice(role, "role", ROLES)
    text = validation.text(content, "content", allow_empty=True)
    meta = validation.metadata(metadata)
    if tool_calls.TOOL_CALLS_KEY in meta:  # the calls a prompt pairs its tool results with
        if role != "assistant":
            raise ValidationError("metadata.tool_calls", "only an assistant message calls tools")
        tool_calls.validate(meta[tool_calls.TOOL_CALLS_KEY])  # stored as given
    if not text and not meta:
        raise ValidationError(
            "content",
            "must not be empty or whitespace (a message without text must carry what it is "
            "in its metadata, e.g. the tool calls of an assistant turn)",
        )
    when = validation.event_time(event_time)
    id_ = id or uuid.uuid4().hex
    copy = cap_utf8(text, CHAT_COPY_MAX_BYTES)
    oversized = copy != text
    return new_record(
        identity,
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
        # a message without text (a tool-call turn) has no meaning to embed or match; it
        # stays in the transcript and out of recall
        vectorize=bool(text),
    )


def memory_record(
    identity: Identity,
    content: Any,
    memory_type: Any = "fact",
    scope: Any = "user",
    importance: Any = None,
    topic_key: Any = None,
    metadata: Any = None,
) -> NewRecord:
    """An explicit memory. Its dedup key is (tenant, partition, owner session, type, text),
    so remembering the same thing twice stores it once. A ``topic_key`` supersedes older
    memories with that key only for the types of :data:`~agentmem.models.SUPERSEDING_TYPES`;
    for events and tasks it is kept in ``metadata["topic_key"]``."""
    text = validation.text(content, "content", max_bytes=CHAT_COPY_MAX_BYTES)
    mtype = validation.choice(memory_type, "memory_type", MEMORY_TYPES)
    scope = validation.choice(scope, "scope", REMEMBER_SCOPES)
    scope_rules.require(identity, scope)
    imp = validation.unit_float(importance, "importance")
    topic = validation.identity(topic_key, "topic_key")
    meta = validation.metadata(metadata)
    key = topic.strip().lower() if topic else None
    if key is not None and mtype not in SUPERSEDING_TYPES:
        meta.setdefault(TOPIC_METADATA, key)
        key = None
    partition = scope_rules.home_partition(identity, scope)
    owner_session = identity.session_id if scope == "session" else None
    return new_record(
        identity,
        kind="memory",
        scope=scope,
        content=text,
        memory_type=mtype,
        metadata=meta,
        importance=imp,
        dedup_key=sha("mem", identity.tenant_id, partition, owner_session, mtype, text.strip()),
        topic_key=key,
    )
