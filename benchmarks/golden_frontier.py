"""How far the score cut-offs alone can take the golden set: Recall@5 against Precision@5.

Recall returns a candidate when its calibrated score clears ``min_score`` and, for anything
but a chat message, is within a gap (the calibration profile's ``score_gap``) of the
query's best (:func:`agentmem.recall.ranking.kept`). This script runs the golden set through
the public API once per pair of cut-offs in the grid and prints Recall@5, Precision@5 and
how many expect-empty cases stayed empty. A pair reaching R@5 0.95 with P@5 0.90 would be a
change of settings; when none does, the ordering and calibration themselves must change.

    python benchmarks/golden_frontier.py [--dataset FILE] [--min-scores 0.2,0.25,0.3,0.35]
                                         [--gaps none,0.2,0.3,0.4,0.5] [--json]

Each point is one golden run (about 15 s with the packaged embedder).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from unittest import mock

from agentmem.calibration import CalibrationProfile, bundled_profile
from agentmem.calibration import store as calibration_store
from agentmem.config import MemoryConfig
from agentmem.embeddings import Embedder, default_embedder
from agentmem.evaluation import golden_dataset_path, load_dataset, run_golden
from agentmem.evaluation.golden.dataset import GoldenDataset


@dataclass(frozen=True)
class Point:
    """The golden figures for one pair of cut-offs."""

    min_score: float
    gap: float | None
    recall: float | None
    precision: float | None
    empty_stayed_empty: int
    expect_empty: int


def point(dataset: GoldenDataset, min_score: float, gap: float | None, embedder: Embedder) -> Point:
    """Golden R@5 / P@5 with recall cutting at ``min_score`` and ``gap``."""

    def with_gap(model_name: str, dimensions: int) -> CalibrationProfile | None:
        profile = bundled_profile(model_name, dimensions)
        return None if profile is None else replace(profile, score_gap=gap)

    with mock.patch.object(calibration_store, "bundled_profile", with_gap):
        report = run_golden(dataset, config=MemoryConfig(min_score=min_score), embedder=embedder)
    empties = [c for c in report.cases if c.expect_empty]
    return Point(
        min_score,
        gap,
        report.recall_at_k,
        report.precision_at_k,
        sum(1 for c in empties if not c.returned),
        len(empties),
    )


def _grid(text: str) -> list[float | None]:
    return [None if t.strip().lower() == "none" else float(t) for t in text.split(",")]


def main(argv: Sequence[str] | None = None, embedder: Embedder | None = None) -> list[Point]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--dataset", default=None, help="golden dataset JSON (default: shipped)")
    parser.add_argument("--min-scores", default="0.2,0.25,0.3,0.35")
    parser.add_argument("--gaps", default="none,0.2,0.3,0.4,0.5")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset or golden_dataset_path())
    shared = embedder or default_embedder()
    points = [
        point(dataset, m, g, shared)
        for m in _grid(args.min_scores)
        if m is not None
        for g in _grid(args.gaps)
    ]
    if args.json:
        print(json.dumps([asdict(p) for p in points], indent=2))
        return points
    shipped = bundled_profile(shared.model_name, shared.dimensions)
    gap = "none (no profile)" if shipped is None else shipped.score_gap
    print(f"defaults: min_score {MemoryConfig().min_score}, gap {gap}")
    print("min_score  gap    R@5    P@5    expect-empty left empty")
    for p in points:
        gap = "none" if p.gap is None else f"{p.gap:.2f}"
        r, pr = (f"{x:.3f}" if x is not None else "n/a" for x in (p.recall, p.precision))
        print(f"{p.min_score:9.2f}  {gap:5}  {r}  {pr}  {p.empty_stayed_empty}/{p.expect_empty}")
    return points


if __name__ == "__main__":
    main()
