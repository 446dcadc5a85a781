"""``agentmem bench``: speed, memory and recall on a synthetic corpus, side by side with peers.

Modules: :mod:`~agentmem.bench.corpus` (the streaming corpus and its queries),
:mod:`~agentmem.bench.runner` (the measurements), :mod:`~agentmem.bench.peers` (LangChain
and LlamaIndex pipelines, imported only when run), :mod:`~agentmem.bench.report`
(Markdown, JSON, plots).

Example:
    >>> from agentmem.bench import BenchSettings, run_bench
    >>> result = run_bench(BenchSettings(memories=1000, queries=20, peers=False))  # doctest: +SKIP
    >>> sorted(result.summary)  # doctest: +SKIP
"""

from __future__ import annotations

from .corpus import Memory, iter_memories, memory_at
from .runner import BenchResult, BenchSettings, run_bench

__all__ = ["BenchResult", "BenchSettings", "Memory", "iter_memories", "memory_at", "run_bench"]
