"""LoCoMo evidence retrieval (hybrid / keyword / vector / peers) on a LoCoMo JSON file.

A thin wrapper of ``agentmem eval --locomo FILE`` that defaults to the development split
beside the repository (``../shared/data/locomo-dev.json``, benchmark data that is never
copied into the project) and keeps an embedding cache in ``~/.cache/agentmem-locomo``, so
repeated runs while tuning retrieval spend their time on retrieval::

    .venv/bin/python benchmarks/locomo_eval.py                      # table
    .venv/bin/python benchmarks/locomo_eval.py --out /tmp/locomo    # + JSON, Markdown, per question
    .venv/bin/python benchmarks/locomo_eval.py --no-cache --captions

Per-question rankings land in ``<out>/locomo_questions.jsonl`` (each mode's first 20 turns
and the rank of every evidence turn), for diffing two runs. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentmem.cli import main

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
CACHE = Path("~/.cache/agentmem-locomo").expanduser()


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--no-cache", action="store_true", help="embed everything afresh")
    args, rest = parser.parse_known_args(argv)
    if not args.file.exists():
        print(f"no LoCoMo file at {args.file}; pass its path", file=sys.stderr)
        return 2
    cli = ["eval", "--locomo", str(args.file), *rest]
    if not args.no_cache and "--embed-cache" not in rest:
        cli += ["--embed-cache", str(CACHE)]
    return main(cli)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
