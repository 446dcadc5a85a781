"""A chat message's keyword context keeps, once it is embedded, only the preceding messages
on its topic (or asking a question): after a change of subject the old subject's words do
not make the new message match. Both backends: on Postgres the keyword state follows the
change sequence, and the embedder's requeue must reach it too."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _lagging_chroma import LaggingClient

from agentmem import AgentMemory, MemoryConfig
from agentmem.errors import StorageError
from agentmem.recall.request import recall_request

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]

#: Cosine similarities of their texts with MiniLM: budget / slides 0.36, budget / cat 0.05,
#: slides / cat -0.09.
BUDGET = "The quarterly budget review is on Friday."
SLIDES = "We need the finance slides ready for that review."
CAT = "My cat only eats tuna."


def _session(mem: AgentMemory) -> dict[str, str]:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    return {
        text: m.add_message("user" if n % 2 == 0 else "assistant", text).id
        for n, text in enumerate((BUDGET, SLIDES, CAT))
    }


def _found_by_keywords(mem: AgentMemory, query: str) -> set[str]:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    req = recall_request(mem.config, m.identity, query, min_score=0.0)
    ranked, _, _ = mem.engine.candidates(
        m.identity, dataclasses.replace(req, retrievers=("keyword",))
    )
    return {c.id for c in ranked}


def test_a_few_new_messages_are_embedded_before_their_context_is_written(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written once: an entry written again would stay in the BM25 statistics until Tantivy
    merges its segment. On Postgres the off-topic message is queued again all the same, for
    the other nodes, which may have written it before it was embedded (test_postgres)."""
    mem = make_memory(background=False)
    written: list[str] = []
    add = mem.keywords.add

    def spy(docs: Any) -> None:
        written.extend(d.id for d in docs)
        add(docs)

    monkeypatch.setattr(mem.keywords, "add", spy)
    ids = _session(mem)
    mem.indexer.run_once()  # one keyword pass, which embeds its three rows first
    found = _found_by_keywords(mem, "quarterly budget")
    assert ids[SLIDES] in found and ids[CAT] not in found
    assert mem.flush(timeout=30)
    again = [ids[CAT]] if mem.records.index.follows_changes else []
    assert sorted(written) == sorted([*ids.values(), *again])


