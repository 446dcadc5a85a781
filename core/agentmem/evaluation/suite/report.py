"""The suite's report: a table per metric (families as rows, systems as columns, a "worst
family" line), the calibration table, and the files ``--out`` writes."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .candidates import LabelledQuery, save_candidates
from .metrics import METRICS, SYSTEM_LABELS, SYSTEMS, CaseOutcome

_METRIC_TITLES = {
    "R@5": "R@5: share of each case's evidence among the first 5 hits",
    "R@10": "R@10: share of each case's evidence among the first 10 hits",
    "hit@10": "hit@10: cases with some evidence among the first 10 hits",
    "expect_empty": "expect-empty: cases about nothing stored that returned nothing",
}
_CALIBRATION_COLUMNS = (
    ("candidates", "candidates"),
    ("relevant", "relevant"),
    ("ece", "ECE"),
    ("kept_relevant", "kept relevant"),
    ("kept_irrelevant", "kept irrelevant"),
    ("expect_empty", "expect-empty"),
    ("ceiling", "evidence among candidates"),
)


def _cell(value: Any) -> str:
    """A count as an integer, a share or a score with three decimals, None as a dash."""
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    align = ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def worst(families: Mapping[str, Any], metric: str, system: str) -> tuple[str, float] | None:
    """(family, value) of the lowest ``metric`` of ``system`` (None when no family has it)."""
    values = [
        (name, v)
        for name, fam in families.items()
        if (v := fam["systems"][system][metric]) is not None
    ]
    return min(values, key=lambda nv: nv[1]) if values else None


@dataclass
class SuiteReport:
    """The outcome of :func:`~agentmem.evaluation.suite.run_suite`.

    Attributes:
        summary: Settings, skipped families and, per family: rows, case counts, each
            system's metrics, the calibration and the timing (JSON-ready).
        cases: Every case's outcome per system.
        candidates: Every case's labelled candidates (:mod:`.candidates`).
    """

    summary: dict[str, Any]
    cases: list[CaseOutcome] = field(default_factory=list)
    candidates: list[LabelledQuery] = field(default_factory=list)

    @property
    def families(self) -> dict[str, Any]:
        return dict(self.summary["families"])

    def to_dict(self) -> dict[str, Any]:
        """The summary plus the worst family of each metric and system."""
        fams = self.families
        return {
            **self.summary,
            "worst_family": {
                metric: {
                    system: None if (w := worst(fams, metric, system)) is None else list(w)
                    for system in SYSTEMS
                }
                for metric in METRICS
            },
        }

    def markdown(self) -> str:
        """Every table, as Markdown."""
        fams = self.families
        settings = self.summary["settings"]
        lines = [
            "# agentmem evaluation suite",
            "",
            f"embedder {settings['embedder']}; agentmem: `recall(q, top_k={settings['top_k']})`"
            f" at min_score {settings['min_score']} (scope `history` for conversations); "
            f"halves and naive RRF (k={settings['rrf_k']}): no threshold.",
        ]
        for name, why in self.summary.get("skipped", {}).items():
            lines.append(f"skipped {name}: {why}")
        header = ["family", "cases", *(SYSTEM_LABELS[s] for s in SYSTEMS)]
        for metric in METRICS:
            count = "expect_empty_cases" if metric == "expect_empty" else "cases"
            rows = [
                [name, str(fam[count]), *(_cell(fam["systems"][s][metric]) for s in SYSTEMS)]
                for name, fam in fams.items()
            ]
            worst_row = ["worst family", ""]
            for s in SYSTEMS:
                w = worst(fams, metric, s)
                worst_row.append("-" if w is None else f"{_cell(w[1])} ({w[0]})")
            lines += ["", f"## {_METRIC_TITLES[metric]}", "", *_table(header, [*rows, worst_row])]
        lines += [
            "",
            f"## calibration of agentmem's scores (candidates before any cut; kept: score >= "
            f"min_score {settings['min_score']})",
            "",
        ]
        cal_rows = [
            [name, *(_cell(fam["calibration"][key]) for key, _ in _CALIBRATION_COLUMNS)]
            for name, fam in fams.items()
        ]
        lines += _table(["family", *(label for _, label in _CALIBRATION_COLUMNS)], cal_rows)
        sizes = [
            [
                name,
                _cell(fam["rows"]),
                f"{fam['timing_s']['write']:.1f}",
                f"{fam['timing_s']['queries']:.1f}",
            ]
            for name, fam in fams.items()
        ]
        lines += ["", "## stores", ""]
        lines += _table(["family", "rows", "write + index s", "queries s"], sizes)
        return "\n".join(lines) + "\n"

    def write(self, out: str | os.PathLike[str]) -> list[Path]:
        """Write ``suite.json``, ``suite.md``, ``suite_cases.jsonl`` (every case per system)
        and ``candidates.jsonl.gz`` (:func:`~.candidates.load_candidates` reads it) into
        ``out``; returns the paths."""
        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        paths = [d / "suite.json", d / "suite.md", d / "suite_cases.jsonl"]
        paths[0].write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        paths[1].write_text(self.markdown(), encoding="utf-8")
        with paths[2].open("w", encoding="utf-8") as fh:
            for case in self.cases:
                fh.write(json.dumps(case.to_dict()) + "\n")
        paths.append(save_candidates(d / "candidates.jsonl.gz", self.candidates))
        return paths


__all__ = ["SuiteReport", "worst"]
