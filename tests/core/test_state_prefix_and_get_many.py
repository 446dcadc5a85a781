"""``state.list(prefix=...)`` returns exactly the entries whose key starts with the prefix,
and ``get_many`` the live memories visible to the identity among many ids (SQLite and
Postgres)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentmem import AgentMemory, ValidationError

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]
KEYS = [
    "a",
    "a/x",
    "ab",
    "abc",
    "ab~",
    "ac",
    "b",
    "z",
    "é",
    "éa",
    "é~",
    "ê",
    "日本",
    "日本語",
    "日",
]


@pytest.mark.parametrize("prefix", ["a", "ab", "a/", "é", "日本", "b", "q", "ê", "~"])
def test_a_prefix_lists_exactly_the_keys_starting_with_it(
    make_memory: MakeMemory, prefix: str
) -> None:
    state = make_memory().bind("acme", agent_id="bot").state
    for key in KEYS:
        state.set(key, {"k": key})
    found = [e.key for e in state.list(prefix=prefix)]
    assert found == sorted(k for k in KEYS if k.startswith(prefix))
    assert [e.value for e in state.list(prefix=prefix)] == [{"k": k} for k in found]
    assert [e.key for e in state.list()] == sorted(KEYS)


def test_a_prefix_stays_within_the_agent_and_must_be_a_key_start(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    mem.bind("acme", agent_id="bot").state.set("ab", 1)
    mem.bind("acme", agent_id="other").state.set("ab", 2)
    mem.bind("beta", agent_id="bot").state.set("ab", 3)
    assert [e.value for e in mem.bind("acme", agent_id="bot").state.list(prefix="a")] == [1]
    for bad in ("", " ", 7):
        with pytest.raises(ValidationError, match="prefix"):
            mem.bind("acme", agent_id="bot").state.list(prefix=bad)  # type: ignore[arg-type]


def test_get_many_returns_the_live_visible_memories_in_order(make_memory: MakeMemory) -> None:
    mem = make_memory()
    u1, u2 = mem.bind("acme", user_id="u1"), mem.bind("acme", user_id="u2")
    a = u1.remember("Likes tea").id
    b = u1.remember("Likes chess").id
    c = u1.remember("Likes rain").id
    theirs = u2.remember("Likes jazz").id
    assert u1.forget(b)
    found = u1.get_many([c, "f" * 32, theirs, b, a, c])
    assert [m.id for m in found] == [c, a, c]
    assert [m.content for m in found] == ["Likes rain", "Likes tea", "Likes rain"]
    assert u1.get_many([]) == []
    with pytest.raises(ValidationError, match="memory_ids"):
        u1.get_many("abc")
    with pytest.raises(ValidationError, match=r"memory_ids\[1\]"):
        u1.get_many([a, ""])
