"""Candidate features of the ranking model, on hand-made conversations."""

from __future__ import annotations

from typing import Any

from agentmem.config import MAX_TOP_K
from agentmem.ranking import (
    CALIBRATION_FEATURES,
    FEATURE_NAMES,
    RANK_WEIGHTS,
    WEIGHTS,
    Candidate,
    brevity,
    features,
)
from agentmem.recall import RETRIEVERS, RecallRequest

SPEAKER = FEATURE_NAMES.index("speaker_match")
IN_KEYWORD = FEATURE_NAMES.index("in_keyword")
IN_VECTOR = FEATURE_NAMES.index("in_vector")
BREVITY = FEATURE_NAMES.index("brevity")
KITTEN = "I adopted a grey kitten from the shelter last week."


def _candidates(
    mem: Any, query: str, retrievers: tuple[str, ...] = RETRIEVERS
) -> dict[str, tuple[float, ...]]:
    """Content -> features of every candidate of ``query`` (``mem``: ``(memory, bound)``)."""
    memory, bound = mem
    req = RecallRequest(
        query=query,
        top_k=MAX_TOP_K,
        scope="any",
        kinds=None,
        memory_types=None,
        rerank=False,
        min_score=0.0,
        token_budget=10**9,
        filters={},
        retrievers=retrievers,
    )
    ranked, visible, _ = memory.engine.candidates(bound.identity, req)
    return {visible[c.id][1].content: c.features for c in ranked}


def _chat(make_memory: Any) -> Any:
    mem = make_memory()
    m = mem.bind("t", user_id="u", session_id="s1")
    m.add_messages(
        [
            {"role": "assistant", "content": "Morning!", "metadata": {"speaker": "Bob Stone"}},
            {
                "role": "user",
                "content": KITTEN,
                "metadata": {"speaker": "Alice"},
            },
            {
                "role": "assistant",
                "content": "Alice, a kitten from the shelter! Bob Stone adopted one too.",
                "metadata": {"speaker": "Bob Stone"},
            },
            {"role": "user", "content": "The shelter is open on Sundays."},
        ]
    )
    mem.flush()
    return mem, mem.bind("t", user_id="u", session_id="s2")


def test_feature_vectors_match_the_weights() -> None:
    assert len(FEATURE_NAMES) == len(WEIGHTS) == len(RANK_WEIGHTS)
    assert len(features(Candidate(id="x", scope="user"), 1.0, 1.0, 1.0, 1.0)) == len(WEIGHTS)
    # The calibrated score uses only its own features.
    for name, weight in zip(FEATURE_NAMES, WEIGHTS, strict=True):
        assert name in CALIBRATION_FEATURES or weight == 0.0


def test_retriever_flags_and_brevity(make_memory: Any) -> None:
    mem, m = _chat(make_memory)
    m.remember("Alice's kitten is called Pretzel")  # an explicit memory: no brevity
    mem.flush()
    feats = _candidates((mem, m), "What did Alice adopt from the shelter?")
    kitten, morning = feats[KITTEN], feats["Morning!"]
    assert kitten[IN_KEYWORD] == 1.0 and kitten[IN_VECTOR] == 1.0
    assert morning[IN_KEYWORD] == 0.0 and morning[IN_VECTOR] == 1.0  # no query term
    assert morning[BREVITY] > 0.0 > kitten[BREVITY]  # the short reply is the brief one
    assert feats["Alice's kitten is called Pretzel"][BREVITY] == 0.0
    chat = [f[BREVITY] for text, f in feats.items() if text != "Alice's kitten is called Pretzel"]
    assert len(chat) == 4 and abs(sum(chat)) < 1e-9  # centred over the chat candidates


def test_brevity_values() -> None:
    assert brevity(None) == 0.0
    assert brevity(0) == 1.0
    assert brevity(10_000) == 0.0
    assert 0.0 < brevity(20) < brevity(3) < 1.0
    c = Candidate(id="x", scope="user", terms=3)
    assert features(c, 1.0, 1.0, 1.0, 1.0, 0.25)[BREVITY] == brevity(3) - 0.25
    assert features(Candidate(id="y", scope="user"), 1.0, 1.0, 1.0, 1.0, 0.25)[BREVITY] == 0.0


def test_speaker_named_in_the_query(make_memory: Any) -> None:
    m = _chat(make_memory)
    feats = _candidates(m, "What did Alice adopt from the shelter?")
    assert feats[KITTEN][SPEAKER] == 1.0
    # Bob's turn names Alice, but Bob is not who the question is about.
    assert feats["Alice, a kitten from the shelter! Bob Stone adopted one too."][SPEAKER] == 0.0
    assert feats["The shelter is open on Sundays."][SPEAKER] == 0.0  # no speaker at all


def test_speaker_match_needs_every_term_of_the_name(make_memory: Any) -> None:
    m = _chat(make_memory)
    bob = "Alice, a kitten from the shelter! Bob Stone adopted one too."
    assert _candidates(m, "Which shelter did Bob visit?")[bob][SPEAKER] == 0.0
    assert _candidates(m, "Which shelter did Bob Stone's cat come from?")[bob][SPEAKER] == 1.0


def test_speaker_match_ranks_the_named_speakers_turn_first(make_memory: Any) -> None:
    _, m = _chat(make_memory)
    hits = m.recall("What did Alice adopt from the shelter?", min_score=0.0).items
    assert hits[0].metadata.get("speaker") == "Alice"


def test_a_request_can_name_one_retriever(make_memory: Any) -> None:
    mem, m = _chat(make_memory)
    query = "Which animal came from the shelter?"
    both = _candidates((mem, m), query)
    keyword = _candidates((mem, m), query, ("keyword",))
    vector = _candidates((mem, m), query, ("vector",))
    assert keyword and all(f[IN_KEYWORD] == 1.0 and f[IN_VECTOR] == 0.0 for f in keyword.values())
    assert vector and all(f[IN_VECTOR] == 1.0 and f[IN_KEYWORD] == 0.0 for f in vector.values())
    assert "Morning!" in vector and "Morning!" not in keyword  # no word of the query in it
    assert set(keyword) | set(vector) == set(both)
