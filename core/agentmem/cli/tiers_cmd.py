"""Tier commands: ``close-session``, ``working``, ``session-detail`` and ``knowledge``.

- ``agentmem --user U --session S close-session``: the session shutdown pipeline (summary,
  chunks, embedding, promotion of the oldest mid-term session beyond N); a second run without
  new messages does nothing.
- ``agentmem --user U --session S working [--compact] [--context --model-window N]``: the
  session's working memory (pinned messages, window, reference summary, token counts).
- ``agentmem --user U session-detail S``: a session's full events and summary.
- ``agentmem --agent A knowledge upsert|get|delete|list|search``: the agent's knowledge base;
  ``--target-agent`` reads another agent's entries (writes are the bound agent's only).

Exit statuses: 0 success; 1 not found; 2 bad input (a missing ``--session``/``--agent``,
an invalid value, or a write to another agent's knowledge).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..tiers.knowledge import KnowledgeEntry
from ._args import FRACTION, SECONDS, TOP_K, number, whole
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    Output,
    bind,
    command,
    hit_to_dict,
    markup,
    open_memory,
    open_store,
    parse_json_arg,
    read_text_arg,
    require_scope,
    resolve_identity,
    short,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the tier sub-commands."""
    p = sub.add_parser(
        "close-session",
        help="close a session: summary, chunks, embedding, promotion to long-term",
        description="Run the shutdown pipeline of the session of --session: an LLM summary "
        "(skipped after --summary-timeout seconds), chunks of its messages (mid-term, "
        "embedded), and promotion of the oldest mid-term session to long-term once there are "
        "more than AGENTMEM_MID_TERM_SESSIONS (10). Idempotent.",
    )
    p.add_argument(
        "--summary-timeout",
        type=SECONDS,
        default=None,
        help="seconds for the summary (default $AGENTMEM_SUMMARY_TIMEOUT or 30; 0 skips it)",
    )
    p.set_defaults(func=cmd_close_session)

    p = sub.add_parser(
        "working", help="show the working memory of a session (window, summary, tokens)"
    )
    p.add_argument("--compact", action="store_true", help="compact the window first")
    p.add_argument(
        "--keep", type=whole(0), default=None, help="messages --compact keeps (default 4)"
    )
    p.add_argument(
        "--context",
        action="store_true",
        help="print the messages context_messages() would send to a model",
    )
    p.add_argument("--model-window", type=whole(1), default=None, help="model window in tokens")
    p.add_argument(
        "--budget-ratio",
        type=number(0.0, 1.0, above=True),
        default=0.8,
        help="compaction trip (0.8)",
    )
    p.set_defaults(func=cmd_working)

    p = sub.add_parser(
        "session-detail",
        help="the full events of a session (any tier)",
        description="The full events and summary of a session of the bound conversation, "
        "any tier; with --target-agent, one of that agent's closed sessions.",
    )
    p.add_argument("session_id")
    p.add_argument(
        "--target-agent",
        default=None,
        metavar="AGENT",
        help="read a closed session of this agent instead (needs --agent and no --user)",
    )
    p.set_defaults(func=cmd_session_detail)

    _register_knowledge(sub)


