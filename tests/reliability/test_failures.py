"""Failure behaviour of the core: the embedding pipeline (fail open) and the records store (fail closed).

- An embedder that fails a few times, then works: the batch is retried with exponential
  backoff and embedded; nothing is flagged.
- An embedder that always fails: the row is flagged ``VEC_FAILED`` with its error, stays
  keyword-searchable, recall reports ``degraded=True``; ``reindex`` retries it once the
  embedder works again.
- An embedder whose *query* embedding also fails: recall falls back to keyword-only search
  (``degraded=True``) instead of raising the embedder's exception (bug fixed in recall.py).
- An embedder that hangs: writes are still acknowledged at once and durable, recall of
  indexed rows still answers, ``flush(timeout)`` returns False instead of blocking; when the
  embedder returns, everything written in the meantime is indexed. (Rows written *during* the
  hang wait for it: one indexer thread does keyword then vector work, see the report.)
- The records store unavailable: recall, writes and reads raise ``StorageError`` (an
  ``AgentMemError``), never an empty result or a raw sqlite3 error (fail closed). With the
  database file replaced on disk under a running store, reads (new connections) fail closed;
  the already-open writer connection does not notice, so that case checks reads only.

Reranker failures (fail-open) are covered in tests/core/test_recall_rerank.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from _reliability_support import HashEmbedder

from agentmem import AgentMemError, StorageError
from agentmem.storage.rows import VEC_FAILED

IDENT = {"tenant_id": "acme", "user_id": "u1", "session_id": "s1"}
FACT = "The staging deploy key is KX-93-ZQ-771"


class FlakyEmbedder(HashEmbedder):
    """Fails ``fail_next`` document batches (then works); ``down`` fails every call."""

    def __init__(self, fail_next: int = 0) -> None:
        super().__init__()
        self.fail_next = fail_next
        self.down = False
        self.query_down = False
        self.doc_calls = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.doc_calls += 1
        if self.down or self.fail_next > 0:
            self.fail_next -= 1
            raise RuntimeError("embedding model unavailable (HTTP 503)")
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        if self.query_down:
            raise RuntimeError("embedding model unavailable (HTTP 503)")
        return super().embed_query(text)


class HangingEmbedder(HashEmbedder):
    """Document batches block until ``release`` is set (a hung model server)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.entered.set()
        self.release.wait(60)
        return super().embed_documents(texts)


def _fast_retries(mem: Any) -> list[float]:
    """Make the indexer's backoff tiny and record the delays it asks for."""
    delays: list[float] = []
    mem.indexer.backoff = 0.01
    mem.indexer._sleep = delays.append
    return delays


def test_transient_embedding_failure_is_retried_with_backoff(make_memory) -> None:
    embedder = FlakyEmbedder(fail_next=2)
    mem = make_memory(embedder=embedder, background=False)
    delays = _fast_retries(mem)
    m = mem.bind(**IDENT)
    rid = m.remember(FACT).id
    assert mem.flush()
    assert embedder.doc_calls == 3
    assert delays == [0.01, 0.02]  # exponential backoff between attempts
    stats = mem.stats()
    assert (stats.vector_pending, stats.vector_failed) == (0, 0)
    assert m.get(rid).embedded is True
    result = m.recall("deploy key for staging")
    assert result.items[0].id == rid and result.degraded is False


def test_permanent_embedding_failure_flags_row_keeps_it_searchable(make_memory, rows=None) -> None:
    embedder = FlakyEmbedder()
    embedder.down = True
    mem = make_memory(embedder=embedder, background=False)
    delays = _fast_retries(mem)
    m = mem.bind(**IDENT)
    rid = m.remember(FACT).id
    assert mem.flush()  # a failed row is not pending: flush does not wait for it forever
    assert embedder.doc_calls == mem.indexer.retries + 1 and len(delays) == mem.indexer.retries
    state, error, attempts = mem.records.read(
        "SELECT vec_pending, embed_error, embed_attempts FROM memories WHERE id = ?", (rid,)
    )[0]
    assert state == VEC_FAILED and "HTTP 503" in error and attempts == 1
    assert mem.stats().vector_failed == 1
    # never lost: stored, and keyword-searchable
    assert m.get(rid).content == FACT and m.get(rid).embedded is False
    result = m.recall("KX-93-ZQ-771")
    assert [h.id for h in result.items] == [rid]
    assert result.degraded is True
    # a flagged row is not retried by every pass (no hot loop on a broken model)
    calls = embedder.doc_calls
    mem.flush()
    assert embedder.doc_calls == calls
    # reindex retries it once the model is back
    embedder.down = False
    assert mem.reindex() == 1
    assert mem.stats().vector_failed == 0 and m.get(rid).embedded is True
    result = m.recall("deploy key for staging")
    assert result.items[0].id == rid and result.degraded is False


