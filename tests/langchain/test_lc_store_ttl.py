"""AgentMemStore's time to live, against LangGraph's TTL contract.

The first tests mirror LangGraph's own TTL tests of its SQLite and Postgres stores
(``libs/checkpoint-sqlite/tests/test_ttl.py``: basic, refresh, sweeper, custom value,
override of the default, search, omit_expired), with a clock the test moves instead of
sleeping until expiry. The rest pin what agentmem adds: an expired item's memory is
forgotten (recall no longer returns it), expiry survives a reopen, and bad TTL settings are
refused (over a remote memory: ``tests/server/test_adapters_remote.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentmem import AgentMemory, NotFoundError, ValidationError
from langchain_agentmem import AgentMemStore

MakeMemory = Callable[..., AgentMemory]
NS = ("test",)


class Clock:
    """The time the store sees; a test moves it."""

    def __init__(self) -> None:
        self.now = datetime(2031, 5, 4, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


MakeStore = Callable[..., AgentMemStore]


@pytest.fixture
def make_store(mem: AgentMemory, clock: Clock) -> MakeStore:
    def build(ttl: dict[str, Any] | None = None, **kw: Any) -> AgentMemStore:
        kw.setdefault("tenant_id", "acme")
        return AgentMemStore(kw.pop("memory", mem), ttl=ttl, clock=clock, **kw)

    return build


def _wait(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll until ``predicate`` holds (waiting on a thread, never on the clock's expiry)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


# -- mirrored from LangGraph's store TTL tests -----------------------------------------------
def test_ttl_basic(make_store: MakeStore, clock: Clock) -> None:
    store = make_store({"default_ttl": 1 / 60})
    assert store.supports_ttl
    store.put(NS, "item1", {"value": "test"})
    item = store.get(NS, "item1")
    assert item is not None and item.value["value"] == "test"
    clock.advance(2)
    assert store.sweep_ttl() == 1
    assert store.get(NS, "item1") is None


@pytest.mark.parametrize("omit", [True, False], ids=["omit-expired", "langgraph-default"])
def test_ttl_refresh(make_store: MakeStore, clock: Clock, omit: bool) -> None:
    store = make_store({"default_ttl": 1 / 60, "refresh_on_read": True, "omit_expired": omit})
    store.put(NS, "item1", {"value": "test"})
    clock.advance(0.5)
    assert store.sweep_ttl() == 0
    assert store.get(NS, "item1", refresh_ttl=True) is not None
    clock.advance(0.5)
    assert store.sweep_ttl() == 0
    item = store.get(NS, "item1")  # refresh_on_read: this read refreshes it too
    assert item is not None and item.value["value"] == "test"
    clock.advance(1.75)
    assert store.sweep_ttl() == 1
    assert store.get(NS, "item1") is None


def test_ttl_sweeper(make_store: MakeStore, clock: Clock) -> None:
    # LangGraph's default: expired items stay visible until a sweep deletes them, so the
    # sweeper's work is what this test sees
    ttl = {"default_ttl": 2 / 60, "sweep_interval_minutes": 0.001, "omit_expired": False}
    store = make_store(ttl)
    done = store.start_ttl_sweeper()
    assert store.start_ttl_sweeper() is done  # one sweeper at a time
    store.put(NS, "item1", {"value": "test"})
    assert store.get(NS, "item1") is not None
    clock.advance(3)
    _wait(lambda: store.get(NS, "item1", refresh_ttl=False) is None)
    assert store.stop_ttl_sweeper(timeout=30)
    assert done.done()
    assert store.stop_ttl_sweeper()  # stopping a stopped sweeper is fine


def test_ttl_custom_value(make_store: MakeStore, clock: Clock) -> None:
    store = make_store()
    store.put(NS, "item1", {"value": "short"}, ttl=1 / 60)
    store.put(NS, "item2", {"value": "long"}, ttl=3 / 60)
    clock.advance(2)
    store.sweep_ttl()
    assert store.get(NS, "item1") is None
    assert store.get(NS, "item2") is not None
    clock.advance(4)
    store.sweep_ttl()
    assert store.get(NS, "item2") is None


def test_ttl_override_default(make_store: MakeStore, clock: Clock) -> None:
    store = make_store({"default_ttl": 5 / 60})
    store.put(NS, "item1", {"value": "override"}, ttl=1 / 60)
    store.put(NS, "item2", {"value": "default"})
    store.put(NS, "item3", {"value": "permanent"}, ttl=None)
    clock.advance(2)
    store.sweep_ttl()
    assert store.get(NS, "item1") is None
    assert store.get(NS, "item2") is not None
    assert store.get(NS, "item3") is not None
    clock.advance(6)  # the reads above refreshed item2: 5 s from then
    store.sweep_ttl()
    assert store.get(NS, "item2") is None
    assert store.get(NS, "item3") is not None


def test_search_with_ttl(make_store: MakeStore, clock: Clock) -> None:
    store = make_store({"default_ttl": 1 / 60})
    store.put(NS, "item1", {"value": "apple"})
    store.put(NS, "item2", {"value": "banana"})
    results = store.search(NS, filter={"value": "apple"})
    assert [r.key for r in results] == ["item1"]
    clock.advance(2)
    store.sweep_ttl()
    assert store.search(NS, filter={"value": "apple"}) == []


def test_search_refreshes_what_it_returns(make_store: MakeStore, clock: Clock) -> None:
    store = make_store({"default_ttl": 4 / 60, "refresh_on_read": True})
    ns = ("docs", "user1")
    store.put(ns, "item1", {"text": "content1", "id": 1})
    store.put(ns, "item2", {"text": "content2", "id": 2})
    clock.advance(3)
    found = store.search(ns, filter={"id": 1}, refresh_ttl=True)
    assert [i.key for i in found] == ["item1"]
    clock.advance(2)
    store.sweep_ttl()
    assert store.get(ns, "item1", refresh_ttl=False) is not None
    assert store.get(ns, "item2", refresh_ttl=False) is None
    clock.advance(2.5)
    store.sweep_ttl()
    assert store.get(ns, "item1", refresh_ttl=False) is None


def test_omit_expired_filters_read_paths(make_store: MakeStore, clock: Clock) -> None:
    store = make_store({"default_ttl": 5, "omit_expired": True})
    expired_ns, control_ns = ("omit", "expired"), ("omit", "control")
    store.put(expired_ns, "e", {"data": "gone"}, ttl=1)
    store.put(control_ns, "c", {"data": "keep"}, ttl=None)
    clock.advance(61)
    assert store.get(expired_ns, "e") is None
    assert store.get(control_ns, "c") is not None
    assert store.search(expired_ns) == []
    assert [i.key for i in store.search(control_ns)] == ["c"]
    namespaces = store.list_namespaces(prefix=("omit",))
    assert expired_ns not in namespaces and control_ns in namespaces


@pytest.mark.parametrize("read", ["get", "search", "list_namespaces"])
def test_omit_expired_is_the_default_and_each_read_path_hides_it(
    make_store: MakeStore, clock: Clock, read: str
) -> None:
    store = make_store()
    store.put(("keep",), "k", {"data": "x"}, ttl=1)
    clock.advance(61)
    if read == "get":
        assert store.get(("keep",), "k") is None
    elif read == "search":
        assert store.search(("keep",)) == []
    else:
        assert store.list_namespaces() == []
    assert store.sweep_ttl() == 0  # the read that met it deleted it already


def test_omit_expired_disabled_preserves_expired_rows(make_store: MakeStore, clock: Clock) -> None:
    store = make_store({"default_ttl": 5, "omit_expired": False})
    ns = ("keep",)
    store.put(ns, "k", {"data": "still-here"}, ttl=1)
    clock.advance(61)
    assert store.get(ns, "k", refresh_ttl=False) is not None
    assert [i.key for i in store.search(ns, refresh_ttl=False)] == ["k"]
    assert ns in store.list_namespaces(prefix=("keep",))
    assert store.sweep_ttl() == 1
    assert store.get(ns, "k") is None


def test_omit_expired_refresh_only_refreshes_live_rows(make_store: MakeStore, clock: Clock) -> None:
    store = make_store({"default_ttl": 5, "omit_expired": True, "refresh_on_read": True})
    ns = ("refresh",)
    store.put(ns, "expired", {"n": 0}, ttl=1)
    store.put(ns, "live_get", {"n": 1})
    store.put(ns, "live_search", {"n": 2})
    clock.advance(61)
    assert store.get(ns, "expired", refresh_ttl=True) is None
    assert "expired" not in [i.key for i in store.search(ns, refresh_ttl=True)]
    assert store.get(ns, "live_get", refresh_ttl=True) is not None
    clock.advance(4 * 60)  # 5 min after the put, 4 min after the reads refreshed them
    assert store.get(ns, "live_get", refresh_ttl=False) is not None
    assert store.get(ns, "live_search", refresh_ttl=False) is not None
    clock.advance(2 * 60)
    assert store.sweep_ttl() == 2


def test_omit_expired_search_pagination(make_store: MakeStore, clock: Clock) -> None:
    """Expired items are left out before limit and offset, not after."""
    store = make_store({"default_ttl": 5, "omit_expired": True})
    ns = ("page",)
    store.put(ns, "c", {"k": "c"})
    clock.advance(1)
    store.put(ns, "b", {"k": "b"})
    clock.advance(1)
    store.put(ns, "expired", {"k": "x"}, ttl=1)
    clock.advance(1)
    store.put(ns, "a", {"k": "a"})
    clock.advance(60)
    assert [i.key for i in store.search(ns, limit=2, offset=0)] == ["a", "b"]
    assert [i.key for i in store.search(ns, limit=2, offset=2)] == ["c"]


async def test_async_ttl(make_store: MakeStore, clock: Clock) -> None:
    store = make_store({"default_ttl": 1 / 60, "refresh_on_read": True})
    await store.aput(NS, "item1", {"value": "apple"})
    await store.aput(NS, "item2", {"value": "banana"}, ttl=None)
    clock.advance(0.5)
    assert await store.aget(NS, "item1", refresh_ttl=True) is not None
    clock.advance(0.75)
    assert [i.key for i in await store.asearch(NS, filter={"value": "apple"})] == ["item1"]
    clock.advance(2)
    assert store.sweep_ttl() == 1
    assert await store.aget(NS, "item1") is None
    assert [i.key for i in await store.asearch(NS)] == ["item2"]


# -- what agentmem adds ------------------------------------------------------------------------
def test_an_expired_items_memory_is_forgotten(
    mem: AgentMemory, make_store: MakeStore, clock: Clock
) -> None:
    store = make_store({"default_ttl": 10}, user_position=1)
    ns = ("memories", "u1")
    store.put(ns, "diet", {"content": "The user is vegetarian and avoids meat"})
    store.put(ns, "pet", {"content": "The user has a cat named Miso"}, ttl=None)
    mem.flush()
    u1 = mem.bind("acme", user_id="u1")
    (hit,) = [
        h for h in u1.recall("vegetarian meat", min_score=0.0).items if "vegetarian" in h.content
    ]
    clock.advance(11 * 60)
    assert store.sweep_ttl() == 1
    with pytest.raises(NotFoundError):
        u1.get(hit.id)
    assert not any("vegetarian" in h.content for h in u1.recall("vegetarian", min_score=0.0).items)
    assert [i.key for i in store.search(ns, query="cat")] == ["pet"]  # the other stays


def test_a_put_without_ttl_removes_the_expiry(make_store: MakeStore, clock: Clock) -> None:
    store = make_store()
    store.put(NS, "k", {"v": 1}, ttl=1)
    store.put(NS, "k", {"v": 2})
    clock.advance(3600)
    item = store.get(NS, "k")
    assert item is not None and item.value == {"v": 2}
    assert store.sweep_ttl() == 0


def test_a_put_over_an_expired_item_makes_a_new_one(make_store: MakeStore, clock: Clock) -> None:
    store = make_store()
    store.put(NS, "k", {"v": 1}, ttl=1)
    clock.advance(120)
    store.put(NS, "k", {"v": 2})
    item = store.get(NS, "k")
    assert item is not None and item.value == {"v": 2}
    assert item.created_at == clock.now  # not the expired item's


def test_expiry_survives_a_reopen(make_memory: MakeMemory, clock: Clock) -> None:
    mem = make_memory()
    home = mem.home
    AgentMemStore(mem, tenant_id="acme", clock=clock).put(NS, "k", {"v": 1}, ttl=30)
    mem.close()
    clock.advance(31 * 60)
    reopened = AgentMemStore(make_memory(path=home), tenant_id="acme", clock=clock)
    assert reopened.sweep_ttl() == 1
    assert reopened.get(NS, "k") is None


def test_bad_ttl_settings_are_refused(mem: AgentMemory) -> None:
    for ttl, field in [
        ({"default_tll": 5}, "ttl"),
        ({"default_ttl": -1}, "ttl.default_ttl"),
        ({"default_ttl": "5"}, "ttl.default_ttl"),
        ({"sweep_interval_minutes": 0}, "ttl.sweep_interval_minutes"),
        ({"refresh_on_read": "yes"}, "ttl.refresh_on_read"),
        ({"omit_expired": 1}, "ttl.omit_expired"),
        ([("default_ttl", 5)], "ttl"),
    ]:
        with pytest.raises(ValidationError) as err:
            AgentMemStore(mem, tenant_id="acme", ttl=ttl)  # type: ignore[arg-type]
        assert err.value.field == field
    store = AgentMemStore(mem, tenant_id="acme")
    with pytest.raises(ValidationError):
        store.start_ttl_sweeper(sweep_interval_minutes=-1)
