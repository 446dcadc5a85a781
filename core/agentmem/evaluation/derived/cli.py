"""``agentmem eval --extraction FILE``: derived memories against gold annotations.

Prints the figures of :func:`~.report.run_extraction_eval` (``--json`` for the whole report);
``--out DIR`` also writes every memory, miss, summary and question as JSON lines. Options of
its own: ``--no-retrieval`` (skip the two stores and the questions: extraction and summaries
only, seconds instead of minutes) and ``--speaker-in metadata|content`` (where each turn names
its speaker: ``metadata["speaker"]``, the default, or a leading ``"Name: "`` of its text). It
also reads ``--sample``, ``--limit-questions`` and ``--embed-cache`` when the command defines
them (the LoCoMo options). Exit status 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import ValidationError
from .gold import SPEAKER_FORMS
from .report import run_extraction_eval

__all__ = ["add_arguments", "run_cli"]


def add_arguments(parser: Any) -> None:
    """Options of ``agentmem eval`` for ``--extraction`` (the flag itself is the command's)."""
    group = parser.add_argument_group("derived memories (with --extraction)")
    group.add_argument(
        "--no-retrieval",
        action="store_true",
        help="skip the ingest() vs add_messages() stores and the questions",
    )
    group.add_argument(
        "--speaker-in",
        choices=SPEAKER_FORMS,
        default="metadata",
        help=(
            "where each turn names its speaker: metadata (metadata['speaker'], the default) "
            "or content (a leading 'Name: ' of the text, no speaker field)"
        ),
    )


def run_cli(args: Any) -> int:
    from ...cli._common import Output, shared_embedder
    from ..locomo import DiskEmbeddingCache

    out = Output.from_args(args)
    workdir = getattr(args, "workdir", None)
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        if any(Path(workdir).iterdir()):
            raise ValidationError("workdir", f"{workdir} is not empty")
    embedder: Any = shared_embedder(args)
    cache_dir = getattr(args, "embed_cache", None)
    cache = DiskEmbeddingCache(embedder, cache_dir) if cache_dir is not None else None
    try:
        with out.progress("derived memories", total=None) as update:
            report = run_extraction_eval(
                args.extraction,
                embedder=cache or embedder,
                retrieval=not getattr(args, "no_retrieval", False),
                samples=getattr(args, "sample", None),
                limit_questions=getattr(args, "limit_questions", None),
                home=workdir,
                progress=lambda _stage, done, total: update(done, total),
                speaker_in=getattr(args, "speaker_in", "metadata"),
            )
    finally:
        if cache is not None:
            cache.close()
    if out.json:
        out.result(report.to_dict())
    else:
        for line in report.lines():
            out.print(line, markup=False, highlight=False)
    if getattr(args, "out", None) is not None:
        paths = report.write(args.out)
        out.note("wrote " + ", ".join(str(p) for p in paths))
    return 0
