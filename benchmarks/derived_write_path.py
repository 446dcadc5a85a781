"""Cost of offline derived memories on the write path: ms per message.

For each session of a LoCoMo-shaped file (default: the first conversation), times

- ``OfflineLLM.extract`` alone over the session's turns;
- ``add_messages()`` and ``ingest()`` (messages + offline extraction + dedup + supersession)
  into two fresh stores, until the call returns (embedding runs in the background indexer
  and is timed apart, by ``flush()``).

Prints figures only (never asserted in tests).

    .venv/bin/python benchmarks/derived_write_path.py ../shared/data/locomo-dev.json [--conversations 1]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agentmem import AgentMemory
from agentmem.embeddings import default_embedder
from agentmem.evaluation.derived import load_gold, session_turns
from agentmem.evaluation.derived.retrieval import session_messages
from agentmem.llm import OfflineLLM


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("--conversations", type=int, default=1)
    args = parser.parse_args()
    convs = load_gold(args.file)[: args.conversations]
    llm = OfflineLLM()
    per_message: list[float] = []
    for conv in convs:
        for session in conv.sessions:
            turns = session_turns(conv, session)
            started = time.perf_counter()
            llm.extract(turns)
            per_message.append((time.perf_counter() - started) * 1000 / max(len(turns), 1))
    print(
        f"extract: {statistics.fmean(per_message):.3f} ms/message (sessions: median "
        f"{statistics.median(per_message):.3f}, max {max(per_message):.3f})"
    )
    embedder = default_embedder()
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("add_messages", "ingest"):
            mem = AgentMemory(Path(tmp) / mode, embedder=embedder, llm=llm)
            n = 0
            write_s = 0.0
            for conv in convs:
                for i in range(len(conv.sessions)):
                    messages = session_messages(conv, i)
                    if not messages:
                        continue
                    m = mem.bind("bench", user_id=conv.sample_id, session_id=f"s{i}")
                    started = time.perf_counter()
                    if mode == "ingest":
                        m.ingest(messages)
                    else:
                        m.add_messages(messages)
                    write_s += time.perf_counter() - started
                    n += len(messages)
            started = time.perf_counter()
            mem.flush()
            flush_s = time.perf_counter() - started
            mem.close()
            print(
                f"{mode}: {1000 * write_s / n:.2f} ms/message until the call returns, "
                f"{n} messages; then flush (embedding) {flush_s:.1f} s"
            )


if __name__ == "__main__":
    main()
