"""Candidate features of the ranking model, on hand-made conversations."""

from __future__ import annotations

from typing import Any

from agentmem.config import MAX_TOP_K
from agentmem.ranking import FEATURE_NAMES, RANK_WEIGHTS, WEIGHTS, Candidate, features
from agentmem.recall import RecallRequest

SPEAKER = FEATURE_NAMES.index("speaker_match")


def _candidates(mem: Any, query: str) -> dict[str, tuple[float, ...]]:
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
    )
    ranked, visible, _ = memory.engine.candidates(bound.identity, req)
    return {visible[c.id][1].item.content: c.features for c in ranked}


def _chat(make_memory: Any) -> Any:
    mem = make_memory()
    m = mem.bind("t", user_id="u", session_id="s1")
    m.add_messages(
        [
            {
                "role": "user",
                "content": "I adopted a grey kitten from the shelter last week.",
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


def test_speaker_named_in_the_query(make_memory: Any) -> None:
    m = _chat(make_memory)
    feats = _candidates(m, "What did Alice adopt from the shelter?")
    assert feats["I adopted a grey kitten from the shelter last week."][SPEAKER] == 1.0
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
