"""Evaluation of recall quality: the golden dataset (``agentmem eval --dataset``).

Example:
    >>> from agentmem.evaluation import load_dataset, run_golden
    >>> report = run_golden(load_dataset("eval/memory_golden_dataset.json"))  # doctest: +SKIP
    >>> report.passed  # doctest: +SKIP
    True
"""

from __future__ import annotations

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
    "load_dataset",
    "log_to_mlflow",
    "parse_dataset",
    "relation",
    "run_golden",
    "score_case",
    "summarize",
    "write_report",
]
