"""``forget`` reaches every copy (``agentmem.derived.forget``).

Real SQLite, Tantivy, Chroma and the real embedder under ``tmp_path``; the offline LLM extracts
memories, writes session summaries and folds the working-memory reference summary, so a
message's words reach every derived store the way they do in production.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from _forgetting_support import everything_readable, gettable, rows_containing
from _legacy_schema import downgrade

from agentmem import AgentMemory, NotFoundError
from agentmem.storage.keyword_index import KeywordFilter

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]
CANARY = "zqxcanary7731"
PARTITIONS = ("conv:u:u1", "chunks:conv:u:u1", "user:u1", "tenant")


@pytest.fixture(autouse=True)
def _offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def _conversation(mem: AgentMemory) -> tuple[Any, Any, str]:
    """A session whose canary message went into an extracted memory, the working reference
    summary, a session chunk and the session summary; returns (bound, ingest result, id)."""
    m = mem.bind("acme", user_id="u1", agent_id="support", session_id="s1")
    m.add_message("system", "You are a helpful assistant.")
    result = m.ingest(
        [
            {"role": "user", "content": "Hello there, I need help with my account today."},
            {"role": "assistant", "content": "Sure, what do you need?"},
            {"role": "user", "content": f"My locker code is {CANARY}. I live in Berlin."},
            {"role": "assistant", "content": "Thanks, noted."},
            {"role": "user", "content": "Also I prefer green tea in the morning."},
            {"role": "assistant", "content": "Great choice."},
        ]
    )
    target = result.message_ids[2]
    assert m.compact(keep=1).ok
    return m, result, target


def _keyword_hits(mem: AgentMemory, text: str) -> list[tuple[str, float]]:
    terms = mem.keywords.query_terms(text)
    return mem.keywords.search(terms, KeywordFilter(tenant="acme", partitions=PARTITIONS), 50)


def _vector_ids(mem: AgentMemory) -> set[str]:
    return set().union(*(mem.vectors.ids(c) for c in mem.vectors.collections()))


def test_forget_reaches_chunks_summaries_extracted_memories_and_working_memory(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    m, ingested, target = _conversation(mem)
    closed = m.close_session(summary_timeout=10)
    mem.flush()
    derived = [*ingested.memory_ids, *closed.chunk_ids, *closed.summary_ids]
    # the canary really is in every derived store before
    holding = gettable(m, derived)
    assert any(CANARY in c for i, c in holding.items() if i in ingested.memory_ids)
    assert any(CANARY in c for i, c in holding.items() if i in closed.chunk_ids)
    assert any(CANARY in c for i, c in holding.items() if i in closed.summary_ids)
    assert CANARY in json.dumps(m.working.summary.to_dict())
    assert any(CANARY in t for t in everything_readable(m, CANARY))
    assert _keyword_hits(mem, CANARY)
    events_before = len(m.session_detail("s1").events)

    assert m.forget(target) is True

    # no read path returns it: recall (every scope and tier), get, messages, session detail,
    # working context and reference summary
    assert not [t for t in everything_readable(m, CANARY) if CANARY in t]
    other = mem.bind("acme", user_id="u1", agent_id="support", session_id="s2")
    assert not [t for t in everything_readable(other, CANARY) if CANARY in t]
    assert not [c for c in gettable(m, [target, *derived]).values() if CANARY in c]
    with pytest.raises(NotFoundError):
        m.get(target)
    # nothing stored holds it: no records row of any table, no keyword entry (the messages
    # after it carried it as context and were indexed again), no vector of a forgotten row
    assert rows_containing(mem, CANARY) == 0
    assert _keyword_hits(mem, CANARY) == []
    forgotten = {
        r[0] for r in mem.records.read("SELECT id FROM memories WHERE forgotten_at IS NOT NULL")
    }
    assert target in forgotten and not forgotten & _vector_ids(mem)
    # what the other messages said is still there, rebuilt without it
    detail = m.session_detail("s1")
    assert len(detail.events) == events_before - 1
    assert detail.summary and "green tea" in detail.summary and CANARY not in detail.summary
    chunks = m.recall("green tea morning", tiers=("mid_term",), min_score=0.0).items
    assert chunks and all(CANARY not in h.content for h in chunks)
    tea = m.recall("green tea", scope="user", min_score=0.0).items
    assert any("green tea" in h.content for h in tea)
    mem.flush()
    assert rows_containing(mem, CANARY) == 0


def test_forget_leaves_a_tombstone_of_ids_kind_and_times(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m, ingested, target = _conversation(mem)
    before = mem.records.memories.get(target)
    assert before is not None
    assert m.forget(target)
    row = mem.records.read(
        "SELECT id, tenant_id, user_id, agent_id, session_id, kind, scope, content, "
        "content_hash, metadata, role, memory_type, source_ref, topic_key, dedup_key, "
        "created_at, deleted_at, forgotten_at FROM memories WHERE id = ?",
        (target,),
    )[0]
    assert row[:7] == (target, "acme", "u1", "support", "s1", "chat_message", "session")
    assert row[7:15] == ("", "", "{}", None, None, None, None, None)
    assert row[15] and row[16] and row[17]
    events = dict(
        mem.records.read("SELECT memory_id, detail FROM audit_log WHERE event = 'memory.forget'")
    )
    assert events[target] == "{}"
    # the extracted memories went with it, each audited with the id that reached it
    for memory_id in ingested.memory_ids:
        if memory_id in events and json.loads(events[memory_id]):
            assert json.loads(events[memory_id]) == {"via": target}
    assert m.forget(target) is False  # already forgotten
    assert m.forget("no-such-id") is False


def test_forget_is_scoped_to_the_bound_identity(make_memory: MakeMemory, snapshot: Any) -> None:
    mem = make_memory()
    m, _, target = _conversation(mem)
    mem.flush()
    before = snapshot(mem)
    for intruder in (
        mem.bind("acme", user_id="u2", agent_id="support", session_id="s1"),
        mem.bind("globex", user_id="u1", agent_id="support", session_id="s1"),
    ):
        assert intruder.forget(target) is False
    assert snapshot(mem) == before
    assert m.get(target).content.endswith("I live in Berlin.")


def test_forget_a_tool_output_deletes_its_payload(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    big = f"lookup result {CANARY} " + "row data " * 20_000
    item = m.add_tool_output("call-1", big, tool_name="lookup")
    assert item.source_ref and CANARY in m.read_tool_output(item.source_ref)
    assert m.forget(item.id)
    with pytest.raises(NotFoundError):
        m.read_tool_output(item.source_ref)
    assert mem.records.read("SELECT COUNT(*) FROM payloads")[0][0] == 0
    assert rows_containing(mem, CANARY) == 0
    assert not [t for t in everything_readable(m, CANARY) if CANARY in t]


def test_forget_a_soft_deleted_message_removes_its_content(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    msg = m.add_message("user", f"my passport number is {CANARY}")
    assert m.clear_session() == 1  # a soft delete keeps the content until retention
    assert rows_containing(mem, CANARY) == 1
    assert m.forget(msg.id) is True
    assert rows_containing(mem, CANARY) == 0


def test_forget_in_a_long_term_session_rebuilds_its_summary_and_detail(
    make_memory: MakeMemory,
) -> None:
    from agentmem import TierConfig

    mem = make_memory(tier_config=TierConfig(mid_term_sessions=1))
    m = mem.bind("acme", agent_id="support", session_id="old")
    m.add_message("user", f"The vault password is {CANARY} and the vault is in Porto.")
    m.add_message("assistant", "Stored.")
    m.add_message("user", "The office opens at nine every weekday.")
    m.close_session(summary_timeout=10)
    later = mem.bind("acme", agent_id="support", session_id="new")
    later.add_message("user", "Nothing much today.")
    assert "old" in later.close_session(summary_timeout=10).promoted
    detail = m.session_detail("old")
    assert detail.tier == "long_term" and CANARY in (detail.summary or "")
    assert m.forget(detail.events[0].id)
    mem.flush()
    again = m.session_detail("old")
    assert again.tier == "long_term" and len(again.events) == 2
    assert again.summary and CANARY not in again.summary and "office" in again.summary
    hits = later.recall("office opens weekday", tiers=("long_term",), min_score=0.0).items
    assert hits and all(CANARY not in h.content for h in hits)
    assert rows_containing(mem, CANARY) == 0


def test_forget_a_summary_does_not_bring_it_back(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m, _, _ = _conversation(mem)
    closed = m.close_session(summary_timeout=10)
    (summary_id,) = closed.summary_ids
    assert m.forget(summary_id)
    assert m.session_detail("s1").summary is None
    assert len(m.session_detail("s1").events) == 7  # the messages stay


def test_a_data_dir_from_before_source_links_gets_them_at_open(make_memory: MakeMemory) -> None:
    import sqlite3

    mem = make_memory()
    if mem.records.shared:
        pytest.skip("a Postgres records store starts at the current schema: nothing to backfill")
    m, ingested, target = _conversation(mem)
    m.close_session(summary_timeout=10)
    mem.flush()
    links = set(mem.records.read("SELECT tenant_id, memory_id, source_id FROM memory_sources"))
    assert links and {i for _, i, _ in links} >= set(ingested.memory_ids)
    home = mem.home
    mem.close()
    # what a data dir written before forgetting existed looks like (schema 5)
    conn = sqlite3.connect(home / "records.sqlite3")
    downgrade(conn, 5)
    conn.close()

    again = make_memory(path=home)
    backfilled = again.records.read("SELECT tenant_id, memory_id, source_id FROM memory_sources")
    assert set(backfilled) == links
    m = again.bind("acme", user_id="u1", agent_id="support", session_id="s1")
    assert m.forget(target)
    assert rows_containing(again, CANARY) == 0


def test_a_message_forgotten_while_its_follower_is_keyword_indexed_leaves_no_trace(
    make_memory: MakeMemory,
) -> None:
    """The keyword pass read the follower's context (the message about to be forgotten) and
    is writing its entry when forget runs: the follower must end up indexed without it."""
    mem = make_memory(background=True)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    secret = m.add_message("user", f"My bank PIN is {CANARY}, what should I do?")
    assert mem.flush(timeout=30)
    writing, release = threading.Event(), threading.Event()
    add = mem.keywords.add

    def add_slowly(docs: Any) -> None:
        if any(CANARY in d.content for d in docs):  # the follower's entry, with its context
            writing.set()
            release.wait(10)
        add(docs)

    mem.keywords.add = add_slowly  # type: ignore[method-assign]
    indexer = mem.indexer
    forgetting = threading.Event()
    for name in ("paused", "sync"):  # whichever forget reaches first while the pass runs
        real = getattr(indexer, name)

        def waiting(*args: Any, _real: Any = real) -> Any:
            forgetting.set()
            return _real(*args)

        setattr(indexer, name, waiting)
    reply = m.add_message("assistant", "Change it at the branch tomorrow.")
    assert writing.wait(10)
    thread = threading.Thread(target=m.forget, args=(secret.id,))
    thread.start()
    assert forgetting.wait(10)
    release.set()
    thread.join(30)
    assert mem.flush(timeout=30)
    row = mem.records.memories.get(reply.id)
    assert row is not None
    flt = KeywordFilter(tenant="acme", partitions=(row.partition,))
    assert mem.keywords.search(mem.keywords.query_terms(CANARY), flt, 10) == []
    assert mem.keywords.search(mem.keywords.query_terms("branch tomorrow"), flt, 10)


def test_forget_in_a_reopened_session_leaves_its_new_messages_unclosed(
    make_memory: MakeMemory,
) -> None:
    """The session is rebuilt from what its last close covered: messages added after it stay
    working memory (no chunk, summary or cross-agent read) until the next close."""
    mem = make_memory(background=False)
    owner = mem.bind("acme", agent_id="T", session_id="s1")
    first = owner.add_message("user", "The deploy of the billing service is on Friday.")
    owner.add_message("assistant", "Noted, Friday deploy.")
    owner.close_session()
    owner.add_message("user", f"Draft note, not final: code {CANARY} for the staging box.")
    assert owner.forget(first.id)
    mem.flush()
    reader = mem.bind("acme", agent_id="R")
    hits = reader.recall(f"staging box code {CANARY}", target_agent="T", min_score=0.0).items
    assert not any(CANARY in h.content for h in hits)
    detail = reader.session_detail("s1", target_agent="T")
    assert [e.content for e in detail.events] == ["Noted, Friday deploy."]
    closed = owner.close_session()  # the new message is closed now, and only now
    assert not closed.already_closed
    events = reader.session_detail("s1", target_agent="T").events
    assert any(CANARY in e.content for e in events)
