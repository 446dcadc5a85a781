"""``benchmarks/fit_calibration.py``: held-out figures score recall's own candidate pool with
weights fitted on a larger one, and the shipped ordering and floors survive a refit of the
calibration. Synthetic candidates, no benchmark data."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _benchmark_scripts import load_script


@pytest.fixture(scope="module")
def fc() -> Any:
    return load_script("fit_calibration")


def _queries(fc: Any, source: str, n: int, seed: int) -> list[Any]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        feats = rng.uniform(size=(8, len(fc.ALL)))
        labels = (feats[:, 0] + 0.5 * feats[:, 2] > 1.0).astype(float)
        out.append(
            fc.Query(
                source=source,
                group=f"{source}{i % 3}",
                feats=feats,
                labels=labels,
                kinds=["chat_message"] * 8,
                tokens=np.full(8, 10),
                contents=[f"{source}-{i}-{j}" for j in range(8)],
                expected=int(labels.sum()),
            )
        )
    return out


def test_weights_fitted_on_one_pool_are_scored_on_recalls_pool(fc: Any) -> None:
    """``--fit-candidates``: the held-out figures score the candidates recall itself ranks
    (its smaller pool), with weights fitted on the larger pool of the same queries."""
    labelled, loc = _queries(fc, "cases", 20, 0), _queries(fc, "locomo", 30, 1)
    smaller = [
        fc.Query(
            **{
                **vars(q),
                "feats": q.feats[:4],
                "labels": q.labels[:4],
                "kinds": q.kinds[:4],
                "tokens": q.tokens[:4],
                "contents": q.contents[:4],
            }
        )
        for q in labelled + loc
    ]
    sets = fc.Sets(labelled, loc, smaller[:20], smaller[20:])
    setup = fc.Setup(0.3, 1.0, _shipped(fc), gap=None, fit_gap=False)
    lab_cv, loc_cv = fc.held_out(setup, sets, 5)
    assert sorted(id(t[0]) for t in lab_cv) == sorted(id(q) for q in smaller[:20])
    assert sorted(id(t[0]) for t in loc_cv) == sorted(id(q) for q in smaller[20:])
    # each held-out conversation's calibration was fitted without it, on the larger pool
    for q, cal, _rank, _ in loc_cv:
        train = [x for x in loc if x.group != q.group]
        assert np.array_equal(cal, setup.fit(labelled, train)[0])


def test_the_candidate_ceiling_counts_evidence_anywhere_among_the_candidates(fc: Any) -> None:
    """``pool``: the share of a question's evidence turns among its candidates, wherever they
    rank; an evidence turn that is no candidate at all is what no ordering can recover."""
    feats = np.zeros((12, len(fc.ALL)))
    feats[:, 0] = np.linspace(1.0, 0.0, 12)  # cos: candidate 0 first, candidate 11 last
    dias = [[f"D1:{i}"] for i in range(12)]

    def question(category: int, evidence: list[str]) -> Any:
        return fc.Query(
            source="locomo",
            group="conv",
            feats=feats,
            labels=np.array([1.0 if d[0] in evidence else 0.0 for d in dias]),
            kinds=["chat_message"] * 12,
            tokens=np.full(12, 10),
            category=category,
            dias=dias,
            evidence=evidence,
        )

    cal = np.zeros(len(fc.ALL) + 1)
    order = np.zeros(len(fc.ALL))
    order[0] = 1.0  # order by cos
    rank = fc.core_fit.Weights(cal[:-1], 0.0, order, None, None, None, None)
    # multi-hop: one evidence turn ranked 12th (outside the top 10), one not a candidate at all
    # single-hop: its evidence ranked first
    items = [
        (question(1, ["D1:11", "D9:9"]), cal, rank, None),
        (question(4, ["D1:0"]), cal, rank, None),
    ]
    res = fc.locomo_metrics(items)
    assert res["candidates"] == 12
    assert res["pool"]["multi-hop"] == 0.5 and res["pool"]["single-hop"] == 1.0
    assert res["pool"]["all"] == 0.75
    # Recall@10 cannot see the 12th candidate; the ceiling does
    assert res["min_score_0"]["multi-hop"] == 0.0


def _shipped(fc: Any) -> Any:
    from agentmem.calibration import bundled_profile, fit

    profile = bundled_profile("all-MiniLM-L6-v2-int8", 384)
    assert profile is not None
    return fit.weights_of(profile)


def test_a_refit_calibration_keeps_the_shipped_ordering_and_floors(
    fc: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    from agentmem.calibration.profile import CalibrationProfile

    labelled, loc = _queries(fc, "cases", 20, 0), _queries(fc, "locomo", 30, 1)
    shipped = _shipped(fc)
    cal, rank, gap = fc.Setup(0.3, 1.0, shipped, gap=0.3, fit_gap=False).fit(labelled, loc)
    assert rank is shipped and gap == 0.3
    out = tmp_path / "profile.json"
    monkeypatch.setattr(fc, "bundled_path", lambda _name: out)

    class Emb:
        model_name, dimensions = "all-MiniLM-L6-v2-int8", 384

    monkeypatch.setattr(fc.EmbedderIdentity, "of", classmethod(lambda cls, e: cls("m", 384)))
    fc.write_profile(Emb(), cal, rank, gap, "synthetic")
    written = CalibrationProfile.from_json(out.read_text()).scoring()
    assert np.allclose(written.rank_weights, shipped.rank, atol=1e-3)
    assert written.named_rank_weights is not None and shipped.named_rank is not None
    assert np.allclose(written.named_rank_weights, shipped.named_rank, atol=1e-3)
    assert (written.chat_floor, written.item_floor) == (shipped.chat_floor, shipped.item_floor)
    assert np.allclose(written.weights, cal[:-1], atol=1e-3)
