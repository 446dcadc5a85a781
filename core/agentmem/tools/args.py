"""The argument models of the memory tools; their JSON schemas are what a model sees.

Every model forbids unknown fields, and none has an identity field (tenant, user, agent,
session): identity comes only from the bound memory. The field descriptions are written for
the calling model; the limits are the core's own (:data:`agentmem.config.MAX_TOP_K`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..config import MAX_TOP_K
from ..models import Kind, MemoryType, RecallScope

#: At most this many entries or events per call of a listing tool (list_knowledge,
#: session_detail); a model pages with ``offset`` beyond it.
MAX_LIST_ITEMS = 100


class ToolArgs(BaseModel):
    """Base of every argument model: unknown fields are an error, never ignored."""

    model_config = ConfigDict(extra="forbid")


class RecallArgs(ToolArgs):
    """Arguments of ``recall``."""

    query: str = Field(
        min_length=1,
        description="What to look for, in natural language; keywords and exact tokens "
        "(ids, names, error codes) match too, so include distinctive terms when you have them.",
    )
    top_k: int = Field(
        5, ge=1, le=MAX_TOP_K, description=f"How many items to return (1-{MAX_TOP_K})."
    )
    source_kinds: list[Kind] | None = Field(
        None,
        description="Only these kinds: chat_message (conversation turns), tool_output "
        "(results of earlier tool calls), document_chunk (uploaded documents), memory (saved "
        "facts and knowledge), summary (session summaries). Omit to search all kinds.",
    )
    scope: RecallScope = Field(
        "any",
        description="session: this conversation; history: earlier conversations of this user "
        "with this agent; user: facts saved about this user; agent: facts this agent saved "
        "across users; tenant: shared documents; knowledge: the shared knowledge base; any "
        "(default): all of them, fused.",
    )
    enable_rerank: bool = Field(
        True, description="Re-order with the reranker when one is configured. Leave on."
    )


class RememberFactArgs(ToolArgs):
    """Arguments of ``remember_fact``."""

    content: str = Field(
        min_length=1,
        description="The fact, as one self-contained sentence (e.g. 'The user prefers "
        "email over phone calls').",
    )
    scope: Literal["user", "agent"] | None = Field(
        None,
        description="Who will see it. user (the default when a user is known): only this "
        "user, in all of their conversations; agent: every user this agent serves, so never "
        "personal details.",
    )
    metadata: dict[str, Any] | None = Field(
        None, description="Optional small JSON object stored with the fact (e.g. a source)."
    )


class ReadToolOutputArgs(ToolArgs):
    """Arguments of ``read_tool_output``."""

    key: str = Field(
        min_length=1,
        description="The key of the elided output: the source_ref of a recalled tool output "
        "(tout_...) or long message (msg_...), as named in its preview.",
    )


class StoreMemoryArgs(ToolArgs):
    """Arguments of ``store_memory``."""

    content: str = Field(
        min_length=1, description="The memory, as self-contained text (or compact structured text)."
    )
    memory_type: MemoryType = Field(
        "fact", description="fact, preference, decision, note, event, instruction or task."
    )
    metadata: dict[str, Any] | None = Field(
        None, description="Optional small JSON object of tags stored with the memory."
    )
    importance: float | None = Field(
        None, ge=0.0, le=1.0, description="How important this memory is, 0.0 to 1.0."
    )
    scope: Literal["agent", "user", "session"] | None = Field(
        None,
        description="Who will see it. user (the default when a user is known): only this "
        "user, in all of their conversations; agent: every user this agent serves, so never "
        "personal details; session: only this conversation.",
    )


class SearchMemoryArgs(ToolArgs):
    """Arguments of ``search_memory``."""

    query: str = Field(min_length=1, description="What to look for, in natural language.")
    top_k: int = Field(
        10, ge=1, le=MAX_TOP_K, description=f"How many memories to return (1-{MAX_TOP_K})."
    )
    memory_type: MemoryType | None = Field(None, description="Only memories of this type.")
    min_importance: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Only memories stored with at least this importance (0.0-1.0); memories "
        f"stored without an importance are then left out. The {MAX_TOP_K} best matches are "
        "searched for them.",
    )


class GetAgentStateArgs(ToolArgs):
    """Arguments of ``get_agent_state``."""

    key: str = Field(min_length=1, description="The state key, e.g. 'current_task'.")


class SetAgentStateArgs(ToolArgs):
    """Arguments of ``set_agent_state``."""

    key: str = Field(min_length=1, description="The state key, e.g. 'current_task'.")
    value: Any = Field(
        description="The new value: any JSON (string, number, boolean, list, object or null)."
    )


class DeleteMemoryArgs(ToolArgs):
    """Arguments of ``delete_memory``."""

    memory_id: str = Field(
        min_length=1,
        description="The id of the memory to delete (an id from recall or a memory_id from "
        "search_memory or store_memory).",
    )


class UpsertKnowledgeArgs(ToolArgs):
    """Arguments of ``upsert_knowledge``."""

    content: str = Field(min_length=1, description="The knowledge, as self-contained text.")
    key: str | None = Field(
        None,
        min_length=1,
        description="Optional stable key (e.g. 'refund-sla'): a later upsert with the same "
        "key replaces this entry. Omit for an entry without a key.",
    )
    memory_type: MemoryType = Field(
        "note", description="fact, preference, decision, note (default), event, instruction, task."
    )
    importance: float | None = Field(
        None, ge=0.0, le=1.0, description="How important this entry is, 0.0 to 1.0."
    )
    metadata: dict[str, Any] | None = Field(
        None, description="Optional small JSON object of tags stored with the entry."
    )


class GetKnowledgeArgs(ToolArgs):
    """Arguments of ``get_knowledge``."""

    key: str = Field(min_length=1, description="The entry's key, e.g. 'refund-sla'.")
    owner_agent: str | None = Field(
        None,
        min_length=1,
        description="The agent whose entry to read (any agent of this tenant); omit for this "
        "agent's own entry.",
    )


class ListKnowledgeArgs(ToolArgs):
    """Arguments of ``list_knowledge``."""

    owner_agent: str | None = Field(
        None, min_length=1, description="Only this agent's entries (any agent of this tenant)."
    )
    all_agents: bool = Field(
        False, description="Entries of every agent of this tenant (default: this agent's)."
    )
    offset: int = Field(0, ge=0, description="Skip this many entries (oldest first).")
    limit: int = Field(
        20, ge=1, le=MAX_LIST_ITEMS, description=f"At most this many entries (1-{MAX_LIST_ITEMS})."
    )


class DeleteKnowledgeArgs(ToolArgs):
    """Arguments of ``delete_knowledge``."""

    key_or_id: str = Field(
        min_length=1, description="The key of one of this agent's entries, or the entry's id."
    )


class SessionDetailArgs(ToolArgs):
    """Arguments of ``session_detail``."""

    session_ref: str = Field(
        min_length=1,
        description="The id of a session of this conversation: the session attribute of a "
        "recalled memory, or a session a summary refers to.",
    )
    offset: int = Field(0, ge=0, description="Skip this many events (oldest first).")
    limit: int = Field(
        50, ge=1, le=MAX_LIST_ITEMS, description=f"At most this many events (1-{MAX_LIST_ITEMS})."
    )


class AnswerArgs(ToolArgs):
    """Arguments of ``answer``."""

    question: str = Field(min_length=1, description="The question to answer from memory.")
    top_k: int = Field(
        5,
        ge=1,
        le=MAX_TOP_K,
        description=f"How many recalled memories the answer may draw on (1-{MAX_TOP_K}).",
    )


class CompactArgs(ToolArgs):
    """Arguments of ``compact``."""

    keep: int | None = Field(
        None,
        ge=0,
        description="How many of the latest messages stay in the window (default: the "
        "configured tail, 4). The latest user message always stays.",
    )


__all__ = [
    "MAX_LIST_ITEMS",
    "AnswerArgs",
    "CompactArgs",
    "DeleteKnowledgeArgs",
    "DeleteMemoryArgs",
    "GetAgentStateArgs",
    "GetKnowledgeArgs",
    "ListKnowledgeArgs",
    "ReadToolOutputArgs",
    "RecallArgs",
    "RememberFactArgs",
    "SearchMemoryArgs",
    "SessionDetailArgs",
    "SetAgentStateArgs",
    "StoreMemoryArgs",
    "ToolArgs",
    "UpsertKnowledgeArgs",
]
