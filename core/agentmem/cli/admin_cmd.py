"""Data-dir commands: stats, reindex (``doctor`` is in :mod:`.doctor_cmd`)."""

from __future__ import annotations

import argparse
import time

from rich.table import Table

from ..maintenance.stats import Stats
from ._common import EXIT_OK, Output, command, markup, open_memory


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "stats",
        help="record counts, index backlog and disk use",
        description="Count the data dir's rows (live, superseded, deleted; live by kind), "
        "the rows the keyword and vector indexes have not caught up with (and those whose "
        "embedding failed), the embedder the vectors were made with and the disk use of each "
        "store; every tenant. Works beside a running writer. With --url: the key's tenant "
        "(an admin key), or the whole store and the server's background jobs (an operator "
        "key).",
    )
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser(
        "reindex",
        help="rebuild the keyword and vector indexes from the records store",
        description="Rebuild both indexes from the records, embedding every record again with "
        "the embedder (--embedder, default MiniLM), which the data dir then records. To "
        "switch a data dir to another embedder, use --embeddings.",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--keywords-only",
        action="store_true",
        help="write only the keyword index anew, from the records and the stored vectors, "
        "embedding nothing (after changing AGENTMEM_KEYWORD_CONTEXT or "
        "AGENTMEM_KEYWORD_CONTEXT_SIMILARITY)",
    )
    which.add_argument(
        "--embeddings",
        action="store_true",
        help="embed every record again with --embedder (the way to switch embedders: the old "
        "vectors and calibration profile are dropped first, the new embedder is recorded); "
        "resumable: run it again after an interruption and it continues",
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
    if stats.calibration is not None:
        source = stats.calibration["source"]
        said = {"store": "fitted for this data dir", "bundled": "shipped for the model"}
        table.add_row("calibration", said.get(source, "none: run `agentmem calibrate`"))
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
    if args.embeddings:
        return _reindex_embeddings(args, out, started)
    # re-embeds every record too, so it may switch the data dir to the CLI's embedder
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


def _reindex_embeddings(args: argparse.Namespace, out: Output, started: float) -> int:
    """``reindex --embeddings``: start or continue the re-embedding of every record."""
    with open_memory(args, create=False, background=False, allow_embedder_change=True) as mem:
        replaced = mem.replaced_embedder
        target = f"{mem.embedder.model_name!r}"
        if replaced is not None:
            out.note(
                f"the vectors were made by {markup(replaced.describe())}: dropped them and its "
                f"calibration profile; embedding every record with {markup(target)}"
            )
        with out.progress(f"embedding with {markup(target)}") as bar:
            said = [-1]

            def update(done: int, total: int) -> None:
                bar(done, total)
                # a log (no terminal) gets a line per tenth instead of the bar
                step = max(total // 10, 1)
                if not out.json and not out.err.is_terminal and done // step > said[0]:
                    said[0] = done // step
                    out.note(f"embedded {done}/{total}")

            n = mem.reindex(embeddings=True, progress=update)
        profile = mem.calibration
    seconds = time.perf_counter() - started
    calibrated = (
        "no calibration profile: run `agentmem calibrate`"
        if profile is None
        else f"calibration profile fitted at {profile.fitted_at or 'build time'}"
    )
    out.result(
        {
            "reembedded": n,
            "seconds": round(seconds, 3),
            "embedder": mem.embedder.model_name,
            "replaced_embedder": None if replaced is None else replaced.to_dict(),
            "calibrated": profile is not None,
        },
        text=f"embedded {n} record(s) with {target} in {seconds:.1f} s; {calibrated}",
    )
    return EXIT_OK
