"""LlamaIndex ``ChatMessage`` <-> agentmem message dicts and stored items.

agentmem stores four roles (user, assistant, system, tool); LlamaIndex has eight. The
original role is kept in the message metadata (``llama_index_role``) so a round trip through
the chat store gives back the same role. Only text blocks are stored; images, audio and
other blocks are not, except tool calls (``ToolCallBlock``, how an assistant turn calls tools),
kept in the core's own form (``metadata["tool_calls"]``, see :mod:`agentmem.tool_calls`) and
given back as blocks after the text. JSON-serialisable ``additional_kwargs`` (tool call ids,
tool calls in the older dict form) are kept under ``llama_index_additional_kwargs``; a tool
message's ``tool_call_id`` also goes where the core looks for it (``metadata["tool_call_id"]``),
so ``context_messages`` pairs the result with its call.

A message without text (an assistant turn that only calls tools) is stored with empty content
and its role and keyword arguments in the metadata: it stays in the history and out of
recall.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock

from agentmem.models import MemoryItem
from agentmem.tool_calls import TOOL_CALL_ID_KEY, TOOL_CALLS_KEY, ToolCall, stored_tool_calls

ROLE_MAP: dict[str, str] = {
    MessageRole.SYSTEM.value: "system",
    MessageRole.DEVELOPER.value: "system",
    MessageRole.USER.value: "user",
    MessageRole.ASSISTANT.value: "assistant",
    MessageRole.CHATBOT.value: "assistant",
    MessageRole.MODEL.value: "assistant",
    MessageRole.TOOL.value: "tool",
    MessageRole.FUNCTION.value: "tool",
}
ROLE_KEY = "llama_index_role"
KWARGS_KEY = "llama_index_additional_kwargs"
#: Tool calls of a message other than an assistant's (read back by ``stored_tool_calls``).
LLAMA_TOOL_CALLS_KEY = "llama_index_tool_calls"


def message_text(message: ChatMessage) -> str:
    """The text blocks of ``message`` joined by newlines (non-text blocks are skipped)."""
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock) and b.text)


def _json_kwargs(kwargs: Mapping[str, Any], skip: frozenset[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in skip or not isinstance(key, str):
            continue
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            continue
        out[key] = value
    return out


def to_agentmem(
    message: ChatMessage,
    *,
    keep_empty: bool,
    extra_metadata: Mapping[str, Any] | None = None,
    skip_kwargs: frozenset[str] = frozenset(),
) -> dict[str, Any] | None:
    """An ``add_messages`` dict for ``message``; None for an empty one unless ``keep_empty``."""
    text = message_text(message)
    metadata: dict[str, Any] = {ROLE_KEY: message.role.value, **(extra_metadata or {})}
    kwargs = _json_kwargs(message.additional_kwargs, skip_kwargs)
    if kwargs:
        metadata[KWARGS_KEY] = kwargs
    calls = [
        ToolCall(
            b.tool_call_id or None, b.tool_name, b.model_dump(mode="json")["tool_kwargs"]
        ).to_dict()
        for b in message.blocks
        if isinstance(b, ToolCallBlock)
    ]
    role = ROLE_MAP.get(message.role.value, "user")
    if calls:
        # the core's neutral form, which its prompts carry, is an assistant's only; another
        # role's calls are kept as LlamaIndex gave them, under this adapter's own key
        metadata[TOOL_CALLS_KEY if role == "assistant" else LLAMA_TOOL_CALLS_KEY] = calls
    call_id = message.additional_kwargs.get(TOOL_CALL_ID_KEY)
    if role == "tool" and isinstance(call_id, str) and call_id:
        metadata[TOOL_CALL_ID_KEY] = call_id  # where the core looks for the call answered
    if not text.strip() and not keep_empty and not calls:
        return None
    return {"role": role, "content": text, "metadata": metadata}


def from_item(item: MemoryItem, full_text: str | None = None) -> ChatMessage:
    """A ``ChatMessage`` for a stored message (``full_text`` replaces a capped copy)."""
    meta = item.metadata or {}
    role = meta.get(ROLE_KEY) or item.role or "user"
    try:
        role_value = MessageRole(role)
    except ValueError:
        role_value = MessageRole.USER
    text = full_text if full_text is not None else item.content
    kwargs = meta.get(KWARGS_KEY)
    extra = dict(kwargs) if isinstance(kwargs, Mapping) else {}
    call_id = meta.get(TOOL_CALL_ID_KEY)
    if role_value in (MessageRole.TOOL, MessageRole.FUNCTION) and isinstance(call_id, str):
        extra.setdefault(TOOL_CALL_ID_KEY, call_id)  # where LlamaIndex's LLMs look for it
    calls = stored_tool_calls(meta)
    if not calls:
        return ChatMessage(role=role_value, content=text, additional_kwargs=extra)
    blocks: list[Any] = [TextBlock(text=text)] if text else []
    blocks += [
        ToolCallBlock(tool_call_id=c.id, tool_name=c.name, tool_kwargs=c.arguments) for c in calls
    ]
    return ChatMessage(role=role_value, blocks=blocks, additional_kwargs=extra)
