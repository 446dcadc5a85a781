"""One handler per memory tool, shared by every surface (LangChain, LlamaIndex, MCP).

A handler takes the bound memory (anything of :class:`~agentmem.protocols.BoundMemoryProtocol`
shape), its validated arguments and the developer's :class:`ToolOptions`, calls public
methods of the memory, and returns a :class:`ToolResult`: the text the model sees (written
by :mod:`agentmem.tools.render`) and the same result as JSON-ready data. Failures are raised
as :class:`~agentmem.errors.AgentMemError` subclasses; the surfaces turn them into their
framework's error result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..chunking import elide
from ..config import MAX_TOP_K, TOOL_OUTPUT_PREVIEW_CHARS
from ..errors import NotFoundError, ScopeError, ValidationError
from ..models import MemoryItem, RecallHit
from ..protocols import BoundMemoryProtocol
from ..results import KnowledgeEntry
from ..scopes import MEMORY_DEFAULT_SCOPES, default_memory_scope
from . import args as tool_args
from .render import NO_MEMORIES, Entry, format_block, format_hits, json_text


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: text for the model, and the same result as a JSON object.

    Attributes:
        text: Exactly what the model is shown.
        data: The result as JSON-ready data (MCP structured content, LlamaIndex raw output).
        hits: The recall hits, for the tools that retrieve (LangChain turns them into
            ``Document`` artifacts); None for the others.
    """

    text: str
    data: dict[str, Any]
    hits: tuple[RecallHit, ...] | None = None


@dataclass(frozen=True)
class ToolOptions:
    """Settings of a tool chosen by the developer, never by the model.

    Attributes:
        min_score: ``recall``'s ``min_score``; None uses the store's default.
        token_budget: Max tokens of content ``recall`` returns; None uses the store's default.
    """

    min_score: float | None = None
    token_budget: int | None = None


DEFAULT_OPTIONS = ToolOptions()


def _iso(value: Any) -> str | None:
    return None if value is None else str(value.isoformat())


def hit_data(hit: RecallHit) -> dict[str, Any]:
    """A recall hit as JSON-ready data."""
    return {
        "id": hit.id,
        "source_kind": hit.kind,
        "source_ref": hit.source_ref,
        "content": hit.content,
        "event_time": hit.event_time.isoformat(),
        "score": hit.score,
        "memory_type": hit.memory_type,
        "scope": hit.scope,
        "session_id": hit.session_id,
        "metadata": hit.metadata,
    }


def _default_scope(memory: BoundMemoryProtocol, order: tuple[str, ...], tool: str) -> str:
    """The narrowest scope of ``order`` whose identity is bound (see
    :data:`agentmem.scopes.MEMORY_DEFAULT_SCOPES`): a model widens it only by naming one."""
    scope = default_memory_scope(memory.identity, order)
    if scope is not None:
        return scope
    needs = " or ".join(f"{s}_id" for s in order)
    flags = "/".join(f"--{s}" for s in order)
    raise ScopeError(
        "scope",
        f"{tool} needs a bound {needs} to store under (bind one with AgentMemory.bind(...), "
        f"start agentmem mcp with {flags}, or over HTTP add ?user_id=... to the MCP URL)",
    )


# -- recall and explicit memories -------------------------------------------------------------
#: How many of the session's latest rows are searched for the question being answered (a
#: turn with many tool calls puts rows after it).
QUESTION_LOOKBACK = 50


def _question(memory: BoundMemoryProtocol) -> MemoryItem | None:
    """The message being answered: the session's latest user message (None without one)."""
    if memory.session_id is None:
        return None
    for item in reversed(memory.messages(limit=QUESTION_LOOKBACK)):
        if item.kind == "chat_message" and item.role == "user":
            return item
    return None


