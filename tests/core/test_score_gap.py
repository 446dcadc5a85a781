"""The score gap: a self-contained item far below the best candidate is not returned."""

from __future__ import annotations

from typing import Any

from agentmem.calibration import bundled_profile
from agentmem.recall.ranking import Candidate, Scoring, kept, kept_indices

#: The bundled MiniLM's score gap (the shared test embedder).
SCORE_GAP = bundled_profile("all-MiniLM-L6-v2-int8", 384).score_gap  # type: ignore[union-attr]

QUERY = "when is the office closed over Christmas?"
CLOSED = "The office is closed from 24 December to 1 January"
NEIGHBOURS = (
    "The office is open 8:00 to 19:00 on weekdays",
    "The Christmas party is on 13 December",
)


def _office(make_memory: Any) -> Any:
    mem = make_memory(background=False)
    m = mem.bind("t", user_id="u", session_id="s1")
    m.remember(CLOSED, memory_type="fact")
    for text in NEIGHBOURS:
        m.remember(text, memory_type="fact")
    m.remember("I prefer working from home in winter", memory_type="preference")
    mem.flush()  # indexed: the scores do not depend on how far the indexer got
    return m


def test_a_neighbouring_fact_far_below_the_answer_is_not_returned(make_memory: Any) -> None:
    m = _office(make_memory)
    everything = {h.content: h.score for h in m.recall(QUERY, min_score=0.0, top_k=10).items}
    # the neighbours clear the default min_score: only the gap to the answer cuts them
    assert all(everything[n] >= 0.3 for n in NEIGHBOURS)
    assert all(everything[CLOSED] - everything[n] > SCORE_GAP for n in NEIGHBOURS)
    assert [h.content for h in m.recall(QUERY).items] == [CLOSED]
    assert [h.content for h in m.recall(QUERY, min_score=0.3).items] == [CLOSED]


def _cand(id_: str, score: float) -> Candidate:
    return Candidate(id=id_, scope="user", score=score)


NO_FLOORS = Scoring(weights=(), rank_weights=())


def test_kept_cuts_only_self_contained_items_and_only_above_min_score_zero() -> None:
    ranked = [_cand("best", 0.95), _cand("fact", 0.5), _cand("turn", 0.45), _cand("low", 0.2)]
    kinds = ["memory", "memory", "chat_message", "tool_output"]
    ids = lambda cs: [c.id for c in cs]  # noqa: E731
    # a chat message is one part of a conversation: only min_score cuts it
    assert ids(kept(ranked, kinds, 0.3, NO_FLOORS, gap=0.3)) == ["best", "turn"]
    # within the gap: kept
    assert ids(kept(ranked, kinds, 0.3, NO_FLOORS, gap=0.5)) == ["best", "fact", "turn"]
    # min_score 0 asks for everything, and no gap (reranked scores) is min_score alone
    assert ids(kept(ranked, kinds, 0.0, NO_FLOORS, gap=0.3)) == ["best", "fact", "turn", "low"]
    assert ids(kept(ranked, kinds, 0.3, NO_FLOORS)) == ["best", "fact", "turn"]
    assert kept([], [], 0.3, NO_FLOORS, gap=0.3) == []


def test_floors_keep_what_scores_a_share_of_a_best_that_passed_min_score() -> None:
    """A chat turn at 0.3x the best and an item at 0.5x (within the gap) come with the best
    once it has reached ``min_score``; below it, nothing is returned at all."""
    scores = [0.6, 0.35, 0.2, 0.17, 0.25, 0.1]
    chat = [False, False, True, True, False, False]
    floors = {"chat_floor": 0.3, "item_floor": 0.5}
    # chat floor min(0.3, 0.18) = 0.18: the turn at 0.2 stays, the one at 0.17 goes;
    # item floor min(0.3, 0.3) = 0.3: 0.35 stays, 0.25 goes
    assert kept_indices(scores, chat, 0.3, gap=0.3, **floors) == [0, 1, 2]
    # without floors min_score alone cuts
    assert kept_indices(scores, chat, 0.3, gap=0.3) == [0, 1]
    # the gap still bounds self-contained items: the best minus 0.2 is 0.4
    assert kept_indices(scores, chat, 0.3, gap=0.2, **floors) == [0, 2]
    # a best below min_score: the query has no answer, whatever the floors
    assert kept_indices([0.29, 0.28, 0.2], [True, True, False], 0.3, **floors) == []
    # a floor never raises the bar above min_score
    assert kept_indices([0.9, 0.31], [True, True], 0.3, chat_floor=0.5) == [0, 1]
    assert kept_indices(scores, chat, 0.0, gap=0.3, **floors) == list(range(6))
    # the first item is one that passed min_score; the rest keep the given order
    assert kept_indices([0.25, 0.6, 0.2, 0.4], [True, False, True, True], 0.3, **floors) == [
        1,
        0,
        2,
        3,
    ]


