"""Speed, memory and recall of agentmem on a synthetic corpus, side by side with peers.

A thin wrapper of ``agentmem bench`` (see ``agentmem bench --help``) that writes its report
into ``benchmarks/results/<N>`` unless ``--out`` is given::

    .venv/bin/python benchmarks/bench.py --memories 10000
    .venv/bin/python benchmarks/bench.py --memories 10000,100000 --peer-memories 20000
    nohup .venv/bin/python benchmarks/bench.py --memories 1000000 --no-peers &

The peers (LangChain EnsembleRetriever over BM25 + Chroma, LlamaIndex QueryFusionRetriever
over BM25 + Chroma) need ``pip install -e ".[bench]"``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentmem.cli import main


def run(argv: list[str]) -> int:
    if "--out" not in argv:
        sizes = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--memories"), "10000")
        out = Path(__file__).resolve().parent / "results" / sizes.replace(",", "-")
        argv = [*argv, "--out", str(out)]
    return main(["bench", *argv])


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
