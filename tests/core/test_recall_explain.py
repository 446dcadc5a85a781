"""``recall_explain``: the same recall as ``recall``, with each candidate's evidence, the
ranking model's features and weights, and what cut the others."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentmem import AgentMemory, BoundMemory, UncalibratedEmbedderWarning, ValidationError
from agentmem.embeddings import CachedEmbedder, OnnxMiniLMEmbedder
from agentmem.models import CUT_REASONS, RecallExplanation, RecallResult
from agentmem.recall import ranking
from agentmem.recall.explain import recall_explain
from agentmem.recall.request import recall_request

FACTS = [
    "Alice lives in Lisbon",
    "Alice works in Porto at a bakery",
    "Bob's favourite colour is green",
]
CHAT = [
    ("user", "When is the dentist appointment?"),
    ("assistant", "Thursday at 15:40 with Dr. Okafor"),
    ("user", "Remind me to bring the dentist insurance card"),
    ("assistant", "I will remind you about the insurance card on Thursday"),
]
QUERIES = ["where does Alice live?", "dentist appointment", "what colour does Bob like?"]


@pytest.fixture
def m(make_memory) -> BoundMemory:  # type: ignore[no-untyped-def]
    mem: AgentMemory = make_memory()
    bound = mem.bind("acme", user_id="u1", session_id="s1")
    for fact in FACTS:
        bound.remember(fact)
    bound.remember("I prefer tea", memory_type="preference", topic_key="drink")
    bound.remember("I prefer coffee", memory_type="preference", topic_key="drink")
    for role, text in CHAT:
        bound.add_message(role, text)
    mem.bind("acme", user_id="u2", session_id="s9").remember("Alice lives in Madrid now")
    mem.flush()
    return bound


def explain(m: BoundMemory, query: str, **options: object) -> RecallExplanation:
    return recall_explain(m.store.context, m.identity, query, **options)


def assert_same(got: RecallResult, expected: RecallResult) -> None:
    """The same result (a query embedded afresh and one from the cache differ in the last
    float digits, so scores are compared to 1e-5)."""
    assert [h.id for h in got.items] == [h.id for h in expected.items]
    assert [h.score for h in got.items] == pytest.approx(
        [h.score for h in expected.items], abs=1e-5
    )
    assert [h.content for h in got.items] == [h.content for h in expected.items]
    assert (got.best_score is None) == (expected.best_score is None)
    if expected.best_score is not None:
        assert got.best_score == pytest.approx(expected.best_score, abs=1e-5)
    assert dataclasses.replace(got, items=[], best_score=None) == dataclasses.replace(
        expected, items=[], best_score=None
    )


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize(
    "options",
    [{}, {"min_score": 0.0}, {"min_score": 0.0, "top_k": 2}, {"token_budget": 8}],
    ids=["defaults", "everything", "top2", "budget"],
)
def test_the_explained_result_is_what_recall_returns(
    m: BoundMemory, query: str, options: dict[str, object]
) -> None:
    why = explain(m, query, **options)
    got = m.recall(query, **options)  # type: ignore[arg-type]
    assert_same(why.result, got)
    # in the order considered; recall may move the first item to reach min_score ahead
    returned = {c.id: c.score for c in why.candidates if c.cut is None}
    assert returned == {h.id: h.score for h in why.result.items}
    assert len(returned) == got.total
    assert all(c.score is None for c in why.candidates if c.cut is not None)


def test_each_score_is_the_declared_models_sum(m: BoundMemory) -> None:
    why = explain(m, "where does Alice live?", min_score=0.0)
    scoring = m.store.context.engine.scoring
    assert why.calibrated and scoring.weights is not None and scoring.rank_weights is not None
    assert len(why.candidates) >= 4
    for c in why.candidates:
        # every feature of the model by its declared name, with the profile's weights
        assert [t.name for t in c.calibration] == list(ranking.FEATURE_NAMES)
        assert [t.weight for t in c.calibration] == list(scoring.weights)
        assert [t.weight for t in c.ordering] == list(scoring.rank_weights)
        assert c.calibration_bias == scoring.bias
        z = c.calibration_bias + sum(t.contribution for t in c.calibration)
        assert c.calibrated_score == pytest.approx(1 / (1 + math.exp(-z)))
        assert c.ordering_key == pytest.approx(sum(t.contribution for t in c.ordering))
    # considered in the ordering model's order (no reranker here)
    keys = [c.ordering_key for c in why.candidates]
    assert keys == sorted(keys, reverse=True)
    assert [c.position for c in why.candidates] == list(range(1, len(keys) + 1))
    # the fused rank orders the candidates by their RRF value
    by_rank = sorted(why.candidates, key=lambda c: c.fused_rank)
    assert [c.fused for c in by_rank] == sorted((c.fused for c in by_rank), reverse=True)


def test_a_query_naming_someone_is_explained_by_the_named_ordering(m: BoundMemory) -> None:
    m.remember("Bongani Park looks after the staging host")
    m.remember("The staging host is rebooted every Sunday")
    m.store.flush()
    scoring = m.store.context.engine.scoring
    assert scoring.named_rank_weights is not None
    named = explain(m, "which host does Bongani Park look after?", min_score=0.0)
    assert named.named_ordering
    plain = explain(m, "where does Alice live?", min_score=0.0)
    assert not plain.named_ordering
    for why, weights in ((named, scoring.named_rank_weights), (plain, scoring.rank_weights)):
        for c in why.candidates:
            assert [t.weight for t in c.ordering] == list(weights)
            assert c.ordering_key == pytest.approx(sum(t.contribution for t in c.ordering))
        keys = [c.ordering_key for c in why.candidates]
        assert keys == sorted(keys, reverse=True)  # the order recall considered them in
    # a min_score the caller gives holds for every item: no floors below it
    assert named.chat_floor is None and named.item_floor is None
    at_default = explain(m, "which host does Bongani Park look after?")
    assert (at_default.chat_floor, at_default.item_floor) == (
        scoring.chat_floor,
        scoring.item_floor,
    )


def test_retriever_evidence_is_reported_per_half(m: BoundMemory) -> None:
    why = explain(m, "where does Alice live?", min_score=0.0)
    best = why.candidates[0]
    assert best.content == "Alice lives in Lisbon"
    assert best.keyword_rank == 1 and best.bm25 is not None and best.bm25 > 0
    assert best.vector_rank == 1 and best.cosine is not None and 0 < best.cosine <= 1
    vector_only = [c for c in why.candidates if c.keyword_rank is None]
    assert vector_only and all(c.bm25 is None and c.cosine is not None for c in vector_only)


def test_the_cosine_shown_is_the_vector_indexs(m: BoundMemory) -> None:
    # another ticket: the vector half finds it close, the ranking's cos feature is 0 for it
    other = m.remember("Ticket OPS-4470: the login page times out after the upgrade").id
    m.store.flush()
    why = explain(m, "OPS-4471 login page times out after the upgrade", min_score=0.0)
    (c,) = [c for c in why.candidates if c.id == other]
    cos = {t.name: t.value for t in c.calibration}["cos"]
    assert c.vector_rank is not None and c.cosine is not None and c.cosine > 0.5
    assert cos == 0.0


def _cut(why: RecallExplanation, reason: str) -> list[str]:
    return [c.content for c in why.candidates if c.cut == reason]


def test_why_the_others_were_cut(m: BoundMemory) -> None:
    why = explain(m, "where does Alice live?")
    assert [h.content for h in why.result] == ["Alice lives in Lisbon"]
    # the other Alice fact clears min_score but trails the best by more than the gap
    assert _cut(why, "score_gap") == ["Alice works in Porto at a bakery"]
    gap = m.store.context.engine.scoring.score_gap
    assert gap is not None and why.score_gap == gap and why.min_score == 0.3
    for c in why.candidates:
        if c.cut == "min_score":
            assert c.calibrated_score < why.min_score
        if c.cut == "score_gap":
            assert why.min_score <= c.calibrated_score < why.candidates[0].calibrated_score - gap
    assert set(why.cut_counts) <= set(CUT_REASONS)
    assert sum(why.cut_counts.values()) == len(why.candidates) - len(why.result)

    # chat turns are cut by min_score only; top_k then cuts, and the budget after it
    why = explain(m, "dentist insurance card Thursday", kinds="chat_message", min_score=0.0)
    assert why.result.total == 4 and not why.cut_counts
    why = explain(m, "dentist insurance card Thursday", kinds="chat_message", top_k=2)
    assert why.result.total == 2 and len(_cut(why, "top_k")) == len(why.candidates) - 2
    why = explain(m, "dentist insurance card Thursday", kinds="chat_message", token_budget=20)
    assert why.result.truncated
    assert _cut(why, "token_budget") and [c.truncated for c in why.candidates].count(True) <= 1


def test_an_empty_recall_says_how_close_its_best_candidate_came(m: BoundMemory) -> None:
    query = "where does Alice live?"
    assert m.recall(query).items and m.recall(query).best_score is None  # answered
    why = explain(m, query, min_score=0.999)
    assert why.result.total == 0 and not why.result.rerank_used
    best = max(c.calibrated_score for c in why.candidates)
    assert 0.3 < best < 0.999
    got = m.recall(query, min_score=0.999)
    assert got.items == [] and got.best_score == pytest.approx(best, abs=1e-5)
    assert why.result.best_score == pytest.approx(best, abs=1e-5)
    assert m.store.bind("nobody-here", user_id="x").recall(query).best_score is None  # no row


def test_a_query_giving_a_code_nothing_says_is_explained(m: BoundMemory) -> None:
    why = explain(m, "where does Alice live? ticket OPS-4478")
    assert why.result.total == 0 and why.candidates
    assert {c.cut for c in why.candidates} == {"unknown_code"}


def test_the_gate_count_counts_the_rows_the_gate_refused(m: BoundMemory) -> None:
    # "I prefer tea" was superseded (topic key): its index entries remain, the gate refuses it
    why = explain(m, "which drink do I prefer?")
    assert why.gate_refused == 1
    assert "I prefer tea" not in [c.content for c in why.candidates]
    audit = explain(m, "which drink do I prefer?", include_superseded=True)
    assert audit.gate_refused == 0
    assert "I prefer tea" in [c.content for c in audit.candidates]
    # another user's row lives in a partition this identity never searches
    assert "Alice lives in Madrid now" not in [c.content for c in audit.candidates]


def test_each_half_alone_is_recall_with_that_retriever(m: BoundMemory) -> None:
    ctx = m.store.context
    for query in QUERIES:
        why = explain(m, query, min_score=0.0)
        req = recall_request(ctx.settings.memory, m.identity, query, min_score=0.0)
        for half, got in (("keyword", why.keyword_only), ("vector", why.vector_only)):
            alone = ctx.engine.recall(m.identity, dataclasses.replace(req, retrievers=(half,)))
            assert_same(got, alone)
    why = explain(m, "Okafor", min_score=0.0)
    assert [h.content for h in why.keyword_only][:1] == ["Thursday at 15:40 with Dr. Okafor"]


class _Longest:
    """A reranker preferring longer documents (a collaborator of the engine, in process)."""

    name = "longest"

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        return [min(len(d) / 100, 1.0) for d in documents]


def test_a_reranked_recall_is_explained_by_the_rerankers_scores(make_memory) -> None:  # type: ignore[no-untyped-def]
    mem: AgentMemory = make_memory(reranker=_Longest())
    m = mem.bind("acme", user_id="u1")
    for n in range(25):
        m.remember(f"note {n}: the staging database host is db-{n} " + "x" * n)
    mem.flush()
    why = explain(m, "staging database host", min_score=0.0, top_k=20)
    assert_same(why.result, m.recall("staging database host", min_score=0.0, top_k=20))
    assert why.result.rerank_used and why.score_gap is None
    assert len(why.candidates) > 20  # the reranker reorders the first 20
    assert len(_cut(why, "rerank_depth")) == len(why.candidates) - 20
    head = [c for c in why.candidates if c.cut != "rerank_depth"]
    assert [c.rerank_score for c in head] == sorted(
        (c.rerank_score or 0 for c in head), reverse=True
    )


def test_explaining_counts_no_access_and_validates_like_recall(m: BoundMemory) -> None:
    mem = m.store
    explain(m, "where does Alice live?")
    mem.access.flush()
    assert mem.records.count("access_count > 0") == 0
    m.recall("where does Alice live?")
    mem.access.flush()
    assert mem.records.count("access_count > 0") == 1
    with pytest.raises(ValidationError) as err:
        explain(m, "x", top_k=99)
    assert err.value.field == "top_k"


def test_an_uncalibrated_recall_is_explained_by_its_fused_rank(tmp_path: Path) -> None:
    # the same model under a name agentmem ships no profile for
    embedder = CachedEmbedder(OnnxMiniLMEmbedder(model_name="minilm-under-another-name"))
    with pytest.warns(UncalibratedEmbedderWarning):
        mem = AgentMemory(tmp_path / "mem", embedder=embedder, background=False)
    with mem:
        m = mem.bind("acme", user_id="u1")
        for fact in FACTS:
            m.remember(fact)
        mem.flush()
        why = explain(m, "where does Alice live?")
        assert not why.calibrated
        assert_same(why.result, m.recall("where does Alice live?"))
        assert why.result.total > 0
        for c in why.candidates:
            assert c.calibration == () and c.ordering == ()
        # unrelated to every memory: min_score cuts all, on the keyword evidence
        why = explain(m, "quantum chromodynamics lecture notes")
        assert why.result.total == 0 and why.candidates
        assert set(why.cut_counts) == {"min_score"}
