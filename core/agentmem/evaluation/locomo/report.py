"""What a LoCoMo run returns, and writing it to files."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..tracking import log_run, metric_name
from . import render
from .metrics import METRICS
from .peers import DELTA_METRIC


@dataclass
class LocomoReport:
    """Result of :func:`run_locomo`.

    Attributes:
        summary: JSON-ready figures (see :meth:`to_dict`).
        questions: one JSON-ready record per scored question: its evidence, and per mode the
            ranked turns (first 20), the rank of each evidence turn (None if not in the
            first 20) and its metrics.
    """

    summary: dict[str, Any]
    questions: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return self.summary

    def markdown(self) -> str:
        """The summary as Markdown tables."""
        return render.markdown(self.summary)

    def rich_table(self) -> Any:
        """The overall and per-category figures as a :class:`rich.table.Table`."""
        return render.rich_table(self.summary)

    def rich_deltas(self) -> Any:
        """agentmem hybrid Recall@10 minus each peer's, as a :class:`rich.table.Table`.

        None when the run had no peer or no hybrid mode.
        """
        return render.rich_deltas(self.summary)

    def write(self, out_dir: str | os.PathLike[str]) -> list[Path]:
        """Write ``locomo.json``, ``locomo.md`` and ``locomo_questions.jsonl`` into ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / "locomo.json", out / "locomo.md", out / "locomo_questions.jsonl"]
        paths[0].write_text(json.dumps(self.summary, indent=2) + "\n", encoding="utf-8")
        paths[1].write_text(self.markdown(), encoding="utf-8")
        with paths[2].open("w", encoding="utf-8") as fh:
            for q in self.questions:
                fh.write(json.dumps(q, ensure_ascii=False) + "\n")
        return paths

    def metrics(self) -> dict[str, float]:
        """Every figure as one flat dict (for MLflow and dashboards): per mode, overall and per
        category, and the hybrid-minus-peer deltas."""
        s = self.summary
        out: dict[str, float] = {}
        for mode, res in s["modes"].items():
            for metric in METRICS:
                out[metric_name(f"{mode}.{metric}")] = res["overall"][metric]
            for cat, r in res["by_category"].items():
                for metric in METRICS:
                    out[metric_name(f"{mode}.cat{cat}.{metric}")] = r[metric]
        for peer, d in (s.get(f"hybrid_minus_peer_{DELTA_METRIC}") or {}).items():
            out[metric_name(f"hybrid_minus_{peer}.{DELTA_METRIC}")] = d["overall"]
        return out


def log_to_mlflow(
    report: LocomoReport, tracking_dir: str | Path, *, experiment: str = "agentmem-locomo"
) -> str:
    """Log the run's settings as params and :meth:`LocomoReport.metrics` to a local file-based
    MLflow tracking directory; returns the run id.

    Raises:
        MlflowUnavailable: mlflow is not installed (it is not a dependency of agentmem).
        MlflowError: mlflow failed; the original exception is chained.
    """
    return log_run(
        tracking_dir,
        experiment=experiment,
        run_name=f"locomo {Path(str(report.summary['dataset'])).name}",
        params={k: str(v) for k, v in report.summary["settings"].items()},
        metrics=report.metrics(),
        artifact=(report.summary, "locomo.json"),
    )
