"""``agentmem import`` and ``agentmem export``: JSON Lines in and out.

The format is documented in :mod:`agentmem.maintenance.transfer` (also shown by
``agentmem import --help``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .. import validation
from ..client import Client
from ..maintenance import transfer
from ..memory import AgentMemory
from ..models import KINDS, Identity
from ._args import whole
from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    CliError,
    Output,
    bind,
    command,
    dumps,
    markup,
    open_memory,
    open_store,
    plain,
    read_input,
    resolve_identity,
    split_jsonl,
    url_of,
)


def _format_help() -> str:
    doc = transfer.__doc__ or ""
    return plain(doc[doc.index("Two kinds of line") :])


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "import",
        help="import records, messages, tool outputs, documents and memories from JSONL",
        description="Import JSON Lines: an export of `agentmem export` (restored exactly, "
        "idempotent) or lines written by hand (stored like API calls). Every line is "
        "validated before anything is written; a bad line aborts with its line number.",
        epilog=_format_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="JSONL file ('-' reads stdin)")
    p.add_argument(
        "--batch-size", type=whole(1), default=500, help="records per write (default 500)"
    )
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "export",
        help="write every live record (all tenants by default) as JSONL",
        description="Write every live record, closed session and agent-state entry as JSON "
        "Lines; `agentmem import` restores them exactly. Works beside a running writer.",
    )
    p.add_argument("-o", "--output", default=None, help="write to FILE instead of stdout")
    p.add_argument(
        "--tenant-only",
        action="store_true",
        help="only the tenant of --tenant / AGENTMEM_TENANT (default 'default')",
    )
    p.add_argument(
        "--kind", action="append", choices=KINDS, help="only records of this kind (repeat)"
    )
    p.set_defaults(func=cmd_export)


def _flush_with_progress(mem: AgentMemory, out: Output, stop: threading.Event) -> bool:
    """Wait for the indexes to catch up; False when interrupted first."""
    kw, vec, _ = mem.records.index.pending_counts()
    total = max(kw, vec)
    if total == 0:
        return True
    with out.progress("indexing", total) as update:
        while not mem.flush(timeout=0.5):
            if stop.is_set():
                return False
            kw, vec, _ = mem.records.index.pending_counts()
            update(total - min(max(kw, vec), total), total)
        update(total, total)
    return True


@contextmanager
def _interruptible(out: Output) -> Iterator[threading.Event]:
    """A first Ctrl-C (SIGINT) sets the event, so the import stops after the batch it is
    writing and says what it stored; a second one stops at once."""
    stop = threading.Event()

    def on_sigint(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        out.note("interrupted: stopping after the current batch (Ctrl-C again stops at once)")

    if threading.current_thread() is not threading.main_thread():
        yield stop  # signals reach the main thread only (an in-process caller's worker)
        return
    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def _describe(counts: transfer.ImportCounts) -> str:
    parts = [
        f"{counts.restored} record(s) restored ({counts.already_present} already present)",
        f"{counts.messages} messages ({counts.messages_new} new)",
        f"{counts.tool_outputs} tool outputs",
        f"{counts.documents} documents ({counts.document_chunks} chunks)",
        f"{counts.memories} memories ({counts.memories_new} new)",
        f"{counts.sessions} sessions",
        f"{counts.agent_state} agent-state entries",
    ]
    text = ", ".join(parts)
    if counts.superseded_skipped:
        text += (
            f"; skipped {counts.superseded_skipped} superseded memories that no later line "
            "supersedes again"
        )
    return text


#: Lines and bytes of one import request to a server (its body limit is 32 MiB by default).
REMOTE_PART_LINES = 2000
REMOTE_PART_BYTES = 8 * 1024 * 1024


def _parts(lines: list[str]) -> Iterator[tuple[int, list[str]]]:
    """(number of the first line, lines) of consecutive parts of a file."""
    first, size = 1, 0
    part: list[str] = []
    for n, line in enumerate(lines, 1):
        if part and (len(part) >= REMOTE_PART_LINES or size + len(line) > REMOTE_PART_BYTES):
            yield first, part
            first, part, size = n, [], 0
        part.append(line)
        size += len(line.encode("utf-8")) + 8
    if part:
        yield first, part


def _import_remote(
    client: Client,
    base: Identity,
    lines: list[str],
    plan: transfer.ImportPlan,
    batch_size: int,
    out: Output,
    stop: threading.Event,
) -> transfer.ImportCounts:
    """Send the file to the server in parts (numbered as in the file, so running it again
    stores nothing twice); stop between parts when asked."""
    total = transfer.ImportCounts(lines=plan.lines, planned=len(plan.ops))
    with out.progress("importing", len(lines), unit="lines") as update:
        for first, part in _parts(lines):
            if stop.is_set():
                total.interrupted = True
                break
            counts = client.import_lines(
                part,
                first_line=first,
                user_id=base.user_id,
                agent_id=base.agent_id,
                session_id=base.session_id,
                batch_size=batch_size,
            )
            for name, value in vars(counts).items():
                if type(value) is int and name not in ("lines", "planned"):
                    setattr(total, name, getattr(total, name) + value)
            update(first + len(part) - 1, len(lines))
    return total


def _plan(args: argparse.Namespace, lines: list[str], base: Identity) -> transfer.ImportPlan:
    """Every line of the file parsed and checked for ``base``, before anything is written."""
    try:
        return transfer.parse_lines(lines, base)
    except transfer.ImportFileError as exc:
        raise CliError(f"{args.file}: {exc.reason}") from exc


@command
def cmd_import(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    lines = split_jsonl(read_input(args.file))
    started = time.perf_counter()
    local = url_of(args) is None
    if local:  # every line checked before the data dir is opened (or made)
        plan = _plan(args, lines, resolve_identity(args))
        _refuse_a_tenant_it_would_ignore(args, plan)  # a server restores into the key's tenant
    with _interruptible(out) as stop, open_store(args) as store:
        base = bind(store, args).identity  # on a server: the key's tenant
        if not local:
            plan = _plan(args, lines, base)
        counts = transfer.ImportCounts(lines=plan.lines, planned=len(plan.ops))
        indexed = True
        if stop.is_set():
            counts.interrupted = True
        elif isinstance(store, Client):
            counts = _import_remote(store, base, lines, plan, args.batch_size, out, stop)
            while not counts.interrupted and not (indexed := store.flush(timeout=5)):
                if stop.is_set():
                    break
        else:
            with out.progress("importing", len(plan.ops), unit="lines") as update:
                counts = transfer.apply_plan(
                    store.context,
                    plan,
                    batch_size=args.batch_size,
                    progress=update,
                    should_stop=stop.is_set,
                )
            if not counts.interrupted:
                indexed = _flush_with_progress(store, out, stop)
    seconds = time.perf_counter() - started
    data = {**counts.__dict__, "indexed": indexed, "seconds": round(seconds, 3)}
    if counts.interrupted:
        text = (
            f"interrupted after {counts.applied} of {counts.planned} line(s) in {seconds:.1f} "
            f"s; stored before the interruption: {_describe(counts)}. Run the same import "
            "again to store the rest: nothing already stored is stored twice"
        )
    else:
        text = f"imported {counts.lines} line(s) in {seconds:.1f} s: {_describe(counts)}"
        if not indexed:
            text += (
                "; stopped waiting for the indexes (indexing goes on in the background, or "
                "at the next open)"
            )
    out.result(data, text=text)
    return EXIT_INTERRUPTED if counts.interrupted or not indexed else EXIT_OK


def _refuse_a_tenant_it_would_ignore(args: argparse.Namespace, plan: transfer.ImportPlan) -> None:
    """``--tenant staging import export.jsonl`` restored the export's rows into their own
    tenant (acme), ignoring the flag: refused, before anything is written."""
    given = getattr(args, "tenant", None)
    if given is None:
        return
    other = next((op for op in plan.ops if op.restored_tenant not in (None, given)), None)
    if other is None:
        return
    raise CliError(
        f"{args.file}: line {other.line} restores a row of tenant {other.restored_tenant!r} "
        f"as it was exported, whatever --tenant says: --tenant {given} would not move it. "
        "Leave --tenant out to restore the export as it was (only hand-written lines take "
        "--tenant); nothing was imported"
    )


def refuse_ignored_export_flags(args: argparse.Namespace, *, whole_store: bool) -> None:
    """An export writes whole tenants: refuse identity flags it would silently ignore.

    ``--user u1 export`` looks like an export of u1's data (an access request, say) but wrote
    every user's rows; ``--tenant acme export`` wrote every tenant's. The variables are left
    alone (they bind every command), only flags given on this command line are refused.
    """
    given = [
        f"--{name} {getattr(args, name)}"
        for name in ("user", "agent", "session")
        if getattr(args, name, None) is not None
    ]
    if given:
        raise CliError(
            f"export writes whole tenants and cannot narrow to {', '.join(given)}: leave "
            f"{'it' if len(given) == 1 else 'them'} out"
        )
    if whole_store and not args.tenant_only and getattr(args, "tenant", None) is not None:
        raise CliError(
            f"export writes every tenant by default; --tenant {args.tenant} does not narrow it: "
            "add --tenant-only to export only that tenant, or leave --tenant out"
        )


@command
def cmd_export(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    refuse_ignored_export_flags(args, whole_store=True)
    tenant = resolve_identity(args).tenant_id if args.tenant_only else None
    if tenant is not None:
        validation.identity(tenant, "tenant_id", required=True)
    target = Path(args.output) if args.output else None
    with open_memory(args, background=False, beside_writer=True) as mem:
        lines = transfer.export_lines(mem.context, tenant_id=tenant, kinds=args.kind)
        return write_export(out, lines, target)


def write_export(out: Output, lines: Iterable[dict[str, Any]], target: Path | None) -> int:
    """Write export lines to ``target`` (atomically: a temporary file renamed over it) or to
    stdout when ``target`` is None; report the count. Shared by local and remote export."""
    if target is None:
        n = _write_jsonl(lines, sys.stdout)
        sys.stdout.flush()
        if sys.stderr.isatty() and not out.json:
            out.note(f"exported {n} line(s)")
        return EXIT_OK
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            n = _write_jsonl(lines, fh)
        os.replace(tmp, target)
    except BaseException as exc:  # a half-written file never replaces the target
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise CliError(f"{target}: {exc.strerror or exc}", EXIT_FAILED) from exc
        raise
    out.result(
        {"exported": n, "path": str(target)},
        text=f"exported {n} line(s) to {markup(str(target))}",
    )
    return EXIT_OK


def _write_jsonl(lines: Iterable[dict[str, Any]], fh: IO[str]) -> int:
    n = 0
    for line in lines:
        fh.write(dumps(line) + "\n")
        n += 1
    return n
