"""Helpers of the reliability tests, importable by the tests and by their writer subprocesses.

- :class:`HashEmbedder`: a deterministic bag-of-words embedder (hashing trick, L2-normalised).
  The crash and concurrency tests are about durability and consistency, not ranking quality,
  and they embed thousands of rows on a loaded machine. Their texts share most words, so the
  vectors are close together, and two texts whose distinguishing words hash alike get the very
  same vector: an approximate (HNSW) search may miss a given row, even when asked for the
  whole collection. Check a stored vector by id against ``embed_documents`` instead.
- ``python _reliability_support.py writer HOME RUN MODE``: the writer process the crash tests
  SIGKILL. It prints one line per acknowledged id (``ACK <batch> <id>``) and flushes each.
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
from collections.abc import Sequence

import numpy as np

DIM = 256
TENANT = "crash-tenant"
USER = "u1"
SESSION = "s1"
BATCH = 25


class HashEmbedder:
    """Deterministic hashing embedder; ``delay`` seconds of sleep per document batch."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0

    @property
    def model_name(self) -> str:
        return "test-hash-256"

    @property
    def dimensions(self) -> int:
        return DIM

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(DIM, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
            vec[h % DIM] += 1.0 if (h >> 16) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            norm = 1.0
        return vec / norm

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


def token(run: int, batch: int, item: int) -> str:
    """A unique keyword of one written row (one Tantivy token, unchanged by the stemmer)."""
    return f"zq{run}x{batch}x{item}"


def content(kind: str, run: int, batch: int, item: int) -> str:
    return f"{kind} {token(run, batch, item)} of batch {batch} run {run} about harbour lighthouse"


def _writer(home: str, run: int, mode: str) -> None:
    from agentmem import AgentMemory

    delay = 0.2 if mode == "embedding" else 0.0
    mem = AgentMemory(home, embedder=HashEmbedder(delay), background=mode != "reindex")
    m = mem.bind(tenant_id=TENANT, user_id=USER, session_id=SESSION)
    out = sys.stdout
    out.write("OPEN\n")
    out.flush()
    if mode == "reindex":
        out.write("REINDEX\n")
        out.flush()

        def progress(done: int, total: int) -> None:
            out.write(f"PROGRESS {done} {total}\n")
            out.flush()

        mem.reindex(progress=progress)
        out.write("REINDEXED\n")
        out.flush()
        time.sleep(60)
        return
    batches = 40 if mode == "embedding" else 10_000
    for batch in range(batches):
        if batch % 2 == 0:
            results = m.remember_many([content("memory", run, batch, i) for i in range(BATCH)])
            ids = [r.id for r in results]
        else:
            items = m.add_messages(
                [
                    {"role": "user", "content": content("message", run, batch, i)}
                    for i in range(BATCH)
                ]
            )
            ids = [it.id for it in items]
        for id_ in ids:
            out.write(f"ACK {batch} {id_}\n")
        out.flush()
    if mode == "embedding":
        while True:  # report the indexer's progress until killed
            kw, vec, _ = mem.records.index.pending_counts()
            out.write(f"PENDING {kw} {vec} {mem.indexer.embedded_total}\n")
            out.flush()
            time.sleep(0.05)


#: The canary of the user the ``eraser`` subprocess erases, and of the one it keeps.
ERASED_CANARY, KEPT_CANARY = "zqxgonecanary", "wvkkeptcanary"


def _eraser(home: str) -> None:
    """Fill two users (each with a canary in every kind of row), then erase the first one;
    prints FILLED, ERASING, ERASED (killed somewhere in between by the test)."""
    from agentmem import AgentMemory, OfflineLLM

    mem = AgentMemory(home, embedder=HashEmbedder(), llm=OfflineLLM(), background=False)
    for user, canary in (("u-gone", ERASED_CANARY), ("u-kept", KEPT_CANARY)):
        m = mem.bind(tenant_id=TENANT, user_id=user, agent_id="a1", session_id=f"s-{user}")
        for i in range(30):
            m.add_message("user", f"message {i} with {canary} about the harbour lighthouse")
        m.add_tool_output("call-1", f"{canary} " + "tool payload " * 5_000)
        m.remember(f"the code is {canary}")
        m.add_document(f"document of {canary}. " * 30, source_ref=f"doc-{user}")
        m.close_session(summary_timeout=5)
        mem.flush()
    out = sys.stdout
    out.write("FILLED\nERASING\n")
    out.flush()
    mem.erase(tenant_id=TENANT, user_id="u-gone")
    out.write("ERASED\n")
    out.flush()
    time.sleep(60)


if __name__ == "__main__":
    if sys.argv[1] == "writer":
        _writer(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif sys.argv[1] == "eraser":
        _eraser(sys.argv[2])
