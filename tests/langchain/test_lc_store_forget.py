"""A store item whose memory is forgotten outside the store (``forget``, the memory tools,
retention) is gone from the store too: no ``get``, ``search`` or listing returns it, and its
value is deleted from the records when the store next reads it (on SQLite and Postgres).

Also: a namespace-prefix search reads only the entries under that prefix."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from _canaries import files_with, state_rows_with

from agentmem import AgentMemory
from agentmem.storage.rows import now_utc
from agentmem.storage.supersession import JudgeRow
from agentmem.tools.toolbox import MemoryToolbox
from langchain_agentmem import AgentMemStore

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]
CANARY = "zqcanary7741"


def _fill(mem: AgentMemory) -> tuple[AgentMemStore, str]:
    """A store with the canary item of user u1 (and others); the canary memory's id."""
    store = AgentMemStore(mem, tenant_id="acme", user_position=1)
    store.put(("memories", "u1"), "secret", {"content": f"My locker code is {CANARY}"})
    store.put(("memories", "u1"), "pref", {"content": "Prefers dark mode"})
    store.put(("memories", "u2"), "pref", {"content": "Prefers light mode"})
    mem.flush()
    hits = mem.bind("acme", user_id="u1").recall("locker code", scope="user").items
    found = [h.id for h in hits if CANARY in h.content]
    assert len(found) == 1
    return store, found[0]


def _assert_gone(mem: AgentMemory, store: AgentMemStore) -> None:
    assert store.get(("memories", "u1"), "secret") is None
    assert [i.key for i in store.search(("memories", "u1"))] == ["pref"]
    assert [i.key for i in store.search(("memories", "u1"), query="locker code")] == ["pref"]
    assert [i.key for i in store.search(("memories",), query=CANARY)] == ["pref", "pref"]
    assert state_rows_with(mem, CANARY) == 0
    # the other items stay
    item = store.get(("memories", "u2"), "pref")
    assert item is not None and item.value == {"content": "Prefers light mode"}


def test_forgetting_an_items_memory_through_the_api_removes_the_item(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    store, memory_id = _fill(mem)
    assert mem.bind("acme", user_id="u1").forget(memory_id)
    # until the store reads it, the value is still in the records...
    assert state_rows_with(mem, CANARY) == 1
    # ...the first read that meets it deletes it and returns nothing
    assert store.get(("memories", "u1"), "secret") is None
    assert state_rows_with(mem, CANARY) == 0
    _assert_gone(mem, store)
    home = mem.home
    mem.close()
    assert files_with(home, CANARY) == []


@pytest.mark.parametrize("read", ["search", "query", "list_namespaces"])
def test_any_read_that_meets_a_forgotten_item_deletes_it(
    make_memory: MakeMemory, read: str
) -> None:
    mem = make_memory()
    store, memory_id = _fill(mem)
    mem.bind("acme", user_id="u1").forget(memory_id)
    store.delete(("memories", "u1"), "pref")  # the forgotten item is its namespace's last
    if read == "search":
        assert store.search(("memories", "u1")) == []
    elif read == "query":
        assert store.search(("memories", "u1"), query="locker code") == []
    else:
        assert store.list_namespaces() == [("memories", "u2")]
    assert state_rows_with(mem, CANARY) == 0


def test_forgetting_it_with_the_agents_delete_memory_tool_removes_the_item(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    store, memory_id = _fill(mem)
    box = MemoryToolbox(mem.bind("acme", user_id="u1", agent_id="support"))
    box.call("delete_memory", {"memory_id": memory_id})
    _assert_gone(mem, store)


def test_an_item_goes_when_retention_anonymizes_its_retired_memory(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    store, memory_id = _fill(mem)
    user = mem.bind("acme", user_id="u1")
    newer = user.remember("My locker code changed", scope="user").id
    row = mem.records.memories.get(newer)
    assert row is not None
    # the supersession judge decides the newer memory retires the item's (as its LLM would)
    judged = JudgeRow(
        0, newer, "acme", row.partition, "user", "u1", None, "fact", "memory", live=True
    )
    assert mem.records.supersession.apply_judgement(judged, [memory_id], "test") == [memory_id]
    # retired, not forgotten: the item stays until retention anonymizes the memory
    assert store.get(("memories", "u1"), "secret") is not None
    mem.retention(now=now_utc() + timedelta(days=365))
    _assert_gone(mem, store)


def test_a_put_after_the_memory_was_forgotten_makes_a_new_item(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    store, memory_id = _fill(mem)
    mem.bind("acme", user_id="u1").forget(memory_id)
    store.put(("memories", "u1"), "secret", {"content": "My locker code is new"})
    item = store.get(("memories", "u1"), "secret")
    assert item is not None and item.value == {"content": "My locker code is new"}
    mem.flush()
    assert store.search(("memories", "u1"), query="locker code")[0].key == "secret"


def test_a_prefix_search_reads_only_the_entries_under_its_prefix(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_memory()
    store = AgentMemStore(mem, tenant_id="acme", user_position=1)
    # labels that share their start as strings, and namespaces nested in others
    users = ["u", "u1", "u10", "u1x"]
    for user in users:
        for sub in ((), ("notes",), ("notes", "deep")):
            for n in range(3):
                store.put(("memories", user, *sub), f"k{n}", {"text": f"{user} {sub} {n}"})
    table = mem.records.agent_state
    read: list[int] = []
    listing = table.list

    def counting(*args: Any, **kwargs: Any) -> Any:
        rows = listing(*args, **kwargs)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(table, "list", counting)
    found = store.search(("memories", "u1"), limit=100)
    assert sorted((i.namespace[1:], i.key) for i in found) == sorted(
        (("u1", *sub), f"k{n}") for sub in ((), ("notes",), ("notes", "deep")) for n in range(3)
    )
    assert read == [9]  # of 37 entries (36 items and the layout marker)
    read.clear()
    deep = store.search(("memories", "u10", "notes"), limit=100)
    assert {i.namespace for i in deep} == {
        ("memories", "u10", "notes"),
        ("memories", "u10", "notes", "deep"),
    }
    assert read == [6]
    read.clear()
    assert len(store.search(("memories",), limit=100)) == 36
    assert read == [36]
