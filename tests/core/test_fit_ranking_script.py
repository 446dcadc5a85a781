"""``benchmarks/fit_ranking.py``: the regret against the halves, held-out figures that leave
the scored family (LoCoMo: the scored conversation) out of the fit, and what each cut costs.
Synthetic data."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _benchmark_scripts import load_script
from test_rank_fit import COS, FUSED, Case, _case

from agentmem.calibration import fit


@pytest.fixture(scope="module")
def fr() -> Any:
    return load_script("fit_ranking")


def test_regret_is_the_worse_metric_against_the_better_half_and_rrf(fr: Any) -> None:
    halves = {
        "keyword": {"R@10": 0.5, "hit@10": 0.6},
        "vector": {"R@10": 0.8, "hit@10": 0.9},
        "rrf": {"R@10": 0.7, "hit@10": 0.95},
    }
    # R@10: 0.79 - max(0.8 - 0.02, 0.7) = +0.01; hit@10: 0.9 - max(0.88, 0.95) = -0.05
    assert fr.regret({"R@10": 0.79, "hit@10": 0.9}, halves) == pytest.approx(-0.05)


def test_held_out_weights_never_saw_the_scored_family_or_conversation(
    fr: Any, monkeypatch: Any
) -> None:
    rng = np.random.default_rng(3)
    suite = []
    for family in ("locomo", "paraphrase"):
        for i in range(40):
            c = _case(family, rng, good=FUSED)
            c.group = f"{family}-{i % 2}"
            c.units = tuple((f"{family}{i}-{j}",) for j in range(len(c.labels)))
            c.evidence = (c.units[0][0],)
            suite.append(c)
    fitted_on: list[set[str]] = []
    real = fit.ranking_weights

    def spy(queries: Any, *args: Any, **kwargs: Any) -> Any:
        fitted_on.append({f"{q.family}/{q.group}" for q in queries})
        return real(queries, *args, **kwargs)

    monkeypatch.setattr(fr.fit, "ranking_weights", spy)
    base = fit.Weights(
        np.zeros(len(fit.FEATURE_NAMES)), 0.0, np.zeros(len(fit.FEATURE_NAMES)), None
    )
    out = fr.held_out(suite, suite, base, 0.02)
    assert set(out) == {"locomo", "paraphrase"}
    assert out["paraphrase"]["R@10"] == pytest.approx(1.0)  # the fused rank finds it
    # one fit per LoCoMo conversation without it, one without paraphrase
    assert sorted(map(sorted, fitted_on)) == sorted(
        [
            ["locomo/locomo-1", "paraphrase/paraphrase-0", "paraphrase/paraphrase-1"],
            ["locomo/locomo-0", "paraphrase/paraphrase-0", "paraphrase/paraphrase-1"],
            ["locomo/locomo-0", "locomo/locomo-1"],
        ]
    )


def _cos_only_weights() -> fit.Weights:
    """Score ``sigmoid(10 cos - 5)``, ordered by cosine, the floors and gap recall ships."""
    cal = np.zeros(len(fit.FEATURE_NAMES))
    cal[COS] = 10.0
    rank = np.zeros(len(fit.FEATURE_NAMES))
    rank[COS] = 1.0
    return fit.Weights(cal, -5.0, rank, 0.3)


def _cos_case(family: str, cosines: list[float], relevant: int | None) -> Case:
    x = np.zeros((len(cosines), len(fit.FEATURE_NAMES)))
    x[:, COS] = cosines
    y = np.zeros(len(cosines))
    if relevant is not None:
        y[relevant] = 1.0
    units = tuple((f"{family}-{len(cosines)}-{i}",) for i in range(len(cosines)))
    return Case(
        family, x, y, expect_empty=relevant is None,
        evidence=() if relevant is None else units[relevant], kinds=("memory",) * len(cosines),
        units=units, tokens=np.full(len(cosines), 10, dtype=np.int64),
    )  # fmt: skip


def test_each_cut_returns_what_it_says(fr: Any) -> None:
    """A neighbour scoring 0.98 keeps a relevant fact scoring 0.38 out at defaults (the score
    gap), the gate alone lets it through; a query whose best scores 0.05 gets nothing unless
    nothing is cut."""
    w = _cos_only_weights()
    answer = _cos_case("facts", [0.9, 0.45, 0.2], relevant=1)
    empty = _cos_case("facts", [0.2, 0.1], relevant=None)
    assert fr.returned(answer, w) == [0]
    assert fr.returned(answer, w, "gate") == [0, 1, 2]
    assert fr.returned(answer, w, "none") == [0, 1, 2]
    assert fr.returned(empty, w) == fr.returned(empty, w, "gate") == []
    assert fr.returned(empty, w, "none") == [0, 1]
    by_cut = {cut: fr.family_figures([answer, empty], lambda _q: w, cut) for cut in fr.CUTS}
    assert {c: (f["R@10"], f["expect_empty"]) for c, f in by_cut.items()} == {
        "defaults": (0.0, 1.0),
        "gate": (1.0, 1.0),
        "none": (1.0, 0.0),
    }


def test_cut_tables_show_the_cost_of_each_cut_and_each_point_of_the_grid(fr: Any) -> None:
    w = _cos_only_weights()
    suite = [_cos_case("facts", [0.9, 0.45, 0.2], 1), _cos_case("facts", [0.2, 0.1], None)]
    halves = {"facts": {s: {"R@10": 1.0, "hit@10": 1.0} for s in ("keyword", "vector", "rrf")}}
    costs = fr.cut_costs(suite, halves, w)
    assert len(costs) == 2
    # defaults R@10 0 (regret -1), the gate alone 1 (regret 0), nothing cut 1
    assert costs[1].split(" | ")[1:4] == [
        "0.000 0.000 1.00 -1.000", "1.000 1.000 1.00 +0.000", "1.000 1.000 0.00 +0.000",
    ]  # fmt: skip
    grid = fr.cut_grid(suite, halves, [], w)
    assert len(grid) == 1 + np.prod([len(axis) for axis in fr.CUT_GRID])
    worst = {tuple(r.split(" | ")[0].split()): float(r.split(" | ")[2]) for r in grid[1:]}
    assert worst[("0.3", "0.5", "0.3")] == -1.0  # the gap cuts the answer
    assert worst[("0.3", "0.5", "None")] == 0.0  # no gap keeps it (0.38 >= min_score)
