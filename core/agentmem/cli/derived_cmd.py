"""Derived-memory commands: ``ingest``, ``history``, ``answer``, ``judge``, ``retention``.

``agentmem ingest FILE`` reads one conversation: a JSON array of messages, a JSON object
``{"session_id": ..., "messages": [...]}``, or JSON Lines with one message per line. A
message is ``{"role", "content"}`` plus optional ``id``, ``event_time`` and ``metadata``
(export lines of ``"type": "message"`` work too). Without ``--session`` (or a ``session_id``
in the file) the session is derived from the conversation, so re-ingesting the same file
stores nothing twice.

The LLM is ``--llm offline|anthropic``, else ``AGENTMEM_LLM``, else Anthropic when
``ANTHROPIC_API_KEY`` is set, else the offline heuristics.

Exit statuses: 0 success; 1 extraction failed for some messages (reported, with the model's
raw reply under ``--json``), a memory id was not found, or an LLM call failed; 2 bad input.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..client import Client
from ..embeddings import Embedder
from ..llm import LLM, AnthropicLLM, OfflineLLM, default_llm
from ..memory import AgentMemory
from ._args import TOP_K, whole
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    CliError,
    Output,
    bind,
    command,
    markup,
    open_memory,
    open_store,
    read_input,
    read_text_arg,
    resolve_identity,
    shared_embedder,
    short,
    split_jsonl,
    url_of,
)

_EXPORT_ONLY_KEYS = frozenset({"type", "session_id", "tenant_id", "user_id", "agent_id"})


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the derived-memory sub-commands."""

    def llm_flag(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--llm",
            choices=("offline", "anthropic"),
            default=None,
            help="LLM for extraction/judge/answers (default: $AGENTMEM_LLM, else anthropic "
            "when ANTHROPIC_API_KEY is set, else offline)",
        )

    p = sub.add_parser(
        "ingest",
        help="store a conversation and the memories extracted from it",
        description="Store a conversation (JSON array, {session_id, messages} object, or "
        "JSONL) verbatim plus the facts, preferences, instructions, decisions, tasks and "
        "events extracted from it. Re-ingesting the same conversation stores nothing twice.",
    )
    p.add_argument("file", help="conversation file ('-' reads stdin)")
    llm_flag(p)
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("history", help="the supersession chain of a memory, oldest first")
    p.add_argument("memory_id")
    p.set_defaults(func=cmd_history)

    p = sub.add_parser(
        "answer", help="a grounded answer from recalled memories (empty if nothing relevant)"
    )
    p.add_argument("question", help="the question ('-' reads stdin)")
    p.add_argument("-k", "--top-k", type=TOP_K, default=5, help="memories to recall (1..20)")
    llm_flag(p)
    p.set_defaults(func=cmd_answer)

    p = sub.add_parser(
        "judge",
        help="run the supersession judge over memories not yet judged (all tenants)",
    )
    p.add_argument("--limit", type=whole(1), default=None, help="judge at most this many")
    llm_flag(p)
    p.set_defaults(func=cmd_judge)

    p = sub.add_parser(
        "retention",
        help="anonymize retired (soft-deleted / superseded) rows past their TTLs",
        description="Anonymize rows soft-deleted longer than "
        "AGENTMEM_MEMORY_ANONYMIZE_SOFT_TTL_DAYS (30) or superseded longer than "
        "AGENTMEM_MEMORY_ANONYMIZE_SUP_TTL_DAYS (90), in every tenant unless --tenant-only.",
    )
    p.add_argument("--dry-run", action="store_true", help="only report what would change")
    p.add_argument(
        "--tenant-only", action="store_true", help="only the tenant of --tenant / AGENTMEM_TENANT"
    )
    p.set_defaults(func=cmd_retention)


def _llm(args: argparse.Namespace, embedder: Embedder) -> LLM:
    choice = getattr(args, "llm", None)
    if choice == "offline":
        return OfflineLLM(embedder)
    if choice == "anthropic":
        return AnthropicLLM.from_env()
    return default_llm(embedder=embedder)


@contextmanager
def _open(args: argparse.Namespace, *, create: bool = True) -> Iterator[AgentMemory]:
    embedder = shared_embedder(args)
    with open_memory(args, create=create, embedder=embedder, llm=_llm(args, embedder)) as mem:
        yield mem


