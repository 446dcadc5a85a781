"""``benchmarks/ranking_levers.py``: the session keys, the listwise fit and the diversity
re-ranking it measures, and a whole run on the synthetic LoCoMo-shaped file (never on
benchmark data). No figure is asserted: the script reports them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _benchmark_scripts import load_script

from agentmem.embeddings import CachedEmbedder

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "synthetic_long_conversations.json"


@pytest.fixture(scope="module")
def levers() -> Any:
    return load_script("ranking_levers")


def _question(levers: Any, terms: list[str], vector: list[float]) -> Any:
    q = levers.fc.Query(
        source="t", group="g", feats=np.zeros((0, 1)), labels=np.zeros(0), kinds=[], tokens=[]
    )
    return levers.Question(
        query=q,
        sessions=[],
        turns=[],
        vector=np.array(vector),
        terms=terms,
        idf={t: 1.0 for t in terms},
    )


def test_a_session_key_scores_the_words_and_turns_of_the_whole_session(levers: Any) -> None:
    # the query's two words are in two different turns of session a, in none of session b
    a = levers.Session(Counter(["pottery", "class", "kids", "museum"]), np.array([[1.0, 0.0]] * 2))
    b = levers.Session(Counter(["work", "deadline"]), np.array([[0.0, 1.0], [0.6, 0.8]]))
    q = _question(levers, ["pottery", "museum"], [1.0, 0.0])
    scores = levers.session_scores(q, {"a": a, "b": b})
    assert scores["a"]["coverage"] == 1.0 and scores["b"]["coverage"] == 0.0
    assert scores["a"]["bm25"] > scores["b"]["bm25"] == 0.0
    assert scores["a"]["centroid"] == pytest.approx(1.0)
    assert scores["b"]["top3"] == pytest.approx(0.3)  # mean of its (two) turn cosines


def test_listwise_fit_puts_the_evidence_first(levers: Any) -> None:
    rng = np.random.default_rng(0)
    qs = []
    for n in range(30):
        feats = rng.normal(size=(6, 2))
        labels = np.zeros(6)
        best = int(np.argmax(feats[:, 0] - feats[:, 1]))  # the evidence: high a, low b
        labels[best] = 1.0
        qs.append(
            levers.fc.Query(
                source="t", group=str(n), feats=feats, labels=labels, kinds=[], tokens=[]
            )
        )
    w = levers.fit_listwise(qs, [0, 1], 0.01)
    assert w[0] > 0 > w[1]
    assert w[0] / -w[1] == pytest.approx(1.0, abs=0.2)  # the rule the evidence follows
    first = [int(np.argmax(q.feats @ w)) == int(np.argmax(q.labels)) for q in qs]
    assert sum(first) >= 27


def test_diversity_penalises_turns_next_to_a_chosen_one(levers: Any) -> None:
    q = levers.fc.Query(
        source="t",
        group="g",
        feats=np.array([[3.0], [2.9], [2.5]]),
        labels=np.zeros(3),
        kinds=[],
        tokens=[],
    )
    turns = [(1, 4), (1, 5), (7, 2)]  # the second is next to the first, the third elsewhere
    assert levers.diversified(q, np.array([1.0]), turns, 0.0) == [0, 1, 2]
    assert levers.diversified(q, np.array([1.0]), turns, 1.0) == [0, 2, 1]


def test_every_lever_runs_on_a_locomo_file(levers: Any, shared_embedder: CachedEmbedder) -> None:
    lines = levers.run(str(DATA), shared_embedder, levers.LEVERS, 1.0, 0.25)
    text = "\n".join(lines)
    for name in (
        "baseline",
        "session keys session_coverage+session_top3",
        "neighbours prev+next fused",
        "listwise",
        "diversity 0.25",
        "summaries lent to their turns",
    ):
        assert f"{name}: R@10 min_score 0: all " in text
    assert "vs baseline, defaults:" in text
