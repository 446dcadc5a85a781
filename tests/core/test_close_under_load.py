"""Closing a store while its indexer works through a backlog: each worker stops at its next
batch boundary, every worker thread has ended when ``close()`` returns (a thread left inside
Tantivy or onnxruntime while the stores close, or when the interpreter exits, aborts the
process: "terminate called without an active exception"), and the backlog stays queued for
the next open instead of being drained first."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentmem import AgentMemory
from agentmem.embeddings import CachedEmbedder, FloatArray
from agentmem.write import indexer as indexer_module

MakeMemory = Callable[..., AgentMemory]

pytestmark = pytest.mark.both_backends

IDENT = {"tenant_id": "acme", "user_id": "u1", "session_id": "s1"}


def _messages(n: int) -> list[dict[str, str]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"note {i} about ferry {i % 7}"}
        for i in range(n)
    ]


def _stop_from_another_thread(mem: AgentMemory) -> threading.Event:
    """Call ``indexer.stop()`` in a new thread (it waits for the workers, so not from one of
    them) and return once the workers are told; the event is set when ``stop`` returns."""
    indexer = mem.context.indexer
    stopped = threading.Event()

    def stop() -> None:
        indexer.stop()
        stopped.set()

    threading.Thread(target=stop).start()
    while not indexer.stopping:
        threading.Event().wait(0.001)
    return stopped


def _agentmem_threads(before: set[threading.Thread]) -> list[str]:
    return sorted(
        t.name for t in threading.enumerate() if t not in before and t.name.startswith("agentmem")
    )


@pytest.mark.slow
def test_close_ends_every_worker_in_the_middle_of_a_backlog(make_memory: MakeMemory) -> None:
    before = set(threading.enumerate())
    mem = make_memory()
    session = mem.bind(**IDENT)
    session.recall("warm up the query workers")
    session.add_messages(_messages(1000))
    assert mem.context.indexer.running
    mem.close()
    assert _agentmem_threads(before) == []
    again = make_memory(path=mem.context.home, background=False)
    assert again.flush()
    assert again.context.records.index.pending_counts() == (0, 0, 0)


def test_the_keyword_worker_stops_after_the_batch_under_way(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexer_module, "KEYWORD_BATCH", 20)
    mem = make_memory(background=False)
    mem.bind(**IDENT).add_messages(_messages(300))
    index = mem.context.records.index
    read = index.pending_keyword
    reads: list[int] = []
    stopped: list[threading.Event] = []
    started = threading.Event()

    def pending_keyword(limit: int) -> Any:
        reads.append(limit)
        if not stopped:  # a close arriving while the first batch is read
            started.wait()  # (once both workers run: a stop before a start is undone)
            stopped.append(_stop_from_another_thread(mem))
        return read(limit)

    monkeypatch.setattr(index, "pending_keyword", pending_keyword)
    mem.context.indexer.start()
    started.set()
    while not stopped:
        threading.Event().wait(0.01)
    assert stopped[0].wait(120)
    assert reads == [20]  # that batch, then it stopped: the backlog was not drained
    keyword_left, _, _ = index.pending_counts()
    assert keyword_left == 280


class _StopOnFirstCall:
    """The real embedder; its first document call asks the indexer to stop from another
    thread and returns once the workers are told (a close arriving while a batch is being
    embedded), or with ``fail`` raises (a close arriving while an embedding service is
    down)."""

    def __init__(self, inner: CachedEmbedder, *, fail: bool = False) -> None:
        self.inner = inner
        self.fail = fail
        self.calls: list[int] = []
        self.mem: AgentMemory | None = None
        self.stopped: threading.Event | None = None
        self.model_name = inner.model_name
        self.dimensions = inner.dimensions

    def embed_query(self, text: str) -> FloatArray:
        return self.inner.embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        self.calls.append(len(texts))
        if self.mem is not None and self.stopped is None:
            self.stopped = _stop_from_another_thread(self.mem)
            if self.fail:
                raise ConnectionError("the embedding service is down")
        return self.inner.embed_documents(texts)


def _index_until_stopped(
    make_memory: MakeMemory, embedder: _StopOnFirstCall, rows: int
) -> AgentMemory:
    """A store of ``rows`` unindexed facts whose indexer runs until ``embedder`` stops it."""
    mem = make_memory(embedder=embedder, background=False)
    mem.bind(**IDENT).remember_many(f"fact {i} about the ferry timetable" for i in range(rows))
    embedder.mem = mem
    mem.context.indexer.start()
    mem.context.indexer.notify()
    while embedder.stopped is None:
        threading.Event().wait(0.01)
    assert embedder.stopped.wait(120)
    return mem


def test_a_stop_between_two_attempts_leaves_the_rows_pending_not_failed(
    make_memory: MakeMemory, shared_embedder: CachedEmbedder
) -> None:
    mem = _index_until_stopped(make_memory, _StopOnFirstCall(shared_embedder, fail=True), 100)
    # the retry was not made (it stopped), and no attempt of those rows counts as failed
    assert mem.context.records.index.pending_counts()[1:] == (100, 0)


def test_the_embedder_worker_stops_between_two_embedder_calls(
    make_memory: MakeMemory, shared_embedder: CachedEmbedder
) -> None:
    embedder = _StopOnFirstCall(shared_embedder)
    mem = _index_until_stopped(make_memory, embedder, 300)
    # one call of at most a chunk, then it stopped: a batch of 256 rows is not finished first
    assert embedder.calls == [indexer_module.EMBED_CHUNK]
    records = mem.context.records
    _, vector_left, failed = records.index.pending_counts()
    assert (vector_left, failed) == (300, 0)
    if records.shared:  # another node may take them at once, not after this one's lease
        assert records.count("vec_claim_node IS NOT NULL") == 0


#: Opens a data dir whose rows are not indexed yet, starts a recall, and closes it (or exits
#: and leaves the closing to the interpreter's exit), while both workers are in the backlog.
_OPEN_AND_LEAVE = textwrap.dedent(
    """
    import sys, threading
    from agentmem import AgentMemory
    from agentmem.write import indexer

    indexer.KEYWORD_BATCH = 5  # many keyword batches: a drain would take many seconds
    home, url, how = sys.argv[1:]
    mem = AgentMemory(home, **({} if url == "-" else {"records_url": url}))
    mem.bind(tenant_id="acme", user_id="u1").recall("ferry")
    if how == "close":
        mem.close()
        print(sorted(t.name for t in threading.enumerate() if t.name.startswith("agentmem")))
    """
)


@pytest.mark.slow
def test_a_process_with_a_backlog_exits_cleanly(make_memory: MakeMemory, tmp_path: Path) -> None:
    mem = make_memory(background=False)
    mem.bind(**IDENT).add_messages(_messages(2000))
    home = mem.context.home
    url = mem.context.settings.records_url or "-"
    mem.close()
    for how in ("close", "exit", "close"):
        done = subprocess.run(
            [sys.executable, "-c", _OPEN_AND_LEAVE, str(home), url, how],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert "terminate called" not in done.stderr
        assert "pass failed" not in done.stderr  # no worker still running on closed stores
        assert done.returncode == 0, done.stderr
        if how == "close":
            assert done.stdout.strip() == "[]"
    again = make_memory(path=home, background=False)
    assert again.flush()  # nothing lost: what the exits left is indexed now
    assert again.context.records.index.pending_counts() == (0, 0, 0)
