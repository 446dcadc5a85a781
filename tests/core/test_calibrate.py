"""``calibrate``: fit a profile for the store's embedder on the shipped labelled cases, save it
in the data dir, use it from then on; the fitting itself on synthetic candidates."""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from _embedding_service import renamed_minilm
from rich.console import Console

from agentmem import AgentMemory, UncalibratedEmbedderWarning
from agentmem.calibration import source
from agentmem.calibration.fit import (
    CALIBRATION_L2S,
    Fit,
    figures,
    fit_profile,
    fit_weights,
    log_loss,
    logistic,
)
from agentmem.calibration.profile import EmbedderIdentity
from agentmem.cli import main
from agentmem.cli.calibrate_cmd import fits_table, left_out_table
from agentmem.evaluation import dataset_path
from agentmem.evaluation.calibration_data import SCORE_SETS, collect_shipped, ordering_families
from agentmem.evaluation.suite import VALIDATION_FAMILIES
from agentmem.evaluation.suite.families import data_families
from agentmem.recall.ranking import FEATURE_NAMES

SUITE_FIXTURE = Path(__file__).resolve().parents[1] / "data" / "suite"


def test_standardized_fits_do_not_depend_on_a_features_scale() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    y = (x @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=400) > 0).astype(float)
    squeezed = x * np.array([0.05, 1.0, 1.0])  # one feature's spread, as e5's cosines

    def predict(w: np.ndarray, data: np.ndarray) -> np.ndarray:
        return data @ w[:-1] + w[-1]

    std = predict(logistic(x, y, 1.0, standardize=True), x)
    std_squeezed = predict(logistic(squeezed, y, 1.0, standardize=True), squeezed)
    assert np.allclose(std, std_squeezed, atol=1e-6)
    raw = predict(logistic(x, y, 1.0), x)
    raw_squeezed = predict(logistic(squeezed, y, 1.0), squeezed)
    assert not np.allclose(raw, raw_squeezed, atol=1e-2)  # the penalty shrank the squeezed one


@dataclass(frozen=True)
class _Case:
    family: str
    group: str
    expect_empty: bool
    evidence: tuple[str, ...]
    features: np.ndarray
    labels: np.ndarray
    kinds: tuple[str, ...]
    units: tuple[tuple[str, ...], ...]
    tokens: np.ndarray
    unknown_code: bool = False
    asks: tuple[bool, ...] = ()


def _synthetic(n: int, seed: int) -> list[_Case]:
    """Cases whose relevant candidates have a high ``cos``: what a fit must find."""
    rng = np.random.default_rng(seed)
    cos = FEATURE_NAMES.index("cos")
    out = []
    for i in range(n):
        empty = i % 5 == 0
        feats = rng.uniform(0.0, 0.4, size=(6, len(FEATURE_NAMES)))
        labels = np.zeros(6)
        if not empty:
            feats[0, cos] = rng.uniform(0.7, 1.0)
            labels[0] = 1.0
        units = tuple((f"c{i}-{j}",) for j in range(6))
        out.append(
            _Case(
                family="a" if i % 2 else "b",
                group=f"g{i}",
                expect_empty=empty,
                evidence=() if empty else units[0],
                features=feats,
                labels=labels,
                kinds=("memory",) * 6,
                units=units,
                tokens=np.full(6, 10, dtype=np.int64),
            )
        )
    return out


def test_fit_profile_reports_each_family_held_out() -> None:
    report = fit_profile(_synthetic(60, 1), EmbedderIdentity("m", 8), fitted_on="synthetic")
    assert set(report.families) == {"a", "b", "all"}
    held = report.families["all"].held_out
    assert held.recall is not None and held.recall > 0.9
    assert held.expect_empty == 1.0 and held.cases == 60
    assert report.profile.problem() is None
    assert report.profile.fitted_on.startswith("synthetic; ")
    assert report.profile.weights["cos"] > 0
    # each family scored with weights fitted on the other one alone
    left_out = report.families["a"].left_out
    assert left_out is not None and left_out.cases == 30 and (left_out.recall or 0) > 0.9
    assert report.families["all"].left_out is None
    assert (
        report.to_dict()["families"]["b"]["left_out"]["R@5"] == report.families["b"].left_out.recall
    )
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(left_out_table(report))
    row = next(line for line in console.export_text().splitlines() if line.startswith("│ a "))
    assert [cell.strip() for cell in row.split("│")[2:6]] == [
        "30", f"{left_out.recall:.3f}", f"{left_out.precision:.3f}", f"{left_out.expect_empty:.3f}"
    ]  # fmt: skip


