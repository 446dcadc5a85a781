"""Evaluation of recall quality: the golden dataset (``agentmem eval --dataset``).

The project's golden dataset ships with the package: :func:`golden_dataset_path` (or
``agentmem eval --dataset golden``).

Example:
    >>> from agentmem.evaluation import golden_dataset_path, load_dataset, run_golden
    >>> report = run_golden(load_dataset(golden_dataset_path()))  # doctest: +SKIP
    >>> report.passed  # doctest: +SKIP
    True
"""

from __future__ import annotations

from .datasets import BUNDLED_DATASETS, dataset_path, golden_dataset_path
from .golden import (
    CaseResult,
    DatasetError,
    GoldenCase,
    GoldenDataset,
    GoldenReport,
    MlflowError,
    MlflowUnavailable,
    ReturnedItem,
    SetupMemory,
    TagSummary,
    Thresholds,
    load_dataset,
    log_to_mlflow,
    parse_dataset,
    relation,
    run_golden,
    score_case,
    summarize,
    write_report,
)

__all__ = [
    "BUNDLED_DATASETS",
    "CaseResult",
    "DatasetError",
    "GoldenCase",
    "GoldenDataset",
    "GoldenReport",
    "MlflowError",
    "MlflowUnavailable",
    "ReturnedItem",
    "SetupMemory",
    "TagSummary",
    "Thresholds",
    "dataset_path",
    "golden_dataset_path",
    "load_dataset",
    "log_to_mlflow",
    "parse_dataset",
    "relation",
    "run_golden",
    "score_case",
    "summarize",
    "write_report",
]
