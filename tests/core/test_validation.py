"""Bad input: every bad argument raises ValidationError naming the field, and nothing stored
changes (the whole records store is compared before and after each rejected call).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from agentmem import AgentMemory, BoundMemory, ValidationError
from agentmem.config import CHAT_COPY_MAX_BYTES, MAX_CONTENT_BYTES, MAX_QUERY_CHARS
from agentmem.embeddings import CachedEmbedder

pytestmark = pytest.mark.both_backends

IDENT = {"tenant_id": "acme", "user_id": "u1", "agent_id": "a1", "session_id": "s1"}
LONE_SURROGATE = "bad \ud800 text"
OVER_LIMIT = "a" * (MAX_CONTENT_BYTES + 1)


@pytest.fixture(scope="module")
def store(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: CachedEmbedder
) -> Iterator[tuple[AgentMemory, BoundMemory, dict[str, str]]]:
    """A store with a row of every kind, indexed, shared by the (read-only) tests below."""
    mem = AgentMemory(tmp_path_factory.mktemp("valid"), embedder=shared_embedder, background=False)
    m = mem.bind(**IDENT)
    ids = {
        "message": m.add_message("user", "The deploy key for staging is KX-93-ZQ-771").id,
        "fact": m.remember("The customer is allergic to peanuts").id,
        "topic": m.remember("Favourite colour is blue", topic_key="colour").id,
        "tool": m.add_tool_output("call_1", "status ok " * 500).source_ref or "",
        "doc": m.add_document("Refunds are accepted within 30 days.", source_ref="refunds.md")[
            0
        ].id,
    }
    assert mem.flush(timeout=60)
    try:
        yield mem, m, ids
    finally:
        mem.close()


class Unserialisable:
    pass


def rejected(field: str, call: Callable[[BoundMemory], Any]) -> tuple[str, Callable[..., Any]]:
    return field, call


BAD_CALLS: dict[str, tuple[str, Callable[[BoundMemory], Any]]] = {
    # recall: query
    "query-empty": rejected("query", lambda m: m.recall("")),
    "query-whitespace": rejected("query", lambda m: m.recall(" \n\t ")),
    "query-none": rejected("query", lambda m: m.recall(None)),
    "query-int": rejected("query", lambda m: m.recall(42)),
    "query-bytes": rejected("query", lambda m: m.recall(b"peanuts")),
    "query-list": rejected("query", lambda m: m.recall(["peanuts"])),
    "query-nul": rejected("query", lambda m: m.recall("pea\x00nuts")),
    "query-surrogate": rejected("query", lambda m: m.recall(LONE_SURROGATE)),
    # recall: top_k
    "top_k-0": rejected("top_k", lambda m: m.recall("peanuts", top_k=0)),
    "top_k-21": rejected("top_k", lambda m: m.recall("peanuts", top_k=21)),
    "top_k-negative": rejected("top_k", lambda m: m.recall("peanuts", top_k=-1)),
    "top_k-true": rejected("top_k", lambda m: m.recall("peanuts", top_k=True)),
    "top_k-str": rejected("top_k", lambda m: m.recall("peanuts", top_k="5")),
    "top_k-float": rejected("top_k", lambda m: m.recall("peanuts", top_k=5.0)),
    "top_k-none": rejected("top_k", lambda m: m.recall("peanuts", top_k=None)),
    # recall: kinds / memory_types / scope
    "kinds-unknown": rejected("kinds", lambda m: m.recall("peanuts", kinds=["episode"])),
    "kinds-unknown-str": rejected("kinds", lambda m: m.recall("peanuts", kinds="messages")),
    "kinds-mixed": rejected("kinds", lambda m: m.recall("x", kinds=["memory", "bogus"])),
    "kinds-empty": rejected("kinds", lambda m: m.recall("peanuts", kinds=[])),
    "kinds-int": rejected("kinds", lambda m: m.recall("peanuts", kinds=3)),
    "kinds-dict": rejected("kinds", lambda m: m.recall("peanuts", kinds={"memory": 1})),
    "kinds-nonstr-item": rejected("kinds", lambda m: m.recall("peanuts", kinds=[None])),
    "memory_types-unknown": rejected(
        "memory_types", lambda m: m.recall("peanuts", memory_types=["opinion"])
    ),
    "memory_types-case": rejected(
        "memory_types", lambda m: m.recall("peanuts", memory_types=["Fact"])
    ),
    "scope-unknown": rejected("scope", lambda m: m.recall("peanuts", scope="global")),
    "scope-none": rejected("scope", lambda m: m.recall("peanuts", scope=None)),
    "scope-list": rejected("scope", lambda m: m.recall("peanuts", scope=["user"])),
    # recall: other knobs
    "rerank-str": rejected("rerank", lambda m: m.recall("peanuts", rerank="yes")),
    "min_score-high": rejected("min_score", lambda m: m.recall("peanuts", min_score=1.5)),
    "min_score-negative": rejected("min_score", lambda m: m.recall("peanuts", min_score=-0.1)),
    "min_score-nan": rejected("min_score", lambda m: m.recall("peanuts", min_score=float("nan"))),
    "min_score-str": rejected("min_score", lambda m: m.recall("peanuts", min_score="0.5")),
    "token_budget-0": rejected("token_budget", lambda m: m.recall("peanuts", token_budget=0)),
    "token_budget-negative": rejected(
        "token_budget", lambda m: m.recall("peanuts", token_budget=-10)
    ),
    "token_budget-bool": rejected("token_budget", lambda m: m.recall("x", token_budget=True)),
    "token_budget-str": rejected("token_budget", lambda m: m.recall("x", token_budget="100")),
    "filters-str": rejected("filters", lambda m: m.recall("peanuts", filters="project=x")),
    "filters-nonstr-key": rejected("filters", lambda m: m.recall("peanuts", filters={1: "x"})),
    "filters-unserialisable": rejected(
        "filters", lambda m: m.recall("peanuts", filters={"a": Unserialisable()})
    ),
    "filters-tenant": rejected("filters", lambda m: m.recall("x", filters={"tenant_id": "y"})),
    # add_message
    "role-unknown": rejected("role", lambda m: m.add_message("robot", "hello")),
    "role-none": rejected("role", lambda m: m.add_message(None, "hello")),
    "role-case": rejected("role", lambda m: m.add_message("User", "hello")),
    "message-empty": rejected("content", lambda m: m.add_message("user", "")),
    "message-whitespace": rejected("content", lambda m: m.add_message("user", "   \n")),
    "message-int": rejected("content", lambda m: m.add_message("user", 42)),
    "message-none": rejected("content", lambda m: m.add_message("user", None)),
    "message-dict": rejected("content", lambda m: m.add_message("user", {"text": "hi"})),
    "message-nul": rejected("content", lambda m: m.add_message("user", "a\x00b")),
    "message-surrogate": rejected("content", lambda m: m.add_message("user", LONE_SURROGATE)),
    "message-over-limit": rejected("content", lambda m: m.add_message("user", OVER_LIMIT)),
    "message-metadata-object": rejected(
        "metadata", lambda m: m.add_message("user", "hi", metadata={"x": Unserialisable()})
    ),
    "message-metadata-set": rejected(
        "metadata", lambda m: m.add_message("user", "hi", metadata={"x": {1, 2}})
    ),
    "message-metadata-nan": rejected(
        "metadata", lambda m: m.add_message("user", "hi", metadata={"x": float("nan")})
    ),
    "message-metadata-bytes": rejected(
        "metadata", lambda m: m.add_message("user", "hi", metadata={"x": b"raw"})
    ),
    "message-metadata-list": rejected(
        "metadata", lambda m: m.add_message("user", "hi", metadata=[("x", 1)])
    ),
    "message-metadata-key": rejected(
        "metadata", lambda m: m.add_message("user", "hi", metadata={("a", "b"): 1})
    ),
    "message-metadata-surrogate": rejected(
        "metadata", lambda m: m.add_message("user", "hi", metadata={"x": LONE_SURROGATE})
    ),
    "event_time-words": rejected(
        "event_time", lambda m: m.add_message("user", "hi", event_time="yesterday")
    ),
    "event_time-bad-date": rejected(
        "event_time", lambda m: m.add_message("user", "hi", event_time="2024-13-45")
    ),
    "event_time-int": rejected(
        "event_time", lambda m: m.add_message("user", "hi", event_time=1714550400)
    ),
    "event_time-date-list": rejected(
        "event_time", lambda m: m.add_message("user", "hi", event_time=[2024, 5, 1])
    ),
    # add_messages: nothing is written when any message is bad
    "messages-str": rejected("messages", lambda m: m.add_messages("user: hi")),
    "messages-dict": rejected("messages", lambda m: m.add_messages({"role": "user"})),
    "messages-item-str": rejected("messages[1]", lambda m: m.add_messages([GOOD_MSG, "hi"])),
    "messages-missing-content": rejected(
        "messages[1]", lambda m: m.add_messages([GOOD_MSG, {"role": "user"}])
    ),
    "messages-unknown-key": rejected(
        "messages[0]", lambda m: m.add_messages([{**GOOD_MSG, "name": "bob"}])
    ),
    "messages-bad-role": rejected(
        "messages[1].role",
        lambda m: m.add_messages([GOOD_MSG, {"role": "narrator", "content": "x"}]),
    ),
    "messages-bad-content": rejected(
        "messages[2].content",
        lambda m: m.add_messages([GOOD_MSG, GOOD_MSG, {"role": "user", "content": " "}]),
    ),
    "messages-bad-time": rejected(
        "messages[1].event_time",
        lambda m: m.add_messages([GOOD_MSG, {**GOOD_MSG, "event_time": "soon"}]),
    ),
    # add_tool_output / read_tool_output
    "tool_call_id-empty": rejected("tool_call_id", lambda m: m.add_tool_output("", "out")),
    "tool_call_id-none": rejected("tool_call_id", lambda m: m.add_tool_output(None, "out")),
    "tool_call_id-int": rejected("tool_call_id", lambda m: m.add_tool_output(7, "out")),
    "tool_call_id-nul": rejected("tool_call_id", lambda m: m.add_tool_output("c\x00", "out")),
    "tool-content-bytes": rejected("content", lambda m: m.add_tool_output("c9", b"out")),
    "tool-content-over-limit": rejected("content", lambda m: m.add_tool_output("c9", OVER_LIMIT)),
    "tool_name-int": rejected("tool_name", lambda m: m.add_tool_output("c9", "o", tool_name=1)),
    "tool-metadata": rejected(
        "metadata", lambda m: m.add_tool_output("c9", "out", metadata={"x": Unserialisable()})
    ),
    "read_tool_output-empty": rejected("key", lambda m: m.read_tool_output("")),
    "read_tool_output-none": rejected("key", lambda m: m.read_tool_output(None)),
    # add_document
    "doc-empty": rejected("text", lambda m: m.add_document("")),
    "doc-whitespace": rejected("text", lambda m: m.add_document("\n\n  ")),
    "doc-none": rejected("text", lambda m: m.add_document(None)),
    "doc-nul": rejected("text", lambda m: m.add_document("a\x00b")),
    "doc-surrogate": rejected("text", lambda m: m.add_document(LONE_SURROGATE)),
    "doc-over-limit": rejected("text", lambda m: m.add_document(OVER_LIMIT)),
    "doc-source_ref-empty": rejected("source_ref", lambda m: m.add_document("x", source_ref="")),
    "doc-source_ref-int": rejected("source_ref", lambda m: m.add_document("x", source_ref=5)),
    "doc-metadata": rejected("metadata", lambda m: m.add_document("x", metadata="team=ops")),
    # remember
    "remember-empty": rejected("content", lambda m: m.remember("")),
    "remember-whitespace": rejected("content", lambda m: m.remember("\t")),
    "remember-int": rejected("content", lambda m: m.remember(12)),
    "remember-nul": rejected("content", lambda m: m.remember("a\x00")),
    "remember-surrogate": rejected("content", lambda m: m.remember(LONE_SURROGATE)),
    "remember-over-cap": rejected("content", lambda m: m.remember("x" * (CHAT_COPY_MAX_BYTES + 1))),
    "memory_type-unknown": rejected(
        "memory_type", lambda m: m.remember("x", memory_type="opinion")
    ),
    "memory_type-none": rejected("memory_type", lambda m: m.remember("x", memory_type=None)),
    "remember-scope-unknown": rejected("scope", lambda m: m.remember("x", scope="global")),
    "remember-scope-history": rejected("scope", lambda m: m.remember("x", scope="history")),
    "remember-scope-any": rejected("scope", lambda m: m.remember("x", scope="any")),
    "importance-high": rejected("importance", lambda m: m.remember("x", importance=2)),
    "importance-str": rejected("importance", lambda m: m.remember("x", importance="high")),
    "importance-bool": rejected("importance", lambda m: m.remember("x", importance=True)),
    "topic_key-empty": rejected("topic_key", lambda m: m.remember("x", topic_key="")),
    "topic_key-int": rejected("topic_key", lambda m: m.remember("x", topic_key=3)),
    "remember-metadata": rejected(
        "metadata", lambda m: m.remember("x", metadata={"when": datetime(2024, 1, 1)})
    ),
    # an integer JSON readers (the server's encoder among them) cannot hold
    "metadata-wide-int": rejected("metadata", lambda m: m.remember("x", metadata={"n": 2**64})),
    "metadata-wide-nested": rejected(
        "metadata", lambda m: m.remember("x", metadata={"a": [{"n": -(2**63) - 1}]})
    ),
    "metadata-nan": rejected("metadata", lambda m: m.remember("x", metadata={"v": float("nan")})),
    # remember_many: nothing is written when any item is bad
    "items-str": rejected("items", lambda m: m.remember_many("a fact")),
    "items-dict": rejected("items", lambda m: m.remember_many({"content": "a fact"})),
    "items-bad-type": rejected("items[1].item", lambda m: m.remember_many(["new fact", 5])),
    "items-empty-content": rejected(
        "items[1].content", lambda m: m.remember_many(["new fact", {"content": ""}])
    ),
    "items-missing-content": rejected(
        "items[0].content", lambda m: m.remember_many([{"memory_type": "fact"}])
    ),
    "items-unknown-key": rejected(
        "items[0].item", lambda m: m.remember_many([{"content": "x", "user_id": "u2"}])
    ),
    "items-bad-memory-type": rejected(
        "items[2].memory_type",
        lambda m: m.remember_many(["f1", "f2", {"content": "f3", "memory_type": "rumour"}]),
    ),
    # forget / get
    "forget-empty": rejected("memory_id", lambda m: m.forget("")),
    "forget-none": rejected("memory_id", lambda m: m.forget(None)),
    "forget-int": rejected("memory_id", lambda m: m.forget(5)),
    "get-empty": rejected("memory_id", lambda m: m.get(" ")),
    "get-list": rejected("memory_id", lambda m: m.get(["id"])),
    "messages-limit-huge": rejected("limit", lambda m: m.messages(limit=10**30)),
}
GOOD_MSG = {"role": "user", "content": "a perfectly fine new message"}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_rejected_and_nothing_changes(store, snapshot, case: str) -> None:
    mem, m, ids = store
    field, call = BAD_CALLS[case]
    before = snapshot(mem)
    with pytest.raises(ValidationError) as err:
        call(m)
    assert err.value.field == field
    assert str(err.value).startswith(f"{field}: ")
    assert err.value.context["field"] == field
    assert snapshot(mem) == before
    # what was stored is still there and still found
    assert m.get(ids["fact"]).content == "The customer is allergic to peanuts"
    assert m.recall("KX-93-ZQ-771").items[0].id == ids["message"]


def test_validation_error_is_a_value_error(store) -> None:
    _, m, _ = store
    with pytest.raises(ValueError):
        m.recall("")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tenant_id": None}, "tenant_id"),
        ({"tenant_id": ""}, "tenant_id"),
        ({"tenant_id": "   "}, "tenant_id"),
        ({"tenant_id": 7}, "tenant_id"),
        ({"tenant_id": b"acme"}, "tenant_id"),
        ({"tenant_id": "ac\x00me"}, "tenant_id"),
        ({"tenant_id": "ac\nme"}, "tenant_id"),
        ({"tenant_id": "ac\x1fme"}, "tenant_id"),
        ({"tenant_id": "x" * 257}, "tenant_id"),
        ({"tenant_id": LONE_SURROGATE}, "tenant_id"),
        ({"tenant_id": "acme", "user_id": ""}, "user_id"),
        ({"tenant_id": "acme", "user_id": 1}, "user_id"),
        ({"tenant_id": "acme", "user_id": "u\t1"}, "user_id"),
        ({"tenant_id": "acme", "agent_id": ["a1"]}, "agent_id"),
        ({"tenant_id": "acme", "agent_id": "a" * 300}, "agent_id"),
        ({"tenant_id": "acme", "session_id": "\x01"}, "session_id"),
        ({"tenant_id": "acme", "session_id": " "}, "session_id"),
    ],
)
def test_bad_identity_in_bind(store, snapshot, kwargs: dict[str, Any], field: str) -> None:
    mem, _, _ = store
    before = snapshot(mem)
    with pytest.raises(ValidationError) as err:
        mem.bind(**kwargs)
    assert err.value.field == field
    assert snapshot(mem) == before


def test_identity_at_the_limit_is_fine(store) -> None:
    mem, _, _ = store
    m = mem.bind(tenant_id="t" * 256, user_id="ünï-cødé 用户", session_id="s:1/2@x")
    assert m.tenant_id == "t" * 256
    assert m.recall("anything at all").items == []


def test_content_at_the_limits_is_accepted(make_memory, rows) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    fact = "é" * (CHAT_COPY_MAX_BYTES // 2)  # exactly 16 KiB of UTF-8
    assert m.remember(fact).was_new
    big = ("word " * (MAX_CONTENT_BYTES // 5))[:MAX_CONTENT_BYTES]
    item = m.add_tool_output("call_big", big)
    assert m.read_tool_output(item.source_ref or "") == big
    assert rows(mem) == 2


def test_long_query_truncated_with_a_warning(
    store, snapshot, caplog: pytest.LogCaptureFixture
) -> None:
    mem, m, ids = store
    before = snapshot(mem)
    filler = "a" * MAX_QUERY_CHARS  # one over-long token, dropped by the analyzer
    with caplog.at_level(logging.WARNING, logger="agentmem"):
        exact = m.recall("KX-93-ZQ-771 " + filler[: MAX_QUERY_CHARS - 13])
    assert not [r for r in caplog.records if "truncat" in r.getMessage()]
    assert exact.items and exact.items[0].id == ids["message"]

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agentmem"):
        result = m.recall(filler + " KX-93-ZQ-771 " + "peanuts " * 2000)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("truncat" in r.getMessage() for r in warnings)
    assert any(str(MAX_QUERY_CHARS) in r.getMessage() for r in warnings)
    # the part past 8192 characters was not searched
    assert ids["message"] not in {h.id for h in result.items}
    assert snapshot(mem) == before


def test_query_with_syntax_characters_never_raises(store) -> None:
    _, m, ids = store
    for query in (
        'KX-93-ZQ-771 AND "unbalanced',
        "title:(peanuts OR",
        "*:*",
        "peanuts^2 ~ [to} \\",
        "NOT",
        '+-&&||!(){}[]^"~*?:\\/',
    ):
        m.recall(query)
    assert m.recall('"KX-93-ZQ-771').items[0].id == ids["message"]


def test_integers_at_the_64_bit_limits_are_kept(make_memory) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    edges = {"low": -(2**63), "high": 2**64 - 1}
    assert m.get(m.remember("edges", metadata=edges).id).metadata == edges
    with pytest.raises(ValidationError, match="value: holds an integer outside 64 bits"):
        m.state.set("counter", 10**30)
