"""Memory tools for LlamaIndex agents: ``recall``, ``remember_fact``, ``read_tool_output``.

Errors: a call the memory refuses (invalid arguments, an unknown key, a scope the bound
identity lacks, a storage failure: any ``AgentMemError``) does not raise. It returns a
``ToolOutput`` with ``is_error=True``, content ``"Error: <message>"`` written for the model,
and the exception on ``ToolOutput.exception``, so an agent loop can show the model what went
wrong and continue. The same holds for identity arguments (``tenant_id``, ``user_id``,
``agent_id``, ``session_id``) and any other unknown argument: identity comes only from the
bound memory. Anything else (a bug) propagates as usual.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Literal

from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field
from llama_index.core.tools import FunctionTool, ToolMetadata, ToolOutput

from agentmem import BoundMemoryProtocol
from agentmem.config import MAX_TOP_K
from agentmem.errors import AgentMemError, ValidationError
from agentmem.models import Kind, RecallResult, RecallScope

from ._context import NO_MEMORIES, render_hits

_IDENTITY_ARGUMENTS = frozenset({"tenant_id", "user_id", "agent_id", "session_id"})


class RecallInput(BaseModel):
    """Arguments of the ``recall`` tool."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        description="What to look for, in natural language; keywords and exact tokens "
        "(ids, error codes) match too."
    )
    top_k: int = Field(default=5, ge=1, le=MAX_TOP_K, description="How many items (1-20).")
    source_kinds: list[Kind] | None = Field(
        default=None,
        description="Only these kinds: chat_message, tool_output, document_chunk, memory "
        "(saved facts), summary. Omit to search all.",
    )
    scope: RecallScope = Field(
        default="any",
        description="session: this conversation; history: this user's earlier "
        "conversations; user: facts saved about this user; agent: facts saved by this agent; "
        "tenant: shared documents; any: all of them (default).",
    )
    enable_rerank: bool = Field(
        default=True, description="Re-order with the cross-encoder when one is configured."
    )


class RememberFactInput(BaseModel):
    """Arguments of the ``remember_fact`` tool."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(
        description="The fact, as one self-contained sentence (e.g. 'The user prefers "
        "metric units')."
    )
    scope: Literal["user", "agent"] | None = Field(
        default=None,
        description="user: about this user, recalled in all their conversations (default "
        "when a user is known); agent: knowledge of this agent shared across all its users, "
        "so never personal details.",
    )
    metadata: dict[str, Any] | None = Field(
        default=None, description="Optional JSON object stored with the fact."
    )


class ReadToolOutputInput(BaseModel):
    """Arguments of the ``read_tool_output`` tool."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(
        description="The source_ref of a recalled tool output (tout_...) or long message (msg_...)."
    )


RECALL_DESCRIPTION = (
    "Search long-term memory: earlier chat messages, tool outputs, documents and saved facts "
    "of this user and agent. Call it before answering whenever the conversation may have "
    "been trimmed or the user refers to something said or computed earlier; do not guess. "
    "Results are advisory reference data, best first; a long tool output appears as a "
    "preview whose source_ref (tout_...) can be passed to read_tool_output."
)
REMEMBER_FACT_DESCRIPTION = (
    "Save one durable fact (a stable preference, decision, name or constraint) so it can be "
    "recalled in later conversations. Phrase it to stand alone. Saving the same fact again "
    "is harmless. Returns {id, was_new}."
)
READ_TOOL_OUTPUT_DESCRIPTION = (
    "Read the full text of an elided tool output or long message, by the source_ref "
    "(tout_... or msg_...) that recall returned with its preview."
)


class _MemoryTool(FunctionTool):
    """A ``FunctionTool`` that returns agentmem errors as ``ToolOutput(is_error=True)``."""

    def _error(self, exc: AgentMemError, kwargs: dict[str, Any]) -> ToolOutput:
        return ToolOutput(
            tool_name=self.metadata.get_name(),
            content=f"Error: {exc}",
            raw_input={"args": (), "kwargs": kwargs},
            raw_output=None,
            is_error=True,
            exception=exc,
        )

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        try:
            return super().call(*args, **kwargs)
        except AgentMemError as exc:
            return self._error(exc, kwargs)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        try:
            return await super().acall(*args, **kwargs)
        except AgentMemError as exc:
            return self._error(exc, kwargs)


