"""What recall scores of a row's text is stored with the row at indexing time (analysed terms,
their count, the content's token count), so recall does not analyse its candidates again; a
data dir from before is filled in by the indexer in the background, and recall scores a row
without stored features by analysing it, with the same result."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from agentmem import AgentMemory
from agentmem.recall.ranking import FEATURE_NAMES
from agentmem.recall.request import recall_request
from agentmem.storage.index_queue import TEXT_FEATURES_DONE
from agentmem.tokens import count_tokens
from agentmem.write.index_text import analysed_terms, keyword_text

IDENT = {"tenant_id": "acme", "user_id": "alice", "session_id": "s1"}
MESSAGES = [
    ("user", "My order INV-2024-0412 still shows as unpaid, can you check?"),
    ("assistant", "The CrashLoopBackOff on db-replica-07 was fixed yesterday."),
    ("user", "Caroline: I went to the support group on Tuesday."),
]
FACTS = ["Alice prefers uv over pip", "Alice's flight LH-4471 leaves Lisbon at 07:40"]


def _fill(mem: AgentMemory) -> None:
    m = mem.bind(**IDENT)
    m.add_messages([{"role": r, "content": c} for r, c in MESSAGES])
    m.add_message("user", "hi", metadata={"speaker": "Bob Stone"})
    m.remember_many([{"content": f} for f in FACTS])
    mem.flush()


def _features(mem: AgentMemory) -> dict[str, tuple[Any, ...]]:
    return {
        r[0]: tuple(r[1:])
        for r in mem.records.read(
            "SELECT id, content, metadata, kw_terms, kw_term_count, content_tokens FROM memories"
        )
    }


def test_indexed_rows_carry_their_analysed_terms_and_token_count(make_memory: Any) -> None:
    mem = make_memory()
    _fill(mem)
    rows = _features(mem)
    assert len(rows) == len(MESSAGES) + 1 + len(FACTS)
    for content, metadata, terms, count, tokens in rows.values():
        speaker = "Bob Stone" if "Bob Stone" in metadata else None
        want = analysed_terms(mem.keywords.analyze, content, speaker)
        assert terms == " ".join(dict.fromkeys(want))
        assert count == len(want)
        assert tokens == count_tokens(content)
    # camelCase parts and the speaker are part of the keyword text, as the index sees it
    crash = next(v for v in rows.values() if "CrashLoop" in v[0])
    assert set(mem.keywords.analyze(keyword_text(crash[0], None))) == set(crash[2].split())
    assert {"crash", "loop"} <= set(crash[2].split())
    bob = next(v for v in rows.values() if v[0] == "hi")
    assert bob[2] == "bob stone hi"


def _candidate_features(mem: AgentMemory, query: str) -> dict[str, tuple[float, ...]]:
    m = mem.bind(**IDENT)
    req = recall_request(mem.config, m.identity, query, min_score=0.0)
    ranked, _, _ = mem.engine.candidates(m.identity, req)
    return {c.id: c.features for c in ranked}


def test_recall_scores_rows_with_and_without_stored_features_alike(make_memory: Any) -> None:
    mem = make_memory()
    _fill(mem)
    queries = ["is INV-2024-0498 paid?", "what did Bob Stone say", "crash loop on the replica"]
    stored = {q: _candidate_features(mem, q) for q in queries}
    hits = {q: [h.id for h in mem.bind(**IDENT).recall(q, min_score=0.0).items] for q in queries}
    with mem.records.write() as tx:  # as in a data dir from before the features were stored
        tx.execute(
            "UPDATE memories SET kw_terms = NULL, kw_term_count = NULL, content_tokens = NULL"
        )
    for q in queries:
        # (the cosines may differ in their last float32 bits: Chroma answers the first query
        # of a collection, its exact in-memory copy the later ones)
        again = _candidate_features(mem, q)
        assert again.keys() == stored[q].keys()
        for id_, features in again.items():
            assert features == pytest.approx(stored[q][id_], abs=1e-6)
        assert [h.id for h in mem.bind(**IDENT).recall(q, min_score=0.0).items] == hits[q]
    id_miss = FEATURE_NAMES.index("id_miss")
    assert any(f[id_miss] > 0 for f in stored[queries[0]].values())  # another invoice


def test_an_older_data_dir_is_filled_in_by_the_indexer(
    make_memory: Callable[..., AgentMemory],
) -> None:
    mem = make_memory()
    _fill(mem)
    want = _features(mem)
    home = mem.home
    with mem.records.write() as tx:
        tx.execute(
            "UPDATE memories SET kw_terms = NULL, kw_term_count = NULL, content_tokens = NULL"
        )
        tx.execute("DELETE FROM meta WHERE key = ?", (TEXT_FEATURES_DONE,))
    mem.close()
    mem = make_memory(path=home)
    deadline = time.monotonic() + 30
    while mem.records.meta.get(TEXT_FEATURES_DONE) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mem.records.meta.get(TEXT_FEATURES_DONE) == "1"
    assert _features(mem) == want


def test_a_new_data_dir_needs_no_backfill(make_memory: Any) -> None:
    mem = make_memory()
    assert mem.records.meta.get(TEXT_FEATURES_DONE) == "1"


def test_leaving_the_index_clears_the_stored_terms(make_memory: Any) -> None:
    mem = make_memory()
    _fill(mem)
    m = mem.bind(**IDENT)
    fact = m.recall("uv over pip", min_score=0.0).items[0]
    msg = m.recall("support group Tuesday", min_score=0.0).items[0]
    # forgetting clears the copy of the words with the content, in the same transaction (not
    # only when the indexes drop the row, which forget does at once but may fail to)
    other = m.recall("flight LH-4471", min_score=0.0).items[0]
    assert mem.records.retention.tombstone("acme", [other.id]) == [other.id]
    assert _features(mem)[other.id][2:] == (None, None, None)
    assert m.forget(fact.id)
    # anonymizing redacts the copy of the words at once, before the indexer runs
    mem.records.retention.anonymize([(msg.id, "acme", "test")], "2030-01-01T00:00:00+00:00")
    assert _features(mem)[msg.id][2:] == (None, None, None)
    mem.flush()
    assert _features(mem)[fact.id][2:] == (None, None, None)