@contextmanager
def _open_store(args: argparse.Namespace, *, create: bool = True) -> Iterator[AgentMemory | Client]:
    """A server (``--url``: its own LLM answers and extracts) or the data dir."""
    if url_of(args) is not None:
        if getattr(args, "llm", None):
            raise CliError("--llm: with --url the server's LLM is used")
        with open_store(args) as client:
            yield client
        return
    with _open(args, create=create) as mem:
        yield mem


def read_conversation(text: str, name: str) -> tuple[str | None, list[dict[str, Any]]]:
    """(session id or None, messages) from JSON or JSON Lines text."""
    stripped = text.strip()
    if not stripped:
        raise CliError(f"{name}: no messages")
    data: Any
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError:
        data = []
        for n, line in enumerate(split_jsonl(stripped), start=1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise CliError(f"{name}: line {n}: not valid JSON: {exc.msg}") from exc
    session: str | None = None
    if isinstance(data, dict):
        if "messages" in data:
            session = data.get("session_id")
            data = data["messages"]
        else:
            data = [data]
    if not isinstance(data, list):
        raise CliError(f"{name}: expected a list of messages")
    messages: list[dict[str, Any]] = []
    for n, msg in enumerate(data, start=1):
        if not isinstance(msg, dict):
            raise CliError(f"{name}: message {n} is not a JSON object")
        if msg.get("type", "message") != "message":
            raise CliError(f"{name}: message {n} has type {msg.get('type')!r}, not 'message'")
        if session is None and isinstance(msg.get("session_id"), str):
            session = msg["session_id"]
        messages.append({k: val for k, val in msg.items() if k not in _EXPORT_ONLY_KEYS})
    if session is not None and not isinstance(session, str):
        raise CliError(f"{name}: session_id must be a string")
    return session, messages


@command
def cmd_ingest(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    text = read_input(args.file)
    name = "stdin" if args.file == "-" else args.file
    file_session, messages = read_conversation(text, name)
    with _open_store(args) as mem:
        m = bind(mem, args)
        if m.session_id is None and file_session is not None:
            m = mem.bind(m.tenant_id, m.user_id, m.agent_id, file_session)
        result = m.ingest(messages)
        mem.flush(timeout=60)
    failed = [e for e in result.errors if e.stage != "judge"]
    out.result(
        result,
        text=(
            f"session {markup(result.session_id)}: {result.messages_stored} messages "
            f"({result.messages_new} new); memories: {result.memories_created} created, "
            f"{result.memories_duplicate} duplicate, {result.memories_superseded} superseded "
            f"(extractor: {markup(result.extractor)})"
        ),
    )
    for err in result.errors:
        out.note(f"{err.stage} error ({len(err.source_ids)} message(s)): {err.message}")
    return EXIT_FAILED if failed else EXIT_OK


@command
def cmd_history(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with _open_store(args, create=False) as mem:
        chain = bind(mem, args).history(args.memory_id)
    out.result({"memory_id": args.memory_id, "chain": chain})
    for item in chain:
        state = f"superseded by {item.superseded_by}" if item.superseded_by else "current"
        out.print(
            f"{item.created_at:%Y-%m-%d %H:%M}  {markup(item.id)}  {markup(f'[{state}]')}\n"
            f"    {markup(short(item.content))}"
        )
    return EXIT_OK


@command
def cmd_answer(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    question = read_text_arg(args.question, "question")
    with _open_store(args, create=False) as mem:
        mem.flush(timeout=30)
        result = bind(mem, args).answer(question, top_k=args.top_k)
    out.result(
        result,
        text=markup(result.text) if result.text else "[dim](nothing relevant is remembered)[/]",
    )
    if result.used_ids:
        out.print("[dim]sources: " + ", ".join(markup(i) for i in result.used_ids) + "[/]")
    return EXIT_OK


@command
def cmd_judge(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with _open(args, create=False) as mem:
        result = mem.judge_pending(limit=args.limit)
    out.result(
        result,
        text=f"judged {result.judged}; superseded {len(result.superseded)}; "
        f"failed (fail-open) {result.failed}",
    )
    return EXIT_OK


@command
def cmd_retention(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    tenant = resolve_identity(args).tenant_id if args.tenant_only else None
    with _open(args, create=False) as mem:
        result = mem.retention(dry_run=True if args.dry_run else None, tenant_id=tenant)
    verb = "would anonymize" if result.dry_run else "anonymized"
    out.result(
        result,
        text=f"{verb} {result.soft_deleted + result.superseded} rows "
        f"({result.soft_deleted} soft-deleted, {result.superseded} superseded)"
        + ("" if result.dry_run else f"; {result.scrubbed} owner labels cleared"),
    )
    return EXIT_OK
