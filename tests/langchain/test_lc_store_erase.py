"""Erasing a user (or an agent) removes the values an ``AgentMemStore`` keeps for the
namespaces naming them (on SQLite and on Postgres); other users' (agents') values, unowned
items and an agent's own state stay."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest
from _canaries import files_with, state_rows_with

from agentmem import AgentMemory, ErasureReceipt
from langchain_agentmem import AgentMemStore

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]
#: The two owners a namespace names (users, or agents: see the ``who`` fixture).
U1, U2 = "owner-qv17", "owner-hx42"
C1, C2, C_SHARED, C_AGENT = "qvcanary5813", "hxcanary2290", "sharedcanary7", "agentcanary3"


def _as_an_earlier_version_wrote(mem: AgentMemory, *, user_tag: bool = False) -> None:
    """Rewrite the store's entries as an earlier agentmem kept them: keyed by a hash of
    (namespace, key) alone, naming no user or agent (or, with ``user_tag``, the user only)."""
    registry = mem.bind("acme", agent_id="langgraph-store:langgraph").state
    for entry in registry.list():
        registry.delete(entry.key)
        if entry.key == "store-layout":
            continue
        raw = json.dumps([entry.value["namespace"], entry.value["key"]]).encode("utf-8")
        old_key = "item:" + hashlib.sha256(raw).hexdigest()[:48]
        value = {k: v for k, v in entry.value.items() if k != "owner"}
        registry.set(old_key, value, user_id=entry.user_id if user_tag else None)


@pytest.fixture(params=["user", "agent"])
def who(request: pytest.FixtureRequest) -> str:
    """Whom the namespaces name at index 1: users (``user_position=1``) or agents."""
    return str(request.param)


def _store(mem: AgentMemory, who: str) -> AgentMemStore:
    return AgentMemStore(mem, tenant_id="acme", **{f"{who}_position": 1})


def _erase(mem: AgentMemory, who: str, owner: str) -> ErasureReceipt:
    return mem.erase(tenant_id="acme", **{f"{who}_id": owner})


def _fill(mem: AgentMemory, who: str = "user") -> AgentMemStore:
    store = _store(mem, who)
    for user, canary in ((U1, C1), (U2, C2)):
        store.put(("memories", user), "pref", {"content": f"Prefers the code {canary}"})
        store.put(("memories", user, "deep"), "n", {"note": canary}, index=False)
        store.put(("memories", user), "ttl", {"content": f"short-lived {canary}"}, ttl=60)
    store.put(("shared",), "faq", {"content": f"Opening hours {C_SHARED}"})
    mem.bind("acme", agent_id="bot").state.set("cursor", {"last": C_AGENT})
    mem.flush()
    return store


def test_erasing_a_user_or_agent_removes_the_store_values_of_its_namespaces(
    make_memory: MakeMemory, who: str
) -> None:
    mem = make_memory()
    store = _fill(mem, who)
    assert store.get(("memories", U1), "pref") is not None
    assert state_rows_with(mem, C1) == 3

    receipt = _erase(mem, who, U1)

    assert receipt.records["agent_state"] == 3
    assert store.get(("memories", U1), "pref") is None
    assert store.get(("memories", U1, "deep"), "n") is None
    assert store.search(("memories", U1)) == []
    assert store.search(("memories", U1), query=C1) == []
    assert [ns for ns in store.list_namespaces() if U1 in ns] == []
    assert state_rows_with(mem, C1) == 0
    # the other owner's values, the unowned item and the agent's own state stay
    assert sorted(i.key for i in store.search(("memories", U2))) == ["n", "pref", "ttl"]
    assert store.search(("memories", U2), query=f"code {C2}")[0].key == "pref"
    assert store.get(("shared",), "faq") is not None
    state = mem.bind("acme", agent_id="bot").state.get("cursor")
    assert state is not None and state.value == {"last": C_AGENT}
    home = mem.home
    mem.close()
    assert files_with(home, C1) == []  # nothing of the owner in the records file (or any)


def test_a_read_refreshing_an_items_ttl_keeps_it_erasable(
    make_memory: MakeMemory, who: str
) -> None:
    mem = make_memory()
    store = _fill(mem, who)
    assert store.get(("memories", U1), "ttl") is not None  # rewrites the entry's expiry
    _erase(mem, who, U1)
    assert store.get(("memories", U1), "ttl") is None
    assert state_rows_with(mem, C1) == 0


def test_erasing_the_tenant_or_the_stores_agent_still_removes_every_value(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    store = _fill(mem)
    mem.erase(tenant_id="acme", agent_id="langgraph-store:langgraph")
    assert store.search(()) == []  # every value of the store went with its agent
    assert mem.bind("acme", agent_id="bot").state.get("cursor") is not None
    mem.erase(tenant_id="acme")
    assert mem.records.read("SELECT COUNT(*) FROM agent_state")[0][0] == 0


def test_values_written_before_entries_named_their_owner_are_erased_too(
    make_memory: MakeMemory, who: str
) -> None:
    mem = make_memory()
    _fill(mem, who)
    _as_an_earlier_version_wrote(mem)
    registry = mem.bind("acme", agent_id="langgraph-store:langgraph").state
    assert {(e.user_id, e.about_agent_id) for e in registry.list()} == {(None, None)}

    store = _store(mem, who)
    assert store.get(("shared",), "faq") is not None  # its first operation moves and tags them
    assert [e.key for e in registry.list(prefix="item:")] == []
    _erase(mem, who, U1)

    assert store.search(("memories", U1)) == []
    assert state_rows_with(mem, C1) == 0
    assert sorted(i.key for i in store.search(("memories", U2))) == ["n", "pref", "ttl"]
    tag = "user_id" if who == "user" else "about_agent_id"
    assert {getattr(e, tag) for e in registry.list(prefix="ns:")} == {U2, None}


def test_values_tagged_with_their_user_only_get_their_agent_too(
    make_memory: MakeMemory,
) -> None:
    # the entries the previous version wrote: tagged with the user their namespace names,
    # not yet with the agent
    mem = make_memory()
    store = AgentMemStore(mem, tenant_id="acme", user_position=1, agent_position=2)
    store.put(("memories", U1, "a-1"), "pref", {"content": f"Prefers the code {C1}"})
    store.put(("memories", U1, "a-2"), "pref", {"content": f"Prefers the code {C2}"})
    _as_an_earlier_version_wrote(mem, user_tag=True)
    registry = mem.bind("acme", agent_id="langgraph-store:langgraph").state

    again = AgentMemStore(mem, tenant_id="acme", user_position=1, agent_position=2)
    assert again.get(("memories", U1, "a-1"), "pref") is not None  # tags them
    assert {(e.user_id, e.about_agent_id) for e in registry.list(prefix="ns:")} == {
        (U1, "a-1"),
        (U1, "a-2"),
    }
    # a user with an agent: only the value naming both goes
    receipt = mem.erase(tenant_id="acme", user_id=U1, agent_id="a-1")
    assert receipt.records["agent_state"] == 1
    assert again.get(("memories", U1, "a-1"), "pref") is None
    assert again.get(("memories", U1, "a-2"), "pref") is not None
    assert state_rows_with(mem, C1) == 0
