"""``agentmem calibrate``: fit a calibration profile for the data dir's embedder.

Writes the labelled cases shipped with agentmem into a scratch store with the embedder
(``--embedder``, default MiniLM), fits the calibration and ranking weights on recall's
candidates, saves the profile in the data dir and prints its figures per family, in-sample,
held out and left out, and the held-out log loss of each way of fitting the score it tried
(``--json``: the whole report, profile included). A server on the data dir reads
the profile when it is (re)started.

Example::

    agentmem --home ./memdata --embedder e5 calibrate
"""

from __future__ import annotations

import argparse

from rich.table import Table

from ..calibration.fit import CalibrationReport, Figures
from ..evaluation import calibration_data  # noqa: F401 (registers the labelled data it fits on)
from ._args import whole
from ._common import EXIT_OK, Output, command, markup, open_memory


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "calibrate",
        help="fit the score calibration for the data dir's embedder (saved in the data dir)",
        description="Fit a calibration profile (calibration and ranking weights, score gap) "
        "for the embedder on the labelled cases shipped with agentmem, save it in the data "
        "dir and report it per family (Recall@5, Precision@5, expect-empty cases left "
        "empty, calibration error, relevant and irrelevant candidates kept at min_score "
        "0.3), in-sample and held out.",
    )
    p.add_argument(
        "--folds", type=whole(2), default=5, help="folds of the held-out figures (2 or more)"
    )
    p.set_defaults(func=cmd_calibrate)


@command
def cmd_calibrate(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    # create=False: on a mistyped --home, minutes of fitting would end in a new empty store
    with (
        open_memory(args, create=False) as mem,
        out.progress("collecting labelled cases") as update,
    ):
        report = mem.calibrate(folds=args.folds, progress=update)
    if out.json:
        out.result(report.to_dict())
        return EXIT_OK
    out.print(report_table(report))
    out.print(left_out_table(report))
    out.print(fits_table(report))
    profile = report.profile
    out.print(
        f"saved the profile of {markup(profile.embedder.describe())} in {markup(str(mem.home))} "
        f"(fitted on {markup(profile.fitted_on)}; score gap {profile.score_gap}; "
        f"{report.cases} cases, {report.candidates} candidates, {report.seconds:.0f} s)"
    )
    return EXIT_OK


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def report_table(report: CalibrationReport) -> Table:
    """The report's figures per family: held out, then in-sample."""
    table = Table(
        title=f"calibration per family ({report.folds}-fold held out / in-sample)",
        title_justify="left",
    )
    for name in ("family", "cases", "R@5", "P@5", "empty", "ECE", "kept rel", "kept irr"):
        table.add_column(name, justify="left" if name == "family" else "right", no_wrap=True)
    for family, f in report.families.items():
        held, ins = f.held_out, f.in_sample

        def pair(get: str, held: Figures = held, ins: Figures = ins) -> str:
            return f"{_cell(getattr(held, get))} / {_cell(getattr(ins, get))}"

        table.add_row(
            family,
            str(ins.cases),
            pair("recall"),
            pair("precision"),
            pair("expect_empty"),
            pair("ece"),
            pair("kept_relevant"),
            pair("kept_irrelevant"),
        )
    return table


def left_out_table(report: CalibrationReport) -> Table:
    """Each family's figures with the weights fitted on the other families."""
    table = Table(title="each family left out of the fit", title_justify="left")
    for name in ("family", "cases", "R@5", "P@5", "empty"):
        table.add_column(name, justify="left" if name == "family" else "right", no_wrap=True)
    for family, f in report.families.items():
        if f.left_out is not None:
            left = f.left_out
            table.add_row(
                family,
                str(left.cases),
                *(_cell(v) for v in (left.recall, left.precision, left.expect_empty)),
            )
    return table


def fits_table(report: CalibrationReport) -> Table:
    """Each way of fitting the score tried, with the held-out log loss of its scores (the
    lowest is the one saved)."""
    table = Table(title="fits tried (the lowest held-out log loss is kept)", title_justify="left")
    table.add_column("fit", no_wrap=True)
    table.add_column("held-out log loss", justify="right", no_wrap=True)
    table.add_column("kept", no_wrap=True)
    kept = min(report.held_out_log_loss, key=lambda k: report.held_out_log_loss[k], default="")
    for fit, loss in report.held_out_log_loss.items():
        table.add_row(fit, f"{loss:.4f}", "yes" if fit == kept else "")
    return table