def _register_knowledge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``knowledge`` and its actions."""
    p = sub.add_parser("knowledge", help="the agent's knowledge base (upsert/get/delete/list)")
    ks = p.add_subparsers(dest="knowledge_command", metavar="ACTION", required=True)
    q = ks.add_parser(
        "upsert",
        help="add an entry, or replace the entry under --key (every user and agent of the "
        "tenant can read it)",
    )
    q.add_argument("content", help="the entry ('-' reads stdin)")
    q.add_argument("--key", default=None, help="dedup key: replaces this agent's entry with it")
    q.add_argument("--type", dest="memory_type", default="note", help="memory type (note)")
    q.add_argument("--importance", type=FRACTION, default=None, help="0..1")
    q.add_argument("--metadata", default=None, help="JSON object")
    q.set_defaults(func=cmd_knowledge_upsert)
    q = ks.add_parser("get", help="the entry under a key")
    q.add_argument("key")
    q.add_argument("--target-agent", default=None, help="read this agent's entry")
    q.set_defaults(func=cmd_knowledge_get)
    q = ks.add_parser("delete", help="delete this agent's entry (by key or id)")
    q.add_argument("key_or_id")
    q.set_defaults(func=cmd_knowledge_delete)
    q = ks.add_parser("list", help="list entries (the bound agent's by default)")
    q.add_argument("--target-agent", default=None, help="list this agent's entries")
    q.add_argument("--all-agents", action="store_true", help="every agent's entries")
    q.set_defaults(func=cmd_knowledge_list)
    q = ks.add_parser("search", help="recall over the knowledge of every agent of the tenant")
    q.add_argument("query")
    q.add_argument("-k", "--top-k", type=TOP_K, default=5, help="1..20")
    q.set_defaults(func=cmd_knowledge_search)


def _session(args: argparse.Namespace, purpose: str) -> None:
    require_scope(resolve_identity(args), "session", purpose)


def _agent(args: argparse.Namespace, purpose: str) -> None:
    require_scope(resolve_identity(args), "agent", purpose)


@command
def cmd_close_session(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    _session(args, "close-session")
    with open_store(args, create=False) as mem:
        result = bind(mem, args).close_session(summary_timeout=args.summary_timeout)
        mem.flush(timeout=120)
    if result.already_closed:
        text = f"session {markup(result.session_id)} was closed already ({result.tier})"
    else:
        text = (
            f"session {markup(result.session_id)} closed: {result.messages} messages, "
            f"{len(result.chunk_ids)} chunks, summary {result.summary_status}; "
            f"tier {result.tier}"
        )
        if result.promoted:
            text += "; promoted to long-term: " + ", ".join(markup(s) for s in result.promoted)
    out.result(result, text=text)
    if result.error:
        out.note(f"summary skipped: {result.error}")
    return EXIT_OK


@command
def cmd_working(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    _session(args, "working")
    with open_memory(args, create=False, background=False) as mem:
        i = resolve_identity(args)
        m = mem.bind(i.tenant_id, i.user_id, i.agent_id, i.session_id)  # .working: embedded
        compaction = m.compact(keep=args.keep) if args.compact else None
        context = (
            m.context_messages(model_window=args.model_window, budget_ratio=args.budget_ratio)
            if args.context
            else None
        )
        snap = m.working.snapshot()
    data: dict[str, Any] = {
        "session_id": snap.session_id,
        "pinned": [_brief(i) for i in snap.pinned],
        "window": [_brief(i) for i in snap.window],
        "summary": snap.summary.to_dict(),
        "tokens": {
            "pinned": snap.tokens.pinned,
            "summary": snap.tokens.summary,
            "window": snap.tokens.window,
            "total": snap.tokens.total,
        },
        "compactions": snap.compactions,
        "trips": snap.trips,
        "last_error": snap.last_error,
    }
    if compaction is not None:
        data["compaction"] = compaction
    if context is not None:
        data["context_messages"] = context
    out.result(data)
    if compaction is not None:
        state = "ok" if compaction.ok else f"failed: {compaction.error}"
        out.print(f"compaction: {len(compaction.rolled_off)} messages rolled off ({state})")
    out.print(
        f"session {markup(snap.session_id)}: {len(snap.pinned)} pinned, {len(snap.window)} in "
        f"the window; tokens {snap.tokens.total} (pinned {snap.tokens.pinned}, summary "
        f"{snap.tokens.summary}, window {snap.tokens.window}); compactions {snap.compactions}"
    )
    if not snap.summary.empty:
        out.print("[bold]reference summary[/]\n" + markup(snap.summary.summary))
        for f in snap.summary.facts:
            out.print(f"  - {markup(f.key)}: {markup(f.value)}")
    for item in (*snap.pinned, *snap.window):
        out.print(f"  {item.role or item.kind:>9}  {markup(short(item.content))}")
    if context is not None:
        out.print(f"[bold]context messages[/] ({len(context)})")
        for msg in context:
            out.print(f"  {msg['role']:>9}  {markup(short(msg['content']))}")
    return EXIT_OK


def _brief(item: Any) -> dict[str, Any]:
    return {"id": item.id, "role": item.role, "kind": item.kind, "content": item.content}


@command
def cmd_session_detail(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with open_store(args, create=False, background=False) as mem:
        detail = bind(mem, args).session_detail(args.session_id, target_agent=args.target_agent)
    out.result(detail)
    out.print(
        f"session {markup(detail.session_id)}: {detail.tier or 'open'}, {len(detail.events)} events"
    )
    if detail.summary:
        out.print("[bold]summary[/] " + markup(detail.summary))
    for item in detail.events:
        out.print(f"  {item.role or item.kind:>9}  {markup(short(item.content))}")
    return EXIT_OK


def _entry_text(e: KnowledgeEntry) -> str:
    key = markup(f"[{e.key}] ") if e.key else ""
    return f"{markup(e.id)}  {markup(e.agent_id)}  {key}{markup(short(e.content))}"


@command
def cmd_knowledge_upsert(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    _agent(args, "knowledge upsert")
    content = read_text_arg(args.content, "content")
    meta = parse_json_arg(args.metadata, "--metadata")
    with open_store(args) as mem:
        result = bind(mem, args).knowledge.upsert(
            content,
            key=args.key,
            memory_type=args.memory_type,
            importance=args.importance,
            metadata=meta,
        )
        mem.flush(timeout=60)
    verb = "stored" if result.was_new else "unchanged"
    text = f"{verb} {markup(result.id)}"
    if result.replaced:
        text += f" (replaces {markup(result.replaced)})"
    out.result(result, text=text)
    return EXIT_OK


@command
def cmd_knowledge_get(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    if args.target_agent is None:
        _agent(args, "knowledge get without --target-agent")
    with open_store(args, create=False, background=False) as mem:
        entry = bind(mem, args).knowledge.get(args.key, agent_id=args.target_agent)
    if entry is None:
        out.error(f"no knowledge entry under key {args.key!r}", status=EXIT_FAILED)
        return EXIT_FAILED
    out.result(entry, text=markup(entry.content))
    return EXIT_OK


@command
def cmd_knowledge_delete(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    _agent(args, "knowledge delete")
    with open_store(args, create=False) as mem:
        done = bind(mem, args).knowledge.delete(args.key_or_id)
        mem.flush(timeout=60)
    if not done:  # one JSON document on stdout: the error's
        out.error(f"no knowledge entry {args.key_or_id!r} of this agent", status=EXIT_FAILED)
        return EXIT_FAILED
    out.result({"deleted": done, "key_or_id": args.key_or_id}, text="deleted")
    return EXIT_OK


@command
def cmd_knowledge_list(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with open_store(args, create=False, background=False) as mem:
        entries = bind(mem, args).knowledge.list(
            agent_id=args.target_agent, all_agents=args.all_agents
        )
    out.result({"entries": entries})
    for e in entries:
        out.print(_entry_text(e))
    if not entries:
        out.print("[dim](no knowledge entries)[/]")
    return EXIT_OK


@command
def cmd_knowledge_search(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    query = read_text_arg(args.query, "query")
    with open_store(args, create=False) as mem:
        mem.flush(timeout=60)
        result = bind(mem, args).knowledge.search(query, top_k=args.top_k)
    out.result({"items": [hit_to_dict(h) for h in result.items]})
    for h in result.items:
        key = h.metadata.get("knowledge_key")
        label = markup(f"[{key}] ") if key else ""
        out.print(f"{h.score:.3f}  {label}{markup(short(h.content))}")
    return EXIT_OK
