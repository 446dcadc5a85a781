"""Writing a golden report to files and to MLflow."""

from __future__ import annotations

from pathlib import Path

from ..tracking import log_run
from .render import markdown
from .results import GoldenReport


def write_report(report: GoldenReport, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.md`` into ``out_dir`` (created if missing)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "report.json"
    md_path = out / "report.md"
    json_path.write_text(report.to_json() + "\n", encoding="utf-8")
    md_path.write_text(markdown(report), encoding="utf-8")
    return json_path, md_path


def log_to_mlflow(
    report: GoldenReport, tracking_dir: str | Path, *, experiment: str = "agentmem-golden"
) -> str:
    """Log the report to a local file-based MLflow tracking directory; returns the run id.

    Logs the dataset, version, case count, embedder and top_k as params, every number of
    :meth:`GoldenReport.metrics` as a metric, ``passed`` as a tag and the full report as the
    artifact ``report.json``.

    Raises:
        MlflowUnavailable: mlflow is not installed (it is not a dependency of agentmem).
        MlflowError: mlflow failed; the original exception is chained.
    """
    return log_run(
        tracking_dir,
        experiment=experiment,
        run_name=f"golden {Path(report.dataset).name}",
        params={
            "dataset": report.dataset,
            "dataset_version": report.version,
            "cases": len(report.cases),
            "embedder": report.embedder,
            "top_k": report.top_k,
        },
        metrics=report.metrics(),
        tags={"passed": str(report.passed)},
        artifact=(report.to_dict(), "report.json"),
    )