def test_query_embedding_failure_falls_back_to_keywords(make_memory) -> None:
    embedder = FlakyEmbedder()
    mem = make_memory(embedder=embedder, background=False)
    m = mem.bind(**IDENT)
    rid = m.remember(FACT).id
    mem.flush()
    embedder.query_down = True
    result = m.recall("KX-93-ZQ-771")  # used to raise the embedder's RuntimeError
    assert [h.id for h in result.items] == [rid]
    assert result.degraded is True
    embedder.query_down = False
    assert m.recall("KX-93-ZQ-771").degraded is False


def test_unreadable_vector_index_falls_back_to_keywords(make_memory) -> None:
    """A corrupted Chroma store used to make recall raise; now it answers from keywords,
    says ``degraded``, and ``reindex`` heals it."""
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    rid = m.remember(FACT).id
    mem.flush()
    home = mem.home
    mem.close()
    (home / "chroma" / "chroma.sqlite3").write_bytes(b"not a database " * 1000)

    mem = make_memory(path=home, background=False)
    m = mem.bind(**IDENT)
    result = m.recall("KX-93-ZQ-771")
    assert [h.id for h in result.items] == [rid]
    assert result.degraded is True
    assert mem.reindex() == 1
    result = m.recall("KX-93-ZQ-771")
    assert [h.id for h in result.items] == [rid] and result.degraded is False


def _while_hung(embedder: HangingEmbedder, call: Callable[[], Any]) -> Any:
    """``call()``'s result, which must come while ``embedder`` is still hung."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(300)  # a safety net against a hang, not a measure: the check is below
    assert not worker.is_alive(), "the call waited for the hung model"
    assert not embedder.release.is_set() and out
    return out[0]


def test_hanging_embedder_blocks_neither_writes_nor_recall(make_memory) -> None:
    embedder = HangingEmbedder()
    mem = make_memory(embedder=embedder)  # background indexer
    m = mem.bind(**IDENT)
    embedder.release.set()
    early = m.remember(FACT).id
    assert mem.flush(timeout=30)
    embedder.release.clear()
    embedder.entered.clear()
    stuck = m.remember("The backup window is 02:00 to 04:00 UTC").id
    assert embedder.entered.wait(30)  # the indexer is now stuck inside the embedder
    try:
        # each call returns while the model is still hung (no clock involved: a call that
        # waited for the model would never return, and the helper says so)
        later = _while_hung(
            embedder,
            lambda: [
                m.remember(f"Write {n} while the model hangs: token QX{n}QX").id for n in range(20)
            ],
        )
        _while_hung(embedder, lambda: m.add_message("user", "a message written while it hangs"))
        for id_ in [stuck, *later]:
            assert m.get(id_).embedded is False  # durable before it is indexed
        result = _while_hung(embedder, lambda: m.recall("KX-93-ZQ-771"))
        assert result.items[0].id == early and result.degraded is True
        assert _while_hung(embedder, lambda: mem.flush(timeout=0.5)) is False  # reports
    finally:
        embedder.release.set()
    assert mem.flush(timeout=60)
    assert m.recall("QX7QX").items[0].id == later[7]
    assert mem.stats().vector_pending == 0 and mem.stats().vector_failed == 0


@pytest.mark.parametrize("how", ["store-closed", "file-replaced"])
def test_records_store_unavailable_fails_closed(make_memory, how: str) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    rid = m.remember(FACT).id
    mem.flush()
    if how == "store-closed":
        mem.records.close()
    else:  # the database file replaced by garbage under a fresh reader connection
        path = mem.home / "records.sqlite3"
        for suffix in ("-wal", "-shm"):
            (mem.home / f"records.sqlite3{suffix}").unlink(missing_ok=True)
        path.write_bytes(b"not a database " * 4096)
        mem.records.db._local = threading.local()  # next read opens a new connection
    calls = {
        "recall": lambda: m.recall("KX-93-ZQ-771"),
        "get": lambda: m.get(rid),
        "remember": lambda: m.remember("A new fact while the store is down"),
        "messages": lambda: m.messages(),
    }
    for name, call in calls.items():
        if name == "remember" and how == "file-replaced":
            continue  # the open writer connection does not notice (see the module docstring)
        with pytest.raises(StorageError) as err:
            call()
        assert isinstance(err.value, AgentMemError), name
