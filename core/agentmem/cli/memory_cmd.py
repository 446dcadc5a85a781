"""Everyday memory commands: remember, recall, add-message, read-tool-output, forget."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from rich.table import Table

from .. import validation
from ..client import Client
from ..config import MemoryConfig
from ..memory import AgentMemory
from ..models import (
    KINDS,
    MEMORY_TYPES,
    RECALL_SCOPES,
    REMEMBER_SCOPES,
    ROLES,
    TIERS,
    Identity,
    RecallResult,
)
from ..scopes import default_memory_scope
from ._args import FRACTION, SECONDS, TOP_K, whole
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    CliError,
    Output,
    bind,
    command,
    dumps,
    hit_to_dict,
    markup,
    open_store,
    parse_json_arg,
    read_text_arg,
    require_scope,
    resolve_identity,
    short,
)

#: How far below the threshold the best match may score for recall to suggest the
#: ``--min-score`` that would return it: a calibrated score reads as a chance of being
#: relevant, so 0.05 under the bar is a near miss, while an unrelated query's best match
#: scores far lower (0.11 for "favourite colour" against one stretching routine).
NEAR_MISS = 0.05


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "remember",
        help="store an explicit memory (fact, preference, decision, ...)",
        description="Store an explicit memory. Idempotent: the same content, type, scope "
        "and identity return the same id.",
    )
    p.add_argument("content", help="the memory text ('-' reads stdin)")
    p.add_argument(
        "--memory-type", "--type", dest="memory_type", default="fact", choices=MEMORY_TYPES
    )
    p.add_argument(
        "--scope",
        choices=REMEMBER_SCOPES,
        default=None,
        help="who sees it; default: user if --user is bound (only that user), else agent "
        "if --agent (every user of the agent), else session; tenant (every user of the "
        "tenant) only when given",
    )
    p.add_argument("--importance", type=FRACTION, default=None, help="0..1")
    p.add_argument("--topic-key", default=None, help="a later memory with this key supersedes")
    p.add_argument("--metadata", default=None, help="JSON object")
    p.set_defaults(func=cmd_remember)

    _register_recall(sub)

    p = sub.add_parser(
        "add-message",
        help="store one chat message of the --session",
        description="Store one chat message (needs --session or AGENTMEM_SESSION).",
    )
    p.add_argument("role", choices=ROLES)
    p.add_argument("content", help="message text ('-' reads stdin)")
    p.add_argument("--metadata", default=None, help="JSON object")
    p.add_argument("--event-time", default=None, help="ISO-8601 timestamp (default: now)")
    p.set_defaults(func=cmd_add_message)

    p = sub.add_parser(
        "read-tool-output",
        help="print the full payload of a tool output (its source_ref key)",
    )
    p.add_argument("key", help="the source_ref shown by recall")
    p.set_defaults(func=cmd_read_tool_output)

    p = sub.add_parser(
        "forget",
        help="forget records by id, irreversibly (as the bound identity)",
        description="Forget records visible to the bound identity, irreversibly: a tombstone "
        "(ids, kind, scope and times; no content) stays, while the content, its keyword and "
        "vector entries and what was derived from it are deleted. Exits 1 if any id is not "
        "found.",
    )
    p.add_argument("ids", nargs="+", metavar="ID")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser(
        "get",
        help="show one record by id (as the bound identity)",
        description="Print a record visible to the bound identity (the id recall shows): "
        "its whole content, kind, scope, session, time and metadata. Exits 1 if it is not "
        "found.",
    )
    p.add_argument("memory_id", metavar="ID")
    p.set_defaults(func=cmd_get)


def _register_recall(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``recall``: its flags are the Python API's recall options."""
    p = sub.add_parser(
        "recall",
        help="hybrid (keyword + vector) search of what this identity may see",
        description="Recall memories for a query within the bound identity's scopes.",
    )
    p.add_argument("query")
    p.add_argument("-k", "--top-k", type=TOP_K, default=5, help="at most this many (1..20)")
    p.add_argument("--kind", action="append", choices=KINDS, help="restrict to a kind (repeat)")
    p.add_argument(
        "--memory-type", "--type", dest="memory_type", action="append", choices=MEMORY_TYPES
    )
    p.add_argument("--scope", default="any", choices=RECALL_SCOPES)
    p.add_argument("--min-score", type=FRACTION, default=None, help="0..1 (default 0.3)")
    p.add_argument("--token-budget", type=whole(1), default=None, help="default 1000")
    p.add_argument(
        "--filter",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="equality filter on stored metadata (VALUE parsed as JSON if it can be)",
    )
    p.add_argument("--include-superseded", action="store_true")
    p.add_argument(
        "--no-rerank",
        dest="rerank",
        action="store_false",
        help="leave out the configured reranker (rerank=False)",
    )
    p.add_argument(
        "--tiers",
        action="append",
        choices=TIERS,
        default=None,
        metavar="TIER",
        help=f"only rows of this tier (repeat; one of {', '.join(TIERS)}); default: messages, "
        "memories, documents, knowledge and session summaries, not session chunks",
    )
    p.add_argument(
        "--target-agent",
        default=None,
        metavar="AGENT",
        help="read this agent's closed sessions (--scope history) and knowledge (--scope "
        "knowledge) instead; needs --agent and no --user",
    )
    p.add_argument(
        "--wait",
        type=SECONDS,
        default=0.0,
        metavar="SECONDS",
        help="wait up to this long for the indexes to catch up first (not needed: recall "
        "reads what they have not indexed yet; default 0)",
    )
    p.epilog = (
        "When nothing reaches the threshold, the best match's score is said on stderr; "
        f"a --min-score that would return it is suggested only when it is within {NEAR_MISS} "
        "of the threshold (further below, the query has no answer here)."
    )
    p.set_defaults(func=cmd_recall)


