"""``agentmem eval``: measure recall quality on a benchmark.

``agentmem eval --dataset FILE|golden [--json] [--out DIR] [--mlflow [DIR]] [--workdir DIR]``
runs a golden dataset (see :mod:`agentmem.evaluation.golden`; ``golden`` names the one that
ships with agentmem, :func:`agentmem.evaluation.golden_dataset_path`) in a fresh temporary
store and prints Recall@5, Precision@5, latency p50/p95, token budget compliance, cross-user and
cross-tenant safety and a table of the cases that missed. Exit status: 0 when every
blocking threshold holds, 1 when one fails (the breakdown says which), 2 for a dataset
that is not valid (every problem is listed with its JSON path).

``agentmem eval --extraction FILE`` measures derived memories (offline extraction, session
summaries, answers, and Recall@k with ``ingest()`` against ``add_messages()``) on a labelled
LoCoMo-shaped file; see :mod:`agentmem.evaluation.derived`.

Other benchmark sources are further members of the mutually exclusive source group:
``--locomo FILE`` (see :mod:`agentmem.cli.eval_locomo`). ``--suite`` runs the evaluation
suite's task families (see :mod:`agentmem.cli.eval_suite`); with it, ``--locomo FILE`` adds
the LoCoMo family rather than running LoCoMo alone.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..evaluation.datasets import dataset_path
from ..evaluation.derived import cli as derived_cli
from ..evaluation.golden import (
    GoldenReport,
    MlflowError,
    MlflowUnavailable,
    load_dataset,
    log_to_mlflow,
    render,
    run_golden,
    write_report,
)
from ._args import whole
from ._common import EXIT_FAILED, EXIT_OK, CliError, Output, command, shared_embedder
from .eval_locomo import add_locomo_arguments, run_locomo_cli
from .eval_suite import add_suite_arguments, run_suite_cli


def register(sub: Any) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate recall quality on a golden dataset",
        description=(
            "Run a benchmark in a fresh temporary store and report retrieval quality. "
            "With --dataset: a golden dataset; exits 1 when Recall@5 < 0.8, "
            "Precision@5 < 0.7, any cross-user or cross-tenant item comes back, or any "
            "recall exceeds its token budget."
        ),
    )
    # one source is required; --suite may add --locomo as a family (checked in run)
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--dataset",
        metavar="FILE",
        type=dataset_path,
        help="golden dataset JSON, or 'golden' for the one that ships with agentmem",
    )
    source.add_argument(
        "--extraction",
        metavar="FILE",
        type=Path,
        help=(
            "labelled LoCoMo-shaped JSON with gold observations (e.g. eval/derived_heldout.json): "
            "derived memories (extraction, summaries, answers, retrieval) against them"
        ),
    )
    derived_cli.add_arguments(p)
    source.add_argument(
        "--locomo", metavar="FILE", type=Path, help="LoCoMo benchmark JSON (list of samples)"
    )
    add_locomo_arguments(p)
    p.add_argument(
        "--suite",
        action="store_true",
        help=(
            "run the evaluation suite: R@5, R@10, hit@10 and expect-empty per task family for "
            "agentmem at defaults, each half alone and naive RRF, plus calibration (with "
            "--locomo FILE, LoCoMo is one of the families)"
        ),
    )
    add_suite_arguments(p)
    # default=SUPPRESS keeps a global `agentmem --json eval ...` working as well.
    p.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the report as JSON"
    )
    p.add_argument("--out", metavar="DIR", type=Path, help="write report.json and report.md here")
    p.add_argument(
        "--mlflow",
        metavar="DIR",
        nargs="?",
        const="",
        default=None,
        help=(
            "also log the metrics to a file-based MLflow tracking dir (default DIR: "
            "<out>/mlruns with --out, else ./mlruns); skipped when mlflow is not installed"
        ),
    )
    p.add_argument(
        "--workdir",
        metavar="DIR",
        type=Path,
        help="keep the evaluation store in this new or empty dir (to inspect misses)",
    )
    p.add_argument(
        "--max-misses",
        metavar="N",
        type=whole(0),
        default=None,
        help="show at most N rows of the misses table (default: all)",
    )
    p.set_defaults(func=run)


@command
def run(args: argparse.Namespace) -> int:
    if getattr(args, "suite", False):
        return run_suite_cli(args)
    if all(getattr(args, f, None) is None for f in ("dataset", "extraction", "locomo")):
        raise CliError("one of --dataset, --extraction, --locomo or --suite is required")
    if getattr(args, "extraction", None) is not None:
        return derived_cli.run_cli(args)
    if getattr(args, "locomo", None) is not None:
        return run_locomo_cli(args)
    return run_dataset(args)


def run_dataset(args: argparse.Namespace) -> int:
    """``agentmem eval --dataset FILE``: run, print, write and log a golden evaluation."""
    out = Output.from_args(args)
    dataset = load_dataset(args.dataset)
    total = len(dataset.cases)
    with out.progress(f"evaluating {total} cases", total=2 * total) as update:

        def progress(phase: str, done: int, n: int) -> None:
            update(done if phase == "write" else n + done, 2 * n)

        report = run_golden(
            dataset, embedder=shared_embedder(args), workdir=args.workdir, progress=progress
        )
    if out.json:
        out.result(report.to_dict())
    else:
        render(report, out.console, max_misses=args.max_misses)
    if args.out is not None:
        json_path, md_path = write_report(report, args.out)
        out.note(f"wrote {json_path} and {md_path}")
    if args.mlflow is not None:
        _log_mlflow(report, args, out)
    if not report.passed:
        if out.json:
            out.note("agentmem eval: FAILED: " + "; ".join(report.reasons))
        return EXIT_FAILED
    return EXIT_OK


def _log_mlflow(report: GoldenReport, args: argparse.Namespace, out: Output) -> None:
    if args.mlflow:
        tracking = Path(args.mlflow)
    elif args.out is not None:
        tracking = Path(args.out) / "mlruns"
    else:
        tracking = Path("mlruns")
    try:
        run_id = log_to_mlflow(report, tracking)
    except MlflowUnavailable as exc:
        out.note(f"--mlflow: {exc}")
        return
    except MlflowError as exc:  # optional logging never changes the verdict
        out.note(f"--mlflow: {exc}")
        return
    out.note(f"logged to MLflow at {tracking} (run {run_id})")
