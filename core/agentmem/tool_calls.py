"""Tool calls of an assistant message: how they are stored, and how a prompt carries them.

An assistant turn that calls tools keeps its calls in its metadata under ``"tool_calls"``:
a list of ``{"id": str | None, "name": str, "arguments": dict | str}`` (``arguments``: the
JSON object the model passed, or its raw text when that is not a JSON object). A call may
also be given as a framework gives it, and is stored as given: LangChain's ``{"name",
"args", "id"}``, OpenAI's ``{"id", "type": "function", "function": {"name", "arguments"}}``
(arguments as JSON text) or a LlamaIndex ``ToolCallBlock`` dumped (``tool_call_id``,
``tool_name``, ``tool_kwargs``). Each tool result names its call with
``metadata["tool_call_id"]`` (``add_tool_output`` sets it).

:meth:`agentmem.tiers.working.WorkingMemory.context_messages` emits the calls in the OpenAI
chat format (:func:`openai_tool_calls`) and keeps every tool result with its call; the
LangChain and LlamaIndex adapters write the first form from their message types and read
any of them back.

Example:
    >>> m.add_message("assistant", "", metadata={"tool_calls": [  # doctest: +SKIP
    ...     {"id": "call_1", "name": "orders_api", "arguments": {"order": 4711}}]})
    >>> m.add_tool_output("call_1", '{"status": "delivered"}', tool_name="orders_api")  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ValidationError

#: The metadata key of an assistant message's tool calls.
TOOL_CALLS_KEY = "tool_calls"
#: The metadata key naming the call a tool result answers.
TOOL_CALL_ID_KEY = "tool_call_id"
#: Where the adapters kept an assistant message's tool calls before :data:`TOOL_CALLS_KEY`
#: (LangChain's and LlamaIndex's forms): rows stored then are still read.
_FORMER_KEYS = ("lc_tool_calls", "llama_index_tool_calls")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a tool by an assistant message.

    Attributes:
        id: The call's id (a tool result names it), or None when the model gave none.
        name: The tool's name.
        arguments: The arguments, a JSON object; or their raw text when it is not one.
    """

    id: str | None
    name: str
    arguments: dict[str, Any] | str

    def to_dict(self) -> dict[str, Any]:
        """The stored form (``metadata["tool_calls"]`` holds a list of these)."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


def _fields(entry: Mapping[str, Any]) -> tuple[str, Any, Any, Any]:
    """(shape, id, name, arguments) of a stored call, whichever form it has."""
    function = entry.get("function")
    if isinstance(function, Mapping):
        return "function.", entry.get("id"), function.get("name"), function.get("arguments", "")
    if "tool_name" in entry:
        return "", entry.get("tool_call_id"), entry["tool_name"], entry.get("tool_kwargs", {})
    arguments = entry["args"] if "args" in entry else entry.get("arguments", {})
    return "", entry.get("id"), entry.get("name"), arguments


def _arguments(value: dict[str, Any] | str) -> dict[str, Any] | str:
    """Arguments given as JSON text of an object become that object; other text stays."""
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    return parsed if isinstance(parsed, dict) else value


def validate(value: Any, field: str = "metadata.tool_calls") -> None:
    """Raise ValidationError, naming what is off, unless ``value`` is a list of tool calls."""
    if not isinstance(value, list):
        raise ValidationError(field, f"must be a list of tool calls, got {type(value).__name__}")
    for n, entry in enumerate(value):
        where = f"{field}[{n}]"
        if not isinstance(entry, Mapping):
            raise ValidationError(where, "must be an object {id, name, arguments}")
        shape, id_, name, arguments = _fields(entry)
        if id_ is not None and (not isinstance(id_, str) or not id_):
            raise ValidationError(f"{where}.id", "must be a non-empty string or null")
        if not isinstance(name, str) or not name.strip():
            raise ValidationError(f"{where}.{shape}name", "must be a non-empty string")
        if not isinstance(arguments, dict | str):
            raise ValidationError(f"{where}.{shape}arguments", "must be a JSON object or its text")


def stored_tool_calls(metadata: Mapping[str, Any] | None) -> tuple[ToolCall, ...]:
    """The tool calls a stored message's metadata holds (none for a message without)."""
    meta = metadata or {}
    key = next((k for k in (TOOL_CALLS_KEY, *_FORMER_KEYS) if k in meta), None)
    entries = meta.get(key) if key is not None else None
    out = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping):
            continue
        _, id_, name, arguments = _fields(entry)
        if isinstance(name, str) and name:
            out.append(
                ToolCall(
                    id_ if isinstance(id_, str) and id_ else None,
                    name,
                    _arguments(arguments) if isinstance(arguments, dict | str) else {},
                )
            )
    return tuple(out)


def result_call_id(metadata: Mapping[str, Any] | None) -> str | None:
    """The id of the call a stored tool result answers, if it names one."""
    value = (metadata or {}).get(TOOL_CALL_ID_KEY)
    return value if isinstance(value, str) and value else None


def openai_tool_calls(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    """``calls`` in the OpenAI chat format: ``{"id", "type": "function", "function":
    {"name", "arguments"}}`` with the arguments as JSON text (LangChain's
    ``convert_to_messages`` reads this back into ``AIMessage.tool_calls``)."""
    return [
        {
            "id": c.id,
            "type": "function",
            "function": {
                "name": c.name,
                "arguments": c.arguments
                if isinstance(c.arguments, str)
                else json.dumps(c.arguments, ensure_ascii=False),
            },
        }
        for c in calls
    ]


__all__ = [
    "TOOL_CALLS_KEY",
    "TOOL_CALL_ID_KEY",
    "ToolCall",
    "openai_tool_calls",
    "result_call_id",
    "stored_tool_calls",
    "validate",
]
