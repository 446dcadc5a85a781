"""Markdown report, JSON and PNG plots of :func:`agentmem.bench.run_bench` results."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..recall.profile import BESIDE
from .runner import BenchResult

__all__ = ["markdown", "plot", "write_report"]


def _mb(n: int | None) -> str:
    return "-" if n is None else f"{n / 1_048_576:,.1f} MB"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:,.2f}"


def _lat_row(name: str, s: dict[str, Any]) -> str:
    return f"| {name} | {s['n']} | {_ms(s['p50'])} | {_ms(s['p95'])} | {_ms(s['p99'])} | {_ms(s['max'])} |"


def _profile_lines(profile: dict[str, Any] | None) -> list[str]:
    """The per-phase table of ``--profile`` (nothing without it)."""
    if not profile:
        return []
    lines = [
        "",
        f"Where recall's time goes ({profile['recalls']} recalls, query embedding uncached; "
        "phases marked *beside* run on the vector worker while the calling thread does the "
        "others, so they are not part of the sum):",
        "",
        "| phase | mean ms | p50 ms | p95 ms | share of the mean total |",
        "|---|---:|---:|---:|---:|",
    ]
    for phase, v in profile["phases"].items():
        name = f"{phase} (beside)" if phase in BESIDE else phase
        lines.append(
            f"| {name} | {_ms(v['mean'])} | {_ms(v['p50'])} | {_ms(v['p95'])} | {v['share']:.0%} |"
        )
    return lines


def markdown(results: Sequence[BenchResult], plots: Sequence[str] = ()) -> str:
    """The figures of every run (one per corpus size) as Markdown."""
    lines = ["# agentmem bench", ""]
    if results:
        m = results[0].summary["machine"]
        lines += [
            f"Machine: {m['cpus']} CPUs, Python {m['python']}, {m['platform']}; "
            f"embedder `{results[0].summary['embedder']}`. Load average at start: "
            + ", ".join(f"{r.summary['machine']['loadavg_1m_at_start']}" for r in results)
            + " (the ratios below hold better than absolute times on a busy machine).",
            "",
        ]
    lines += [
        "## Summary",
        "",
        "| memories | bulk import rows/s (until flushed) | embedding rows/s | write ack p95 ms | "
        "embed_query p50 / p95 ms | recall p50 / p95 / p99 ms | recall p95 / embed p95 | "
        "Recall@k | peak RSS |",
        "|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in results:
        s = r.summary
        rec = s["recall"]["uncached_ms"]
        k = s["recall"]["settings"]["top_k"]
        lines.append(
            f"| {s['memories']:,} | {s['bulk_import']['rows_per_s_until_flushed']:,.0f} | "
            f"{s['bulk_import']['embedding_rows_per_s']:,.0f} | "
            f"{_ms(s['write_ack_ms']['all']['p95'])} | {_ms(s['embed_query_ms']['p50'])} / "
            f"{_ms(s['embed_query_ms']['p95'])} | "
            f"{_ms(rec['p50'])} / {_ms(rec['p95'])} / {_ms(rec['p99'])} | "
            f"{s['recall_p95_over_embed_p95']} | {s['recall'][f'recall@{k}']['all']:.3f} | "
            f"{_mb(s['peak_rss_bytes'])} |"
        )
    for r in results:
        s = r.summary
        n = s["memories"]
        bulk = s["bulk_import"]
        k = s["recall"]["settings"]["top_k"]
        lines += [
            "",
            f"## {n:,} memories",
            "",
            f"Corpus: {n:,} synthetic memories (seed {s['settings']['seed']}), one tenant and one "
            f"user, in batches of {bulk['batch_size']} alternating `add_messages` (chat "
            "messages) and `remember_many` (user facts); "
            f"{s['settings']['ack_samples']} single writes follow. Wall time {s['wall_s']:,.1f} s.",
            "",
            "| bulk import | value |",
            "|---|---:|",
            f"| records committed | {bulk['commit_s']:,.1f} s ({bulk['commit_rows_per_s']:,.0f} rows/s) |",
            f"| both indexes caught up (flush returned) | {bulk['flushed_s']:,.1f} s "
            f"({bulk['rows_per_s_until_flushed']:,.0f} rows/s) |",
            f"| background embedding rate (the bare model on a sample of the texts, in the same batches: the floor; caught up / floor; embeddings per row) | {bulk['embedding_rows_per_s']:,.0f} rows/s ({bulk['embedder_batch_rows_per_s']:,.0f} rows/s; {bulk['until_flushed_over_embedder']:.2f}x; {bulk['rows_embedded_per_row']:.2f}) |",
            f"| single writes: backlog after the last write / drain | "
            f"{s['single_writes']['backlog_after_writes']} rows / {s['single_writes']['drain_s']:.2f} s |",
            "",
            "| latency (ms) | n | p50 | p95 | p99 | max |",
            "|---|---:|---:|---:|---:|---:|",
            _lat_row("write ack: add_message", s["write_ack_ms"]["add_message"]),
            _lat_row("write ack: remember", s["write_ack_ms"]["remember"]),
            _lat_row("query embedding (model call, the floor)", s["embed_query_ms"]),
            _lat_row("recall, hybrid, no rerank (uncached query)", s["recall"]["uncached_ms"]),
            _lat_row("recall, query embedding cached", s["recall"]["cached_embedding_ms"]),
            "",
            f"Recall@{k} on {s['recall']['queries']} generated queries: "
            + ", ".join(
                f"{kind} {s['recall'][f'recall@{k}'][kind]:.3f}"
                for kind in ("all", "keyword", "paraphrase")
            )
            + f". Recall p95 / query-embedding p95 = {s['recall_p95_over_embed_p95']}.",
            "",
            f"Index sizes on disk: records {_mb(s['index_bytes']['records'])}, keywords "
            f"{_mb(s['index_bytes']['keywords'])}, chroma {_mb(s['index_bytes']['chroma'])}. "
            f"Peak RSS {_mb(s['peak_rss_bytes'])} (process peak so far; runs go in ascending N).",
        ]
        lines += _profile_lines(s.get("recall_profile"))
        misses = s["recall"][f"recall@{k}"].get("misses") or []
        if misses:
            lines += [
                "",
                f"Missed queries (first {min(len(misses), 5)} of those listed in bench.json):",
                "",
            ]
            lines += [
                f"- {m['kind']}: `{m['query']}` -> target `{m['target']}`; top hit `{m['top_hit']}`"
                for m in misses[:5]
            ]
        peers = s.get("peers")
        if peers:
            lines += ["", f"### Side by side ({peers['corpus']:,} memories)", ""]
            if peers["capped"]:
                lines += [
                    f"The peers ran on the first {peers['corpus']:,} memories (capped with "
                    "`--peer-memories`: their BM25 retrievers are in-memory Python); agentmem "
                    "was measured again on that same corpus.",
                    "",
                ]
            lines += [
                f"Status: {', '.join(f'{n}: {v}' for n, v in peers['status'].items())}. "
                f"Method: {peers['method']}.",
                "",
            ]
            systems = peers.get("systems", {})
            if systems:
                lines += [
                    f"| system | Recall@{k} (keyword / paraphrase) | p50 ms | p95 ms | p99 ms | "
                    "agentmem/peer p50 | agentmem/peer p95 | build s | writes/s |",
                    "|---|---|---:|---:|---:|---:|---:|---:|---:|",
                ]
                for name, res in systems.items():
                    lat = res["latency_ms"]
                    rk = res[f"recall@{k}"]
                    ratio = res.get("ratio_agentmem_over_peer", {})
                    main_store = res["build_s"] is None
                    lines.append(
                        f"| {name} | {rk['all']:.3f} ({rk['keyword']:.3f} / {rk['paraphrase']:.3f}) | "
                        f"{_ms(lat['p50'])} | {_ms(lat['p95'])} | {_ms(lat['p99'])} | "
                        f"{ratio.get('p50', '-')} | {ratio.get('p95', '-')} | "
                        f"{'(main store)' if main_store else res['build_s']} | "
                        f"{'(bulk import above)' if main_store else res.get('writes_per_s', '-')} |"
                    )
                floor = peers.get("embed_query_ms")
                if floor:
                    lines.append(
                        f"| (query embedding alone, the floor) | - | {_ms(floor['p50'])} | "
                        f"{_ms(floor['p95'])} | {_ms(floor['p99'])} | - | - | - | - |"
                    )
                lines += [
                    "",
                    "Writes/s: the corpus over the build time, document embeddings precomputed "
                    "(the write path without the model). agentmem, LangChain and LlamaIndex "
                    "write in batches of 1,000; mem0 (`add`) and LangGraph (`put`) one memory "
                    "per call, as their APIs take them.",
                ]
    if plots:
        lines += ["", "## Plots", ""]
        lines += [f"![{Path(p).stem}]({Path(p).name})" for p in plots]
    lines.append("")
    return "\n".join(lines)


def plot(results: Sequence[BenchResult], out: Path) -> list[Path]:
    """latency.png (distributions), throughput.png (import timeline), recall_vs_n.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    labels = {
        "ack_add_message_ms": "write ack: add_message",
        "ack_remember_ms": "write ack: remember",
        "embed_query_ms": "query embedding (floor)",
        "recall_ms": "recall (uncached query)",
        "recall_cached_embedding_ms": "recall (cached embedding)",
        "embed_query_peer_corpus_ms": "query embedding (peer corpus run)",
        "agentmem_peer_corpus_ms": "agentmem (peer corpus)",
        "langchain_ms": "LangChain Ensemble(BM25+Chroma)",
        "llamaindex_ms": "LlamaIndex QueryFusion(BM25+Chroma)",
        "mem0_ms": "mem0 OSS (local Qdrant, vector only offline)",
        "langgraph_ms": "LangGraph InMemoryStore (vector)",
    }
    fig, axes = plt.subplots(len(results), 1, figsize=(9, 1.0 + 3.2 * len(results)), squeeze=False)
    for ax, r in zip(axes[:, 0], results, strict=True):
        keys = [k for k in labels if r.samples.get(k)]
        data = [[max(v, 1e-3) for v in r.samples[k]] for k in keys]
        ax.boxplot(data, vert=False, whis=(5, 95), showfliers=True, flierprops={"markersize": 2})
        ax.set_yticks(range(1, len(keys) + 1), [labels[k] for k in keys], fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("ms (log scale); whiskers p5-p95")
        ax.set_title(f"latency, {r.summary['memories']:,} memories", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = out / "latency.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(9, 4))
    for r in results:
        if not r.timeline:
            continue
        t = [p[0] for p in r.timeline]
        n = r.summary["memories"]
        ax.plot(t, [p[1] / n for p in r.timeline], "--", label=f"{n:,}: committed")
        ax.plot(t, [p[2] / n for p in r.timeline], "-", label=f"{n:,}: embedded")
    ax.set_xlabel("seconds since bulk import start")
    ax.set_ylabel("share of corpus")
    ax.set_title("bulk import: records committed vs rows embedded by the background indexer")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "throughput.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    if len(results) > 1:
        ns = [r.summary["memories"] for r in results]
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
        for p in ("p50", "p95", "p99"):
            a1.plot(
                ns,
                [r.summary["recall"]["uncached_ms"][p] for r in results],
                "o-",
                label=f"recall {p}",
            )
        a1.plot(
            ns, [r.summary["embed_query_ms"]["p50"] for r in results], "k:", label="embed_query p50"
        )
        a1.set_xscale("log")
        a1.set_xlabel("memories")
        a1.set_ylabel("ms")
        a1.legend(fontsize=8)
        a1.grid(alpha=0.3)
        k = results[0].summary["recall"]["settings"]["top_k"]
        for kind in ("all", "keyword", "paraphrase"):
            a2.plot(
                ns, [r.summary["recall"][f"recall@{k}"][kind] for r in results], "o-", label=kind
            )
        a2.set_xscale("log")
        a2.set_xlabel("memories")
        a2.set_ylabel(f"Recall@{k}")
        a2.set_ylim(0, 1.02)
        a2.legend(fontsize=8)
        a2.grid(alpha=0.3)
        fig.suptitle("recall latency and quality vs corpus size")
        fig.tight_layout()
        path = out / "recall_vs_n.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def write_report(results: Sequence[BenchResult], out_dir: str | Path) -> list[Path]:
    """Write bench.json, report.md and the PNG plots (when matplotlib is installed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    try:
        plots = plot(results, out)
    except ImportError:
        plots = []
    data = {"runs": [r.summary for r in results]}
    (out / "bench.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(results, [p.name for p in plots]), encoding="utf-8")
    written += [out / "bench.json", out / "report.md", *plots]
    return written
