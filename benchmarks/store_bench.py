"""Cost of ``AgentMemStore`` reads as the store grows: a search in one namespace, with and
without a query, and ``get``.

Builds a store of ``--items`` items spread over ``--namespaces`` namespaces
(``("memories", "u<i>")``, ``user_position=1``), embedded with a deterministic hash embedder
(the build is fast; the figures are the store's own work, not the model's), then times, median
of ``--repeat`` runs:

- ``search(("memories", "u7"), limit=10)`` (listing one namespace);
- ``search(("memories", "u7"), query=..., limit=10)`` (hybrid recall in one namespace);
- ``get`` of one item.

Usage::

    python benchmarks/store_bench.py --items 20000 --namespaces 20 [--workdir DIR]

Prints one JSON document. Nothing here is asserted by the tests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentmem import AgentMemory
from agentmem.bench.hash_embedder import HashEmbedder
from langchain_agentmem import AgentMemStore

WORDS = "tea chess rain jazz garden train river piano lamp orbit maple violet copper".split()


def median_ms(run: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        mem = AgentMemory(Path(tmp, "home"), embedder=HashEmbedder())
        store = AgentMemStore(mem, tenant_id="acme", user_position=1)
        started = time.perf_counter()
        for i in range(args.items):
            words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
            ns = ("memories", f"u{i % args.namespaces}")
            store.put(ns, f"k{i}", {"content": f"item {i} about {words}"})
        mem.flush()
        build_s = time.perf_counter() - started
        n = min(7, args.namespaces - 1)  # a namespace that exists, and its first item
        ns = ("memories", f"u{n}")
        report = {
            "items": args.items,
            "namespaces": args.namespaces,
            "build_s": round(build_s, 1),
            "search_ms": median_ms(lambda: store.search(ns, limit=10), args.repeat),
            "query_search_ms": median_ms(
                lambda: store.search(ns, query="jazz garden", limit=10), args.repeat
            ),
            "get_ms": median_ms(lambda: store.get(ns, f"k{n}"), args.repeat),
        }
        mem.close()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
