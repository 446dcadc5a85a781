"""The everyday commands: remember, recall, add-message, read-tool-output, import, export,
stats, reindex, forget, and demo (whose script lives in :mod:`.demo`).

Import/export format (JSON Lines, one JSON object per line)
-------------------------------------------------------------
Every line has a ``type``:

``message``
    ``role`` (user|assistant|system|tool), ``content``; optional ``event_time`` (ISO-8601),
    ``metadata``. Needs a session (``session_id`` on the line or ``--session``).
``tool_output``
    ``tool_call_id``, ``content`` (the full output); optional ``tool_name``, ``metadata``.
    Needs a session.
``document``
    ``content`` (or ``text``): the whole document, chunked on import; optional
    ``source_ref``, ``metadata``.
``memory``
    ``content``; optional ``memory_type`` (default fact), ``scope`` (user|agent|tenant|session;
    default: user when a user is bound, else agent, else tenant), ``importance``,
    ``topic_key``, ``metadata``.

Any line may carry ``tenant_id``, ``user_id``, ``agent_id``, ``session_id``: a key that is
present (even ``null``) overrides the ``--tenant/--user/--agent/--session`` flags for that
line. ``null`` values of optional fields mean "not given".

``export`` writes one line per live record in insertion order: the record's fields (``id``,
``kind``, ``scope``, ``created_at`` ...) plus ``type``, and where they matter for a re-import
``topic_key``, ``tool_call_id``/``tool_name``, and ``full_content`` (the full text of a tool
output or long message whose indexed ``content`` is a preview). Export-only fields are
accepted and ignored by ``import``, so an export re-imports as is. Two further types occur
only in exports: ``document_chunk`` (chunks sharing a tenant and ``source_ref`` are joined
back into one document and re-chunked) and ``summary`` (skipped and counted; summaries are
derived). A memory exported as superseded is re-imported only when a later line with its
``topic_key`` will supersede it again; otherwise it is skipped and counted, so a fact retired
by the LLM judge does not come back as live. A re-import keeps content, kinds, identities, scopes, metadata, memory types,
topic keys (and so supersession) and message ``event_time``; records get new ids and
timestamps. Messages have no natural key, so importing the same file twice stores them
twice; memories, tool outputs and documents are idempotent (a superseded memory is re-added
as superseded history).

``import`` reads and validates every line before it writes anything: a bad line stops the
import with its line number and nothing is stored. Lines are then written in order, in
batches (``add_messages`` / ``remember_many``), and the indexes are flushed at the end.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any

from rich.table import Table

from .. import scopes
from .. import validation as v
from ..config import CHAT_COPY_MAX_BYTES
from ..errors import ValidationError
from ..memory import AgentMemory, BoundMemory
from ..models import (
    KINDS,
    MEMORY_TYPES,
    RECALL_SCOPES,
    REMEMBER_SCOPES,
    ROLES,
    Identity,
    MemoryItem,
)
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
    open_memory,
    parse_json_arg,
    read_text_arg,
    require_scope,
    resolve_identity,
    short,
)

IMPORT_TYPES = ("message", "tool_output", "document", "memory", "document_chunk", "summary")
_IDENTITY_KEYS = ("tenant_id", "user_id", "agent_id", "session_id")
#: Keys an export line may carry that import does not use for every type.
_TOLERATED = frozenset(
    {f.name for f in fields(MemoryItem)}
    | {"type", "full_content", "topic_key", "tool_call_id", "tool_name"}
)
_USED: dict[str, frozenset[str]] = {
    "message": frozenset({"role", "content", "full_content", "event_time", "metadata"}),
    "tool_output": frozenset({"tool_call_id", "tool_name", "content", "full_content", "metadata"}),
    "document": frozenset({"content", "text", "source_ref", "metadata"}),
    "document_chunk": frozenset({"content", "source_ref", "metadata"}),
    "memory": frozenset({"content", "memory_type", "scope", "importance", "topic_key", "metadata"}),
    "summary": frozenset(),
}
_FIXED_SCOPE = {
    "message": "session",
    "tool_output": "session",
    "document": "tenant",
    "document_chunk": "tenant",
}
#: Prefix of the payload key ``add_tool_output`` gives a tool output (see memory.py).
_TOOL_OUTPUT_KEY_PREFIX = "tout_"
MAX_REPORTED_ERRORS = 20


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
        help="default: user if --user is bound, else agent if --agent, else tenant",
    )
    p.add_argument("--importance", type=float, default=None, help="0..1")
    p.add_argument("--topic-key", default=None, help="a later memory with this key supersedes")
    p.add_argument("--metadata", default=None, help="JSON object")
    p.set_defaults(func=cmd_remember)

    p = sub.add_parser(
        "recall",
        help="hybrid (keyword + vector) search of what this identity may see",
        description="Recall memories for a query within the bound identity's scopes.",
    )
    p.add_argument("query")
    p.add_argument("-k", "--top-k", type=int, default=5, help="at most this many (1..20)")
    p.add_argument("--kind", action="append", choices=KINDS, help="restrict to a kind (repeat)")
    p.add_argument(
        "--memory-type", "--type", dest="memory_type", action="append", choices=MEMORY_TYPES
    )
    p.add_argument("--scope", default="any", choices=RECALL_SCOPES)
    p.add_argument("--min-score", type=float, default=None, help="0..1 (default 0.3)")
    p.add_argument("--token-budget", type=int, default=None, help="default 1000")
    p.add_argument(
        "--filter",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="equality filter on stored metadata (VALUE parsed as JSON if it can be)",
    )
    p.add_argument("--include-superseded", action="store_true")
    p.add_argument(
        "--wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="wait up to this long for pending indexing first (0: don't; default 30)",
    )
    p.set_defaults(func=cmd_recall)

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
        "import",
        help="import messages, tool outputs, documents and memories from JSONL",
        description="Import JSON Lines (see `agentmem export`). Every line is validated "
        "before anything is written; a bad line aborts with its line number.",
    )
    p.add_argument("file", help="JSONL file ('-' reads stdin)")
    p.add_argument("--batch-size", type=int, default=500, help="records per write (default 500)")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "export",
        help="write every live record (all tenants by default) as JSONL",
        description="Write every live record as JSON Lines, re-importable with `agentmem import`.",
    )
    p.add_argument("-o", "--output", default=None, help="write to FILE instead of stdout")
    p.add_argument(
        "--tenant-only",
        action="store_true",
        help="only the tenant of --tenant / AGENTMEM_TENANT (default 'default')",
    )
    p.add_argument("--kind", action="append", choices=KINDS, help="only this kind (repeat)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("stats", help="record counts, index backlog and disk use")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser(
        "reindex",
        help="rebuild the keyword and vector indexes from the records store",
        description="Rebuild both indexes from the records, embedding every record again with "
        "the default embedder, which the data dir then records (also when its vectors were "
        "made by another embedder: this is how a data dir switches embedders).",
    )
    p.set_defaults(func=cmd_reindex)

    p = sub.add_parser(
        "forget",
        help="soft-delete records by id (as the bound identity)",
        description="Soft-delete records visible to the bound identity. Exits 1 if any id "
        "is not found.",
    )
    p.add_argument("ids", nargs="+", metavar="ID")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser(
        "demo",
        help="scripted multi-session agent run showing recall (no config, no network)",
        description="Run a scripted three-session support conversation into a fresh data "
        "dir (a temporary one unless --home is given), then check that recall finds what "
        "the agent needs. Exits 1 if a check fails.",
    )
    p.add_argument(
        "--keep", action="store_true", help="keep the temporary data dir (default: remove it)"
    )
    p.set_defaults(func=cmd_demo)


# -- remember / add-message / read-tool-output --------------------------------------------------
def default_memory_scope(identity: Identity) -> str:
    """The narrowest scope the identity can own: user, else agent, else tenant."""
    if identity.user_id is not None:
        return "user"
    if identity.agent_id is not None:
        return "agent"
    return "tenant"


@command
def cmd_remember(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    content = read_text_arg(args.content, "content")
    metadata = parse_json_arg(args.metadata, "--metadata")
    identity = resolve_identity(args)
    scope = args.scope or default_memory_scope(identity)
    require_scope(identity, scope, f"a {scope}-scope memory")
    with open_memory(args) as mem:
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
    with open_memory(args) as mem:
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
    with open_memory(args, background=False) as mem:
        text = bind(mem, args).read_tool_output(args.key)
    if out.json:
        out.result({"key": args.key, "content": text})
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


# -- recall ---------------------------------------------------------------------------------
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
    with open_memory(args) as mem:
        m = bind(mem, args)
        v.query(args.query)
        if args.wait > 0:
            mem.flush(timeout=args.wait)
        # Load the model and the vector store first, so the latency shown is the recall's.
        m.recall("warm-up", top_k=1)
        started = time.perf_counter()
        result = m.recall(
            args.query,
            top_k=args.top_k,
            kinds=args.kind,
            memory_types=args.memory_type,
            scope=args.scope,
            min_score=args.min_score,
            token_budget=args.token_budget,
            filters=filters,
            include_superseded=args.include_superseded,
        )
        latency_ms = (time.perf_counter() - started) * 1000
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
                "latency_ms": round(latency_ms, 2),
            }
        )
        return EXIT_OK
    footer = (
        f"{result.total} result(s) in {latency_ms:.0f} ms; degraded={result.degraded}, "
        f"truncated={result.truncated}, {result.token_count} tokens"
    )
    if not result.items:
        out.print(f"[dim]no memories above the score threshold[/]\n{footer}")
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


# -- import ---------------------------------------------------------------------------------
@dataclass
class _Op:
    """One validated write: ``type`` plus the arguments of the BoundMemory call."""

    type: str
    line: int
    identity: Identity
    args: dict[str, Any]
    #: document_chunk groups: (chunk_index, line, content) of every chunk.
    chunks: list[tuple[int, int, str]] = field(default_factory=list)
    #: memory lines: the export says a later memory superseded this one.
    superseded: bool = False


class _LineError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


def _line_type(obj: Mapping[str, Any], line: int) -> str:
    kind = obj.get("kind")
    typ = obj.get("type")
    if typ is None and kind is not None:
        if kind == "chat_message":
            typ = "message"
        elif kind == "tool_output":
            ref = obj.get("source_ref")
            is_call = isinstance(ref, str) and ref.startswith(_TOOL_OUTPUT_KEY_PREFIX)
            typ = "tool_output" if is_call else "message"
        else:
            typ = kind
    if typ is None:
        raise _LineError(line, f"needs a 'type' (one of {', '.join(IMPORT_TYPES[:4])})")
    if typ not in IMPORT_TYPES:
        raise _LineError(line, f"type: must be one of {', '.join(IMPORT_TYPES)}; got {typ!r}")
    return str(typ)


def _line_identity(obj: Mapping[str, Any], base: Identity) -> Identity:
    values = {
        "tenant_id": base.tenant_id,
        "user_id": base.user_id,
        "agent_id": base.agent_id,
        "session_id": base.session_id,
    }
    for key in _IDENTITY_KEYS:
        if key in obj:
            values[key] = obj[key]
    tenant = v.identity(values["tenant_id"], "tenant_id", required=True)
    assert tenant is not None
    return Identity(
        tenant_id=tenant,
        user_id=v.identity(values["user_id"], "user_id"),
        agent_id=v.identity(values["agent_id"], "agent_id"),
        session_id=v.identity(values["session_id"], "session_id"),
    )


def _parse_line(obj: Any, line: int, base: Identity) -> _Op | None:
    """Validate one decoded line; ValidationError names the field, _LineError the rest."""
    if not isinstance(obj, dict):
        raise _LineError(line, f"must be a JSON object, got {type(obj).__name__}")
    typ = _line_type(obj, line)
    allowed = _USED[typ] | _TOLERATED
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise _LineError(line, f"unknown keys {unknown} for type {typ!r}")
    identity = _line_identity(obj, base)
    fixed = _FIXED_SCOPE.get(typ)
    if fixed is not None and obj.get("scope") not in (None, fixed):
        raise _LineError(line, f"scope: a {typ} is always {fixed!r}; got {obj['scope']!r}")
    metadata = v.metadata(obj.get("metadata"))
    full = obj.get("full_content")
    content = full if full is not None else obj.get("content")

    if typ == "summary":
        return None
    if typ in ("message", "tool_output") and identity.session_id is None:
        raise _LineError(line, f"a {typ} needs a session: session_id on the line or --session")
    if typ == "message":
        return _Op(
            typ,
            line,
            identity,
            {
                "role": v.choice(obj.get("role"), "role", ROLES),
                "content": v.text(content, "content"),
                "metadata": metadata,
                "event_time": v.event_time(obj.get("event_time")),
            },
        )
    if typ == "tool_output":
        call_id = obj.get("tool_call_id") or metadata.get("tool_call_id")
        name = obj.get("tool_name") or metadata.get("tool_name")
        return _Op(
            typ,
            line,
            identity,
            {
                "tool_call_id": v.identity(call_id, "tool_call_id", required=True),
                "content": v.text(content, "content"),
                "tool_name": v.identity(name, "tool_name"),
                "metadata": metadata,
            },
        )
    if typ == "document":
        text = content if content is not None else obj.get("text")
        return _Op(
            typ,
            line,
            identity,
            {
                "text": v.text(text, "content"),
                "source_ref": v.identity(obj.get("source_ref"), "source_ref"),
                "metadata": metadata,
            },
        )
    if typ == "document_chunk":
        index = metadata.pop("chunk_index", 0)
        metadata.pop("chunk_count", None)
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValidationError("metadata.chunk_index", f"must be an integer; got {index!r}")
        ref = v.identity(obj.get("source_ref"), "source_ref", required=True)
        op = _Op(typ, line, identity, {"source_ref": ref, "metadata": metadata})
        op.chunks.append((index, line, v.text(content, "content")))
        return op
    # memory
    superseded = obj.get("superseded_by") is not None
    scope = obj.get("scope") or default_memory_scope(identity)
    scope = v.choice(scope, "scope", REMEMBER_SCOPES)
    needs = {"user": "user_id", "agent": "agent_id", "session": "session_id"}.get(scope)
    if needs is not None and getattr(identity, needs) is None:
        flag = "--" + needs.removesuffix("_id")
        raise _LineError(line, f"a {scope}-scope memory needs {needs} (on the line or {flag})")
    return _Op(
        typ,
        line,
        identity,
        {
            "content": v.text(content, "content", max_bytes=CHAT_COPY_MAX_BYTES),
            "memory_type": v.choice(obj.get("memory_type") or "fact", "memory_type", MEMORY_TYPES),
            "scope": scope,
            "importance": v.unit_float(obj.get("importance"), "importance"),
            "topic_key": v.identity(obj.get("topic_key"), "topic_key"),
            "metadata": metadata,
        },
        superseded=superseded,
    )


@dataclass
class ParsedImport:
    """A validated import: the writes in order and what was left out."""

    ops: list[_Op]
    lines: int
    summaries_skipped: int
    superseded_skipped: int


def parse_jsonl(lines: Iterable[str], base: Identity) -> ParsedImport:
    """Validate every line and plan the writes.

    A memory the export marks as superseded is kept only when a later line with the same
    tenant, partition and ``topic_key`` will supersede it again on import; otherwise (e.g.
    retired by the LLM judge) it is skipped, so importing never brings a stale fact back.

    Raises:
        CliError: with every bad line (up to :data:`MAX_REPORTED_ERRORS`) and its number.
    """
    ops: list[_Op] = []
    groups: dict[tuple[str, str], _Op] = {}
    errors: list[str] = []
    bad = 0
    count = 0
    skipped = 0
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        count += 1
        try:
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise _LineError(n, f"not valid JSON: {exc.msg} (column {exc.colno})") from exc
            try:
                op = _parse_line(obj, n, base)
            except ValidationError as exc:
                raise _LineError(n, str(exc)) from exc
        except _LineError as exc:
            bad += 1
            if len(errors) < MAX_REPORTED_ERRORS:
                errors.append(str(exc))
            continue
        if op is None:
            skipped += 1
        elif op.type == "document_chunk":
            key = (op.identity.tenant_id, str(op.args["source_ref"]))
            if key in groups:
                groups[key].chunks.extend(op.chunks)
            else:
                groups[key] = op
                ops.append(op)
        else:
            ops.append(op)
    if bad:
        more = f"\n... and {bad - len(errors)} more bad line(s)" if bad > len(errors) else ""
        raise CliError(f"{bad} bad line(s); nothing was imported:\n" + "\n".join(errors) + more)
    kept: list[_Op] = []
    later_topics: set[tuple[str, str, str]] = set()
    for op in reversed(ops):
        if op.type == "memory":
            topic = op.args["topic_key"]
            topic_id: tuple[str, str, str] | None = None
            if topic is not None:
                partition = scopes.home_partition(op.identity, op.args["scope"])
                topic_id = (op.identity.tenant_id, partition, topic.strip().lower())
            if op.superseded and (topic_id is None or topic_id not in later_topics):
                continue
            if topic_id is not None:
                later_topics.add(topic_id)
        kept.append(op)
    kept.reverse()
    return ParsedImport(kept, count, skipped, len(ops) - len(kept))


def join_chunks(chunks: list[tuple[int, int, str]]) -> str:
    """The text of a document from its exported chunks (in order, overlaps removed).

    ``chunk_text`` starts a chunk with the last sentence of the one before; the longest
    suffix of a chunk that begins the next one (at a word boundary) is that overlap.
    """
    ordered = [text for _, _, text in sorted(chunks, key=lambda c: (c[0], c[1]))]
    out = ordered[0]
    for prev, nxt in itertools.pairwise(ordered):
        words = prev.split(" ")
        overlap = ""
        for start in range(len(words)):
            suffix = " ".join(words[start:])
            if nxt == suffix or nxt.startswith(suffix + " "):
                overlap = suffix
                break
        rest = nxt[len(overlap) :].lstrip(" ")
        if rest:
            out += " " + rest
    return out


def _batches(ops: list[_Op], size: int) -> Iterator[list[_Op]]:
    """Consecutive ops of one type and identity, at most ``size`` at a time."""
    batch: list[_Op] = []
    for op in ops:
        batchable = op.type in ("message", "memory")
        if batch and (
            not batchable
            or op.type != batch[0].type
            or op.identity != batch[0].identity
            or len(batch) >= size
        ):
            yield batch
            batch = []
        batch.append(op)
        if not batchable:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class ImportCounts:
    lines: int = 0
    messages: int = 0
    tool_outputs: int = 0
    documents: int = 0
    document_chunks: int = 0
    memories: int = 0
    memories_new: int = 0
    summaries_skipped: int = 0
    superseded_skipped: int = 0


def write_ops(
    mem: AgentMemory, ops: list[_Op], counts: ImportCounts, batch_size: int, update: Any
) -> None:
    """Write validated ops in order, in batches; ``update(done, total)`` after each batch."""
    bound: dict[Identity, BoundMemory] = {}
    done = 0

    def bind_to(i: Identity) -> BoundMemory:
        if i not in bound:
            bound[i] = mem.bind(i.tenant_id, i.user_id, i.agent_id, i.session_id)
        return bound[i]

    total = len(ops)
    for batch in _batches(ops, batch_size):
        first = batch[0]
        m = bind_to(first.identity)
        try:
            if first.type == "message":
                m.add_messages([op.args for op in batch])
                counts.messages += len(batch)
            elif first.type == "memory":
                results = m.remember_many([op.args for op in batch])
                counts.memories += len(results)
                counts.memories_new += sum(1 for r in results if r.was_new)
            elif first.type == "tool_output":
                a = first.args
                m.add_tool_output(
                    a["tool_call_id"],
                    a["content"],
                    tool_name=a["tool_name"],
                    metadata=a["metadata"],
                )
                counts.tool_outputs += 1
            elif first.type == "document":
                a = first.args
                items = m.add_document(
                    a["text"], source_ref=a["source_ref"], metadata=a["metadata"]
                )
                counts.documents += 1
                counts.document_chunks += len(items)
            else:  # document_chunk group
                a = first.args
                items = m.add_document(
                    join_chunks(first.chunks), source_ref=a["source_ref"], metadata=a["metadata"]
                )
                counts.documents += 1
                counts.document_chunks += len(items)
        except Exception as exc:
            written = f"lines before line {first.line} were written" if done else "nothing"
            raise CliError(
                f"write failed at line {first.line} ({type(exc).__name__}: {exc}); "
                f"{written} was imported",
                EXIT_FAILED,
            ) from exc
        done += len(batch)
        update(done, total)


def _flush_with_progress(mem: AgentMemory, out: Output) -> None:
    kw, vec, _ = mem.records.index.pending_counts()
    total = max(kw, vec)
    if total == 0:
        return
    with out.progress("indexing", total) as update:
        while not mem.flush(timeout=0.5):
            kw, vec, _ = mem.records.index.pending_counts()
            update(total - min(max(kw, vec), total), total)
        update(total, total)


def _split_lines(text: str) -> list[str]:
    # Only "\n" ends a JSON line: str.splitlines() would also split at U+2028 and friends,
    # which json.dumps(ensure_ascii=False) leaves unescaped inside strings.
    return [line.removesuffix("\r") for line in text.split("\n")]


def _read_lines(path: str) -> list[str]:
    if path == "-":
        return _split_lines(sys.stdin.read())
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            return _split_lines(fh.read())
    except FileNotFoundError as exc:
        raise CliError(f"{path}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}", EXIT_FAILED) from exc


@command
def cmd_import(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    if args.batch_size < 1:
        raise CliError("--batch-size: must be a positive integer")
    lines = _read_lines(args.file)
    started = time.perf_counter()
    try:
        parsed = parse_jsonl(lines, resolve_identity(args))
    except CliError as exc:
        raise CliError(f"{args.file}: {exc}", exc.status) from exc
    counts = ImportCounts(
        lines=parsed.lines,
        summaries_skipped=parsed.summaries_skipped,
        superseded_skipped=parsed.superseded_skipped,
    )
    ops = parsed.ops
    with open_memory(args) as mem:
        with out.progress("importing", len(ops)) as update:
            write_ops(mem, ops, counts, args.batch_size, update)
        _flush_with_progress(mem, out)
    seconds = time.perf_counter() - started
    data = {**counts.__dict__, "seconds": round(seconds, 3)}
    text = (
        f"imported {counts.lines} line(s) in {seconds:.1f} s: {counts.messages} messages, "
        f"{counts.tool_outputs} tool outputs, {counts.documents} documents "
        f"({counts.document_chunks} chunks), {counts.memories} memories "
        f"({counts.memories_new} new)"
    )
    if counts.summaries_skipped:
        text += f"; skipped {counts.summaries_skipped} summaries (derived records)"
    if counts.superseded_skipped:
        text += (
            f"; skipped {counts.superseded_skipped} superseded memories that no later line "
            "supersedes again"
        )
    out.result(data, text=text)
    return EXIT_OK


# -- export ---------------------------------------------------------------------------------
def export_records(
    mem: AgentMemory, *, tenant_id: str | None = None, kinds: Iterable[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Every live record as an import-ready line (see the module docstring)."""
    sql = (
        "SELECT id, topic_key FROM memories WHERE topic_key IS NOT NULL "
        "AND deleted_at IS NULL AND anonymized_at IS NULL"
    )
    params: tuple[Any, ...] = ()
    if tenant_id is not None:
        sql += " AND tenant_id = ?"
        params = (tenant_id,)
    # topic_key is not part of MemoryItem; it decides supersession, so it must round-trip.
    topics = {row[0]: row[1] for row in mem.records.read(sql, params)}
    for rec in mem.export(tenant_id=tenant_id, kinds=kinds):
        kind = rec["kind"]
        ref = rec.get("source_ref")
        if kind == "chat_message":
            typ = "message"
        elif kind == "tool_output":
            is_call = isinstance(ref, str) and ref.startswith(_TOOL_OUTPUT_KEY_PREFIX)
            typ = "tool_output" if is_call else "message"
        else:
            typ = kind
        line: dict[str, Any] = {"type": typ, **rec}
        if kind == "memory":
            line["topic_key"] = topics.get(rec["id"])
        if typ == "tool_output":
            line["tool_call_id"] = rec["metadata"].get("tool_call_id")
            line["tool_name"] = rec["metadata"].get("tool_name")
        if ref and kind in ("chat_message", "tool_output"):
            found = mem.records.payload(rec["tenant_id"], ref)
            if found is not None and found[0] == rec["id"] and found[1] != rec["content"]:
                line["full_content"] = found[1]
        yield line