def test_a_query_giving_a_code_nothing_says_is_simulated_empty() -> None:
    cases = [c for c in _synthetic(40, 5) if not c.expect_empty]
    weights = fit_weights(cases)
    assert figures([(c, weights) for c in cases]).recall == 1.0
    unknown = [dataclasses.replace(c, unknown_code=True) for c in cases]
    assert figures([(c, weights) for c in unknown]).recall == 0.0


def test_compressed_cosines_are_fitted_standardized() -> None:
    """e5's cosines of related and unrelated texts lie close together: on raw features the
    penalty shrinks their weight and recall suffers held out, so the standardized fit wins."""
    cos = FEATURE_NAMES.index("cos")
    squeezed = []
    for c in _synthetic(60, 3):
        feats = c.features.copy()
        feats[:, cos] = 0.8 + 0.05 * feats[:, cos]  # 0.80-0.85, as e5 makes them
        squeezed.append(dataclasses.replace(c, features=feats))
    report = fit_profile(squeezed, EmbedderIdentity("m", 8), fitted_on="squeezed")
    assert "; standardized features, L2 " in report.profile.fitted_on
    assert (report.families["all"].held_out.recall or 0) > 0.9
    # every way of fitting tried, the one with the lowest held-out log loss kept
    losses = report.held_out_log_loss
    assert set(losses) == {str(Fit(std, l2)) for std in (False, True) for l2 in CALIBRATION_L2S}
    assert report.profile.fitted_on.endswith(min(losses, key=lambda k: losses[k]))
    assert report.to_dict()["held_out_log_loss"] == losses
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(fits_table(report))
    rows = [line for line in console.export_text().splitlines() if "features, L2" in line]
    kept = [row.split("│")[1].strip() for row in rows if "yes" in row]
    assert len(rows) == 4 and kept == [min(losses, key=lambda k: losses[k])]


def test_log_loss_grows_as_scores_stray_from_the_labels() -> None:
    case = next(c for c in _synthetic(10, 0) if not c.expect_empty)
    weights = fit_weights(_synthetic(40, 1))
    sharper = dataclasses.replace(weights, cal=weights.cal * 3, bias=weights.bias * 3)
    vague = dataclasses.replace(weights, cal=weights.cal * 0, bias=0.0)  # every score 0.5
    backwards = dataclasses.replace(weights, cal=-weights.cal, bias=-weights.bias)
    losses = [log_loss([(case, w)]) for w in (sharper, weights, vague, backwards)]
    assert losses == sorted(losses) and len(set(losses)) == 4


def test_scores_are_fitted_on_the_score_families_and_the_ordering_on_all() -> None:
    """Family "b" has relevant candidates at low cosine among many irrelevant ones (as a long
    conversation has): fitted for the score it would lower every probability; fitted only
    for the ordering, it leaves the score as family "a" alone makes it."""
    cases = _synthetic(60, 4)
    cos = FEATURE_NAMES.index("cos")
    long_conversation = []
    for c in cases:
        if c.family != "b":
            continue
        feats = np.vstack([c.features] + [c.features[1:]] * 4)
        feats[0, cos] = 0.5
        labels = np.concatenate([c.labels] + [c.labels[1:]] * 4)
        units = c.units + c.units[1:] * 4
        long_conversation.append(
            dataclasses.replace(
                c, features=feats, labels=labels, units=units, kinds=("memory",) * len(labels),
                tokens=np.full(len(labels), 10, dtype=np.int64),
            )
        )  # fmt: skip
    mixed = [c for c in cases if c.family == "a"] + long_conversation
    only_a = fit_weights([c for c in mixed if c.family == "a"])
    scored_on_a = fit_weights(mixed, score_families={"a"})
    scored_on_all = fit_weights(mixed)
    assert scored_on_a.bias == only_a.bias and np.array_equal(scored_on_a.cal, only_a.cal)
    assert scored_on_a.gap == only_a.gap
    assert scored_on_all.bias < only_a.bias - 1  # b's many irrelevant rows lower every score
    assert not np.allclose(scored_on_a.rank, only_a.rank)  # b's rows count for the ordering
    scored_on_a = fit_profile(
        mixed, EmbedderIdentity("m", 8), fitted_on="a+b", score_families={"a"}
    )
    assert set(scored_on_a.families) == {"a", "b", "all"}


