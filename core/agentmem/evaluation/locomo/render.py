"""A LoCoMo summary for people: Markdown tables (``locomo.md``) and rich tables (the terminal)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .data import CATEGORIES
from .metrics import METRICS, SHORT
from .peers import DELTA_METRIC


def markdown(s: Mapping[str, Any]) -> str:
    """The summary as Markdown tables."""
    lines = [
        "# LoCoMo evidence retrieval",
        "",
        f"Dataset `{s['dataset']}`: {s['conversations']} conversations, {s['turns']} turns, "
        f"{s['questions']['scored']} scored questions (categories 1-4).",
        "",
        f"Settings: top_k={s['settings']['top_k']}, min_score={s['settings']['min_score']}, "
        f"token_budget={s['settings']['token_budget']}, captions={s['settings']['captions']}, "
        f"embedder `{s['settings']['embedder']}`. Scored at turn granularity.",
        "",
        "| mode | " + " | ".join(METRICS) + " | p50 ms | p95 ms |",
        "|---|" + "---:|" * (len(METRICS) + 2),
    ]
    for mode, res in s["modes"].items():
        o = res["overall"]
        lat = res["latency_ms"]
        lines.append(
            f"| {mode} | "
            + " | ".join(f"{o[m]:.3f}" for m in METRICS)
            + f" | {lat['p50']:.1f} | {lat['p95']:.1f} |"
        )
    cats = [c for c in CATEGORIES if str(c) in next(iter(s["modes"].values()))["by_category"]]
    peers = s.get("peers") or {}
    if peers:
        lines += ["", "## Peers", ""]
        lines += [
            f"- `{name}`: {info['retriever']}; {info['status']}" for name, info in peers.items()
        ]
        lines += ["", f"Documents: {s['settings']['peer_documents']}."]
    deltas = s.get(f"hybrid_minus_peer_{DELTA_METRIC}") or {}
    if deltas:
        lines += [
            "",
            "## agentmem hybrid Recall@10 minus peer Recall@10",
            "",
            "| peer | all | " + " | ".join(f"{c} {CATEGORIES[c]}" for c in cats) + " |",
            "|---|---:|" + "---:|" * len(cats),
        ]
        for name, d in deltas.items():
            lines.append(
                f"| {name} | {d['overall']:+.3f} | "
                + " | ".join(f"{d['by_category'][str(c)]:+.3f}" for c in cats)
                + " |"
            )
    lines += ["", "## Per category (Recall@10 / NDCG@10)", ""]
    lines.append("| mode | " + " | ".join(f"{c} {CATEGORIES[c]} (n)" for c in cats) + " |")
    lines.append("|---|" + "---:|" * len(cats))
    for mode, res in s["modes"].items():
        cells = []
        for c in cats:
            r = res["by_category"][str(c)]
            cells.append(f"{r['recall@10']:.3f} / {r['ndcg@10']:.3f} ({r['n']})")
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    lines += ["", "## Per category, all metrics", ""]
    lines.append("| mode | category | n | " + " | ".join(METRICS) + " |")
    lines.append("|---|---|---:|" + "---:|" * len(METRICS))
    for mode, res in s["modes"].items():
        for c in cats:
            r = res["by_category"][str(c)]
            lines.append(
                f"| {mode} | {c} {CATEGORIES[c]} | {r['n']} | "
                + " | ".join(f"{r[m]:.3f}" for m in METRICS)
                + " |"
            )
    t = s["timing_s"]
    q = s["questions"]
    peer_index = f", peer indexes {t['peer_index']:.1f} s" if t.get("peer_index") else ""
    lines += [
        "",
        f"Wall time {t['total']:.1f} s (ingest {t['ingest']:.1f} s, indexing {t['index']:.1f} s, "
        f"queries {t['queries']:.1f} s{peer_index}).",
        "",
        f"Skipped: {q['skipped']}.",
        "",
    ]
    return "\n".join(lines)


def rich_table(s: Mapping[str, Any]) -> Any:
    """The overall and per-category figures as a :class:`rich.table.Table`."""
    from rich.table import Table

    table = Table(
        title=f"LoCoMo evidence retrieval ({s['questions']['scored']} questions, "
        f"{s['turns']} turns, {s['timing_s']['total']:.1f} s)"
    )
    table.add_column("mode", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("n", justify="right")
    for m in METRICS:
        table.add_column(SHORT[m], justify="right")
    table.add_column("p50 ms", justify="right")
    for mode, res in s["modes"].items():
        rows = [("all", res["overall"])] + [
            (f"{c} {CATEGORIES[int(c)]}", r) for c, r in res["by_category"].items()
        ]
        for i, (cat, r) in enumerate(rows):
            table.add_row(
                mode if i == 0 else "",
                cat,
                str(r["n"]),
                *(f"{r[m]:.3f}" for m in METRICS),
                f"{res['latency_ms']['p50']:.1f}" if i == 0 else "",
                end_section=i == len(rows) - 1,
            )
    return table


def rich_deltas(summary: Mapping[str, Any]) -> Any:
    """agentmem hybrid Recall@10 minus each peer's, as a :class:`rich.table.Table`.

    None when the run had no peer or no hybrid mode.
    """
    from rich.table import Table

    deltas = summary.get(f"hybrid_minus_peer_{DELTA_METRIC}") or {}
    if not deltas:
        return None
    cats = list(summary["modes"]["hybrid"]["by_category"])
    table = Table(title="agentmem hybrid R@10 minus peer R@10 (> 0: agentmem ahead)")
    table.add_column("peer", no_wrap=True)
    table.add_column("all", justify="right")
    for c in cats:
        table.add_column(f"{c} {CATEGORIES[int(c)]}", justify="right")
    for name, d in deltas.items():
        table.add_row(name, f"{d['overall']:+.3f}", *(f"{d['by_category'][c]:+.3f}" for c in cats))
    return table
