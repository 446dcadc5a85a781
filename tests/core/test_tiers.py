"""Session tiers: close_session, mid-term chunks, long-term summaries, session_detail.

Real stores on ``tmp_path`` (SQLite, Tantivy, Chroma, the shared embedder) and the offline LLM;
slow and failing summarisers are small implementations of the LLM protocol.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentmem import AgentMemory, BoundMemory, LLMError, NotFoundError, ValidationError
from agentmem.cli import main
from agentmem.embeddings import CachedEmbedder
from agentmem.llm import ChatTurn, OfflineLLM
from agentmem.models import MemoryItem
from agentmem.storage.rows import VEC_PENDING, VEC_SYNCED
from agentmem.storage.vector_index import collection_name
from agentmem.tiers.sessions import (
    TIER_LONG_DETAIL,
    TIER_LONG_SUMMARY,
    TierConfig,
    group_messages,
    list_sessions,
    promote,
)

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]

TOPICS = [
    ("baking sourdough bread with a rye starter and a long cold proof", "xylophone"),
    ("training for a marathon with interval runs and tempo runs", "gondola"),
    ("filing the yearly tax return and deductible expenses", "pelican"),
    ("learning jazz chords on the guitar", "zeppelin"),
    ("renovating the kitchen with new cabinets and tiles", "trombone"),
    ("Japanese grammar particles wa and ga", "walrus"),
    ("planting tomatoes and zucchini in the vegetable garden", "igloo"),
    ("chess openings like the Sicilian defence", "kazoo"),
    ("comparing car insurance quotes", "flamingo"),
    ("planning the wedding seating chart", "harmonica"),
    ("packaging a Python library with pyproject", "narwhal"),
    ("a birdwatching trip to the wetlands", "origami"),
]
CONV = "conv:u:u1"
CHUNKS = "chunks:conv:u:u1"


def fill_session(m: BoundMemory, n: int) -> list[MemoryItem]:
    topic, word = TOPICS[n]
    return m.add_messages(
        [
            {
                "role": "user",
                "content": f"Today I want to talk about {topic}. The code word is {word}.",
                "metadata": {"dia_id": f"D{n}:1", "speaker": "Alice"},
            },
            {
                "role": "assistant",
                "content": f"Happy to help with {topic}. Where should we start?",
                "metadata": {"dia_id": f"D{n}:2", "speaker": "Bot"},
            },
            {
                "role": "user",
                "content": f"Give me three practical tips about {topic}.",
                "metadata": {"dia_id": f"D{n}:3", "speaker": "Alice"},
            },
        ]
    )


def column(mem: AgentMemory, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    return [r[0] for r in mem.records.read(sql, params)]


def chunk_ids(mem: AgentMemory, session: str) -> list[str]:
    return column(
        mem,
        "SELECT id FROM memories WHERE partition = ? AND session_id = ? AND deleted_at IS NULL",
        (CHUNKS, session),
    )


def summary_ids(mem: AgentMemory, session: str) -> list[str]:
    return column(
        mem,
        "SELECT id FROM memories WHERE kind = 'summary' AND session_id = ? AND deleted_at IS NULL",
        (session,),
    )


@pytest.fixture(scope="module")
def twelve(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: CachedEmbedder
) -> Iterator[AgentMemory]:
    """A store where one user closed 12 sessions (the acceptance scenario), fully indexed."""
    mem = AgentMemory(tmp_path_factory.mktemp("twelve"), embedder=shared_embedder, background=False)
    results = []
    for n in range(12):
        m = mem.bind("acme", user_id="u1", agent_id="helper", session_id=f"s{n}")
        fill_session(m, n)
        results.append(m.close_session())
    mem.flush()
    mem.close_results = results  # type: ignore[attr-defined]
    yield mem
    mem.close()


@pytest.fixture
def reader(twelve: AgentMemory) -> BoundMemory:
    """The same user in a new session: every closed session is ``history``."""
    return twelve.bind("acme", user_id="u1", agent_id="other-agent", session_id="now")


# -- the acceptance scenario ------------------------------------------------------------------
def test_closing_twelve_sessions_leaves_ten_mid_term_and_two_long_term(
    twelve: AgentMemory, reader: BoundMemory
) -> None:
    results = twelve.close_results  # type: ignore[attr-defined]
    assert [r.promoted for r in results] == [()] * 10 + [("s0",), ("s1",)]
    assert all(r.summary_status == "ok" and not r.already_closed for r in results)
    sessions = list_sessions(reader.store.context, reader.identity)
    assert [s.session_id for s in sessions] == [f"s{n}" for n in range(12)]
    assert [s.tier for s in sessions] == ["long_term"] * 2 + ["mid_term"] * 10
    assert len(list_sessions(reader.store.context, reader.identity, tier="mid_term")) == 10
    assert all(s.promoted_at is not None for s in sessions[:2])


def test_long_term_summaries_are_embedded_and_recallable(
    twelve: AgentMemory, reader: BoundMemory
) -> None:
    result = reader.recall("how do I make my bread rise", tiers="long_term", min_score=0.0, top_k=5)
    top = result.items[0]
    assert top.kind == "summary" and top.session_id == "s0"
    assert top.metadata["tier"] == "long_term" and top.metadata["session_summary"] is True
    messages = reader.session_detail("s0").events
    assert top.metadata["message_ids"] == [i.id for i in messages]
    assert top.metadata["dia_ids"] == ["D0:1", "D0:2", "D0:3"]
    assert [x["metadata"]["dia_id"] for x in top.metadata["messages"]] == ["D0:1", "D0:2", "D0:3"]
    embedded = twelve.vectors.ids(collection_name("acme", CONV))
    for s in ("s0", "s1"):
        (sid,) = summary_ids(twelve, s)
        assert sid in embedded
    # mid-term summaries are keyword-only (embedded when their session goes long-term)
    assert not set(summary_ids(twelve, "s5")) & embedded
    # long-term summaries also come back in default recall (one row per session)
    default = reader.recall("sourdough rye starter", min_score=0.0, top_k=10)
    assert any(h.kind == "summary" and h.session_id == "s0" for h in default.items)


def test_long_term_detail_chunks_are_keyword_only(twelve: AgentMemory, reader: BoundMemory) -> None:
    vectors = twelve.vectors.ids(collection_name("acme", CHUNKS))
    for s in ("s0", "s1"):
        ids = chunk_ids(twelve, s)
        assert ids and not set(ids) & vectors
        tiers = column(
            twelve, f"SELECT tier FROM memories WHERE id IN ({','.join('?' * len(ids))})", ids
        )
        assert set(tiers) == {TIER_LONG_DETAIL}
    for s in ("s2", "s11"):  # mid-term chunks are embedded
        assert set(chunk_ids(twelve, s)) <= vectors
    hits = reader.recall("xylophone", tiers="long_term", min_score=0.0).items
    chunk = next(h for h in hits if h.metadata.get("chunk"))
    assert chunk.id in chunk_ids(twelve, "s0") and chunk.kind == "chat_message"
    assert chunk.metadata["dia_ids"] == ["D0:1", "D0:2", "D0:3"]
    assert "Alice: Today I want to talk about baking sourdough" in chunk.content
    assert twelve.records.memories.get(chunk.id).item.keyword_indexed  # type: ignore[union-attr]


def test_mid_term_chunks_carry_their_messages(twelve: AgentMemory, reader: BoundMemory) -> None:
    hits = reader.recall("jazz chords guitar", tiers="mid_term", min_score=0.0).items
    assert hits and all(h.metadata.get("tier") == "mid_term" for h in hits)
    chunk = next(h for h in hits if h.metadata.get("chunk"))
    assert chunk.session_id == "s3"
    source = reader.session_detail("s3").events
    assert chunk.metadata["message_ids"] == [i.id for i in source]
    assert chunk.metadata["messages"][0] == {
        "id": source[0].id,
        "role": "user",
        "metadata": {"dia_id": "D3:1", "speaker": "Alice"},
    }
    assert not any(h.session_id in ("s0", "s1") for h in hits)


def test_default_recall_never_returns_session_chunks(
    twelve: AgentMemory, reader: BoundMemory
) -> None:
    for query in ("xylophone", "guitar jazz chords", "tips about chess openings"):
        items = reader.recall(query, min_score=0.0, top_k=20).items
        assert items
        assert not any(h.metadata.get("chunk") for h in items)
    # message-level hits come first for a message-level question
    top = reader.recall("which chess opening did we discuss", min_score=0.0).items[0]
    assert top.session_id == "s7"


def test_tiers_filter(twelve: AgentMemory, reader: BoundMemory) -> None:
    own = twelve.bind("acme", user_id="u1", session_id="s11")
    working = own.recall("birdwatching wetlands", tiers="working", min_score=0.0).items
    assert working and all(h.session_id == "s11" and h.scope == "session" for h in working)
    assert not any(h.metadata.get("tier") for h in working)
    # the current (closed) session's own chunks and summary are mid-term, not working
    mid = own.recall("birdwatching wetlands", tiers=["mid_term"], min_score=0.0).items
    assert {h.session_id for h in mid} >= {"s11"} and all(h.metadata["tier"] for h in mid)
    both = reader.recall("code word", tiers=("mid_term", "long_term"), min_score=0.0, top_k=20)
    assert {h.metadata["tier"] for h in both.items} == {"mid_term", "long_term"}
    with pytest.raises(ValidationError):
        reader.recall("x", tiers="short_term")


def test_tiers_keep_users_apart(twelve: AgentMemory) -> None:
    stranger = twelve.bind("acme", user_id="u2", agent_id="helper", session_id="s0")
    for tiers in ("mid_term", "long_term", ("working", "mid_term", "long_term")):
        assert stranger.recall("code word xylophone", tiers=tiers, min_score=0.0).items == []
    with pytest.raises(NotFoundError):
        stranger.session_detail("s3")
    other_tenant = twelve.bind("globex", user_id="u1", session_id="s0")
    assert other_tenant.recall("xylophone", tiers="long_term", min_score=0.0).items == []
    assert list_sessions(other_tenant.store.context, other_tenant.identity) == []


def test_session_detail_of_a_long_term_session(twelve: AgentMemory, reader: BoundMemory) -> None:
    detail = reader.session_detail("s1")
    assert detail.tier == "long_term" and detail.closed_at is not None
    assert [i.metadata["dia_id"] for i in detail.events] == ["D1:1", "D1:2", "D1:3"]
    assert detail.summary and "marathon" in detail.summary
    assert detail.summary_ids == tuple(summary_ids(twelve, "s1"))
    with pytest.raises(NotFoundError):
        reader.session_detail("never-existed")


def test_reindex_does_not_embed_long_term_chunks_again(
    twelve: AgentMemory, reader: BoundMemory
) -> None:
    twelve.reindex()
    vectors = twelve.vectors.ids(collection_name("acme", CHUNKS))
    assert chunk_ids(twelve, "s0") and not set(chunk_ids(twelve, "s0")) & vectors
    assert set(chunk_ids(twelve, "s4")) <= vectors
    hits = reader.recall("xylophone", tiers="long_term", min_score=0.0).items
    assert any(h.metadata.get("chunk") for h in hits)


# -- the pipeline -------------------------------------------------------------------------------
def test_close_session_is_idempotent(make_memory: MakeMemory, rows: Callable[..., int]) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    fill_session(m, 0)
    first = m.close_session()
    stored = rows(mem)
    second = m.close_session()
    assert second.already_closed and not first.already_closed
    assert second.chunk_ids == first.chunk_ids and second.summary_ids == first.summary_ids
    assert second.tier == "mid_term" and rows(mem) == stored
    assert len(list_sessions(m.store.context, m.identity)) == 1


def test_new_messages_after_a_close_are_chunked_on_the_next_close(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory(background=False, tier_config=TierConfig(chunk_messages=4))
    m = mem.bind("acme", user_id="u1", session_id="s1")
    fill_session(m, 0)
    first = m.close_session()
    fill_session(m, 1)
    second = m.close_session()
    assert not second.already_closed and second.messages == 6
    live = mem.records.memories.get_many("acme", chunk_ids(mem, "s1"))
    covered = [i for r in live for i in r.item.metadata["message_ids"]]
    assert sorted(covered) == sorted(i.id for i in m.messages())  # every message exactly once
    assert len(summary_ids(mem, "s1")) == 1 and summary_ids(mem, "s1") != list(first.summary_ids)
    assert list_sessions(m.store.context, m.identity)[0].message_count == 6


class SlowLLM(OfflineLLM):
    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def summarize(self, turns: Sequence[ChatTurn], *, max_words: int = 200) -> str:
        self.release.wait(10)
        return "too late"


class FailingLLM(OfflineLLM):
    def summarize(self, turns: Sequence[ChatTurn], *, max_words: int = 200) -> str:
        raise LLMError("summariser down (test)")


def test_summary_timeout_skips_the_summary(make_memory: MakeMemory) -> None:
    llm = SlowLLM()
    mem = make_memory(llm=llm, background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    fill_session(m, 0)
    result = m.close_session(summary_timeout=0.2)
    # the summary was still being written (the LLM waits for release) when the close returned
    assert not llm.release.is_set()
    llm.release.set()
    assert result.summary_status == "timeout" and result.summary_ids == ()
    assert result.error and "0.2s" in result.error
    assert result.chunk_ids and summary_ids(mem, "s1") == []
    with pytest.raises(ValidationError):
        m.close_session(summary_timeout=-1)


def test_failed_summary_is_skipped_and_promotion_writes_an_offline_one(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory(
        llm=FailingLLM(), background=False, tier_config=TierConfig(mid_term_sessions=1)
    )
    m1 = mem.bind("acme", user_id="u1", session_id="s1")
    fill_session(m1, 2)
    failed = m1.close_session()
    assert failed.summary_status == "failed" and "summariser down" in (failed.error or "")
    m2 = mem.bind("acme", user_id="u1", session_id="s2")
    fill_session(m2, 3)
    closed = m2.close_session(summary_timeout=0)
    assert closed.summary_status == "skipped" and closed.promoted == ("s1",)
    (sid,) = summary_ids(mem, "s1")
    row = mem.records.memories.get(sid)
    assert row is not None and row.tier == TIER_LONG_SUMMARY
    assert row.item.metadata["summarizer"] == "offline-heuristic-v1"
    assert "tax return" in row.item.content
    assert list_sessions(m2.store.context, m2.identity)[0].summary_ids == (sid,)
    mem.flush()
    hits = m2.recall("deductible expenses", tiers="long_term", min_score=0.0).items
    # the offline summary is recalled at the top score (it may tie with the session's
    # long-term detail chunk, which holds the same words verbatim)
    assert sid in {h.id for h in hits if h.score == hits[0].score}


def test_empty_session_closes_without_rows(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="empty")
    result = m.close_session()
    assert result.summary_status == "empty" and result.chunk_ids == () and result.messages == 0
    assert m.close_session().already_closed


def test_promotion_guard_against_a_late_embedding(make_memory: MakeMemory) -> None:
    """A chunk promoted while the indexer embeds it never keeps its vector."""
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    fill_session(m, 4)
    m.close_session()
    (cid,) = chunk_ids(mem, "s1")
    pending = [p for p in mem.records.index.pending_vector(100) if p[1].item.id == cid]
    ((seq, row, live),) = pending  # the indexer read the row...
    assert live
    promote(mem.context, m.identity, CONV, keep=0)  # ...the session went long-term meanwhile...
    name = collection_name("acme", CHUNKS)
    mem.vectors.upsert(  # ...and the indexer wrote its vector late
        name,
        [cid],
        mem.embedder.embed_documents([row.item.content]),
        [{"session_id": "s1", "kind": "chat_message", "memory_type": "", "scope": "session"}],
    )
    mem.records.index.mark_vector_done([(seq, True)])
    state = column(mem, "SELECT vec_pending FROM memories WHERE id = ?", (cid,))
    assert state == [VEC_PENDING]  # the guard kept it pending
    mem.flush()
    assert cid not in mem.vectors.ids(name)
    state = mem.records.read("SELECT vec_pending, embedded FROM memories WHERE id = ?", (cid,))
    assert state == [(VEC_SYNCED, 0)]  # synced without a vector, and never embedded again


def test_group_messages_keeps_tool_sequences_with_their_turn(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    m.add_message("user", "Find me a hotel in Porto.")
    m.add_message("assistant", "Searching.")
    m.add_tool_output("c1", "Hotel A, Hotel B", tool_name="hotels")
    m.add_message("assistant", "Hotel A looks good.")
    m.add_message("user", "Book it.")
    m.add_tool_output("c2", "booked", tool_name="book")
    m.add_message("user", "Thanks.")
    items = m.messages()
    chunks = group_messages(items, max_messages=4, max_tokens=400)
    assert [[i.content for i in c] for c in chunks] == [
        ["Find me a hotel in Porto.", "Searching.", "Hotel A, Hotel B", "Hotel A looks good."],
        ["Book it.", "booked", "Thanks."],
    ]
    big = group_messages(items, max_messages=2, max_tokens=400)
    assert all(len(c) <= 2 for c in big) and sum(len(c) for c in big) == len(items)
    result = m.close_session()
    first = mem.records.memories.get(result.chunk_ids[0])
    assert first is not None
    assert first.item.content.splitlines()[2] == "tool hotels: Hotel A, Hotel B"


def test_chunks_do_not_appear_in_the_messages_of_a_session(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    written = fill_session(m, 5)
    m.close_session()
    assert [i.id for i in m.messages()] == [i.id for i in written]
    assert [i.id for i in m.working.window] == [i.id for i in written]


def test_session_detail_returns_full_payloads(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    long_text = "Full log line. " * 2000
    big = m.add_message("user", long_text)
    m.add_tool_output("c1", "x" * 10_000, tool_name="dump")
    m.close_session()
    detail = mem.bind("acme", user_id="u1", session_id="s2").session_detail("s1")
    assert detail.events[0].id == big.id
    assert detail.events[0].content == long_text and len(big.content) < len(long_text)
    assert detail.events[1].content == "x" * 10_000
    agentless = mem.bind("acme", session_id="solo")
    with pytest.raises(NotFoundError):
        agentless.session_detail("s1")


def test_tier_config_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "AGENTMEM_MID_TERM_SESSIONS": "3",
        "AGENTMEM_SUMMARY_TIMEOUT": "2.5",
        "AGENTMEM_CHUNK_MESSAGES": "oops",
        "AGENTMEM_WORKING_TAIL": "6",
    }
    cfg = TierConfig.from_env(env)
    assert (cfg.mid_term_sessions, cfg.summary_timeout, cfg.working_tail) == (3, 2.5, 6)
    assert cfg.chunk_messages == 8  # a bad value falls back to the default
    assert TierConfig.from_env({}, mid_term_sessions=2).mid_term_sessions == 2


# -- CLI ----------------------------------------------------------------------------------------
def run(capsys: pytest.CaptureFixture[str], home: Path, *argv: str) -> tuple[int, Any, str]:
    capsys.readouterr()
    status = main(["--home", str(home), "--json", *argv])
    out = capsys.readouterr()
    return status, json.loads(out.out) if out.out.strip() else None, out.err


def test_cli_close_session_working_and_session_detail(
    make_memory: MakeMemory,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    records_url: Callable[[], str] | None,
) -> None:
    if records_url is not None:
        pytest.skip("the CLI opens the data dir by --home alone (its records are in SQLite)")
    mem = make_memory(background=False)
    m = mem.bind("default", user_id="u1", session_id="s1")
    fill_session(m, 6)
    home = mem.home
    mem.close()
    ident = ("--user", "u1", "--session", "s1")
    status, data, _ = run(capsys, home, *ident, "working", "--compact", "--keep", "1")
    assert status == 0 and data["compaction"]["ok"] is True
    assert len(data["window"]) == 1 and data["summary"]["summary"]
    status, data, _ = run(capsys, home, *ident, "close-session")
    assert status == 0 and data["tier"] == "mid_term" and not data["already_closed"]
    status, data, _ = run(capsys, home, *ident, "close-session")
    assert status == 0 and data["already_closed"] is True
    status, data, _ = run(capsys, home, "--user", "u1", "session-detail", "s1")
    assert status == 0 and [e["metadata"]["dia_id"] for e in data["events"]] == [
        "D6:1",
        "D6:2",
        "D6:3",
    ]
    status, _, err = run(capsys, home, "--user", "u1", "close-session")
    assert status == 2 and "--session" in err
    status, data, err = run(capsys, home, "--user", "u2", "session-detail", "s1")
    assert status == 1 and "no session" in err
    capsys.readouterr()
    assert main(["--home", str(home), *ident, "working", "--context"]) == 0
    text = capsys.readouterr().out
    assert "context messages" in text and "reference summary" in text


def test_sessions_table_is_part_of_the_schema(
    make_memory: MakeMemory, records_url: Callable[[], str] | None
) -> None:
    if records_url is not None:
        pytest.skip("reads the SQLite file of the data dir")
    mem = make_memory(background=False)
    conn = sqlite3.connect(mem.home / "records.sqlite3")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        cols = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
    finally:
        conn.close()
    assert {"sessions", "working_state"} <= tables and "tier" in cols


def test_clearing_a_closed_session_retires_its_chunks_and_summary(
    make_memory: Callable[..., AgentMemory],
) -> None:
    """Their text is the cleared messages': a cleared session is found by nothing, through
    any tier (before, its chunk and summary stayed live, and retention never reached them)."""
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    m.add_message("user", "My locker code is zqlocker7731 and I keep my bike there.")
    m.add_message("assistant", "Noted the locker code.")
    m.close_session()
    mem.flush()
    other = mem.bind("acme", user_id="u1", session_id="s2")
    query = "locker code zqlocker7731"
    assert other.recall(query, tiers="mid_term", min_score=0.0).items  # its chunk, before
    assert m.clear_session() == 2
    mem.flush()
    for tiers in (None, "mid_term", "long_term"):
        hits = other.recall(query, tiers=tiers, min_score=0.0).items
        assert not any("zqlocker7731" in h.content for h in hits), tiers
    assert m.clear_session() == 0  # nothing left to clear


def test_a_session_closed_again_while_another_close_promotes_it_ends_long_term_whole(
    make_memory: Callable[..., AgentMemory],
) -> None:
    """s1 is closed again (a message added after its first close) while closing s2 promotes
    it: the promotion waits for that close, so no mid-term chunk of it is left behind."""
    from agentmem import TierConfig
    from agentmem.tiers import sessions as tiers

    class HeldSummaries(OfflineLLM):
        def __init__(self) -> None:
            super().__init__()
            self.entered, self.release = threading.Event(), threading.Event()

        def summarize(self, turns: Any, *, max_words: int = 200) -> str:
            self.entered.set()
            self.release.wait(20)
            return super().summarize(turns, max_words=max_words)

    mem = make_memory(background=False, tier_config=TierConfig(mid_term_sessions=1))
    s1 = mem.bind("acme", user_id="u1", session_id="s1")
    s1.add_message("user", "We talked about baking sourdough bread with a rye starter.")
    s1.add_message("assistant", "Great, a long cold proof helps.")
    s1.close_session()
    s1.add_message("user", "Also the xylophone lesson moved to Thursday.")
    held = HeldSummaries()
    again = threading.Thread(
        target=tiers.close_session, args=(mem.context, s1.identity), kwargs={"llm": held}
    )
    again.start()
    assert held.entered.wait(10)
    s2 = mem.bind("acme", user_id="u1", session_id="s2")
    s2.add_message("user", "Marathon training with tempo runs.")
    other = threading.Thread(target=s2.close_session)
    other.start()
    time.sleep(0.2)  # s2's close reaches the promotion of s1
    held.release.set()
    again.join(30)
    other.join(30)
    mem.flush()
    mid = s2.recall("xylophone lesson Thursday", tiers="mid_term", min_score=0.0).items
    assert not [h for h in mid if h.session_id == "s1"]
    long = s2.recall("xylophone lesson Thursday", tiers="long_term", min_score=0.0).items
    assert [h for h in long if h.session_id == "s1"]
