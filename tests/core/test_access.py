"""Access tracking: recall counts hits without a write per hit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentmem import AgentMemory
from agentmem.storage.access import AccessTracker
from agentmem.storage.records import RecordStore
from agentmem.storage.rows import NewRecord

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]


def counts(mem: AgentMemory, ids: list[str]) -> dict[str, int]:
    marks = ",".join("?" * len(ids))
    rows = mem.records.read(f"SELECT id, access_count FROM memories WHERE id IN ({marks})", ids)
    return {r[0]: r[1] for r in rows}


def test_recall_counts_in_memory_and_flushes_in_batches(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1")
    ids = [m.remember(f"My favourite fruit number {i} is mango.").id for i in range(3)]
    mem.flush()
    mem.access.flush_every = 4  # a small batch for the test
    writes_before = mem.access.flushes
    for _ in range(3):
        hits = m.recall("favourite fruit mango", min_score=0.0).items
        assert {h.id for h in hits} == set(ids)
    assert counts(mem, ids) == dict.fromkeys(ids, 0)  # nothing written per hit
    assert mem.access.pending() == dict.fromkeys(ids, 3)
    m.recall("favourite fruit mango", min_score=0.0)  # the 4th recall flushes the batch
    assert mem.access.flushes == writes_before + 1 and mem.access.pending() == {}
    assert counts(mem, ids) == dict.fromkeys(ids, 4)
    item = m.get(ids[0])
    assert item.last_accessed is not None and item.updated_at < item.last_accessed


def test_close_flushes_pending_counts(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1")
    rid = m.remember("The wifi password is on the fridge.").id
    mem.flush()
    m.recall("wifi password", min_score=0.0)
    m.recall("wifi password", min_score=0.0)
    assert mem.access.pending() == {rid: 2}
    home = mem.home
    mem.close()
    again = make_memory(path=home, background=False)
    item = again.bind("acme", user_id="u1").get(rid)
    assert item.access_count == 2 and item.last_accessed is not None


def test_close_session_flushes_pending_counts(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    msg = m.add_message("user", "Remind me to water the ficus.")
    mem.flush()
    m.recall("water the ficus", min_score=0.0)
    m.close_session(summary_timeout=0)
    assert mem.access.pending() == {} and counts(mem, [msg.id]) == {msg.id: 1}


def record(id_: str) -> NewRecord:
    return NewRecord(
        id=id_, tenant_id="t", user_id=None, agent_id=None, session_id=None, kind="memory",
        memory_type="fact", scope="tenant", role=None, content=id_, content_hash=id_,
        source_ref=None, metadata={}, importance=None, event_time=None, partition="tenant",
    )  # fmt: skip


def test_tracker_flushes_on_its_interval_and_keeps_counts_when_a_flush_fails(
    tmp_path: Path,
) -> None:
    store = RecordStore(tmp_path / "records.sqlite3")
    store.memories.insert([record("a"), record("b")])
    now = [100.0]
    tracker = AccessTracker(store, flush_every=1000, flush_interval=5.0, clock=lambda: now[0])
    tracker.record(["a", "b"])
    tracker.record(["a"])
    assert tracker.pending() == {"a": 2, "b": 1} and tracker.flushes == 0
    now[0] += 5.0
    tracker.record(["b"])  # the interval passed: this recall flushes
    assert tracker.pending() == {} and tracker.flushes == 1
    rows = dict(store.read("SELECT id, access_count FROM memories"))
    assert rows == {"a": 2, "b": 2}
    updated = store.read("SELECT updated_at, created_at FROM memories WHERE id = 'a'")[0]
    assert updated[0] == updated[1]  # being read is not an update

    tracker.record(["a"])
    store.close()
    assert tracker.flush() == 0  # the store is closed: counts are kept, nothing raised
    assert tracker.pending() == {"a": 1}
    with pytest.raises(ValueError):
        AccessTracker(store, flush_every=0)
