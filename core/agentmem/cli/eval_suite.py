"""``agentmem eval --suite``: the evaluation suite's options of the eval command, and its run.

See :mod:`agentmem.evaluation.suite` for the families, systems and metrics.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..evaluation.suite import FAMILIES, run_suite
from ._common import CliError, Output, shared_embedder


def add_suite_arguments(parser: Any) -> None:
    """Options of ``agentmem eval --suite`` (``--suite`` itself, ``--locomo`` and
    ``--embed-cache`` are added with the other sources)."""
    group = parser.add_argument_group("evaluation suite (with --suite)")
    group.add_argument(
        "--families",
        metavar="LIST",
        default=None,
        help=(
            f"comma-separated families to run, of {','.join(FAMILIES)} (default: every family "
            "whose data is there; locomo only with --locomo)"
        ),
    )
    group.add_argument(
        "--suite-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="family files to run instead of the bundled ones (<family>.json, same formats)",
    )


def run_suite_cli(args: argparse.Namespace) -> int:
    """Run ``agentmem eval --suite`` from parsed arguments; exit status 0.

    Prints a table per metric (families as rows; agentmem at defaults, each half alone and
    naive RRF as columns; the worst family last) and the calibration table; ``--json``
    prints the summary; ``--out DIR`` writes ``suite.json``, ``suite.md``,
    ``suite_cases.jsonl`` and ``candidates.jsonl.gz``.
    """
    out = Output.from_args(args)
    for flag in ("dataset", "extraction"):
        if getattr(args, flag, None) is not None:
            raise CliError(f"--suite cannot be combined with --{flag}")
    raw = getattr(args, "families", None)
    families = None if raw is None else [f.strip() for f in str(raw).split(",") if f.strip()]
    with out.progress("suite", total=None) as update:

        def progress(family: str, done: int, total: int) -> None:
            update(done, total)

        report = run_suite(
            families,
            locomo=getattr(args, "locomo", None),
            directory=getattr(args, "suite_dir", None),
            embedder=shared_embedder(args),
            embed_cache=getattr(args, "embed_cache", None),
            progress=progress,
        )
    if out.json:
        out.result(report.to_dict())
    else:
        # soft_wrap: the tables stay whole lines, whatever the terminal's width
        out.print(report.markdown(), markup=False, soft_wrap=True)
    if getattr(args, "out", None) is not None:
        paths = report.write(args.out)
        out.note("wrote " + ", ".join(str(p) for p in paths))
    return 0
