"""The ordering's fit: monotone weights, rows balanced per query and per family, and one
ordering for questions that name someone, another for the rest. Synthetic candidates."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from agentmem.calibration import fit
from agentmem.recall.ranking import (
    FEATURE_NAMES,
    RANK_FEATURES,
    RANK_SIGNS,
    Candidate,
    Scoring,
    names_something,
    score_all,
)

COS = FEATURE_NAMES.index("cos")
FUSED = FEATURE_NAMES.index("fused")
SPEAKER = FEATURE_NAMES.index("speaker_match")
NAME = FEATURE_NAMES.index("name_match")


@dataclass
class Case:
    """A :class:`agentmem.calibration.fit.Labelled` of synthetic rows."""

    family: str
    features: npt.NDArray[np.float64]
    labels: npt.NDArray[np.float64]
    group: str = "g"
    expect_empty: bool = False
    evidence: tuple[str, ...] = ("e",)
    kinds: tuple[str, ...] = field(default_factory=tuple)
    units: tuple[tuple[str, ...], ...] = field(default_factory=tuple)
    tokens: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    unknown_code: bool = False
    asks: tuple[bool, ...] = ()


def _case(
    family: str, rng: np.random.Generator, *, good: int, n: int = 10, named: bool = False
) -> Case:
    """``n`` candidates whose relevant one is the best on feature ``good`` (and noise)."""
    x = rng.uniform(0, 1, size=(n, len(FEATURE_NAMES)))
    x[:, SPEAKER] = x[:, NAME] = 0.0
    if named:
        x[0, SPEAKER] = 1.0
    y = np.zeros(n)
    y[0] = 1.0
    x[0, good] = 1.5
    return Case(family, x, y, kinds=("memory",) * n, units=((),) * n,
                tokens=np.full(n, 10, dtype=np.int64))  # fmt: skip


def test_weights_keep_their_signs_even_when_the_data_asks_otherwise() -> None:
    """In this data a higher cosine marks the irrelevant candidates: unconstrained, cosine
    would weigh negatively; monotone, it weighs 0 and the other features order."""
    rng = np.random.default_rng(0)
    cases = []
    for _ in range(40):
        c = _case("a", rng, good=FUSED)
        c.features[0, COS] = 0.0  # the relevant one has the lowest cosine
        cases.append(c)
    rank, named = fit.ranking_weights(cases, 0.02)
    assert named is None  # no question names anyone
    for i, name in enumerate(FEATURE_NAMES):
        sign = RANK_SIGNS.get(name, 0)
        assert sign * rank[i] >= 0, name
        if name not in RANK_FEATURES:
            assert rank[i] == 0.0
    assert rank[COS] == 0.0 and rank[FUSED] > 0
    parts = [p for _, *ps in fit.ranking_rows(cases) for p in ps]
    x, y, w = fit._stack(parts, list(range(len(FEATURE_NAMES))))
    free = fit.logistic(x, y, 0.02, w, standardize=True)
    assert free[COS] < 0  # what the constraint prevented


def test_every_family_weighs_alike_whatever_its_number_of_cases() -> None:
    rng = np.random.default_rng(1)
    big = [_case("big", rng, good=COS, n=30) for _ in range(90)]
    small = [_case("small", rng, good=COS, n=5) for _ in range(10)]
    rows = fit.ranking_rows([*big, *small])
    total: dict[str, float] = {}
    for q, pos, neg in rows:
        # within a query: the relevant rows weigh as much as the irrelevant ones
        assert np.isclose(pos[2] * len(pos[1]), neg[2] * len(neg[1]))
        total[q.family] = total.get(q.family, 0.0) + pos[2] * len(pos[1]) + neg[2] * len(neg[1])
    assert np.isclose(total["big"], total["small"])
    assert np.isclose(sum(total.values()), len(rows))  # a query weighs 1 on average
    doubled = fit.ranking_rows([*big, *small], {"small": 2.0})
    weights = {q.family: pos[2] for q, pos, _ in doubled}
    assert np.isclose(weights["small"] * 10, 2 * weights["big"] * 90)


def test_questions_naming_someone_get_their_own_ordering() -> None:
    """Named questions are answered by the fused rank here, the others by cosine: one
    ordering each, and the engine picks by the candidates' speaker or name match."""
    rng = np.random.default_rng(2)
    plain = [_case("plain", rng, good=COS) for _ in range(60)]
    named = [_case("named", rng, good=FUSED, named=True) for _ in range(60)]
    rank, by_name = fit.ranking_weights([*plain, *named], 0.02)
    assert by_name is not None
    assert rank[COS] > rank[FUSED] and by_name[FUSED] > by_name[COS]
    assert names_something(named[0].features) and not names_something(plain[0].features)
    # too few named questions: one ordering
    assert fit.ranking_weights([*plain, *named[: fit.MIN_NAMED_QUERIES - 1]], 0.02)[1] is None

    scoring = Scoring(weights=(0.0,) * len(FEATURE_NAMES), rank_weights=tuple(rank),
                      named_rank_weights=tuple(by_name))  # fmt: skip
    for case in (named[0], plain[0]):
        cands = [
            Candidate(id=str(i), scope="user", features=tuple(r))
            for i, r in enumerate(case.features)
        ]
        score_all(cands, scoring)
        assert max(cands, key=lambda c: c.rank).id == "0"
    # the weights each query was ordered by
    w = fit.Weights(np.zeros(len(FEATURE_NAMES)), 0.0, rank, None, by_name)
    assert w.rank_for(named[0].features) is by_name and w.rank_for(plain[0].features) is rank
