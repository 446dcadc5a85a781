"""Data-dir commands: stats, reindex (``doctor`` is in :mod:`.doctor_cmd`)."""

from __future__ import annotations

import argparse
import time

from rich.table import Table

from ..maintenance.stats import Stats
from ._common import EXIT_OK, Output, command, markup, open_memory


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("stats", help="record counts, index backlog and disk use")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser(
        "reindex",
        help="rebuild the keyword and vector indexes from the records store",
        description="Rebuild both indexes from the records, embedding every record again with "
        "the default embedder, which the data dir then records (also when its vectors were "
        "made by another embedder: this is how a data dir switches embedders).",
    )
    p.add_argument(
        "--keywords-only",
        action="store_true",
        help="write only the keyword index anew, from the records and the stored vectors, "
        "embedding nothing (after changing AGENTMEM_KEYWORD_CONTEXT or "
        "AGENTMEM_KEYWORD_CONTEXT_SIMILARITY)",
    )
    p.set_defaults(func=cmd_reindex)


@command
def cmd_stats(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with open_memory(args, background=False, beside_writer=True) as mem:
        stats = mem.stats()
        home = mem.home
    if out.json:
        out.result({"home": str(home), **stats.__dict__})
        return EXIT_OK
    out.print(stats_table(str(home), stats))
    return EXIT_OK


def stats_table(where: str, stats: Stats) -> Table:
    """The stats of a data dir (or of a server's, ``where`` naming it) as a table."""
    table = Table(title=f"agentmem stats: {markup(where)}", title_justify="left")
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
    return table


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
    if args.keywords_only:  # the vectors stay: so must the embedder that made them
        with open_memory(args, create=False, background=False) as mem:
            n = mem.reindex(keywords_only=True)
        seconds = time.perf_counter() - started
        out.result(
            {"reindexed": n, "seconds": round(seconds, 3), "keywords_only": True},
            text=f"rewrote the keyword index of {n} live record(s) in {seconds:.1f} s",
        )
        return EXIT_OK
    # the one way to switch a data dir to the CLI's embedder: re-embed every record
    with open_memory(args, create=False, background=False, allow_embedder_change=True) as mem:
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
            "keywords_only": False,
            "replaced_embedder": None if replaced is None else replaced.to_dict(),
        },
        text=f"reindexed {n} live record(s) in {seconds:.1f} s",
    )
    return EXIT_OK