def recall(
    memory: BoundMemoryProtocol, args: tool_args.RecallArgs, options: ToolOptions
) -> ToolResult:
    # The model already has the question it is answering; handing it back as a memory (it
    # matches its own words best) crowds out an answer. Its earlier copies (the same words
    # asked again) go too.
    question = _question(memory)
    result = memory.recall(
        args.query,
        top_k=min(args.top_k + 1, MAX_TOP_K) if question is not None else args.top_k,
        kinds=args.source_kinds,
        scope=args.scope,
        rerank=args.enable_rerank,
        min_score=options.min_score,
        token_budget=options.token_budget,
    )
    items = list(result.items)
    if question is not None:
        asked = question.content.strip()
        items = [
            h
            for h in items
            if h.id != question.id and not (h.kind == "chat_message" and h.content.strip() == asked)
        ][: args.top_k]
    data = {
        "items": [hit_data(h) for h in items],
        "total": len(items),
        "degraded": result.degraded,
        "rerank_used": result.rerank_used,
        "truncated": result.truncated,
    }
    text = format_hits(items, degraded=result.degraded)
    return ToolResult(text, data, hits=tuple(items))


def remember_fact(
    memory: BoundMemoryProtocol, args: tool_args.RememberFactArgs, options: ToolOptions
) -> ToolResult:
    scope = args.scope or _default_scope(memory, ("user", "agent"), "remember_fact")
    out = memory.remember(args.content, memory_type="fact", scope=scope, metadata=args.metadata)
    data = {"id": out.id, "was_new": out.was_new, "scope": scope}
    return ToolResult(json_text(data), data)


def read_tool_output(
    memory: BoundMemoryProtocol, args: tool_args.ReadToolOutputArgs, options: ToolOptions
) -> ToolResult:
    content = memory.read_tool_output(args.key)
    text = format_block([(content, {"source_ref": args.key})])
    return ToolResult(text, {"key": args.key, "content": content})


def store_memory(
    memory: BoundMemoryProtocol, args: tool_args.StoreMemoryArgs, options: ToolOptions
) -> ToolResult:
    scope = args.scope or _default_scope(memory, MEMORY_DEFAULT_SCOPES, "store_memory")
    out = memory.remember(
        args.content,
        memory_type=args.memory_type,
        scope=scope,
        importance=args.importance,
        metadata=args.metadata,
    )
    data = {
        "memory_id": out.id,
        "status": "stored" if out.was_new else "already_stored",
        "was_new": out.was_new,
        "has_embedding": memory.get(out.id).embedded,
        "scope": scope,
    }
    return ToolResult(json_text(data), data)


def search_memory(
    memory: BoundMemoryProtocol, args: tool_args.SearchMemoryArgs, options: ToolOptions
) -> ToolResult:
    threshold = args.min_importance
    # Recall cannot filter on importance: with a threshold, search the best MAX_TOP_K
    # matches and keep the first top_k that pass it, so the filter never shrinks top_k.
    result = memory.recall(
        args.query,
        top_k=MAX_TOP_K if threshold is not None else args.top_k,
        kinds="memory",
        memory_types=args.memory_type,
    )
    hits: list[RecallHit] = []
    importance: dict[str, float | None] = {}
    rows: list[dict[str, Any]] = []
    for hit in result.items:
        item = memory.get(hit.id)
        if threshold is not None and (item.importance is None or item.importance < threshold):
            continue
        hits.append(hit)
        importance[hit.id] = item.importance
        rows.append(
            {
                "memory_id": hit.id,
                "content": hit.content,
                "memory_type": hit.memory_type,
                "importance": item.importance,
                "similarity_score": hit.score,
                "scope": hit.scope,
                "metadata": hit.metadata,
                "created_at": item.created_at.isoformat(),
            }
        )
        if len(rows) == args.top_k:
            break
    data = {"items": rows, "total": len(rows), "degraded": result.degraded}
    text = format_hits(hits, importance=importance, degraded=result.degraded)
    return ToolResult(text, data)


def delete_memory(
    memory: BoundMemoryProtocol, args: tool_args.DeleteMemoryArgs, options: ToolOptions
) -> ToolResult:
    missing = NotFoundError(
        f"no memory {args.memory_id!r} is visible here (already deleted, or never stored "
        "for this identity)",
        memory_id=args.memory_id,
    )
    try:
        item = memory.get(args.memory_id)
    except NotFoundError as exc:
        raise missing from exc
    # Only memories the agent saved: conversation rows, shared documents and summaries are
    # the record of what happened, and knowledge has its owner-checked delete_knowledge.
    if item.kind != "memory" or item.scope == "knowledge":
        what = "a knowledge entry" if item.kind == "memory" else f"a {item.kind}"
        raise ValidationError(
            "memory_id",
            f"{args.memory_id!r} is {what}, not a saved memory; only memories stored with "
            "remember_fact or store_memory can be deleted here"
            + (" (use delete_knowledge)" if item.kind == "memory" else ""),
        )
    if not memory.forget(args.memory_id):
        raise missing
    data = {"memory_id": args.memory_id, "deleted": True}
    return ToolResult(json_text(data), data)


