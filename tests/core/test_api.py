"""The public API of the core engine, end to end on the real stores.

Real SQLite, real Tantivy, real embedded Chroma and the default int8 MiniLM embedder; every
data dir lives under ``tmp_path``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentmem import (
    AgentMemError,
    AgentMemory,
    BoundMemory,
    DataDirLockedError,
    EmbeddingError,
    MemoryItem,
    ModelFilesError,
    NotFoundError,
    RecallHit,
    RecallResult,
    RememberResult,
    ScopeError,
    StorageError,
    ValidationError,
)
from agentmem.embeddings import CachedEmbedder
from agentmem.storage.keyword_index import build_analyzer
from agentmem.tokens import count_tokens

pytestmark = pytest.mark.both_backends

IDENT = {"tenant_id": "acme", "user_id": "u1", "agent_id": "support", "session_id": "s2"}

UNRELATED_QUERIES = [
    "quantum chromodynamics lattice gauge theory",
    "how tall is mount everest",
    "recipe for banana bread",
]

USER_FACTS = [
    "The customer is allergic to peanuts and shellfish",
    "I prefer uv over pip for Python packaging",
    "The deploy key for staging is KX-93-ZQ-771",
    "My daughter plays the violin every evening",
    "Invoices must be approved by the finance lead before payment",
]

POLICY_DOC = " ".join(
    [
        "Warehouse handbook, revision one.",
        *(
            f"Section {n}: pallets in aisle {n} are counted every {n % 7 + 1} days "
            f"and the count sheet for aisle {n} goes to the shift manager."
            for n in range(1, 40)
        ),
        "The emergency generator is tested on the first Monday of every month.",
        *(
            f"Appendix {n}: forklift {n} is serviced after {n * 100} operating hours."
            for n in range(1, 25)
        ),
    ]
)


def terms(text: str) -> set[str]:
    """Analyzed keyword terms of ``text`` (the same analyzer the keyword index uses)."""
    return set(build_analyzer().analyze(text))


def scores_ok(result: RecallResult) -> None:
    scores = [h.score for h in result.items]
    assert all(0.0 <= s <= 1.0 for s in scores), scores
    assert scores == sorted(scores, reverse=True), scores


# --------------------------------------------------------------------------------------------
# A populated store shared by the read-only recall tests of this module.
# --------------------------------------------------------------------------------------------


class Corpus:
    def __init__(self, mem: AgentMemory) -> None:
        self.mem = mem
        self.m = mem.bind(**IDENT)
        earlier = mem.bind(**{**IDENT, "session_id": "s1"})
        m = self.m
        self.ids: dict[str, str] = {}
        # one row per scope sharing the rare word "zephyr"
        self.ids["session"] = m.add_message(
            "user",
            "The zephyr ticket for this session is about a broken laptop charger",
            metadata={"project": "apollo"},
        ).id
        self.ids["history"] = earlier.add_message(
            "user", "In an earlier chat the zephyr ticket was about a lost passport"
        ).id
        self.ids["user"] = m.remember("The user's zephyr code name is Bluebird").id
        self.ids["agent"] = m.remember(
            "Agent rule: zephyr tickets are handled by the night shift",
            scope="agent",
            memory_type="instruction",
        ).id
        self.ids["tenant"] = m.add_document(
            "Zephyr is the company's internal ticketing system, introduced in 2021.",
            source_ref="zephyr.md",
        )[0].id
        # conversation of this session
        self.flight = m.add_message(
            "user",
            "Can you book me a flight to Tokyo next Tuesday?",
            metadata={"project": "apollo", "channel": "web"},
        )
        m.add_message(
            "assistant",
            "Booked: flight NH204 departs Tuesday 09:15 from Heathrow.",
            metadata={"project": "gemini"},
        )
        # explicit memories
        self.facts = {
            r.id: text
            for r, text in zip(
                m.remember_many(
                    [
                        *USER_FACTS[:3],
                        {"content": USER_FACTS[3], "memory_type": "event"},
                        {
                            "content": USER_FACTS[4],
                            "memory_type": "instruction",
                            "metadata": {"project": "gemini"},
                        },
                    ]
                ),
                USER_FACTS,
                strict=True,
            )
        }
        self.pref = m.remember(
            "I like window seats on long flights",
            memory_type="preference",
            metadata={"project": "apollo"},
        ).id
        self.chunks = m.add_document(POLICY_DOC, source_ref="handbook.md")
        assert mem.flush(timeout=120)


@pytest.fixture(scope="module")
def corpus(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: CachedEmbedder
) -> Iterator[Corpus]:
    mem = AgentMemory(tmp_path_factory.mktemp("corpus"), embedder=shared_embedder, background=False)
    try:
        yield Corpus(mem)
    finally:
        mem.close()


# --------------------------------------------------------------------------------------------
# Package surface
# --------------------------------------------------------------------------------------------


def test_all_is_pinned() -> None:
    import agentmem

    assert agentmem.__all__ == [
        "LLM",
        "AgentMemError",
        "AgentMemory",
        "AnswerResult",
        "AnthropicLLM",
        "AuthError",
        "BoundMemory",
        "BoundMemoryProtocol",
        "CachedEmbedder",
        "CalibrationProfile",
        "CloseResult",
        "ConfigError",
        "DataDirLockedError",
        "Embedder",
        "EmbedderMismatchError",
        "EmbeddingError",
        "ErasureReceipt",
        "HttpReranker",
        "Identity",
        "IngestResult",
        "JudgeResult",
        "KnowledgeEntry",
        "LLMError",
        "MemoryConfig",
        "MemoryItem",
        "MemoryProtocol",
        "ModelFilesError",
        "ModelFilesWarning",
        "NotFoundError",
        "OfflineLLM",
        "OnnxCrossEncoderReranker",
        "OnnxMiniLMEmbedder",
        "RateLimitError",
        "RecallHit",
        "RecallOptions",
        "RecallResult",
        "RecordsMissingError",
        "RememberResult",
        "RemoteError",
        "RerankError",
        "Reranker",
        "RetentionResult",
        "ScopeError",
        "Settings",
        "StorageError",
        "TierConfig",
        "UncalibratedEmbedderWarning",
        "ValidationError",
        "__version__",
        "connect",
        "connect_async",
    ]
    for name in agentmem.__all__:
        assert hasattr(agentmem, name), name


def test_error_tree() -> None:
    assert issubclass(ValidationError, AgentMemError)
    assert issubclass(ScopeError, ValidationError)
    assert issubclass(NotFoundError, AgentMemError)
    assert issubclass(StorageError, AgentMemError)
    assert issubclass(DataDirLockedError, StorageError)
    assert issubclass(ModelFilesError, EmbeddingError)
    # no built-in is shadowed
    import builtins

    import agentmem

    assert not set(agentmem.__all__) & set(dir(builtins))


def test_bind_returns_bound_memory(make_memory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", agent_id="support", session_id="s1")
    assert isinstance(m, BoundMemory)
    assert (m.tenant_id, m.user_id, m.agent_id, m.session_id) == ("acme", "u1", "support", "s1")
    only_tenant = mem.bind(tenant_id="acme")
    assert (only_tenant.user_id, only_tenant.agent_id, only_tenant.session_id) == (None,) * 3


# --------------------------------------------------------------------------------------------
# Writes
# --------------------------------------------------------------------------------------------


def test_add_message_stores_a_chat_message(make_memory, rows) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    item = m.add_message(
        "user",
        "My order 4711 arrived damaged",
        metadata={"channel": "email", "nested": {"a": [1, 2]}},
        event_time="2024-05-01T10:00:00+02:00",
    )
    assert isinstance(item, MemoryItem)
    assert item.kind == "chat_message"
    assert item.scope == "session"
    assert item.role == "user"
    assert item.memory_type is None
    assert item.content == "My order 4711 arrived damaged"
    assert item.metadata == {"channel": "email", "nested": {"a": [1, 2]}}
    assert (item.tenant_id, item.user_id, item.agent_id, item.session_id) == (
        "acme",
        "u1",
        "support",
        "s2",
    )
    assert item.event_time == datetime(2024, 5, 1, 8, 0, tzinfo=UTC)
    assert item.source_ref is None
    assert item.deleted_at is None
    assert m.get(item.id) == item
    # a naive datetime means UTC
    naive = m.add_message("assistant", "Sorry to hear that", event_time=datetime(2024, 5, 2, 9))
    assert naive.event_time == datetime(2024, 5, 2, 9, tzinfo=UTC)
    assert naive.kind == "chat_message"
    assert rows(mem) == 2


def test_add_message_over_chat_cap_keeps_full_text(make_memory) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    full = "The incident report follows. " + "alpha beta gamma " * 1500 + "END-OF-REPORT"
    assert len(full.encode()) > 16 * 1024
    item = m.add_message("user", full)
    assert len(item.content.encode()) <= 16 * 1024
    assert full.startswith(item.content)
    assert item.source_ref is not None
    assert m.read_tool_output(item.source_ref) == full


def test_add_messages_bulk(make_memory, rows) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    convo = [
        {"role": "user", "content": "Hi, I need help with my router"},
        {"role": "assistant", "content": "Sure. Which model is it?", "metadata": {"step": 1}},
        {"role": "user", "content": "A Fritzbox 7590", "event_time": "2024-01-01T00:00:00Z"},
    ]
    items = m.add_messages(iter(convo))  # any iterable, e.g. a generator
    assert [i.content for i in items] == [c["content"] for c in convo]
    assert [i.role for i in items] == ["user", "assistant", "user"]
    assert {i.kind for i in items} == {"chat_message"}
    assert items[1].metadata == {"step": 1}
    assert items[2].event_time == datetime(2024, 1, 1, tzinfo=UTC)
    assert len({i.id for i in items}) == 3
    assert m.add_messages([]) == []
    assert rows(mem) == 3
    mem.flush()
    hits = m.recall("Fritzbox").items
    assert hits and hits[0].id == items[2].id


def test_add_tool_output_oversized_payload(make_memory, rows) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    lines = "\n".join(f"row {i}: sensor reading {i * 3} kelvin nominal" for i in range(3000))
    middle = "row 1500: ALERT xylophonequartz overheated"
    payload = (
        "Telemetry dump for the orion cluster\n"
        + lines.replace("row 1500: sensor reading 4500 kelvin nominal", middle)
        + "\nFINAL STATUS checksum deadbeef verified"
    )
    item = m.add_tool_output("call_1", payload, tool_name="sensors", metadata={"host": "h1"})
    assert item.kind == "tool_output"
    assert item.scope == "session"
    assert item.metadata["tool_name"] == "sensors"
    assert item.metadata["tool_call_id"] == "call_1"
    assert item.metadata["host"] == "h1"
    key = item.source_ref
    assert key
    # indexed copy is an elided preview naming the key, with head and tail kept
    assert len(item.content) < len(payload) // 10
    assert key in item.content
    assert item.content.startswith("Telemetry dump for the orion cluster")
    assert item.content.endswith("FINAL STATUS checksum deadbeef verified")
    assert "xylophonequartz" not in item.content
    # the full payload comes back byte for byte
    assert m.read_tool_output(key) == payload
    # the same tool_call_id in the same session is the same item
    again = m.add_tool_output("call_1", "something else")
    assert again.id == item.id
    assert m.read_tool_output(key) == payload
    # a small payload is stored as is
    small = m.add_tool_output("call_2", '{"status": "ok", "rows": 3}')
    assert small.content == '{"status": "ok", "rows": 3}'
    assert m.read_tool_output(small.source_ref) == small.content
    assert rows(mem) == 2

    mem.flush()
    tail_hits = m.recall("deadbeef checksum").items
    assert tail_hits and tail_hits[0].id == item.id
    assert tail_hits[0].source_ref == key
    # what is only in the elided middle is not indexed
    assert item.id not in {h.id for h in m.recall("xylophonequartz").items}
    with pytest.raises(NotFoundError):
        m.read_tool_output("tout_does_not_exist")


def test_add_document_chunks_and_revisions(make_memory, rows) -> None:
    mem = make_memory(background=False)
    m = mem.bind(tenant_id="acme")  # documents need only a tenant
    chunks = m.add_document(POLICY_DOC, source_ref="handbook.md", metadata={"team": "ops"})
    assert len(chunks) > 3
    assert {c.kind for c in chunks} == {"document_chunk"}
    assert {c.scope for c in chunks} == {"tenant"}
    assert {c.source_ref for c in chunks} == {"handbook.md"}
    assert [c.metadata["chunk_index"] for c in chunks] == list(range(len(chunks)))
    assert {c.metadata["chunk_count"] for c in chunks} == {len(chunks)}
    assert {c.metadata["team"] for c in chunks} == {"ops"}
    assert all(count_tokens(c.content) <= 220 for c in chunks)
    joined = " ".join(c.content for c in chunks)
    assert "emergency generator is tested on the first Monday" in joined
    assert "Appendix 24: forklift 24 is serviced after 2400 operating hours." in joined

    # re-adding the same text is idempotent
    again = m.add_document(POLICY_DOC, source_ref="handbook.md", metadata={"team": "ops"})
    assert [c.id for c in again] == [c.id for c in chunks]
    assert rows(mem) == len(chunks)

    mem.flush()
    hits = m.recall("when is the emergency generator tested?").items
    assert hits and hits[0].kind == "document_chunk"
    assert "emergency generator" in hits[0].content

    # a new revision under the same source_ref retires every chunk of the old one
    revised = m.add_document(
        "Warehouse handbook, revision two. The emergency generator is now tested weekly.",
        source_ref="handbook.md",
    )
    assert len(revised) == 1
    assert not {c.id for c in revised} & {c.id for c in chunks}
    live = "deleted_at IS NULL AND source_ref = 'handbook.md'"
    assert rows(mem, live) == 1
    assert rows(mem, "source_ref = 'handbook.md'") == len(chunks) + 1  # rows kept
    for old in chunks:
        with pytest.raises(NotFoundError):
            m.get(old.id)
    mem.flush()
    hits = m.recall("emergency generator tested").items
    assert [h.id for h in hits] == [revised[0].id]
    old_ids = {c.id for c in chunks}
    assert not {h.id for h in m.recall("forklift serviced operating hours").items} & old_ids
    assert mem.keywords.all_ids() == {revised[0].id}

    # reverting to the first revision brings its text back and retires the second
    reverted = m.add_document(POLICY_DOC, source_ref="handbook.md")
    assert len(reverted) == len(chunks)
    assert rows(mem, live) == len(chunks)
    with pytest.raises(NotFoundError):
        m.get(revised[0].id)

    # without a source_ref, the ref is derived from the text (and so stable)
    a = m.add_document("A short note about parking permits.")
    b = m.add_document("A short note about parking permits.")
    assert a[0].source_ref and a[0].source_ref == b[0].source_ref
    assert a[0].id == b[0].id


def test_remember_is_idempotent(make_memory, rows) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    first = m.remember(
        "I prefer uv over pip", memory_type="preference", importance=0.8, metadata={"src": "chat"}
    )
    assert isinstance(first, RememberResult)
    assert first.was_new is True
    second = m.remember("I prefer uv over pip", memory_type="preference")
    assert second == RememberResult(id=first.id, was_new=False)
    assert m.remember("  I prefer uv over pip \n", memory_type="preference").id == first.id
    assert rows(mem) == 1
    item = m.get(first.id)
    assert item.kind == "memory"
    assert item.memory_type == "preference"
    assert item.scope == "user"
    assert item.importance == pytest.approx(0.8)
    assert item.metadata == {"src": "chat"}
    # another scope, type or owner is another memory
    assert m.remember("I prefer uv over pip", memory_type="preference", scope="agent").was_new
    assert m.remember("I prefer uv over pip", memory_type="fact").was_new
    other_user = mem.bind(tenant_id="acme", user_id="u2")
    assert other_user.remember("I prefer uv over pip", memory_type="preference").was_new
    assert rows(mem) == 4
    # the same user from another agent/session still gets the same user-scope memory
    elsewhere = mem.bind(tenant_id="acme", user_id="u1", agent_id="sales", session_id="s9")
    assert elsewhere.remember("I prefer uv over pip", memory_type="preference") == second


def test_remember_many_strings_and_dicts(make_memory, rows) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    out = m.remember_many(
        [
            "The customer lives in Porto",
            {"content": "Always answer in Portuguese", "memory_type": "instruction"},
            {
                "content": "Quarterly review is on the 3rd of March",
                "memory_type": "event",
                "scope": "agent",
                "importance": 0.5,
                "metadata": {"q": 1},
            },
            "The customer lives in Porto",  # duplicate within the same call
        ]
    )
    assert [r.was_new for r in out] == [True, True, True, False]
    assert out[3].id == out[0].id
    items = [m.get(r.id) for r in out[:3]]
    assert [i.memory_type for i in items] == ["fact", "instruction", "event"]
    assert [i.scope for i in items] == ["user", "user", "agent"]
    assert items[2].metadata == {"q": 1}
    assert items[2].importance == pytest.approx(0.5)
    assert rows(mem) == 3
    # running it again creates nothing
    assert [r.was_new for r in m.remember_many(["The customer lives in Porto"])] == [False]
    assert m.remember_many(iter(())) == []
    assert rows(mem) == 3


def test_topic_key_supersedes(make_memory, rows) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    old = m.remember("My favourite colour is blue", memory_type="preference", topic_key="colour")
    new = m.remember("My favourite colour is green", memory_type="preference", topic_key="Colour")
    assert old.was_new and new.was_new and old.id != new.id
    # another scope with the same topic key is another topic
    agent = m.remember("The agent's theme colour is orange", scope="agent", topic_key="colour")
    mem.flush()
    hits = m.recall("favourite colour", scope="user").items
    assert [h.id for h in hits] == [new.id]
    assert old.id not in {h.id for h in m.recall("favourite colour blue").items}
    # the old row is kept, marked superseded
    assert rows(mem, "id = ?", (old.id,)) == 1
    kept = m.get(old.id)
    assert kept.superseded_by == new.id
    assert kept.deleted_at is None
    assert m.get(agent.id).superseded_by is None
    audit = m.recall("favourite colour", scope="user", include_superseded=True).items
    assert {h.id for h in audit} == {old.id, new.id}
    # the superseded content can be remembered afresh (it is no longer the live memory)
    again = m.remember("My favourite colour is blue", memory_type="preference")
    assert again.was_new and again.id != old.id


def test_forget(make_memory, rows) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    keep = m.remember("The wifi password is hunter2-garden")
    gone = m.remember("The garage door code is 4455-garden")
    msg = m.add_message("user", "Please water the garden plants on Friday")
    mem.flush()
    assert {keep.id, gone.id, msg.id} <= {
        h.id for h in m.recall("garden", top_k=10, min_score=0.0).items
    }

    assert m.forget(gone.id) is True
    assert m.forget(msg.id) is True
    assert m.forget(gone.id) is False  # already forgotten
    assert m.forget("no-such-id") is False
    with pytest.raises(NotFoundError):
        m.get(gone.id)
    hits = {h.id for h in m.recall("garden", top_k=10, min_score=0.0).items}
    assert hits == {keep.id}
    # soft delete: the row stays (with deleted_at) and the indexes drop it
    assert rows(mem, "id = ? AND deleted_at IS NOT NULL", (gone.id,)) == 1
    mem.flush()
    assert mem.keywords.all_ids() == {keep.id}
    vector_ids = set().union(*(mem.vectors.ids(c) for c in mem.vectors.collections()))
    assert vector_ids == {keep.id}
    # forgetting does not make the content un-rememberable
    assert m.remember("The garage door code is 4455-garden").was_new


def test_get(make_memory) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    r = m.remember("Meeting notes live in the blue binder", memory_type="note")
    item = m.get(r.id)
    assert item.id == r.id and item.content == "Meeting notes live in the blue binder"
    assert item.memory_type == "note"
    assert not item.embedded and not item.keyword_indexed
    mem.flush()
    indexed = m.get(r.id)
    assert indexed.embedded and indexed.keyword_indexed
    with pytest.raises(NotFoundError) as err:
        m.get("0123456789abcdef")
    assert isinstance(err.value, LookupError)


# --------------------------------------------------------------------------------------------
# Recall
# --------------------------------------------------------------------------------------------


def test_recall_result_fields(corpus: Corpus) -> None:
    result = corpus.m.recall("flight to Tokyo")
    assert isinstance(result, RecallResult)
    assert result.total == len(result.items) == len(result) >= 1
    assert result.degraded is False
    assert result.rerank_used is False
    assert result.truncated is False
    assert result.token_count == sum(count_tokens(h.content) for h in result.items)
    hit = result.items[0]
    assert isinstance(hit, RecallHit)
    stored = corpus.flight
    assert hit.id == stored.id
    assert hit.kind == "chat_message"
    assert hit.memory_type is None
    assert hit.scope == "session"
    assert hit.content == stored.content
    assert hit.source_ref is None
    assert hit.event_time == stored.event_time and hit.event_time.tzinfo is not None
    assert hit.session_id == "s2"
    assert hit.metadata == {"project": "apollo", "channel": "web"}
    assert list(result) == result.items
    scores_ok(result)


@pytest.mark.parametrize(
    "query",
    ["zephyr", "flight", "peanuts allergy", "warehouse pallets aisle", "who approves invoices"],
)
def test_scores_in_unit_interval_and_descending(corpus: Corpus, query: str) -> None:
    result = corpus.m.recall(query, top_k=20, min_score=0.0)
    assert result.total >= 3
    scores_ok(result)


@pytest.mark.parametrize("query", UNRELATED_QUERIES)
def test_unrelated_query_returns_nothing(corpus: Corpus, query: str) -> None:
    assert corpus.m.recall(query).items == []
    # it is the calibrated cut-off that hides the weak candidates
    assert corpus.m.recall(query, min_score=0.0).items


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("food intolerance nuts", [USER_FACTS[0]]),
        ("musical instrument child", [USER_FACTS[3]]),
        # either message of the trip is a right answer
        (
            "airplane trip to Japan",
            [
                "Can you book me a flight to Tokyo next Tuesday?",
                "Booked: flight NH204 departs Tuesday 09:15 from Heathrow.",
            ],
        ),
    ],
)
def test_paraphrase_found_via_vectors(corpus: Corpus, query: str, expected: list[str]) -> None:
    for text in expected:
        assert not terms(query) & terms(text)  # no shared keyword: only the vector half helps
    # the ranking puts every right answer first; whether a weak paraphrase also clears the
    # calibrated cut-off is the calibration's business (tested above and by the golden set)
    hits = corpus.m.recall(query, min_score=0.0).items
    assert hits and hits[0].content in expected
    assert corpus.m.recall(query).items[0].content in expected


@pytest.mark.parametrize("query", ["KX-93-ZQ-771", "kx 93 zq 771", "NH204"])
def test_exact_token_found_via_keywords(corpus: Corpus, query: str) -> None:
    hits = corpus.m.recall(query).items
    assert hits
    assert query.replace(" ", "-").upper() in hits[0].content.upper()


def test_top_k(corpus: Corpus) -> None:
    assert len(corpus.m.recall("zephyr ticket", top_k=1, min_score=0.0).items) == 1
    assert len(corpus.m.recall("zephyr ticket", top_k=3, min_score=0.0).items) == 3
    many = corpus.m.recall("zephyr ticket", top_k=20, min_score=0.0, token_budget=100_000)
    assert 3 < many.total <= 20
    default = corpus.m.recall("zephyr ticket", min_score=0.0)
    assert default.total == 5


def test_kinds_filter(corpus: Corpus) -> None:
    for kinds in (["chat_message"], "chat_message", ("chat_message", "chat_message")):
        hits = corpus.m.recall("zephyr ticket", kinds=kinds, top_k=20, min_score=0.0).items
        assert hits and {h.kind for h in hits} == {"chat_message"}
    both = corpus.m.recall(
        "zephyr", kinds=["memory", "document_chunk"], top_k=20, min_score=0.0
    ).items
    assert {h.kind for h in both} == {"memory", "document_chunk"}
    assert {corpus.ids["user"], corpus.ids["agent"], corpus.ids["tenant"]} <= {h.id for h in both}
    assert not corpus.m.recall("zephyr", kinds=["summary"], min_score=0.0).items


def test_memory_types_filter(corpus: Corpus) -> None:
    prefs = corpus.m.recall("seats flights", memory_types=["preference"], top_k=20).items
    assert [h.id for h in prefs] == [corpus.pref]
    mixed = corpus.m.recall(
        "zephyr invoices", memory_types=["instruction"], top_k=20, min_score=0.0
    ).items
    assert {h.memory_type for h in mixed} == {"instruction"}
    assert corpus.ids["agent"] in {h.id for h in mixed}
    # chat messages have no memory type, so a type filter excludes them
    assert not {h.kind for h in mixed} & {"chat_message", "document_chunk"}


@pytest.mark.parametrize("scope", ["session", "history", "user", "agent", "tenant"])
def test_each_scope(corpus: Corpus, scope: str) -> None:
    hits = corpus.m.recall("zephyr", scope=scope, top_k=20, min_score=0.0).items
    assert hits
    assert {h.scope for h in hits} == {scope}
    zephyr = [h.id for h in hits if "zephyr" in h.content.lower()]
    assert zephyr == [corpus.ids[scope]]


def test_scope_any_fuses_all_scopes(corpus: Corpus) -> None:
    hits = corpus.m.recall("zephyr", top_k=20, scope="any").items
    assert {h.id for h in hits} >= set(corpus.ids.values())
    assert {h.scope for h in hits if h.id in corpus.ids.values()} == set(corpus.ids)
    by_id = {h.id: h for h in hits}
    for scope, id_ in corpus.ids.items():
        assert by_id[id_].scope == scope
    history = by_id[corpus.ids["history"]]
    assert history.session_id == "s1"
    scores_ok(corpus.m.recall("zephyr", top_k=20))


def test_min_score(corpus: Corpus) -> None:
    loose = corpus.m.recall("ticket", top_k=20, min_score=0.0)
    strict = corpus.m.recall("ticket", top_k=20, min_score=0.5)
    assert strict.total < loose.total
    assert all(h.score >= 0.5 for h in strict.items)
    assert {h.id for h in strict.items} <= {h.id for h in loose.items}


def test_token_budget(corpus: Corpus) -> None:
    full = corpus.m.recall("warehouse pallets aisle count sheet", top_k=5, token_budget=100_000)
    assert full.truncated is False
    assert full.total >= 2
    needed = sum(count_tokens(h.content) for h in full.items)
    assert full.token_count == needed

    for budget in (1, 10, 40, needed // 2, needed - 1):  # the best item is cut, never dropped
        cut = corpus.m.recall("warehouse pallets aisle count sheet", top_k=5, token_budget=budget)
        assert cut.truncated is True
        assert 0 < cut.token_count <= budget
        assert cut.token_count == sum(count_tokens(h.content) for h in cut.items)
        assert [h.id for h in cut.items] == [h.id for h in full.items[: cut.total]]
        last = cut.items[-1]
        original = full.items[cut.total - 1].content
        assert original.startswith(last.content)
        for kept, orig in zip(cut.items[:-1], full.items, strict=False):
            assert kept.content == orig.content


def test_token_budget_default_from_env(make_memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMEM_TOKEN_BUDGET", "30")
    mem = make_memory(background=False)
    m = mem.bind(tenant_id="acme")
    m.add_document(POLICY_DOC, source_ref="handbook.md")
    mem.flush()
    result = m.recall("warehouse pallets aisle count sheet")
    assert result.truncated is True
    assert 0 < result.token_count <= 30


def test_metadata_filters(corpus: Corpus) -> None:
    apollo = corpus.m.recall(
        "zephyr flight seats", filters={"project": "apollo"}, top_k=20, min_score=0.0
    )
    assert {h.id for h in apollo.items} == {corpus.ids["session"], corpus.flight.id, corpus.pref}
    assert all(h.metadata["project"] == "apollo" for h in apollo.items)
    both = corpus.m.recall(
        "flight to Tokyo", filters={"project": "apollo", "channel": "web"}, min_score=0.0
    )
    assert [h.id for h in both.items] == [corpus.flight.id]
    assert not corpus.m.recall("flight", filters={"project": "mercury"}, min_score=0.0).items
    assert not corpus.m.recall(
        "flight", filters={"project": "apollo", "channel": "phone"}, min_score=0.0
    ).items


def test_not_degraded_while_a_few_rows_wait_for_the_indexer(make_memory) -> None:
    # degraded means results may miss something; a few rows not yet indexed are read and
    # scored by recall itself, so they are not missed
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    m.remember("The build server is called marmoset")
    before = m.recall("marmoset")
    assert before.degraded is False
    assert [h.content for h in before.items] == ["The build server is called marmoset"]
    assert mem.flush() is True
    after = m.recall("marmoset")
    assert after.degraded is False
    assert [h.content for h in after.items] == ["The build server is called marmoset"]
    # another tenant's rows are neither read nor counted
    mem.bind(tenant_id="globex", user_id="u1").remember("Globex builds on marmoset too")
    assert [h.content for h in m.recall("marmoset").items] == [
        "The build server is called marmoset"
    ]


def test_flush_with_timeout_in_background(make_memory) -> None:
    mem = make_memory()  # background indexing
    m = mem.bind(**IDENT)
    items = m.add_messages(
        {"role": "user", "content": f"Reminder number {n}: water plant {n} on the balcony"}
        for n in range(150)
    )
    assert mem.flush(timeout=120) is True
    assert all(m.get(i.id).embedded and m.get(i.id).keyword_indexed for i in items)
    stats = mem.stats()
    assert (stats.keyword_pending, stats.vector_pending, stats.vector_failed) == (0, 0, 0)
    result = m.recall("balcony plant 137")
    assert result.degraded is False
    assert result.items[0].id == items[137].id
    assert mem.flush(timeout=0.5) is True  # nothing left to do


def test_query_cache_reused(corpus: Corpus) -> None:
    embedder = corpus.mem.embedder
    assert isinstance(embedder, CachedEmbedder)
    corpus.m.recall("a query to be cached for the embedder")
    hits = embedder.hits
    corpus.m.recall("a query to be cached for the embedder")
    assert embedder.hits == hits + 1


# --------------------------------------------------------------------------------------------
# Lifecycle
# --------------------------------------------------------------------------------------------


def test_context_manager(tmp_path: Path, shared_embedder: CachedEmbedder) -> None:
    path = tmp_path / "cm"
    with AgentMemory(path, embedder=shared_embedder) as mem:
        m = mem.bind(**IDENT)
        r = m.remember("The spare key is under the blue flowerpot")
        assert mem.flush(timeout=60)
    for call in (
        lambda: mem.flush(),
        lambda: m.recall("spare key"),
        lambda: m.remember("another"),
        lambda: m.forget(r.id),
    ):
        with pytest.raises(StorageError):
            call()
    mem.close()  # closing twice is harmless
    # the lock was released; an exception inside the block still closes
    with pytest.raises(RuntimeError), AgentMemory(path, embedder=shared_embedder) as again:
        raise RuntimeError("boom")
    with pytest.raises(StorageError):
        again.flush()
    with AgentMemory(path, embedder=shared_embedder) as third:
        hits = third.bind(**IDENT).recall("where is the spare key?").items
        assert [h.id for h in hits] == [r.id]


def test_persistence_across_reopen(make_memory) -> None:
    mem = make_memory()
    m = mem.bind(**IDENT)
    fact = m.remember("Our office moved to Lisbon last spring")
    msg = m.add_message("user", "The deploy key for staging is KX-93-ZQ-771")
    key = m.add_tool_output("call_9", "x" * 5000 + " final-line").source_ref
    assert mem.flush(timeout=60)
    home = mem.home
    mem.close()

    mem2 = make_memory(path=home)
    m2 = mem2.bind(**IDENT)
    assert m2.get(fact.id).content == "Our office moved to Lisbon last spring"
    assert m2.read_tool_output(key).endswith(" final-line")
    assert m2.recall("KX-93-ZQ-771").items[0].id == msg.id
    assert m2.recall("relocation to Portugal").items[0].id == fact.id
    assert m2.remember("Our office moved to Lisbon last spring").was_new is False


def test_acknowledged_write_survives_a_crash(make_memory, tmp_path: Path, records_url) -> None:
    home = tmp_path / "crash"
    url = records_url() if records_url is not None else None
    env = {**os.environ, **({"AGENTMEM_RECORDS_URL": url} if url else {})}
    script = (
        "import os, sys\n"
        "from agentmem import AgentMemory\n"
        "mem = AgentMemory(sys.argv[1], background=False)\n"
        "m = mem.bind(tenant_id='acme', user_id='u1', session_id='s1')\n"
        "print(m.remember('The vault combination is 31-7-2049').id, flush=True)\n"
        "os._exit(0)  # die without closing, before any indexing\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(home)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    )
    memory_id = done.stdout.strip()
    mem = make_memory(path=home, records_url=url)  # the indexer resumes the pending work
    m = mem.bind(tenant_id="acme", user_id="u1", session_id="s1")
    assert m.get(memory_id).content == "The vault combination is 31-7-2049"
    assert mem.flush(timeout=60)
    result = m.recall("vault combination")
    assert [h.id for h in result.items] == [memory_id]
    assert result.degraded is False


def test_reindex_rebuilds_both_indexes(make_memory, rows) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    m.remember_many(USER_FACTS)
    forgotten = m.remember("Temporary note about the zebra crossing")
    m.add_document(POLICY_DOC, source_ref="handbook.md")
    mem.flush()
    m.forget(forgotten.id)
    mem.flush()
    live = rows(mem, "deleted_at IS NULL")
    home = mem.home
    mem.close()

    # lose the keyword index entirely, then the vector collections
    shutil.rmtree(home / "keywords")
    mem = make_memory(path=home, background=False)
    m = mem.bind(**IDENT)
    assert mem.keywords.num_docs() == 0
    for name in mem.vectors.collections():
        mem.vectors.drop(name)
    # the lost keyword index was found at open: every row is queued for it again, and
    # recall answers from the records meanwhile
    assert "keyword index" in mem.recovered[0]
    assert mem.stats().keyword_pending == live + 1  # the forgotten row is removed too
    assert m.recall("KX-93-ZQ-771").items[0].content == USER_FACTS[2]

    indexer_threads = sum(t.name == "agentmem-indexer" for t in threading.enumerate())
    assert mem.reindex() == live
    assert sum(t.name == "agentmem-indexer" for t in threading.enumerate()) == indexer_threads

    assert mem.keywords.num_docs() == live
    assert sum(mem.vectors.count(c) for c in mem.vectors.collections()) == live
    assert forgotten.id not in mem.keywords.all_ids()
    assert m.recall("KX-93-ZQ-771").items[0].content == USER_FACTS[2]
    assert m.recall("musical instrument child").items[0].content == USER_FACTS[3]
    assert "emergency generator" in m.recall("emergency generator").items[0].content
    assert not m.recall("zebra crossing").items
    assert m.recall("musical instrument child").degraded is False


def test_data_dir_lock(make_memory, tmp_path: Path) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    r = m.remember("The lock test memory")
    # in the same process, a second opener asking for the same things shares the open store
    again = make_memory(path=mem.home, background=False)
    assert again.bind(**IDENT).get(r.id).content == "The lock test memory"
    # ...and one asking for other things (here: background indexing) is refused
    with pytest.raises(DataDirLockedError) as err:
        make_memory(path=mem.home)
    assert err.value.context["path"] == str(mem.home)
    again.close()  # the other user keeps the store open
    assert m.get(r.id).content == "The lock test memory"
    # another process is refused too
    assert err.value.context["pid"] == os.getpid()
    script = (
        "import sys\n"
        "from agentmem import AgentMemory, DataDirLockedError\n"
        "try:\n"
        "    AgentMemory(sys.argv[1])\n"
        "except DataDirLockedError as exc:\n"
        "    print('locked', exc.context['pid'], str(exc))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(mem.home)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.split()[:2] == ["locked", str(os.getpid())]  # names the holder
    assert f"(pid {os.getpid()})" in out.stdout
    # the refused openers changed nothing for the owner
    assert m.get(r.id).content == "The lock test memory"
    mem.close()
    reopened = make_memory(path=mem.home, background=False)
    assert reopened.bind(**IDENT).get(r.id).content == "The lock test memory"


def test_data_dir_not_writable(tmp_path: Path, shared_embedder: CachedEmbedder) -> None:
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    for path in (a_file, a_file / "memdata"):
        with pytest.raises(StorageError) as err:
            AgentMemory(path, embedder=shared_embedder)
        assert err.value.context["path"] == str(path)
        assert not isinstance(err.value, DataDirLockedError)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_data_dir_read_only(tmp_path: Path, shared_embedder: CachedEmbedder) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(StorageError):
            AgentMemory(ro, embedder=shared_embedder)
    finally:
        ro.chmod(0o700)


def test_default_path_from_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    monkeypatch.setenv("AGENTMEM_HOME", str(tmp_path / "from-env"))
    with AgentMemory(embedder=shared_embedder, background=False) as mem:
        assert mem.home == tmp_path / "from-env"
        mem.bind(tenant_id="acme").add_document("Env-configured data dir works.")
    assert (tmp_path / "from-env" / "records.sqlite3").is_file()


def test_corrupt_records_store_is_a_storage_error(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    home = tmp_path / "corrupt"
    home.mkdir()
    (home / "records.sqlite3").write_bytes(b"this is not a database" * 100)
    for _ in range(2):  # the lock was released: the second attempt fails the same way
        with pytest.raises(StorageError) as err:
            AgentMemory(home, embedder=shared_embedder)
        assert not isinstance(err.value, DataDirLockedError)


def test_structured_logs_carry_no_content(make_memory, caplog: pytest.LogCaptureFixture) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    with caplog.at_level(logging.INFO, logger="agentmem"):
        m.remember("My passport number is X1234567")
        mem.flush()
        m.recall("what is my passport number")
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "X1234567" not in text and "passport" not in text
    events = [
        json.loads(r.getMessage())
        for r in caplog.records
        if r.name == "agentmem" and r.getMessage().startswith("{")
    ]
    write = [e for e in events if e.get("event") == "remember"]
    recall = [e for e in events if e.get("event") == "recall"]
    assert len(write) == 1 and len(recall) == 1
    assert write[0]["correlation_id"] and "latency_ms" in write[0]
    assert recall[0]["correlation_id"] and recall[0]["results"] == 1
    assert len(recall[0]["query_hash"]) >= 8 and "latency_ms" in recall[0]


class _HookedEmbedder:
    """The shared real embedder, running ``hook`` once before its next document batch.

    Lets a test change a row while the indexer is between reading it and marking it done.
    """

    def __init__(self, inner: CachedEmbedder) -> None:
        self.inner = inner
        self.hook: Callable[[], object] | None = None

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed_documents(self, texts: Sequence[str]) -> Any:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


def test_forget_while_being_embedded_leaves_no_vector(
    make_memory, rows, shared_embedder: CachedEmbedder
) -> None:
    embedder = _HookedEmbedder(shared_embedder)
    mem = make_memory(embedder=embedder, background=False)
    m = mem.bind(**IDENT)
    keep = m.remember("The office plants are watered on Mondays")
    gone = m.remember("The launch code is 0000-1111")
    embedder.hook = lambda: m.forget(gone.id)  # forgotten mid-batch
    assert mem.flush() is True
    assert rows(mem, "kw_pending = 1 OR vec_pending = 1") == 0
    vector_ids = set().union(*(mem.vectors.ids(c) for c in mem.vectors.collections()))
    assert vector_ids == {keep.id}
    assert mem.keywords.all_ids() == {keep.id}


def test_an_empty_path_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for path in ("", "  "):
        with pytest.raises(ValidationError, match="path: must not be empty"):
            AgentMemory(path)
    assert list(tmp_path.iterdir()) == []  # no LOCK, keywords/ or records.sqlite3 here