def test_a_question_asked_in_the_conversation_does_not_set_the_gap() -> None:
    """A turn asking a question with the query's words scores high without answering: the
    fact below it that answers stays. A turn that answers still sets the bar."""
    scores = [0.73, 0.32, 0.05]
    chat = [True, False, False]
    # the best turn asks: the bar is the best of the others (the answering fact itself)
    assert kept_indices(scores, chat, 0.3, gap=0.3, asks=[True, False, False]) == [0, 1]
    # the same turn answering: the fact 0.41 below it is a neighbour
    assert kept_indices(scores, chat, 0.3, gap=0.3, asks=[False, False, False]) == [0]
    assert kept_indices(scores, chat, 0.3, gap=0.3) == [0]
    # a fact far below the best answer goes, however high a question scores
    asks = [True, False, False]
    assert kept_indices([0.9, 0.8, 0.45], chat, 0.3, gap=0.3, asks=asks) == [0, 1]
    # only questions: nothing to measure from but themselves, min_score alone cuts turns
    assert kept_indices([0.9, 0.31], [True, True], 0.3, gap=0.3, asks=[True, True]) == [0, 1]


def test_recall_keeps_the_fact_below_a_question_with_the_query_words(make_memory: Any) -> None:
    """End to end: the question turn outscores the fact by more than the gap, yet both
    are returned; without the question the fact is the best item."""
    mem = make_memory(background=False)
    m = mem.bind("t", user_id="u", session_id="s1")
    m.add_message("user", "Which activities sound fun for the coast weekend?")
    m.remember("I run 10 km on Sunday mornings.", memory_type="fact")
    mem.flush()
    query = "What exercise do I do at the weekend?"
    scores = {h.content: h.score for h in m.recall(query, min_score=0.0, top_k=10).items}
    fact, turn = (
        scores["I run 10 km on Sunday mornings."],
        scores["Which activities sound fun for the coast weekend?"],
    )
    assert fact >= 0.3 and turn - fact > SCORE_GAP  # the old bar would have cut the fact
    assert "I run 10 km on Sunday mornings." in [h.content for h in m.recall(query).items]


def test_floors_apply_to_the_default_min_score_only() -> None:
    """A min_score the caller gives is a promise about every item (a retriever's threshold);
    the floors relax only the store's default."""
    from agentmem.config import MemoryConfig
    from agentmem.models import Identity
    from agentmem.recall.request import recall_request

    who = Identity(tenant_id="t", user_id="u")
    assert recall_request(MemoryConfig(), who, "q").floors
    assert not recall_request(MemoryConfig(), who, "q", min_score=0.3).floors
    floors = Scoring(weights=(), rank_weights=(), chat_floor=0.3, item_floor=0.5)
    ranked = [_cand("best", 0.9), _cand("turn", 0.28)]
    kinds = ["memory", "chat_message"]
    assert [c.id for c in kept(ranked, kinds, 0.3, floors)] == ["best", "turn"]
    assert [c.id for c in kept(ranked, kinds, 0.3, floors, floors=False)] == ["best"]


def test_the_turn_ordered_first_is_returned_once_the_query_has_an_answer() -> None:
    """The ordering and the scores are two models: a remark's earlier exchange ordered first
    but scoring below the chat floor (0.3 x 0.8 here) comes second, after the confident
    answer, instead of being cut. Without an answer the query still gets nothing."""
    floors = {"chat_floor": 0.3, "item_floor": 0.5}
    assert kept_indices([0.1, 0.8, 0.5], [True, True, True], 0.3, gap=0.3, **floors) == [
        1,
        0,
        2,
    ]
    # a self-contained item ordered first still has to pass the gap
    assert kept_indices([0.2, 0.9], [False, False], 0.3, gap=0.3, **floors) == [1]
    # the rest are cut as before, and a best below min_score returns nothing
    assert kept_indices([0.1, 0.8, 0.05], [True, True, True], 0.3, **floors) == [1, 0]
    assert kept_indices([0.1, 0.29], [True, True], 0.3, **floors) == []
