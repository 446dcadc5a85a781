"""The golden report for people: Markdown (``report.md``) and rich tables (the terminal)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .dataset import short
from .results import GoldenReport, fmt

if TYPE_CHECKING:
    from rich.console import Console


def markdown(self: GoldenReport) -> str:
    """The report as Markdown (``--out`` writes it as report.md)."""
    verdict = "PASSED" if self.passed else "FAILED"
    lines = [
        f"# agentmem golden evaluation: {verdict}",
        "",
        f"- dataset: `{self.dataset}` (version {self.version or 'n/a'}, {len(self.cases)} cases)",
        f"- embedder: `{self.embedder}`; top_k = {self.top_k}",
        f"- run at {self.started_at}, {self.duration_s:.1f} s",
        "",
    ]
    if self.reasons:
        lines += ["## Blocking failures", ""] + [f"- {r}" for r in self.reasons] + [""]
    if self.warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in self.warnings] + [""]
    lines += ["## Metrics", "", "| metric | value | threshold | status |", "|---|---|---|---|"]
    lines += [f"| {m} | {v} | {t} | {s} |" for m, v, t, s in self.summary_rows()]
    lines += [
        "",
        "## By tag",
        "",
        "| tag | cases | perfect | recall | precision |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {t.tag} | {t.cases} | {t.perfect} | {fmt(t.recall)} | {fmt(t.precision)} |"
        for t in self.by_tag
    ]
    lines += [
        "",
        "## By kind of content (calibration: mean score of the items returned beside the share",
        "of them that were expected)",
        "",
        "| kind | expected | found | recall | returned | right | precision | mean score |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {k.kind} | {k.expected} | {k.found} | {fmt(k.recall)} | {k.returned} | "
        f"{k.relevant} | {fmt(k.precision)} | {fmt(k.mean_score)} |"
        for k in self.by_kind
    ]
    misses = self.misses
    lines += ["", f"## Misses ({len(misses)} cases)", ""]
    if misses:
        lines += [
            "| case | tags | recall | precision | problems | missing | wrong items returned |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in misses:
            wrong = [
                f"{r.verdict}: {short(r.content, 70)} ({r.score:.2f})"
                for r in c.returned
                if r.verdict != "expected"
            ]
            lines.append(
                "| "
                + " | ".join(
                    _md(x)
                    for x in (
                        c.id,
                        ", ".join(c.tags),
                        fmt(c.recall),
                        fmt(c.precision),
                        "; ".join(c.problems),
                        "<br>".join(short(m, 70) for m in c.missing),
                        "<br>".join(wrong),
                    )
                )
                + " |"
            )
    lines.append("")
    return "\n".join(lines)


def render(self: GoldenReport, console: Console, *, max_misses: int | None = None) -> None:
    """Print the report with rich tables: metrics, per tag, then the misses."""
    from rich.markup import escape
    from rich.table import Table

    verdict = "[bold green]PASSED[/]" if self.passed else "[bold red]FAILED[/]"
    console.print(
        f"Golden evaluation of [bold]{escape(self.dataset)}[/] "
        f"({len(self.cases)} cases, embedder {escape(self.embedder)}, "
        f"{self.duration_s:.1f} s): {verdict}"
    )
    summary = Table(title="Metrics", title_justify="left")
    for col in ("metric", "value", "threshold", "status"):
        summary.add_column(col)
    colours = {"PASS": "green", "FAIL": "red", "WARN": "yellow"}
    for m, v, t, s in self.summary_rows():
        summary.add_row(m, v, t, f"[{colours[s]}]{s}[/]" if s in colours else s)
    console.print(summary)

    if self.by_tag:
        _render_tags(self, console)
    if self.by_kind:
        _render_kinds(self, console)
    _render_misses(self, console, max_misses)
    for w in self.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    if self.reasons:
        console.print("[bold red]Blocking failures:[/]")
        for r in self.reasons:
            console.print(f"  - {escape(r)}")


def _render_tags(self: GoldenReport, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    tags = Table(title="By tag", title_justify="left")
    for col in ("tag", "cases", "perfect", "recall", "precision"):
        tags.add_column(col, justify="left" if col == "tag" else "right")
    for ts in self.by_tag:
        tags.add_row(
            escape(ts.tag), str(ts.cases), str(ts.perfect), fmt(ts.recall), fmt(ts.precision)
        )
    console.print(tags)


def _render_kinds(self: GoldenReport, console: Console) -> None:
    from rich.table import Table

    kinds = Table(
        title="By kind of content (mean score of the items returned vs the share that was right)",
        title_justify="left",
    )
    for col in ("kind", "expected", "found", "recall", "returned", "right", "precision", "score"):
        kinds.add_column(col, justify="left" if col == "kind" else "right")
    for k in self.by_kind:
        kinds.add_row(
            k.kind,
            str(k.expected),
            str(k.found),
            fmt(k.recall),
            str(k.returned),
            str(k.relevant),
            fmt(k.precision),
            fmt(k.mean_score),
        )
    console.print(kinds)


def _render_misses(self: GoldenReport, console: Console, max_misses: int | None) -> None:
    from rich.markup import escape
    from rich.table import Table

    misses = self.misses
    shown = misses if max_misses is None else misses[:max_misses]
    if misses:
        table = Table(
            title=f"Misses ({len(misses)} of {len(self.cases)} cases)", title_justify="left"
        )
        table.add_column("case", overflow="fold")
        table.add_column("R", justify="right")
        table.add_column("P", justify="right")
        table.add_column("problems", overflow="fold")
        table.add_column("missing / wrong items", overflow="fold")
        for c in shown:
            details = [f"[red]missing:[/] {escape(short(m, 80))}" for m in c.missing]
            details += [
                f"[yellow]{r.verdict}:[/] {escape(short(r.content, 80))} ({r.score:.2f})"
                for r in c.returned
                if r.verdict != "expected"
            ]
            table.add_row(
                escape(c.id),
                fmt(c.recall),
                fmt(c.precision),
                escape("; ".join(c.problems)),
                "\n".join(details),
            )
        console.print(table)
        if len(shown) < len(misses):
            console.print(f"... {len(misses) - len(shown)} more (see --json or --out)")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
