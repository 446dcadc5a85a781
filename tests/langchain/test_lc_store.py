"""AgentMemStore against LangGraph's store semantics (as InMemoryStore behaves)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp

from agentmem import AgentMemory, ValidationError
from langchain_agentmem import AgentMemRetriever, AgentMemStore, RecallTool

MakeMemory = Callable[..., AgentMemory]


@pytest.fixture
def store(mem: AgentMemory) -> AgentMemStore:
    return AgentMemStore(mem, tenant_id="acme", user_position=1)


def test_put_get_update_delete(store: AgentMemStore) -> None:
    ns = ("memories", "u1")
    assert store.get(ns, "pref") is None
    store.put(ns, "pref", {"content": "Prefers dark mode", "tags": ["ui"]})
    item = store.get(ns, "pref")
    assert item is not None
    assert (item.namespace, item.key) == (ns, "pref")
    assert item.value == {"content": "Prefers dark mode", "tags": ["ui"]}
    assert item.created_at == item.updated_at
    time.sleep(0.01)
    store.put(ns, "pref", {"content": "Prefers light mode"})
    updated = store.get(ns, "pref")
    assert updated is not None and updated.value == {"content": "Prefers light mode"}
    assert updated.created_at == item.created_at < updated.updated_at
    store.delete(ns, "pref")
    assert store.get(ns, "pref") is None
    store.delete(ns, "pref")  # deleting what is not there is fine


def test_search_without_query_filters_and_pages(store: AgentMemStore) -> None:
    for n in range(5):
        store.put(("docs", "u1"), f"d{n}", {"n": n, "kind": "even" if n % 2 == 0 else "odd"})
    store.put(("other",), "x", {"n": 99, "kind": "even"})
    found = store.search(("docs",))
    assert sorted(i.key for i in found) == ["d0", "d1", "d2", "d3", "d4"]
    assert all(i.score is None for i in found)
    assert [i.key for i in found] == ["d4", "d3", "d2", "d1", "d0"]  # most recently updated first
    assert sorted(i.key for i in store.search(("docs",), filter={"kind": "even"})) == [
        "d0",
        "d2",
        "d4",
    ]
    assert sorted(i.key for i in store.search((), filter={"n": {"$gte": 3}})) == ["d3", "d4", "x"]
    assert [i.key for i in store.search((), filter={"n": {"$lt": 2, "$ne": 0}})] == ["d1"]
    page1 = store.search(("docs",), limit=2)
    page2 = store.search(("docs",), limit=2, offset=2)
    assert [i.key for i in page1 + page2] == ["d4", "d3", "d2", "d1"]
    assert store.search(("nothing",)) == []


def test_search_with_query_ranks_by_meaning(mem: AgentMemory, store: AgentMemStore) -> None:
    ns = ("memories", "u1")
    store.put(ns, "diet", {"content": "The user is vegetarian and avoids meat"})
    store.put(ns, "editor", {"content": "The user writes code in Neovim"})
    store.put(ns, "pet", {"content": "The user has a cat named Miso"})
    mem.flush()
    results = store.search(ns, query="what food does the user eat?", limit=3)
    assert results[0].key == "diet"
    assert results[0].score is not None and 0 < results[0].score <= 1
    scores = [r.score for r in results if r.score is not None]
    assert scores == sorted(scores, reverse=True)
    assert store.search(ns, query="text editor", limit=1)[0].key == "editor"
    # filters apply to query searches too
    assert (
        store.search(ns, query="food", filter={"content": {"$ne": "x"}}, limit=1)[0].key == "diet"
    )


def test_put_replaces_what_the_query_finds(mem: AgentMemory, store: AgentMemStore) -> None:
    ns = ("memories", "u1")
    store.put(ns, "city", {"content": "The user lives in Lisbon"})
    mem.flush()
    store.put(ns, "city", {"content": "The user moved to Berlin"})
    mem.flush()
    hits = store.search(ns, query="Lisbon Berlin where does the user live")
    assert [h.key for h in hits] == ["city"]
    assert hits[0].value == {"content": "The user moved to Berlin"}
    # the old version is superseded in agentmem, so recall no longer returns it
    u1 = mem.bind("acme", user_id="u1")
    contents = [h.content for h in u1.recall("Lisbon", scope="user", min_score=0.0).items]
    assert not any("Lisbon" in c for c in contents)
    store.delete(ns, "city")
    mem.flush()
    assert store.search(ns, query="Berlin") == []
    assert u1.recall("Berlin", scope="user", min_score=0.0).items == []


def test_same_value_under_two_keys_stays_two_items(mem: AgentMemory, store: AgentMemStore) -> None:
    ns = ("memories", "u1")
    store.put(ns, "a", {"content": "Likes green tea"})
    store.put(ns, "b", {"content": "Likes green tea"})
    store.put(ns, "a", {"content": "Likes green tea"})  # re-put of the same value
    mem.flush()
    hits = store.search(ns, query="green tea")
    assert sorted(h.key for h in hits) == ["a", "b"]
    assert all(h.score is not None for h in hits)


def test_index_fields_and_index_false(mem: AgentMemory) -> None:
    store = AgentMemStore(mem, tenant_id="acme", index={"fields": ["title"]})
    store.put(("notes",), "n1", {"title": "Quarterly revenue report", "body": "peanut butter"})
    store.put(("notes",), "n2", {"title": "Peanut allergy protocol", "body": "x"}, index=False)
    store.put(("notes",), "n3", {"title": "Team offsite", "body": "y"}, index=["body"])
    mem.flush()
    hits = store.search(("notes",), query="peanut")
    by_key = {h.key: h.score for h in hits}
    assert set(by_key) == {"n1", "n2", "n3"}
    assert by_key["n2"] is None  # not indexed: listed after the ranked ones, without a score
    assert hits[-1].key == "n2"
    # n1 is indexed by its title only: the body's "peanut" is not what it is found by
    assert store.search(("notes",), query="revenue", limit=1)[0].key == "n1"
    assert store.get(("notes",), "n2") is not None


def test_list_namespaces(store: AgentMemStore) -> None:
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("x", "y"),
    ]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    store.delete(("x", "y"), "k")
    assert ("x", "y") not in store.list_namespaces()


def test_namespaces_map_onto_users_and_tenant(mem: AgentMemory, store: AgentMemStore) -> None:
    store.put(("memories", "u1"), "m", {"content": "u1 is training for a marathon"})
    store.put(("memories", "u2"), "m", {"content": "u2 is training for a triathlon"})
    store.put(("private",), "note", {"content": "Training notes of the store's own"})
    shared = AgentMemStore(mem, tenant_id="acme", store_id="shared", tenant_wide=True)
    shared.put(("shared",), "faq", {"content": "Training plans are free for all members"})
    mem.flush()
    u1 = mem.bind("acme", user_id="u1", session_id="s1")
    u2 = mem.bind("acme", user_id="u2", session_id="s1")
    docs = AgentMemRetriever(memory=u1, k=10, min_score=0.0).invoke("training")
    contents = {d.page_content: d.metadata for d in docs}
    assert "content: u1 is training for a marathon" in contents
    assert contents["content: u1 is training for a marathon"]["scope"] == "user"
    assert contents["content: u1 is training for a marathon"]["lg_namespace"] == ["memories", "u1"]
    assert not any("u2" in c for c in contents)
    assert contents["content: Training plans are free for all members"]["scope"] == "tenant"
    # a namespace naming nobody stays the store's own unless the store is tenant_wide
    assert not any("store's own" in c for c in contents)
    assert [h.key for h in store.search(("private",), query="training notes")] == ["note"]
    msg = RecallTool(memory=u2).invoke(
        {"name": "recall", "args": {"query": "marathon"}, "id": "c", "type": "tool_call"}
    )
    assert "marathon" not in str(msg.content)
    assert all("u1" not in d.page_content for d in msg.artifact)
    other_tenant = mem.bind("globex", user_id="u1")
    assert other_tenant.recall("marathon training", min_score=0.0).items == []
    # a cross-user prefix search merges every user's ranked items
    hits = store.search(("memories",), query="endurance training")
    assert sorted(h.namespace for h in hits) == [("memories", "u1"), ("memories", "u2")]
    assert all(h.score is not None for h in hits)
    assert [h.namespace for h in store.search(("memories", "u2"), query="training")] == [
        ("memories", "u2")
    ]


def test_agent_position(mem: AgentMemory) -> None:
    store = AgentMemStore(mem, tenant_id="acme", agent_position=0)
    store.put(("support", "lessons"), "l1", {"content": "Ask for the order number first"})
    mem.flush()
    agent = mem.bind("acme", agent_id="support")
    (hit,) = agent.recall("order number", scope="agent").items
    assert hit.scope == "agent" and hit.metadata["lg_key"] == "l1"


def test_batch_runs_ops_in_order(store: AgentMemStore) -> None:
    ns = ("memories", "u1")
    results = store.batch(
        [
            PutOp(ns, "k", {"v": 1}),
            GetOp(ns, "k"),
            SearchOp(("memories",)),
            ListNamespacesOp(),
            PutOp(ns, "k", None),
            GetOp(ns, "k"),
        ]
    )
    assert results[0] is None
    assert results[1] is not None and results[1].value == {"v": 1}  # type: ignore[union-attr]
    assert [i.key for i in results[2]] == ["k"]  # type: ignore[union-attr]
    assert results[3] == [ns]
    assert results[5] is None


def test_invalid_inputs(store: AgentMemStore) -> None:
    live = store.memory.stats().live
    with pytest.raises(InvalidNamespaceError):
        store.put(("bad.label",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})
    for ttl in (0, -5, float("nan"), "5", True):
        with pytest.raises(ValidationError, match="ttl"):
            store.put(("ok",), "k", {"v": 1}, ttl=ttl)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        store.put(("ok",), "k", {"v": "x" * 70_000})  # over the 64 KiB value limit
    with pytest.raises(ValidationError):
        store.put(("ok",), "k", {"v": object()})
    # JSON would store 1 as "1": the value read back would not be the one put
    for value, where in (({1: "x"}, "value[1]"), ({"a": [{"b": {2: 0}}]}, "value.a[0].b[2]")):
        with pytest.raises(ValidationError) as err:
            store.put(("ok",), "k", value)  # type: ignore[arg-type]
        assert err.value.field == where
    assert store.get(("ok",), "k") is None
    assert store.memory.stats().live == live  # a rejected put writes nothing
    with pytest.raises(ValidationError):
        AgentMemStore(store.memory, tenant_id="acme", user_position=-1)
    with pytest.raises(ValidationError, match="needs a tenant_id with an embedded AgentMemory"):
        AgentMemStore(store.memory, user_position=1)
    with pytest.raises(ValidationError):
        AgentMemStore(store.memory, tenant_id="acme", memory_type="gossip")


def test_large_values_are_searchable_by_their_start(mem: AgentMemory, store: AgentMemStore) -> None:
    value = {"content": "Kubernetes upgrade runbook. " + "step " * 6000}
    store.put(("runbooks",), "k8s", value)
    mem.flush()
    item = store.get(("runbooks",), "k8s")
    assert item is not None and item.value == value
    assert store.search(("runbooks",), query="kubernetes upgrade")[0].score is not None


def test_wait_for_index(mem: AgentMemory) -> None:
    store = AgentMemStore(mem, tenant_id="acme", wait_for_index=True)
    store.put(("faq",), "hours", {"content": "The shop opens at nine"})
    hit = store.search(("faq",), query="opening hours")[0]
    assert hit.key == "hours" and hit.score is not None


def test_store_survives_a_reopen(make_memory: MakeMemory) -> None:
    mem = make_memory()
    AgentMemStore(mem, tenant_id="acme").put(("faq",), "hours", {"content": "Opens at nine"})
    home = mem.home
    mem.close()
    again = make_memory(path=home)
    store = AgentMemStore(again, tenant_id="acme")
    item = store.get(("faq",), "hours")
    assert item is not None and item.value == {"content": "Opens at nine"}
    again.flush()
    assert store.search(("faq",), query="opening time")[0].key == "hours"


def test_two_stores_in_one_tenant_are_separate(mem: AgentMemory) -> None:
    a = AgentMemStore(mem, tenant_id="acme", store_id="a")
    b = AgentMemStore(mem, tenant_id="acme", store_id="b")
    a.put(("ns",), "k", {"content": "from a"})
    assert b.get(("ns",), "k") is None
    assert b.list_namespaces() == []
    mem.flush()
    assert b.search((), query="from a") == []


@pytest.mark.asyncio
async def test_async_operations(mem: AgentMemory, store: AgentMemStore) -> None:
    ns = ("memories", "u1")
    await store.aput(ns, "pref", {"content": "Prefers window seats on flights"})
    item = await store.aget(ns, "pref")
    assert item is not None and item.value["content"].startswith("Prefers window")
    assert await store.alist_namespaces(prefix=("memories",)) == [ns]
    assert [i.key for i in await store.asearch(ns)] == ["pref"]
    await __import__("asyncio").to_thread(mem.flush)
    hits = await store.asearch(ns, query="airplane seating")
    assert hits[0].key == "pref" and hits[0].score is not None
    await store.adelete(ns, "pref")
    assert await store.aget(ns, "pref") is None


class _State(TypedDict):
    user: str
    note: str
    found: list[str]


def test_store_in_a_langgraph_graph(mem: AgentMemory, store: AgentMemStore) -> None:
    def write(state: _State, runtime: Runtime[Any]) -> dict[str, Any]:
        assert runtime.store is not None
        runtime.store.put(("memories", state["user"]), "note", {"content": state["note"]})
        return {}

    def read(state: _State, runtime: Runtime[Any]) -> dict[str, Any]:
        assert runtime.store is not None
        items = runtime.store.search(("memories", state["user"]))
        return {"found": [i.value["content"] for i in items]}

    builder = StateGraph(_State)
    builder.add_node("write", write)
    builder.add_node("read", read)
    builder.add_edge(START, "write")
    builder.add_edge("write", "read")
    builder.add_edge("read", END)
    graph = builder.compile(store=store)
    out = graph.invoke({"user": "u1", "note": "Allergic to peanuts", "found": []})
    assert out["found"] == ["Allergic to peanuts"]
    assert store.get(("memories", "u1"), "note") is not None


def test_concurrent_puts_to_one_key_leave_its_value_and_memory_alike(
    mem: AgentMemory, store: AgentMemStore
) -> None:
    import asyncio

    async def puts(trial: int) -> None:
        await asyncio.gather(
            *[
                store.aput(("memories", "u1"), "same", {"content": f"trial {trial} version {i}"})
                for i in range(6)
            ]
        )

    u1 = mem.bind("acme", user_id="u1", session_id="s")
    for trial in range(5):
        asyncio.run(puts(trial))
        item = store.get(("memories", "u1"), "same")
        assert item is not None
        mem.flush()
        live = u1.recall("trial version", top_k=20, kinds=["memory"], min_score=0.0).items
        assert [h.content for h in live] == [f"content: {item.value['content']}"]
    store.delete(("memories", "u1"), "same")
    mem.flush()
    assert u1.recall("trial version", top_k=20, kinds=["memory"], min_score=0.0).items == []


def test_malformed_namespaces_and_pages_are_refused(store: AgentMemStore) -> None:
    """A string namespace is not read as the tuple of its characters (which, with
    ``user_position=1``, made user "e" own ``put("memories", ...)``), and a
    negative page bound does not quietly drop the last items."""
    ns = ("memories", "u1")
    store.put(ns, "a", {"text": "first"})
    store.put(ns, "b", {"text": "second"})
    live = store.memory.stats().live
    refused: list[Callable[[], object]] = [
        lambda: store.put("memories", "k", {"v": 1}),  # type: ignore[arg-type]
        lambda: store.get("memories", "a"),  # type: ignore[arg-type]
        lambda: store.delete("memories", "a"),  # type: ignore[arg-type]
        lambda: store.search("memories"),  # type: ignore[arg-type]
        lambda: store.search(ns, limit=-1),
        lambda: store.search(ns, offset=-1),
        lambda: store.search(ns, filter="text"),  # type: ignore[arg-type]
        lambda: store.list_namespaces(prefix="memories"),  # type: ignore[arg-type]
        lambda: store.list_namespaces(limit=-1),
        lambda: store.list_namespaces(max_depth=0),
        # one bad op refuses its whole batch, before the good put ahead of it runs
        lambda: store.batch([PutOp(ns, "c", {"text": "third"}), SearchOp("memories")]),  # type: ignore[arg-type]
    ]
    for call in refused:
        with pytest.raises(ValidationError):
            call()
    assert store.memory.stats().live == live
    assert store.list_namespaces() == [ns]
    assert sorted(i.key for i in store.search(ns)) == ["a", "b"]
    assert store.get(ns, "c") is None
    assert [ns_ for ns_ in store.list_namespaces(prefix=["memories"])] == [ns]  # a list is fine


def test_a_label_that_cannot_be_a_user_id_is_refused_as_a_namespace_label(
    store: AgentMemStore,
) -> None:
    """The label at ``user_position`` becomes a user id: one the core cannot bind is refused
    as a namespace label (not as a ``user_id`` the caller never passed), indexed or not."""
    for label, index in (("x" * 300, None), ("   ", False), ("u1\n", None)):
        with pytest.raises(ValidationError) as err:
            store.put(("memories", label), "k", {"v": 1}, index=index)
        assert err.value.field == "namespace[1]"
        assert "user_position=1" in str(err.value)
    assert store.list_namespaces() == []
    # an item stored before (by a store that read no user from the namespace) stays deletable
    AgentMemStore(store.memory, tenant_id="acme").put(
        ("memories", "   "), "k", {"v": 1}, index=False
    )
    store.delete(("memories", "   "), "k")
    assert store.list_namespaces() == []


def test_index_settings_that_would_index_nothing_are_refused(
    mem: AgentMemory, store: AgentMemStore
) -> None:
    """A bare string is not read as the list of its characters (paths no value has: the
    item was stored and never found by a query), and ``index=True`` is named, not a
    ``'bool' object is not iterable``."""
    for index in (True, "text", ["text", 5], [""]):
        with pytest.raises(ValidationError) as err:
            store.put(("memories", "u1"), "k", {"text": "hello"}, index=index)  # type: ignore[arg-type]
        assert err.value.field == "index"
    assert store.get(("memories", "u1"), "k") is None
    for config in ({"fields": "text"}, {"fields": [5]}, ["$"]):
        with pytest.raises(ValidationError) as err:
            AgentMemStore(mem, tenant_id="acme", index=config)  # type: ignore[arg-type]
        assert err.value.field.startswith("index")
    store.put(("memories", "u1"), "k", {"text": "Rock climbing on Saturdays"}, index=("text",))
    mem.flush()
    hits = store.search(("memories", "u1"), query="climbing")
    assert [(i.key, i.score is not None) for i in hits] == [("k", True)]


def test_a_flag_that_is_not_a_bool_is_refused(mem: AgentMemory) -> None:
    """``tenant_wide="no"`` (a setting read from text) was truthy: every item of a
    namespace naming nobody became a tenant memory, recalled by every user."""
    for flag in ("tenant_wide", "wait_for_index"):
        for value in ("no", "false", 0, None):
            with pytest.raises(ValidationError) as err:
                AgentMemStore(mem, tenant_id="acme", **{flag: value})
            assert err.value.field == flag
    with pytest.raises(ValidationError) as err:
        AgentMemStore(mem, tenant_id="acme", store_id=" ")
    assert err.value.field == "store_id"