def test_calibrate_fits_the_ordering_on_every_fitted_suite_family() -> None:
    assert ordering_families() == [f for f in data_families() if f not in VALIDATION_FAMILIES]
    assert {"implicit", "paraphrase", "identifiers", "temporal"} <= set(ordering_families())
    assert SCORE_SETS == ("golden", "calibration")
    assert all(dataset_path(name).is_file() for name in SCORE_SETS)


@pytest.mark.slow
def test_calibrate_fits_saves_and_uses_a_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the suite's families from the test's small files (the bundled ones take minutes)
    monkeypatch.setattr(
        source, "_collector", [functools.partial(collect_shipped, directory=SUITE_FIXTURE)]
    )
    home = tmp_path / "mem"
    spec = "_embedding_service:renamed_minilm"
    with pytest.warns(UncalibratedEmbedderWarning):
        mem = AgentMemory(home, embedder=renamed_minilm(), background=False)
    m = mem.bind("t", user_id="u")
    m.remember("My favourite film is Spirited Away", memory_type="preference")
    mem.flush()
    paraphrase = "which movie do I love most?"
    assert m.recall(paraphrase).items == []  # uncalibrated: no keyword evidence
    mem.close()

    assert main(["--home", str(home), "--embedder", spec, "--json", "calibrate"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["profile"]["embedder"]["model_name"] == "minilm-renamed"
    assert set(report["families"]) == {"golden", "calibration", "implicit", "identifiers", "all"}
    golden = report["families"]["golden"]["held_out"]
    assert golden["cases"] == 125 and golden["R@5"] > 0.8 and golden["expect_empty"] > 0.8
    assert set(golden) >= {"ece", "kept_relevant", "kept_irrelevant", "P@5"}
    assert report["families"]["calibration"]["in_sample"]["cases"] == 57
    assert report["families"]["implicit"]["left_out"]["cases"] > 0  # fitted without it
    assert report["families"]["all"]["left_out"] is None
    losses = report["held_out_log_loss"]  # the way of fitting kept is the lowest's
    assert len(losses) == 4 and report["profile"]["fitted_on"].endswith(min(losses, key=losses.get))
    fitted_on = report["profile"]["fitted_on"]
    assert fitted_on.startswith("golden + calibration (scores); implicit, identifiers (ordering)")

    with warnings.catch_warnings():
        warnings.simplefilter("error", UncalibratedEmbedderWarning)  # calibrated now
        again = AgentMemory(home, embedder=renamed_minilm(), background=False)
    assert again.context.calibration.source == "store"
    m = again.bind("t", user_id="u")
    assert [h.content for h in m.recall(paraphrase).items] == ["My favourite film is Spirited Away"]
    assert m.recall("lattice quantum chromodynamics").items == []
    again.close()


def test_the_calibrate_command_registers_the_shipped_cases() -> None:
    """A fresh ``agentmem calibrate`` process has the shipped cases to fit on, although the
    package root no longer imports the engine (and the evaluation layer) on its own."""
    code = (
        "import agentmem.cli.calibrate_cmd\n"
        "from agentmem.calibration import source\n"
        "print(len(source._collector))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "1"
