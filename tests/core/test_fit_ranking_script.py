"""``benchmarks/fit_ranking.py``: the regret against the halves, and held-out figures that
leave the scored family (LoCoMo: the scored conversation) out of the fit. Synthetic data."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _benchmark_scripts import load_script
from test_rank_fit import FUSED, _case

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
