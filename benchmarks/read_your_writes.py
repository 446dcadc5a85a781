"""Read-your-writes: is a burst of writes recallable at once, and what does that recall cost?

Each trial opens a fresh data dir, writes ``--burst`` chat messages (the last one about the
weather in Lisbon) and then, with no ``flush()``, asks ``recall("weather")`` (keywords) and a
paraphrase that shares no word with it (meaning). It prints whether each found the message,
whether the result said ``degraded``, and the time of that first recall; then the same recall
once the indexer has caught up, for comparison.

Usage::

    python benchmarks/read_your_writes.py --trials 5 --burst 50
"""

from __future__ import annotations

import argparse
import tempfile
import time

from agentmem import AgentMemory

WEATHER = "The weather in Lisbon was sunny and warm all week"
PARAPHRASE = "what was the climate like in Portugal?"


def trial(n: int, burst: int) -> dict[str, float | bool]:
    with tempfile.TemporaryDirectory() as home, AgentMemory(home) as mem:
        m = mem.bind(tenant_id="bench", user_id="u", session_id=f"s{n}")
        m.recall("warm up the query path", min_score=0)
        for i in range(burst - 1):
            m.add_message("user", f"note number {i} about the project schedule and budget")
        m.add_message("user", WEATHER)
        t = time.perf_counter()
        keyword = m.recall("weather", top_k=5, min_score=0)
        first_ms = (time.perf_counter() - t) * 1000
        meaning = m.recall(PARAPHRASE, top_k=5, min_score=0)
        mem.flush()
        t = time.perf_counter()
        m.recall("weather", top_k=5, min_score=0)
        indexed_ms = (time.perf_counter() - t) * 1000
        return {
            "keyword": any(h.content == WEATHER for h in keyword.items),
            "meaning": any(h.content == WEATHER for h in meaning.items),
            "degraded": keyword.degraded or meaning.degraded,
            "first_ms": first_ms,
            "indexed_ms": indexed_ms,
        }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--burst", type=int, default=50, help="messages written before the recall")
    args = p.parse_args()
    results = [trial(n, args.burst) for n in range(args.trials)]
    for n, r in enumerate(results):
        print(
            f"trial {n}: keyword found={r['keyword']} meaning found={r['meaning']} "
            f"degraded={r['degraded']}; first recall {r['first_ms']:.1f} ms, "
            f"once indexed {r['indexed_ms']:.1f} ms"
        )
    found = sum(bool(r["keyword"]) for r in results), sum(bool(r["meaning"]) for r in results)
    print(
        f"found right after the burst: keyword {found[0]}/{args.trials}, meaning {found[1]}/{args.trials}"
    )


if __name__ == "__main__":
    main()
