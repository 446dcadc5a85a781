"""``benchmarks/golden_frontier.py``: each point is a real golden run with recall cutting at
that pair of cut-offs; the defaults' point is the plain golden run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _benchmark_scripts import load_script

from agentmem.calibration import bundled_profile
from agentmem.embeddings import CachedEmbedder
from agentmem.evaluation import golden_dataset_path, load_dataset, run_golden

SCORE_GAP = bundled_profile("all-MiniLM-L6-v2-int8", 384).score_gap  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def gf() -> Any:
    return load_script("golden_frontier")


def test_points_are_golden_runs_at_those_cut_offs(
    gf: Any, shared_embedder: CachedEmbedder, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = json.loads(golden_dataset_path().read_text(encoding="utf-8"))
    # cases a cut changes: multi-answer ones with a weak second answer, two expecting nothing
    wanted = {"gen-allergies", "multi-auth-reviewers", "multi-rust-services"}
    wanted |= {"empty-puppy-name", "empty-nginx-for-health"}
    shipped["cases"] = [c for c in shipped["cases"] if c["id"] in wanted]
    path = tmp_path / "small.json"
    path.write_text(json.dumps(shipped), encoding="utf-8")
    small = load_dataset(path)

    points = gf.main(
        ["--dataset", str(path), "--min-scores", "0.0,0.3", "--gaps", f"none,{SCORE_GAP}"],
        embedder=shared_embedder,
    )
    by_cut = {(p.min_score, p.gap): p for p in points}
    default = run_golden(small, embedder=shared_embedder)
    assert by_cut[(0.3, SCORE_GAP)].recall == pytest.approx(default.recall_at_k)
    assert by_cut[(0.3, SCORE_GAP)].precision == pytest.approx(default.precision_at_k)
    # nothing cut: every expected item is among the first five, the empty cases are not empty
    assert by_cut[(0.0, None)].recall == 1.0
    assert by_cut[(0.0, None)].empty_stayed_empty == 0
    # the gap only ever takes items away, so recall cannot rise with it
    assert by_cut[(0.3, SCORE_GAP)].recall <= by_cut[(0.3, None)].recall
    # and here it cuts a near miss (multi-auth-reviewers: 0.96 expected, 0.37 not)
    assert by_cut[(0.3, SCORE_GAP)].precision > by_cut[(0.3, None)].precision
    assert "min_score  gap" in capsys.readouterr().out