def test_context_off_the_topic_is_left_out_once_embedded(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_memory(background=False)
    ids = _session(mem)
    # as on Postgres when another node holds the messages' embedding: not embedded ahead
    monkeypatch.setattr(mem.indexer, "_embed_ahead", lambda pending, stop: (pending, False))
    mem.indexer.run_once()  # keyword-indexed with both preceding messages, then embedded
    monkeypatch.undo()
    found = _found_by_keywords(mem, "quarterly budget")
    assert ids[CAT] in found  # not embedded when keyword-indexed: all context, for now
    assert mem.flush(timeout=30)
    found = _found_by_keywords(mem, "quarterly budget")
    assert ids[BUDGET] in found and ids[SLIDES] in found  # on topic: kept
    assert ids[CAT] not in found  # off topic: requeued by the embedder and left out
    assert ids[CAT] not in _found_by_keywords(mem, "finance slides")


def test_without_a_threshold_every_preceding_message_is_context(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False, config=MemoryConfig(keyword_context_similarity=0))
    ids = _session(mem)
    assert mem.flush(timeout=30)
    assert ids[CAT] in _found_by_keywords(mem, "quarterly budget")


def test_a_question_stays_context_whatever_its_topic(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    m.add_message("user", "When is my dentist appointment?")
    reply = m.add_message("assistant", "Thursday at 15:40.").id
    assert mem.flush(timeout=30)
    assert reply in _found_by_keywords(mem, "dentist appointment")


def test_a_message_embedded_while_the_keyword_pass_runs_is_gated_after_it(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: the keyword pass reads no vectors, the embedder then stores them and
    requeues the message, and the keyword pass marks it done, clearing that requeue."""
    mem = make_memory(background=False)
    ids = _session(mem)
    indexer = mem.indexer
    # as on Postgres when another node holds the messages' embedding: not embedded ahead
    monkeypatch.setattr(indexer, "_embed_ahead", lambda pending, stop: (pending, False))
    stored_vectors = indexer._stored_vectors
    calls = 0

    def embed_meanwhile(rows: Any, gating: Any) -> Any:
        nonlocal calls
        calls += 1
        found = stored_vectors(rows, gating)
        if calls == 1:
            assert found == {}
            assert indexer._vector_pass()  # embeds all three and requeues the cat message
        return found

    monkeypatch.setattr(indexer, "_stored_vectors", embed_meanwhile)
    indexer.run_once()
    monkeypatch.undo()
    assert mem.flush(timeout=30)
    assert ids[CAT] not in _found_by_keywords(mem, "quarterly budget")


def test_unreadable_vectors_leave_the_context_ungated_not_the_row_unindexed(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_memory(background=False)
    ids = _session(mem)
    assert mem.flush(timeout=30)

    def fail(collection: str, ids: Any) -> Any:
        raise StorageError("vector read failed: disk gone")

    monkeypatch.setattr(mem.vectors, "vectors", fail)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    note = m.add_message("user", "Unrelated: the plumber comes at noon.").id
    assert mem.flush(timeout=30)
    assert note in _found_by_keywords(mem, "plumber")
    # indexed with both messages before it, off its topic as they are
    assert note in _found_by_keywords(mem, "finance slides")
    assert ids[CAT] not in _found_by_keywords(mem, "finance slides")
    # once the vectors can be read again, the next keyword pass gates it
    monkeypatch.undo()
    assert mem.flush(timeout=30)
    assert note not in _found_by_keywords(mem, "finance slides")
    assert note in _found_by_keywords(mem, "plumber")


def _fail_requeue(ids: Any, *, vectors: bool) -> None:
    raise StorageError("requeue failed: database is locked")


def test_messages_left_ungated_stay_queued_through_a_failed_requeue(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_memory(background=False)
    _session(mem)
    assert mem.flush(timeout=30)

    def fail(collection: str, ids: Any) -> Any:
        raise StorageError("vector read failed: disk gone")

    monkeypatch.setattr(mem.vectors, "vectors", fail)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    note = m.add_message("user", "Unrelated: the plumber comes at noon.").id
    assert mem.flush(timeout=30)
    assert note in _found_by_keywords(mem, "finance slides")  # ungated
    monkeypatch.undo()
    monkeypatch.setattr(mem.records.index, "requeue", _fail_requeue)
    with pytest.raises(StorageError, match="requeue failed"):
        mem.indexer._keyword_pass()
    monkeypatch.undo()
    assert mem.flush(timeout=30)
    assert note not in _found_by_keywords(mem, "finance slides")


def test_a_message_embedded_during_the_keyword_pass_is_gated_after_a_failed_requeue(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in the race above, but queueing it again after the pass fails once: the keyword
    pass has marked it done, so the indexer keeps it to queue again later."""
    mem = make_memory(background=False)
    ids = _session(mem)
    indexer = mem.indexer
    # as on Postgres when another node holds the messages' embedding: not embedded ahead
    monkeypatch.setattr(indexer, "_embed_ahead", lambda pending, stop: (pending, False))
    stored_vectors = indexer._stored_vectors
    calls = 0

    def embed_meanwhile(rows: Any, gating: Any) -> Any:
        nonlocal calls
        calls += 1
        found = stored_vectors(rows, gating)
        if calls == 1:
            assert indexer._vector_pass()  # embeds all three and requeues the cat message
            monkeypatch.setattr(mem.records.index, "requeue", _fail_requeue)
        return found

    monkeypatch.setattr(indexer, "_stored_vectors", embed_meanwhile)
    with pytest.raises(StorageError, match="requeue failed"):
        indexer.run_once()
    monkeypatch.undo()
    assert ids[CAT] in _found_by_keywords(mem, "quarterly budget")  # provisional context
    assert mem.flush(timeout=30)
    assert ids[CAT] not in _found_by_keywords(mem, "quarterly budget")


def test_vectors_read_back_without_embeddings_leave_the_context_ungated_until_whole(
    make_memory: MakeMemory, tmp_path: Path
) -> None:
    """Chroma answers a read racing the first vectors of a collection with the ids and no
    embeddings (the client here does so on demand): the keyword pass goes on with the
    context ungated and queues the message again, gated once the vectors read whole."""
    client = LaggingClient(tmp_path / "vectors")
    mem = make_memory(background=False, chroma_client=client)
    ids = _session(mem)
    assert mem.flush(timeout=30)
    client.lagging = 1_000_000  # every read with embeddings short, until set back
    m = mem.bind("acme", user_id="u1", session_id="s1")
    note = m.add_message("user", "Unrelated: the plumber comes at noon.").id
    assert mem.indexer._keyword_pass()  # embeds the note first, then reads vectors short
    assert client.short_reads > 0
    assert note in _found_by_keywords(mem, "plumber")
    assert note in _found_by_keywords(mem, "finance slides")  # ungated, for now
    assert mem.records.index.pending_counts()[:2] == (0, 0)
    client.lagging = 0
    mem.indexer._retry_ungated()
    assert mem.records.index.pending_counts()[0] == 1  # the note, queued again
    assert mem.flush(timeout=30)
    assert note not in _found_by_keywords(mem, "finance slides")
    assert note in _found_by_keywords(mem, "plumber")
    assert ids[CAT] not in _found_by_keywords(mem, "finance slides")


def test_the_keyword_rewrite_applies_the_threshold(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    ids = _session(mem)
    assert mem.flush(timeout=30)
    assert mem.indexer.rewrite_keywords() == 3
    assert ids[CAT] not in _found_by_keywords(mem, "quarterly budget")
    assert ids[SLIDES] in _found_by_keywords(mem, "quarterly budget")
    mem.indexer.context_similarity = 0
    mem.indexer.rewrite_keywords()
    assert ids[CAT] in _found_by_keywords(mem, "quarterly budget")


def test_a_failed_embedding_ahead_of_the_keyword_pass_does_not_stop_it(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = make_memory(background=False)

    def fail(*args: Any) -> None:
        raise StorageError("vector upsert failed: disk full")

    monkeypatch.setattr(mem.vectors, "upsert", fail)
    ids = _session(mem)
    assert mem.indexer._keyword_pass()
    found = _found_by_keywords(mem, "quarterly budget")
    assert ids[BUDGET] in found and ids[CAT] in found  # indexed, context provisional


def _conversation(rounds: int) -> list[tuple[str, str]]:
    """(role, text) of ``rounds`` rounds of budget, slides, cat: each cat message is off the
    topic of the messages before it, and so is the budget message after it."""
    foods = ("tuna", "salmon", "kibble", "chicken", "rice")
    return [
        turn
        for n in range(rounds)
        for turn in (
            ("user", f"The quarterly budget review number {n} is on Friday."),
            ("assistant", f"We need finance slides {n} ready for that review."),
            ("user", f"My cat only eats {foods[n % len(foods)]}."),
        )
    ]


def _keyword_scores(mem: AgentMemory, query: str) -> list[tuple[str, float]]:
    """(content, BM25) of every keyword hit of ``query``, by content."""
    m = mem.bind("acme", user_id="u1", session_id="s1")
    req = recall_request(mem.config, m.identity, query, min_score=0.0)
    ranked, visible, _ = mem.engine.candidates(
        m.identity, dataclasses.replace(req, retrievers=("keyword",))
    )
    return sorted((visible[c.id][1].content, c.bm25) for c in ranked)


def test_a_burst_of_writes_is_indexed_as_the_same_writes_one_at_a_time(
    make_memory: MakeMemory,
) -> None:
    """The same messages give the same keyword index, and the same keyword scores, whether
    the indexer takes them one at a time or all at once (a burst of writes outrunning it): an
    entry written twice would stay in Tantivy's BM25 statistics (document count, term
    frequencies, lengths) until a merge, and the ranking of the same rows would depend on how
    fast the indexer had been."""
    turns = _conversation(23)  # 69 messages, more than an embedder batch (64)
    one_by_one = make_memory(background=False)
    if one_by_one.records.index.follows_changes:
        pytest.skip("on Postgres every node writes again what the embedder trims (test_postgres)")
    m = one_by_one.bind("acme", user_id="u1", session_id="s1")
    for role, text in turns:
        m.add_message(role, text)
        one_by_one.indexer.run_once()
    at_once = make_memory(background=False)
    at_once.indexer.batch_size = 16  # what a pass embeds at most, ahead of its keywords too
    m = at_once.bind("acme", user_id="u1", session_id="s1")
    m.add_messages([{"role": role, "content": text} for role, text in turns])
    assert at_once.indexer._keyword_pass()  # the first messages, embedded first
    assert 0 < at_once.indexer.embedded_total <= 16
    assert 0 < at_once.keywords.num_docs() < len(turns)
    assert one_by_one.flush(timeout=60) and at_once.flush(timeout=60)
    for query in ("tuna", "salmon", "kibble"):  # each said in a few messages
        assert _keyword_scores(at_once, query) == _keyword_scores(one_by_one, query)
        terms = at_once.keywords.query_terms(query)
        assert at_once.keywords.idf(terms, "acme") == one_by_one.keywords.idf(terms, "acme")
    for mem in (one_by_one, at_once):
        # every entry in the files is a live one: none was written twice
        assert mem.keywords.doc_freq("tenant", "acme") == mem.keywords.num_docs() == len(turns)
