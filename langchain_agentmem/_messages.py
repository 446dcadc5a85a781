"""Translation between LangChain messages and agentmem session rows.

Writing: ``HumanMessage``/``AIMessage``/``SystemMessage`` (and ``ChatMessage`` with one of
those roles) become chat messages; ``ToolMessage`` becomes a tool output keyed by its
``tool_call_id``. An AI message's ``tool_calls`` are kept in the core's own form
(``metadata["tool_calls"]``, see :mod:`agentmem.tool_calls`), which ``context_messages``
also gives back. What else the core's row cannot hold natively rides in the stored metadata
under ``lc_*`` keys: the message id and name, a tool message's status, the original content
when it is a list of content blocks, and the ``additional_kwargs``, ``response_metadata``
and tool ``artifact`` that are JSON (and at most 16 KiB each). A message without text (an AI
turn that only calls tools) is stored with empty content and its tool calls in the
metadata: it stays in the history and out of recall.

Reading reverses it, so ``history.messages`` reproduces what was added, with one exception:
the metadata holds at most 64 KiB, so a content block past :data:`BLOCK_MAX_BYTES` (an
image's base64 data, say) is kept as a stub naming its type and size, and content blocks that
still do not fit are not kept (the message comes back with its text as plain content).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from agentmem import BoundMemoryProtocol, MemoryItem, NotFoundError, ValidationError, validation
from agentmem.tool_calls import TOOL_CALLS_KEY, ToolCall, stored_tool_calls

_ROLE_ALIASES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}


@dataclass
class ChatRow:
    """A message to store with ``BoundMemory.add_messages``."""

    role: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, "metadata": self.metadata}


@dataclass
class ToolRow:
    """A tool result to store with ``BoundMemory.add_tool_output``."""

    tool_call_id: str
    content: str
    tool_name: str | None
    metadata: dict[str, Any] = field(default_factory=dict)


def _text(message: BaseMessage) -> str:
    """The text recall indexes: ``message.text``, but with a line between text blocks, which
    ``message.text`` joins with nothing ("Part one" + "Part two" would index "onePart")."""
    if isinstance(message.content, str):
        return message.content
    return "\n".join(
        block if isinstance(block, str) else block["text"]
        for block in message.content
        if isinstance(block, str)
        or (block.get("type") == "text" and isinstance(block.get("text"), str))
    )


#: A content block larger than this (encoded as JSON) is kept as a stub of its type and size.
BLOCK_MAX_BYTES = 16 * 1024
#: Content blocks larger than this in all are not kept (the metadata holds at most 64 KiB).
BLOCKS_MAX_BYTES = 48 * 1024


def _kept_blocks(content: Any) -> Any:
    """``content`` as the metadata keeps it (see the module docstring); None: not kept."""
    if isinstance(content, str):
        return content
    kept: list[Any] = []
    for block in content:
        size = len(json.dumps(block, ensure_ascii=False, default=str).encode())
        if size > BLOCK_MAX_BYTES and isinstance(block, dict) and block.get("type") != "text":
            block = {"type": block.get("type", "unknown"), "lc_omitted_bytes": size}
        kept.append(block)
    total = len(json.dumps(kept, ensure_ascii=False, default=str).encode())
    return kept if total <= BLOCKS_MAX_BYTES else None


#: The message fields kept beside the content (what a provider puts there: reasoning
#: signatures, token usage, a tool's artifact), each when JSON and at most this large.
EXTRA_FIELDS = ("additional_kwargs", "response_metadata", "artifact")
EXTRA_MAX_BYTES = 16 * 1024


def _extra(message: BaseMessage) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in EXTRA_FIELDS:
        value = getattr(message, name, None)
        if not value:
            continue
        try:
            encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            continue  # not JSON (a client object): not kept
        if len(encoded.encode()) <= EXTRA_MAX_BYTES:
            out[name] = value
    return out


def message_to_row(message: BaseMessage, position: int) -> ChatRow | ToolRow:
    """The row that stores ``message`` (``position`` names it in validation errors)."""
    if not isinstance(message, BaseMessage):
        raise ValidationError(
            f"messages[{position}]",
            f"must be a LangChain message (HumanMessage, AIMessage, ...); got "
            f"{type(message).__name__}",
        )
    meta: dict[str, Any] = {}
    if extra := _extra(message):
        meta["lc_extra"] = extra
    if message.id is not None:
        meta["lc_id"] = message.id
    if message.name is not None:
        meta["lc_name"] = message.name
    text = _text(message)
    if not isinstance(message.content, str) or not text.strip():
        kept = _kept_blocks(message.content)  # content blocks or no text, restored verbatim
        if kept is not None:
            meta["lc_content"] = kept
    if isinstance(message, ToolMessage):
        if message.status != "success":
            meta["lc_status"] = message.status
        return ToolRow(
            tool_call_id=message.tool_call_id,
            content=text,
            tool_name=message.name,
            metadata=meta,
        )
    if isinstance(message, HumanMessage):
        role = "user"
    elif isinstance(message, AIMessage):
        role = "assistant"
        if message.tool_calls:  # the core's neutral form, which its prompts carry
            meta[TOOL_CALLS_KEY] = [
                ToolCall(c.get("id") or None, c["name"], c["args"]).to_dict()
                for c in message.tool_calls
            ]
    elif isinstance(message, SystemMessage):
        role = "system"
    elif isinstance(message, ChatMessage) and message.role.lower() in _ROLE_ALIASES:
        role = _ROLE_ALIASES[message.role.lower()]
        meta["lc_role"] = message.role
    else:
        raise ValidationError(
            f"messages[{position}]",
            f"cannot store a {type(message).__name__} "
            f"(supported: HumanMessage, AIMessage, SystemMessage, ToolMessage)",
        )
    return ChatRow(role=role, content=text, metadata=meta)


def _full_content(memory: BoundMemoryProtocol, item: MemoryItem) -> str:
    """The whole stored text of ``item`` (its recallable copy may be capped or elided)."""
    ref = item.source_ref
    if ref is None:
        return item.content
    cut = item.kind == "chat_message" or f"read_tool_output(key={ref!r})" in item.content
    if not cut:
        return item.content
    try:
        return memory.read_tool_output(ref)
    except NotFoundError:
        return item.content


def item_to_message(memory: BoundMemoryProtocol, item: MemoryItem) -> BaseMessage:
    """The LangChain message for a stored session row."""
    meta = item.metadata
    content: Any = meta["lc_content"] if "lc_content" in meta else _full_content(memory, item)
    stored = meta.get("lc_extra")
    extra: dict[str, Any] = stored if isinstance(stored, dict) else {}
    common: dict[str, Any] = {
        "content": content,
        "id": meta.get("lc_id") or item.id,
        "additional_kwargs": extra.get("additional_kwargs", {}),
        "response_metadata": extra.get("response_metadata", {}),
    }
    name = meta.get("lc_name")
    if item.kind == "tool_output" or item.role == "tool":
        return ToolMessage(
            **common,
            tool_call_id=str(meta.get("tool_call_id") or item.source_ref or item.id),
            name=name if name is not None else meta.get("tool_name"),
            status=meta.get("lc_status", "success"),
            artifact=extra.get("artifact"),
        )
    if item.role == "assistant":
        calls = stored_tool_calls(meta)
        return AIMessage(
            **common,
            name=name,
            tool_calls=[
                {"name": c.name, "args": c.arguments, "id": c.id}
                for c in calls
                if isinstance(c.arguments, dict)
            ],
            # arguments that are not a JSON object (stored by another framework), as
            # LangChain keeps what it cannot parse
            invalid_tool_calls=[
                {"name": c.name, "args": c.arguments, "id": c.id, "error": None}
                for c in calls
                if isinstance(c.arguments, str)
            ],
        )
    if "lc_role" in meta:
        return ChatMessage(**common, role=meta["lc_role"], name=name)
    if item.role == "system":
        return SystemMessage(**common, name=name)
    return HumanMessage(**common, name=name)


def store_messages(memory: BoundMemoryProtocol, messages: Sequence[BaseMessage]) -> None:
    """Store ``messages`` in order: every run of chat messages in one ``add_messages`` call,
    every ``ToolMessage`` with ``add_tool_output`` (the core's bulk call has no tool form).

    All messages are translated and validated (with the core's own checks of content and
    metadata) before anything is written: a bad message in a batch writes none of it.
    """
    rows = [message_to_row(m, n) for n, m in enumerate(messages)]
    for n, row in enumerate(rows):
        validation.text(row.content, f"messages[{n}].content", allow_empty=True)
        validation.metadata(row.metadata, f"messages[{n}].metadata")
    run: list[dict[str, Any]] = []
    for row in rows:
        if isinstance(row, ChatRow):
            run.append(row.as_dict())
            continue
        if run:
            memory.add_messages(run)
            run = []
        _store_tool_result(memory, row)
    if run:
        memory.add_messages(run)


#: How many results may reuse one ``tool_call_id`` in a session.
MAX_REUSES = 100


def _store_tool_result(memory: BoundMemoryProtocol, row: ToolRow) -> None:
    """Store a tool result. The core keeps one result per ``tool_call_id`` and session (a
    retry stores nothing twice); a different result under an id used before in the session
    (two calls given the same id) is stored under ``id#2``, ``id#3``... and read back with
    its own id, so no result is dropped."""
    meta = {**row.metadata, "tool_call_id": row.tool_call_id}
    for n in range(1, MAX_REUSES + 1):
        key = row.tool_call_id if n == 1 else f"{row.tool_call_id}#{n}"
        item = memory.add_tool_output(key, row.content, tool_name=row.tool_name, metadata=meta)
        if _full_content(memory, item) == row.content:
            return
    raise ValidationError(
        "tool_call_id",
        f"{row.tool_call_id!r} holds {MAX_REUSES} different results in this session already",
    )


def load_messages(memory: BoundMemoryProtocol, window: int | None) -> list[BaseMessage]:
    """The session's messages, oldest first; with ``window``, the last ``window`` of them
    less any leading tool results whose calling AI message fell outside the window."""
    items = memory.messages(limit=window)
    messages = [item_to_message(memory, item) for item in items]
    if window is not None:
        while messages and isinstance(messages[0], ToolMessage):
            messages.pop(0)
    return messages