# -- agent state ------------------------------------------------------------------------------
def get_agent_state(
    memory: BoundMemoryProtocol, args: tool_args.GetAgentStateArgs, options: ToolOptions
) -> ToolResult:
    entry = memory.state.get(args.key)
    if entry is None:
        data: dict[str, Any] = {"key": args.key, "found": False, "value": None, "updated_at": None}
    else:
        data = {
            "key": entry.key,
            "found": True,
            "value": entry.value,
            "updated_at": entry.updated_at.isoformat(),
        }
    return ToolResult(json_text(data), data)


def set_agent_state(
    memory: BoundMemoryProtocol, args: tool_args.SetAgentStateArgs, options: ToolOptions
) -> ToolResult:
    entry = memory.state.set(args.key, args.value)
    data = {
        "key": entry.key,
        "value": entry.value,
        "updated_at": entry.updated_at.isoformat(),
        "status": "set",
    }
    return ToolResult(json_text(data), data)


# -- knowledge --------------------------------------------------------------------------------
def knowledge_data(entry: KnowledgeEntry) -> dict[str, Any]:
    """A knowledge entry as JSON-ready data."""
    return {
        "id": entry.id,
        "key": entry.key,
        "content": entry.content,
        "owner_agent": entry.agent_id,
        "memory_type": entry.memory_type,
        "importance": entry.importance,
        "metadata": entry.metadata,
        "updated_at": entry.updated_at.isoformat(),
    }


def _knowledge_entry(entry: KnowledgeEntry) -> Entry:
    attrs = {
        "id": entry.id,
        "kind": "knowledge",
        "key": entry.key,
        "owner_agent": entry.agent_id,
        "type": entry.memory_type,
        "importance": entry.importance,
        "time": entry.updated_at,
    }
    return entry.content, attrs


def upsert_knowledge(
    memory: BoundMemoryProtocol, args: tool_args.UpsertKnowledgeArgs, options: ToolOptions
) -> ToolResult:
    out = memory.knowledge.upsert(
        args.content,
        args.key,
        memory_type=args.memory_type,
        importance=args.importance,
        metadata=args.metadata,
    )
    data = {"id": out.id, "key": out.key, "was_new": out.was_new, "replaced": out.replaced}
    return ToolResult(json_text(data), data)


def get_knowledge(
    memory: BoundMemoryProtocol, args: tool_args.GetKnowledgeArgs, options: ToolOptions
) -> ToolResult:
    if args.owner_agent is None and memory.agent_id is None:
        raise ScopeError(
            "owner_agent",
            "no agent is bound, so there is no own entry to read: pass owner_agent to read "
            "an agent's entry",
        )
    entry = memory.knowledge.get(args.key, agent_id=args.owner_agent)
    if entry is None:
        owner = f" of agent {args.owner_agent!r}" if args.owner_agent else ""
        data: dict[str, Any] = {"key": args.key, "found": False, "entry": None}
        return ToolResult(f"No knowledge entry under key {args.key!r}{owner}.", data)
    data = {"key": args.key, "found": True, "entry": knowledge_data(entry)}
    return ToolResult(format_block([_knowledge_entry(entry)]), data)


def list_knowledge(
    memory: BoundMemoryProtocol, args: tool_args.ListKnowledgeArgs, options: ToolOptions
) -> ToolResult:
    entries = memory.knowledge.list(agent_id=args.owner_agent, all_agents=args.all_agents)
    page = entries[args.offset : args.offset + args.limit]
    data = {
        "entries": [knowledge_data(e) for e in page],
        "total": len(entries),
        "offset": args.offset,
    }
    if not page:
        return ToolResult("No knowledge entries found.", data)
    notes = _page_note("entries", args.offset, len(page), len(entries), "list_knowledge")
    return ToolResult(format_block([_knowledge_entry(e) for e in page], notes=notes), data)


