"""``agentmem eval --locomo FILE``: the LoCoMo options of the eval command, and its run.

See :mod:`agentmem.evaluation.locomo` for what is measured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..evaluation.locomo import ALL_MODES, log_to_mlflow, run_locomo
from ..evaluation.tracking import MlflowError
from ._args import whole
from ._common import Output, shared_embedder


def add_locomo_arguments(parser: Any) -> None:
    """LoCoMo options of ``agentmem eval`` (``--locomo`` itself is added by the command)."""
    group = parser.add_argument_group("LoCoMo (with --locomo)")
    group.add_argument(
        "--limit-questions",
        metavar="N",
        type=whole(1),
        default=None,
        help="score at most N questions (file order); for quick runs",
    )
    group.add_argument(
        "--modes",
        default=None,
        help=(
            f"comma-separated subset of {','.join(ALL_MODES)} (default: all; the peers "
            "langchain and llamaindex need the bench extra and are skipped, with a note, "
            "when it is not installed)"
        ),
    )
    group.add_argument(
        "--sample",
        action="append",
        metavar="ID",
        default=None,
        help="only this sample_id (repeatable)",
    )
    group.add_argument(
        "--embed-cache",
        metavar="DIR",
        type=Path,
        default=None,
        help=(
            "keep embeddings in DIR across runs (repeat runs skip the model for known texts); "
            "with --locomo or --suite"
        ),
    )
    group.add_argument(
        "--captions",
        action="store_true",
        help="append shared images' captions to the turn text ([shared an image: ...])",
    )
    group.add_argument(
        "--close-sessions",
        action="store_true",
        help="close each session after writing it, as an application would (session "
        "summaries and chunks are written, older sessions promoted to long-term)",
    )


def run_locomo_cli(args: Any) -> int:
    """Run ``agentmem eval --locomo FILE`` from parsed arguments; exit status 0.

    Uses ``args.locomo``, ``json``, ``out`` (writes ``locomo.json``, ``locomo.md`` and
    ``locomo_questions.jsonl``), ``workdir`` (keep the store there), ``mlflow`` and the
    options of :func:`add_locomo_arguments`.
    """
    out = Output.from_args(args)
    raw_modes = getattr(args, "modes", None)
    modes = None if raw_modes is None else [m.strip() for m in str(raw_modes).split(",")]
    if modes is not None:
        modes = [m for m in modes if m]
    workdir = getattr(args, "workdir", None)
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        if any(Path(workdir).iterdir()):
            raise ValidationError("workdir", f"{workdir} is not empty")
    with out.progress("LoCoMo", total=None) as update:

        def progress(stage: str, done: int, total: int) -> None:
            update(done, total)

        report = run_locomo(
            args.locomo,
            modes=modes,
            limit_questions=getattr(args, "limit_questions", None),
            samples=getattr(args, "sample", None),
            captions=bool(getattr(args, "captions", False)),
            close_sessions=bool(getattr(args, "close_sessions", False)),
            home=workdir,
            embedder=shared_embedder(args),
            embed_cache=getattr(args, "embed_cache", None),
            progress=progress,
        )
    if out.json:
        out.result(report.to_dict())
    else:
        out.print(report.rich_table())
        deltas = report.rich_deltas()
        if deltas is not None:
            out.print(deltas)
        q = report.summary["questions"]
        out.print(f"skipped: {q['skipped']}")
    for name, info in (report.summary.get("peers") or {}).items():
        if info["status"] != "ok":
            out.note(f"peer {name}: {info['status']}")
    if getattr(args, "out", None) is not None:
        paths = report.write(args.out)
        out.note("wrote " + ", ".join(str(p) for p in paths))
    mlflow_dir = getattr(args, "mlflow", None)
    if mlflow_dir is not None:
        tracking = (
            Path(mlflow_dir)
            if mlflow_dir
            else (Path(args.out) / "mlruns" if getattr(args, "out", None) else Path("mlruns"))
        )
        try:
            run_id = log_to_mlflow(report, tracking)
        except MlflowError as exc:  # optional logging never changes the outcome
            out.note(f"--mlflow: {exc}")
        else:
            out.note(f"logged to MLflow at {tracking} (run {run_id})")
    return 0