@command
def cmd_remember(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    content = read_text_arg(args.content, "content")
    metadata = parse_json_arg(args.metadata, "--metadata")
    identity = resolve_identity(args)
    scope = args.scope or default_memory_scope(identity)
    if scope is None:
        raise CliError(
            "remember: no --user, --agent or --session is bound, so every user of tenant "
            f"{identity.tenant_id!r} would see this memory: bind an owner, or pass --scope "
            "tenant to mean that"
        )
    require_scope(identity, scope, f"a {scope}-scope memory")
    with open_store(args) as mem:
        m = bind(mem, args)
        res = m.remember(
            content,
            memory_type=args.memory_type,
            scope=scope,
            importance=args.importance,
            topic_key=args.topic_key,
            metadata=metadata,
        )
        mem.flush()
    verb = "remembered" if res.was_new else "already remembered"
    out.result(
        {"id": res.id, "was_new": res.was_new, "scope": scope, "memory_type": args.memory_type},
        text=f"{verb} [bold]{res.id}[/] ({args.memory_type}, scope {scope})",
    )
    return EXIT_OK


@command
def cmd_add_message(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    content = read_text_arg(args.content, "content")
    metadata = parse_json_arg(args.metadata, "--metadata")
    require_scope(resolve_identity(args), "session", "add-message")
    with open_store(args) as mem:
        m = bind(mem, args)
        item = m.add_message(args.role, content, metadata=metadata, event_time=args.event_time)
        mem.flush()
    out.result(
        {
            "id": item.id,
            "kind": item.kind,
            "session_id": item.session_id,
            "source_ref": item.source_ref,
        },
        text=f"stored {item.kind} [bold]{item.id}[/] in session {markup(str(item.session_id))}",
    )
    return EXIT_OK


@command
def cmd_read_tool_output(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with open_store(args, create=False, background=False) as mem:
        text = bind(mem, args).read_tool_output(args.key)
    if out.json:
        out.result({"key": args.key, "content": text})
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def _parse_filters(raw: list[str] | None) -> dict[str, Any] | None:
    if not raw:
        return None
    out: dict[str, Any] = {}
    for item in raw:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--filter: expected KEY=VALUE, got {item!r}")
        try:
            out[key] = parse_json_arg(value, "--filter")
        except CliError:
            out[key] = value
    return out


@command
def cmd_recall(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    filters = _parse_filters(args.filter)
    validation.query(args.query)  # a bad query is the error, even where there is no data dir
    with open_store(args, create=False) as mem:
        m = bind(mem, args)
        if args.wait > 0:
            mem.flush(timeout=args.wait)
        if isinstance(mem, AgentMemory):
            # load the model first, so the latency shown is the recall's (an embedding, not
            # a recall: no access count, no recall observed; a server has its model loaded)
            mem.embedder.embed_query("agentmem warm-up")
        started = time.perf_counter()
        result = m.recall(
            args.query,
            top_k=args.top_k,
            kinds=args.kind,
            memory_types=args.memory_type,
            scope=args.scope,
            rerank=args.rerank,
            min_score=args.min_score,
            token_budget=args.token_budget,
            filters=filters,
            include_superseded=args.include_superseded,
            tiers=args.tiers,
            target_agent=args.target_agent,
        )
        latency_ms = (time.perf_counter() - started) * 1000
        threshold = _min_score(mem) if args.min_score is None else args.min_score
    below = below_threshold(result, threshold)
    if out.json:
        out.result(
            {
                "query": args.query,
                "items": [hit_to_dict(h) for h in result.items],
                "total": result.total,
                "degraded": result.degraded,
                "rerank_used": result.rerank_used,
                "truncated": result.truncated,
                "token_count": result.token_count,
                "best_score": result.best_score,
                "latency_ms": round(latency_ms, 2),
                "below_threshold": below,
            }
        )
        return EXIT_OK
    footer = (
        f"{result.total} result(s) in {latency_ms:.0f} ms; degraded={result.degraded}, "
        f"truncated={result.truncated}, {result.token_count} tokens"
    )
    if not result.items:
        if result.best_score is None:  # not a miss: no candidate at all
            out.print(f"[dim]nothing found[/]\n{footer}")
            hint = _unbound_hint(m.identity)
            if hint is not None:
                out.note(hint)
        else:
            out.print(f"[dim]no memories above the score threshold[/]\n{footer}")
        if below is not None:
            out.note(below)
        return EXIT_OK
    table = Table(title=f"recall: {markup(short(args.query, 70))}", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("kind")
    table.add_column("scope")
    table.add_column("content", overflow="fold", ratio=1)
    for n, hit in enumerate(result.items, 1):
        kind = hit.kind + (f"\n{hit.memory_type}" if hit.memory_type else "")
        content = markup(short(hit.content, 300))
        when = hit.event_time.strftime("%Y-%m-%d %H:%M")
        session = f" · session {markup(hit.session_id)}" if hit.session_id else ""
        content += f"\n[dim]{when}{session} · id {hit.id}[/]"
        if hit.source_ref and hit.kind == "tool_output":
            content += f"\n[dim]full output: agentmem read-tool-output {markup(hit.source_ref)}[/]"
        table.add_row(str(n), f"{hit.score:.3f}", kind, hit.scope, content)
    out.print(table)
    out.print(footer)
    return EXIT_OK


def _min_score(store: AgentMemory | Client) -> float:
    """The min_score a recall uses by default (a server's own setting is not sent to its
    clients: there, the default configuration's)."""
    return store.config.min_score if isinstance(store, AgentMemory) else MemoryConfig().min_score


def _unbound_hint(identity: Identity) -> str | None:
    """Why a recall with no identity bound but the tenant finds nothing: it sees only what
    every user of the tenant shares (the usual slip: remembering with --user, recalling
    without it)."""
    if identity.user_id or identity.agent_id or identity.session_id:
        return None
    return (
        f"no --user, --agent or --session is bound: only what every user of tenant "
        f"{identity.tenant_id!r} shares (documents, tenant memories, knowledge) was searched"
    )


def below_threshold(result: RecallResult, threshold: float) -> str | None:
    """When nothing passed ``threshold`` but recall found something below it, say how far
    below (its ``best_score``, from the same recall: asking again would count as a recall);
    a lower ``--min-score`` is suggested only for a near miss (within :data:`NEAR_MISS`):
    far below, the best match is no answer, and lowering the bar would return noise."""
    best = result.best_score
    if result.items or best is None or best >= threshold:
        return None
    said = f"best match {best:.2f} is below min_score {threshold:.2f}"
    if threshold - best > NEAR_MISS:
        return f"{said}: nothing stored is close to this query"
    return f"{said}; try --min-score {int(best * 100) / 100:.2f}"


@command
def cmd_get(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with open_store(args, create=False) as mem:
        item = bind(mem, args).get(args.memory_id)
    kind = item.kind + (f" ({item.memory_type})" if item.memory_type else "")
    where = f"scope {item.scope}" + (f", session {item.session_id}" if item.session_id else "")
    lines = [f"{item.id}  {kind}, {where}, {item.event_time:%Y-%m-%d %H:%M}"]
    if item.superseded_by:
        lines.append(f"superseded by {item.superseded_by}")
    if item.metadata:
        lines.append(f"metadata {dumps(item.metadata)}")
    out.result(item, text="[dim]" + markup("\n".join(lines)) + "[/]\n" + markup(item.content))
    return EXIT_OK


@command
def cmd_forget(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    forgotten: list[str] = []
    missing: list[str] = []
    with open_store(args, create=False) as mem:
        m = bind(mem, args)
        for id_ in args.ids:
            (forgotten if m.forget(id_) else missing).append(id_)
        mem.flush()
    i = m.identity
    who = ", ".join(
        f"{k}={val}"
        for k, val in (
            ("tenant", i.tenant_id),
            ("user", i.user_id),
            ("agent", i.agent_id),
            ("session", i.session_id),
        )
        if val is not None
    )
    if out.json:
        out.result({"forgotten": forgotten, "not_found": missing})
    else:
        for id_ in forgotten:
            out.print(f"forgot {id_}")
    if missing:
        sys.stderr.write(
            f"agentmem: error: not found (or not visible to {who}): {', '.join(missing)}\n"
        )
        return EXIT_FAILED
    return EXIT_OK