def _reject_unknown(tool: str, unexpected: dict[str, Any]) -> None:
    if not unexpected:
        return
    names = sorted(unexpected)
    if _IDENTITY_ARGUMENTS & set(names):
        raise ValidationError(
            names[0],
            f"{tool} does not take {', '.join(names)}: identity (tenant, user, agent, "
            "session) comes from the bound memory, not from tool arguments",
        )
    raise ValidationError(names[0], f"is not a parameter of {tool}")


def _format_recall(result: Any) -> str | None:
    if isinstance(result, RecallResult):
        return render_hits(result.items, degraded=result.degraded, empty=NO_MEMORIES)
    return None


def _format_json(result: Any) -> str | None:
    return json.dumps(result, ensure_ascii=False) if isinstance(result, dict) else None


def _tool(
    fn: Callable[..., Any],
    *,
    name: str,
    description: str,
    schema: type[BaseModel],
    formatter: Callable[[Any], str | None] | None = None,
) -> FunctionTool:
    async def async_fn(**kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, **kwargs)

    return _MemoryTool(
        fn=fn,
        async_fn=async_fn,
        metadata=ToolMetadata(name=name, description=description, fn_schema=schema),
        callback=formatter,
    )


def create_memory_tools(memory: BoundMemoryProtocol) -> list[FunctionTool]:
    """``recall``, ``remember_fact`` and ``read_tool_output`` for one bound memory.

    - ``recall`` returns the hits as a delimited advisory ``<recalled-memories>`` block;
      ``ToolOutput.raw_output`` is the :class:`~agentmem.models.RecallResult`.
    - ``remember_fact`` returns ``{"id", "was_new", "scope"}`` as JSON (``raw_output`` is the
      dict). Its scope defaults to ``user`` when the memory has a user, else ``agent``.
    - ``read_tool_output`` returns the full stored text.

    Errors come back as ``ToolOutput(is_error=True)`` (see the module docstring).

    Example:
        >>> tools = create_memory_tools(mem.bind("acme", user_id="u1", session_id="s1"))  # doctest: +SKIP
        >>> tools[0].call(query="order 4711").content  # doctest: +SKIP
    """
    if not isinstance(memory, BoundMemoryProtocol):
        raise ValidationError(
            "memory", f"must be a BoundMemory (AgentMemory.bind), got {type(memory).__name__}"
        )

    def recall(
        query: str,
        top_k: int = 5,
        source_kinds: list[str] | None = None,
        scope: str = "any",
        enable_rerank: bool = True,
        **unexpected: Any,
    ) -> RecallResult:
        _reject_unknown("recall", unexpected)
        return memory.recall(
            query, top_k=top_k, kinds=source_kinds, scope=scope, rerank=enable_rerank
        )

    def remember_fact(
        content: str,
        scope: str | None = None,
        metadata: dict[str, Any] | None = None,
        **unexpected: Any,
    ) -> dict[str, Any]:
        _reject_unknown("remember_fact", unexpected)
        if scope is None:
            scope = "user" if memory.user_id is not None else "agent"
        if scope not in ("user", "agent"):
            raise ValidationError("scope", f"must be 'user' or 'agent'; got {scope!r}")
        out = memory.remember(content, memory_type="fact", scope=scope, metadata=metadata)
        return {"id": out.id, "was_new": out.was_new, "scope": scope}

    def read_tool_output(key: str, **unexpected: Any) -> str:
        _reject_unknown("read_tool_output", unexpected)
        return memory.read_tool_output(key)

    return [
        _tool(
            recall,
            name="recall",
            description=RECALL_DESCRIPTION,
            schema=RecallInput,
            formatter=_format_recall,
        ),
        _tool(
            remember_fact,
            name="remember_fact",
            description=REMEMBER_FACT_DESCRIPTION,
            schema=RememberFactInput,
            formatter=_format_json,
        ),
        _tool(
            read_tool_output,
            name="read_tool_output",
            description=READ_TOOL_OUTPUT_DESCRIPTION,
            schema=ReadToolOutputInput,
        ),
    ]
