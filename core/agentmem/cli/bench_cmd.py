"""``agentmem bench``: speed, memory and recall on a synthetic corpus, and against peers.

``agentmem bench --memories N[,N...] [--queries Q] [--json] [--out DIR] [--peers/--no-peers]
[--peer-memories M]`` runs :func:`agentmem.bench.run_bench` once per corpus size (ascending)
and prints the figures; ``--out`` writes ``report.md``, ``bench.json`` and PNG plots (after
every size), and ``partial-<N>.json`` with the figures so far while a size is running. The
peers (LangChain, LlamaIndex) run when the ``bench`` extra is installed
(``pip install "agentmem-layer[bench]"``); otherwise they are reported as skipped.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.table import Table

from ..bench import BenchResult, BenchSettings, run_bench
from ..recall.profile import BESIDE
from ._args import whole
from ._common import EXIT_OK, Output, command, shared_embedder


def _sizes(raw: str) -> list[int]:
    try:
        sizes = sorted({int(x.replace("_", "").strip()) for x in raw.split(",") if x.strip()})
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected N or N,N,...; got {raw!r}") from exc
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("corpus sizes must be positive integers")
    return sizes


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="benchmark write/recall speed, memory and recall on a synthetic corpus",
        description=(
            "Generate a synthetic corpus of N memories (deterministic), bulk-import it into a "
            "fresh store and measure write acknowledgement latency, embedding and import "
            "throughput, recall latency p50/p95/p99, the query-embedding floor, peak RSS, "
            "index sizes and Recall@10; with --peers, the same corpus and queries through "
            "LangChain's and LlamaIndex's hybrid retrievers, mem0 and LangGraph's store. "
            "Figures are printed, never asserted."
        ),
    )
    p.add_argument(
        "--memories",
        type=_sizes,
        default=[10_000],
        metavar="N[,N...]",
        help="corpus size(s), e.g. 10000 or 10000,100000 (default 10000)",
    )
    p.add_argument(
        "--queries", type=whole(1), default=200, metavar="Q", help="recall queries (default 200)"
    )
    p.add_argument(
        "--peers",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the peers (LangChain, LlamaIndex, mem0, LangGraph) when installed "
        "(default: yes)",
    )
    p.add_argument(
        "--peer-memories",
        type=whole(1),
        default=None,
        metavar="M",
        help="corpus size for the peer comparison (default min(N, 20000))",
    )
    p.add_argument(
        "--ack-samples",
        type=whole(0),
        default=500,
        metavar="A",
        help="single writes timed for the acknowledgement latency (default 500)",
    )
    p.add_argument("--seed", type=whole(0), default=0, help="corpus seed (default 0)")
    p.add_argument(
        "--workdir", type=Path, default=None, help="where the data dirs go (default: a temp dir)"
    )
    p.add_argument("--keep", action="store_true", help="keep the data dirs afterwards")
    p.add_argument(
        "--profile",
        action="store_true",
        help="also time each phase of recall (one more pass over the queries) and print it",
    )
    p.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the figures as JSON"
    )
    p.add_argument(
        "--out", type=Path, default=None, metavar="DIR", help="write report.md, bench.json, PNGs"
    )
    p.set_defaults(func=run)


def _table(results: list[BenchResult]) -> Table:
    table = Table(title="agentmem bench")
    table.add_column("figure", no_wrap=True)
    for r in results:
        table.add_column(f"{r.summary['memories']:,}", justify="right")

    def row(name: str, fn: Any) -> None:
        cells = []
        for r in results:
            try:
                cells.append(fn(r.summary))
            except (KeyError, TypeError):
                cells.append("-")
        table.add_row(name, *cells)

    mb = 1_048_576
    row(
        "bulk import, rows/s until flushed",
        lambda s: f"{s['bulk_import']['rows_per_s_until_flushed']:,.0f}",
    )
    row(
        "bulk import, records committed rows/s",
        lambda s: f"{s['bulk_import']['commit_rows_per_s']:,.0f}",
    )
    row("background embedding rows/s", lambda s: f"{s['bulk_import']['embedding_rows_per_s']:,.0f}")
    row(
        "write ack p50 / p95 ms",
        lambda s: f"{s['write_ack_ms']['all']['p50']:.2f} / {s['write_ack_ms']['all']['p95']:.2f}",
    )
    row(
        "query embedding p50 / p95 ms",
        lambda s: f"{s['embed_query_ms']['p50']:.2f} / {s['embed_query_ms']['p95']:.2f}",
    )
    row(
        "recall p50 / p95 / p99 ms",
        lambda s: "{p50:.2f} / {p95:.2f} / {p99:.2f}".format(**s["recall"]["uncached_ms"]),
    )
    row(
        "recall, cached embedding p50 / p95 ms",
        lambda s: "{p50:.2f} / {p95:.2f}".format(**s["recall"]["cached_embedding_ms"]),
    )
    row("recall p95 / embedding p95", lambda s: f"{s['recall_p95_over_embed_p95']}")
    row(
        "Recall@k (keyword / paraphrase)",
        lambda s: "{all:.3f} ({keyword:.3f} / {paraphrase:.3f})".format(
            **s["recall"][f"recall@{s['recall']['settings']['top_k']}"]
        ),
    )
    row("peak RSS MB", lambda s: f"{s['peak_rss_bytes'] / mb:,.0f}")
    row(
        "disk MB records / keywords / chroma",
        lambda s: " / ".join(
            f"{s['index_bytes'][k] / mb:,.1f}" for k in ("records", "keywords", "chroma")
        ),
    )
    peers = [n for r in results for n in r.summary.get("peers", {}).get("systems", {})]
    for name in dict.fromkeys(n for n in peers if n != "agentmem"):  # every peer that ran
        row(
            f"{name}: Recall@k, p95 ms (corpus)",
            lambda s, name=name: "{:.3f}, {:.2f} ({:,})".format(
                s["peers"]["systems"][name][f"recall@{s['recall']['settings']['top_k']}"]["all"],
                s["peers"]["systems"][name]["latency_ms"]["p95"],
                s["peers"]["corpus"],
            ),
        )
        row(
            f"agentmem/{name} latency p50, p95",
            lambda s, name=name: "{p50}, {p95}".format(
                **s["peers"]["systems"][name]["ratio_agentmem_over_peer"]
            ),
        )
    row(
        "agentmem on peer corpus: Recall@k, p95 ms",
        lambda s: "{:.3f}, {:.2f}".format(
            s["peers"]["systems"]["agentmem"][f"recall@{s['recall']['settings']['top_k']}"]["all"],
            s["peers"]["systems"]["agentmem"]["latency_ms"]["p95"],
        ),
    )
    row("wall time s", lambda s: f"{s['wall_s']:,.1f}")
    return table


def _profile_table(results: list[BenchResult]) -> Table:
    """Per-phase mean ms (share of the mean total) of the profiled recalls, per size."""
    table = Table(title="recall profile: mean ms per phase (share of the total)")
    table.add_column("phase", no_wrap=True)
    profiled = [r for r in results if "recall_profile" in r.summary]
    for r in profiled:
        table.add_column(f"{r.summary['memories']:,}", justify="right")
    phases: list[str] = []
    for r in profiled:
        phases += [p for p in r.summary["recall_profile"]["phases"] if p not in phases]
    for phase in phases:
        cells = []
        for r in profiled:
            got = r.summary["recall_profile"]["phases"].get(phase)
            cells.append("-" if got is None else f"{got['mean']:.2f} ({got['share']:.0%})")
        label = f"{phase} (on the worker, beside)" if phase in BESIDE else phase
        table.add_row(label, *cells)
    return table


@command
def run(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    embedder = shared_embedder(args)
    results: list[BenchResult] = []
    for n in args.memories:
        settings = BenchSettings(
            memories=n,
            queries=args.queries,
            seed=args.seed,
            peers=args.peers,
            peer_memories=args.peer_memories,
            ack_samples=args.ack_samples,
            workdir=args.workdir,
            keep=args.keep,
            profile=args.profile,
        )
        checkpoint = None
        if args.out is not None:
            partial = args.out / f"partial-{n}.json"

            def checkpoint(summary: dict[str, Any], partial: Path = partial) -> None:
                partial.parent.mkdir(parents=True, exist_ok=True)
                partial.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")

        results.append(
            run_bench(settings, embedder=embedder, progress=out.note, checkpoint=checkpoint)
        )
        if args.out is not None:
            (args.out / f"partial-{n}.json").unlink(missing_ok=True)
        if args.out is not None:  # after every size, so a long run leaves partial results
            from ..bench.report import write_report

            write_report(results, args.out)
    for r in results:
        peers = r.summary.get("peers")
        if peers:
            for name, status in peers["status"].items():
                if status != "ok":
                    out.note(f"peer {name}: {status}")
    if out.json:
        out.result({"runs": [r.summary for r in results]})
    else:
        out.print(_table(results))
        if any("recall_profile" in r.summary for r in results):
            out.print(_profile_table(results))
    if args.out is not None:
        out.note(f"wrote {args.out / 'report.md'}, {args.out / 'bench.json'} and plots")
    return EXIT_OK
