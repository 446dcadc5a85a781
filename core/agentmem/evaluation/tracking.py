"""Logging an evaluation run to a local, file-based MLflow tracking directory.

mlflow is optional (not a dependency of agentmem): every evaluation that offers ``--mlflow``
logs through :func:`log_run`, which says clearly when mlflow is missing or fails and never
changes the evaluation's own verdict.

Example:
    >>> log_run("mlruns", experiment="agentmem-golden", run_name="golden",
    ...         params={"top_k": 5}, metrics={"recall_at_5": 0.9})  # doctest: +SKIP
    'a1b2c3...'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import AgentMemError

__all__ = ["MlflowError", "MlflowUnavailable", "log_run", "metric_name"]


class MlflowError(AgentMemError):
    """Logging to MLflow failed (the evaluation itself is unaffected)."""


class MlflowUnavailable(MlflowError):
    """mlflow is not installed; ``--mlflow`` is optional and skipped."""


#: MLflow 3 refuses its file store unless this is set; a local tracking dir is what we want.
_MLFLOW_FILE_STORE_ENV = "MLFLOW_ALLOW_FILE_STORE"


def metric_name(name: str) -> str:
    """A metric name MLflow accepts (``recall@10`` -> ``recall_at_10``)."""
    return name.replace("@", "_at_")


def log_run(
    tracking_dir: str | Path,
    *,
    experiment: str,
    run_name: str | None,
    params: Mapping[str, Any],
    metrics: Mapping[str, float],
    tags: Mapping[str, str] | None = None,
    artifact: tuple[Mapping[str, Any], str] | None = None,
) -> str:
    """Log one run; returns its run id.

    Args:
        tracking_dir: Local directory of the file-based tracking store (created if missing).
        experiment: Experiment name.
        run_name: Name of the run (None: MLflow picks one).
        params: Run parameters (MLflow stores them as strings).
        metrics: Numeric metrics.
        tags: Run tags.
        artifact: ``(json-ready dict, file name)`` logged as a JSON artifact.

    Raises:
        MlflowUnavailable: mlflow is not installed.
        MlflowError: mlflow failed; the original exception is chained.
    """
    try:
        import mlflow
    except ImportError as exc:
        raise MlflowUnavailable(
            "mlflow is not installed (pip install mlflow); skipping MLflow logging"
        ) from exc
    path = Path(tracking_dir).expanduser().resolve()
    previous = os.environ.get(_MLFLOW_FILE_STORE_ENV)
    os.environ[_MLFLOW_FILE_STORE_ENV] = "true"
    try:
        path.mkdir(parents=True, exist_ok=True)
        mlflow.set_tracking_uri(path.as_uri())
        mlflow.set_experiment(experiment)
        with mlflow.start_run(run_name=run_name) as run:
            mlflow.log_params(dict(params))
            mlflow.log_metrics(dict(metrics))
            for key, value in (tags or {}).items():
                mlflow.set_tag(key, value)
            if artifact is not None:
                mlflow.log_dict(dict(artifact[0]), artifact[1])
            run_id: str = run.info.run_id
    except Exception as exc:  # mlflow raises many types; translate at the boundary
        raise MlflowError(
            f"MLflow logging to {path} failed: {type(exc).__name__}: {exc}", path=str(path)
        ) from exc
    finally:
        if previous is None:
            os.environ.pop(_MLFLOW_FILE_STORE_ENV, None)
        else:
            os.environ[_MLFLOW_FILE_STORE_ENV] = previous
    return run_id