def delete_knowledge(
    memory: BoundMemoryProtocol, args: tool_args.DeleteKnowledgeArgs, options: ToolOptions
) -> ToolResult:
    if not memory.knowledge.delete(args.key_or_id):
        raise NotFoundError(
            f"no knowledge entry {args.key_or_id!r} of this agent (already deleted, or never "
            "stored)",
            key_or_id=args.key_or_id,
        )
    data = {"key_or_id": args.key_or_id, "deleted": True}
    return ToolResult(json_text(data), data)


# -- sessions, answers, the working window ----------------------------------------------------
def _page_note(what: str, offset: int, shown: int, total: int, tool: str) -> tuple[str, ...]:
    if offset + shown >= total:
        return ()
    return (
        f"Showing {what} {offset + 1}-{offset + shown} of {total}; call {tool} with "
        f"offset={offset + shown} for more.",
    )


def _event_data(item: MemoryItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "kind": item.kind,
        "role": item.role,
        "content": item.content,
        "source_ref": item.source_ref,
        "event_time": item.event_time.isoformat(),
    }


def session_detail(
    memory: BoundMemoryProtocol, args: tool_args.SessionDetailArgs, options: ToolOptions
) -> ToolResult:
    detail = memory.session_detail(args.session_ref)
    page = detail.events[args.offset : args.offset + args.limit]
    entries: list[Entry] = []
    if detail.summary and args.offset == 0:
        entries.append((detail.summary, {"kind": "summary", "session": detail.session_id}))
    for item in page:
        # Full payloads can be megabytes: show the preview recall shows, naming its key.
        content = item.content
        if item.source_ref is not None:
            content = elide(content, item.source_ref, TOOL_OUTPUT_PREVIEW_CHARS)
        attrs = {
            "id": item.id,
            "kind": item.kind,
            "role": item.role,
            "session": detail.session_id,
            "source_ref": item.source_ref,
            "time": item.event_time,
        }
        entries.append((content, attrs))
    data = {
        "session_id": detail.session_id,
        "tier": detail.tier,
        "closed_at": _iso(detail.closed_at),
        "summary": detail.summary,
        "events": [_event_data(e) for e in page],
        "total_events": len(detail.events),
        "offset": args.offset,
    }
    if not entries:
        return ToolResult(f"Session {detail.session_id!r} has no events to show.", data)
    notes = _page_note("events", args.offset, len(page), len(detail.events), "session_detail")
    return ToolResult(format_block(entries, notes=notes), data)


def answer(
    memory: BoundMemoryProtocol, args: tool_args.AnswerArgs, options: ToolOptions
) -> ToolResult:
    out = memory.answer(args.question, top_k=args.top_k)
    data = {
        "answer": out.text,
        "used_ids": list(out.used_ids),
        "answered_by": out.answered_by,
        "sources": [hit_data(h) for h in out.sources],
    }
    if not out.text:
        return ToolResult(NO_MEMORIES, data)
    # The answer is written from stored text, so it is framed like the text itself.
    attrs = {"kind": "answer", "answered_by": out.answered_by, "used_ids": list(out.used_ids)}
    return ToolResult(format_block([(out.text, attrs)]), data)


def compact(
    memory: BoundMemoryProtocol, args: tool_args.CompactArgs, options: ToolOptions
) -> ToolResult:
    out = memory.compact(keep=args.keep)
    data = {
        "ok": out.ok,
        "rolled_off": len(out.rolled_off),
        "window": out.window,
        "error": out.error,
    }
    return ToolResult(json_text(data), data)


__all__ = [
    "DEFAULT_OPTIONS",
    "ToolOptions",
    "ToolResult",
    "answer",
    "compact",
    "delete_knowledge",
    "delete_memory",
    "get_agent_state",
    "get_knowledge",
    "hit_data",
    "knowledge_data",
    "list_knowledge",
    "read_tool_output",
    "recall",
    "remember_fact",
    "search_memory",
    "session_detail",
    "set_agent_state",
    "store_memory",
    "upsert_knowledge",
]