@command
def cmd_export(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    tenant = resolve_identity(args).tenant_id if args.tenant_only else None
    if tenant is not None:
        v.identity(tenant, "tenant_id", required=True)
    target = Path(args.output) if args.output else None
    n = 0
    with open_memory(args, background=False) as mem:
        if target is None:
            n = _write_jsonl(export_records(mem, tenant_id=tenant, kinds=args.kind), sys.stdout)
            sys.stdout.flush()
            if sys.stderr.isatty() and not out.json:
                out.note(f"exported {n} record(s)")
            return EXIT_OK
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                n = _write_jsonl(export_records(mem, tenant_id=tenant, kinds=args.kind), fh)
            os.replace(tmp, target)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise CliError(f"{target}: {exc.strerror or exc}", EXIT_FAILED) from exc
    out.result(
        {"exported": n, "path": str(target)},
        text=f"exported {n} record(s) to {markup(str(target))}",
    )
    return EXIT_OK


def _write_jsonl(lines: Iterable[dict[str, Any]], fh: IO[str]) -> int:
    n = 0
    for line in lines:
        fh.write(dumps(line) + "\n")
        n += 1
    return n


# -- stats / reindex / forget ---------------------------------------------------------------
@command
def cmd_stats(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with open_memory(args, background=False) as mem:
        stats = mem.stats()
        home = mem.home
    if out.json:
        out.result({"home": str(home), **stats.__dict__})
        return EXIT_OK
    table = Table(title=f"agentmem stats: {markup(str(home))}", title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("live records", str(stats.live))
    for kind, n in stats.by_kind.items():
        table.add_row(f"  {kind}", str(n))
    table.add_row("deleted", str(stats.deleted))
    table.add_row("superseded", str(stats.superseded))
    table.add_row("tenants", str(stats.tenants))
    table.add_row("keyword index pending", str(stats.keyword_pending))
    table.add_row("vector index pending", str(stats.vector_pending))
    table.add_row("vector index failed", str(stats.vector_failed))
    if stats.embedder is not None:
        embedder = f"{stats.embedder['model_name']} ({stats.embedder['dimensions']}-d)"
        table.add_row("embedder", markup(embedder))
    for name, size in stats.disk_bytes.items():
        table.add_row(f"disk: {name}", _human_bytes(size))
    out.print(table)
    return EXIT_OK


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


@command
def cmd_reindex(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    started = time.perf_counter()
    # the one way to switch a data dir to the CLI's embedder: re-embed every record
    with open_memory(args, background=False, allow_embedder_change=True) as mem:
        replaced = mem.replaced_embedder
        if replaced is not None:
            out.note(
                f"the vectors were made by {markup(replaced.describe())}; re-embedding every "
                f"record with {markup(mem.embedder.model_name)!r}"
            )
        with out.progress("reindexing") as update:
            n = mem.reindex(progress=update)
            update(n, n)
        mem.flush()
    seconds = time.perf_counter() - started
    out.result(
        {
            "reindexed": n,
            "seconds": round(seconds, 3),
            "replaced_embedder": None if replaced is None else replaced.to_dict(),
        },
        text=f"reindexed {n} live record(s) in {seconds:.1f} s",
    )
    return EXIT_OK


@command
def cmd_forget(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    forgotten: list[str] = []
    missing: list[str] = []
    with open_memory(args) as mem:
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


# -- demo -----------------------------------------------------------------------------------
@command
def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args)
