"""Fit recall's ordering on every task family and validate it on families it was not fitted on.

The ordering (the profile's ranking weights, :func:`agentmem.calibration.fit.ranking_weights`)
is a monotone logistic model over ``RANK_FEATURES``: rows balanced per query and per family,
one set of weights for questions that name someone and one for the rest. This script fits
it on the candidates ``agentmem eval --suite --out DIR`` saved (``DIR/candidates.jsonl.gz``)
plus the labelled golden cases, and reports per family, at recall's defaults (``top_k`` 10,
``min_score`` 0.3, 1,000 tokens; simulated with :func:`agentmem.calibration.fit.returned`):

- **before**: the profile as it ships;
- **in-sample**: the new ordering fitted on every training family;
- **held out**: each family scored with weights fitted without it (leave one family out);
  LoCoMo with weights fitted without its conversation (leave one conversation out: it holds
  nearly all the questions that name someone, so leaving it out entirely leaves their
  ordering unfitted); families named by ``--validation`` are never fitted on;
- the keyword half, the vector half and naive RRF from the same run (``DIR/suite.json``), and
  the **regret**: the new figure minus ``max(better half - 0.02, RRF)`` on R@10 and hit@10,
  the worse of the two (negative: the family does worse than the issue's floor);
- the golden set and ``the bundled ``calibration`` cases``: Recall@5 / Precision@5 / expect-empty
  at ``top_k`` 5, before, in-sample and held out (the ordering fitted without the set).

``--write`` saves the in-sample ordering and the floors (``fit.CHAT_FLOOR``,
``fit.ITEM_FLOOR``) into the embedder's bundled profile, keeping its calibration::

    agentmem eval --suite --locomo /work/shared/data/locomo-dev.json \\
        --embed-cache /tmp/cache --out /tmp/suite
    python benchmarks/fit_ranking.py /tmp/suite --embed-cache /tmp/cache [--write]
    # the e5 model's profile: the suite run with it, then
    agentmem --embedder e5 eval --suite --locomo ... --embed-cache /tmp/e5 --out /tmp/suite-e5
    python benchmarks/fit_ranking.py /tmp/suite-e5 --embedder e5 --embed-cache /tmp/e5 --write

``--cut-costs`` fits nothing. It shows, for the shipped profile, what recall loses to its cut
(everything after the ordering: the query's gate, the floors and the score gap) per family,
with each cut of :data:`CUTS`, and each point of :data:`CUT_GRID` beside the golden set::

    python benchmarks/fit_ranking.py /tmp/suite --embed-cache /tmp/cache --cut-costs
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from agentmem import __version__
from agentmem.calibration import fit
from agentmem.calibration.profile import CalibrationProfile, bundled_path
from agentmem.embedding_adapters import from_spec
from agentmem.evaluation import dataset_path, golden_dataset_path
from agentmem.evaluation.suite import LabelledQuery, collect_golden, load_candidates
from agentmem.evaluation.suite.metrics import evidence_ranks, hit_at, recall_at
from agentmem.storage.embedding_cache import cached_on_disk

#: Validation-only families: never fitted on, reported held out.
VALIDATION = ("implicit_dialogue",)
#: How far below the better half a family may stay (the issue's no-regret floor).
TOLERANCE = 0.02
#: The cuts :func:`family_figures` can simulate (:func:`returned`).
CUTS = ("defaults", "gate", "none")
#: The cut-offs ``--cut-costs`` tries: chat floor, item floor and score gap (None: no gap).
CUT_GRID = ((0.3, 0.2, 0.1, 0.0), (0.5, 0.3, 0.0), (0.3, 0.4, 0.5, None))

Scorer = Callable[[LabelledQuery], fit.Weights]


def returned(q: LabelledQuery, weights: fit.Weights, cut: str = "defaults") -> list[int]:
    """The candidates recall returns for ``q`` at ``top_k`` 10 (indices, in order), with one of
    :data:`CUTS`: ``defaults`` (``min_score`` 0.3, the floors and the score gap), ``gate``
    (the query's gate alone: nothing when recall at defaults returns nothing, else the ten
    best, nothing cut) or ``none`` (``min_score`` 0: every candidate in order)."""

    def at(min_score: float) -> list[int]:
        return fit.returned(
            q.features, q.kinds, q.tokens, weights, min_score=min_score, top_k=10,
            unknown_code=q.unknown_code, asks=q.asks,
        )  # fmt: skip

    if cut == "none":
        return at(0.0)
    kept = at(fit.MIN_SCORE)
    return at(0.0) if cut == "gate" and kept else kept


def family_figures(
    queries: Sequence[LabelledQuery], weights: Scorer, cut: str = "defaults"
) -> dict[str, float]:
    """R@5, R@10, hit@10 and the expect-empty share of one family's queries, each query
    scored with ``weights(query)`` and cut as ``cut`` says (:func:`returned`)."""
    sums: dict[str, list[float]] = defaultdict(list)
    for q in queries:
        idx = returned(q, weights(q), cut)
        if q.expect_empty or not q.evidence:
            sums["expect_empty"].append(0.0 if idx else 1.0)
            continue
        ranks = evidence_ranks([q.units[i] for i in idx], frozenset(q.evidence))
        sums["R@5"].append(recall_at(ranks, 5))
        sums["R@10"].append(recall_at(ranks, 10))
        sums["hit@10"].append(hit_at(ranks, 10))
    return {k: float(np.mean(v)) for k, v in sums.items()}


def regret(figures: Mapping[str, float], halves: Mapping[str, Mapping[str, float]]) -> float:
    """The worse of R@10 and hit@10 minus ``max(better half - TOLERANCE, RRF)``."""
    return min(
        figures[m]
        - max(max(halves["keyword"][m], halves["vector"][m]) - TOLERANCE, halves["rrf"][m])
        for m in ("R@10", "hit@10")
    )


def held_out(
    suite: Sequence[LabelledQuery],
    train: Sequence[LabelledQuery],
    base: fit.Weights,
    l2: float,
) -> dict[str, dict[str, float]]:
    """Each family scored with weights fitted without it (LoCoMo: without its conversation)."""

    def fitted(without: Callable[[LabelledQuery], bool]) -> fit.Weights:
        rank, named = fit.ranking_weights([q for q in train if not without(q)], l2)
        return dataclasses.replace(
            base, rank=rank, named_rank=named, chat_floor=fit.CHAT_FLOOR,
            item_floor=fit.ITEM_FLOOR,
        )  # fmt: skip

    out = {}
    for name in sorted({q.family for q in suite}):
        queries = [q for q in suite if q.family == name]
        if name == "locomo":
            per_group = {
                g: fitted(lambda q, g=g: q.family == "locomo" and q.group == g)
                for g in sorted({q.group for q in queries})
            }
            out[name] = family_figures(queries, lambda q, per=per_group: per[q.group])
        else:
            w = fitted(lambda q, name=name: q.family == name)
            out[name] = family_figures(queries, lambda _q, w=w: w)
    return out


def cut_costs(
    suite: Sequence[LabelledQuery],
    halves: Mapping[str, Mapping[str, Mapping[str, float]]],
    weights: fit.Weights,
) -> list[str]:
    """Table rows: per family, R@10 / hit@10 / expect-empty share and the regret with each
    of :data:`CUTS`, beside the better half and naive RRF. Where ``none`` reaches the halves
    and ``defaults`` does not, the cut loses what the ordering found."""
    head = " | ".join(f"{cut} R@10 hit@10 ee regret" for cut in CUTS)
    rows = [f"{'family':18s} | {head} | better half R@10 hit@10 | RRF R@10 hit@10"]
    for name in sorted({q.family for q in suite}):
        queries = [q for q in suite if q.family == name]
        h = halves[name]
        cells = []
        for cut in CUTS:
            f = family_figures(queries, lambda _q: weights, cut)
            cells.append(
                f"{f['R@10']:.3f} {f['hit@10']:.3f} {f.get('expect_empty', float('nan')):.2f} "
                f"{regret(f, h):+.3f}"
            )
        better = {m: max(h["keyword"][m], h["vector"][m]) for m in ("R@10", "hit@10")}
        rows.append(
            f"{name:18s} | {' | '.join(cells)} | {better['R@10']:.3f} {better['hit@10']:.3f} | "
            f"{h['rrf']['R@10']:.3f} {h['rrf']['hit@10']:.3f}"
        )
    return rows


def cut_grid(
    suite: Sequence[LabelledQuery],
    halves: Mapping[str, Mapping[str, Mapping[str, float]]],
    golden: Sequence[LabelledQuery],
    weights: fit.Weights,
) -> list[str]:
    """Table rows: per point of :data:`CUT_GRID` (the profile's calibration and ordering, other
    cut-offs), each family's regret at defaults, the worst, and the golden set's R@5 / P@5 /
    expect-empty (``top_k`` 5). The floors and the gap only decide what follows the best
    candidate, so the expect-empty shares are the same on every row."""
    names = sorted({q.family for q in suite})
    rows = [
        "chat floor, item floor, gap | "
        + " ".join(f"{n[:10]:>10s}" for n in names)
        + " |  worst | golden R@5 P@5 ee"
    ]
    for chat_floor, item_floor, gap in itertools.product(*CUT_GRID):
        w = dataclasses.replace(weights, chat_floor=chat_floor, item_floor=item_floor, gap=gap)
        r = [
            regret(
                family_figures([q for q in suite if q.family == n], lambda _q, w=w: w), halves[n]
            )
            for n in names
        ]
        g = fit.figures([(q, w) for q in golden])
        rows.append(
            f"{chat_floor:10.1f} {item_floor:10.1f} {gap!s:>6s} | "
            + " ".join(f"{x:+10.3f}" for x in r)
            + f" | {min(r):+.3f} | {g.recall or 0:.3f} {g.precision or 0:.3f} "
            f"{g.expect_empty or 0:.2f}"
        )
    return rows


def labelled_figures(queries: Sequence[LabelledQuery], weights: fit.Weights) -> str:
    f = fit.figures([(q, weights) for q in queries])
    return f"R@5 {f.recall:.3f}  P@5 {f.precision:.3f}  expect-empty {f.expect_empty:.3f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("suite", help="the --out directory of agentmem eval --suite")
    parser.add_argument("--embed-cache", default=None, help="on-disk embedding cache directory")
    parser.add_argument(
        "--embedder", default="minilm", help="the suite's embedder (minilm, e5): its bundled "
        "profile is the one refitted",
    )  # fmt: skip
    parser.add_argument("--cases", default=str(dataset_path("calibration")))
    parser.add_argument("--l2", type=float, default=fit.RANKING_L2)
    parser.add_argument("--validation", nargs="*", default=list(VALIDATION))
    parser.add_argument("--write", action="store_true", help="update the bundled profile")
    parser.add_argument(
        "--cut-costs", action="store_true", help="fit nothing: show what each cut costs the "
        "shipped profile per family, and the grid of cut-offs (CUT_GRID) beside golden",
    )  # fmt: skip
    args = parser.parse_args(argv)

    directory = Path(args.suite)
    suite = load_candidates(directory / "candidates.jsonl.gz")
    halves = {
        name: family["systems"]
        for name, family in json.loads((directory / "suite.json").read_text())["families"].items()
    }
    emb = from_spec(args.embedder)
    model = emb.model_name
    if args.embed_cache:
        emb = cached_on_disk(emb, args.embed_cache)[0]
    golden = collect_golden(str(golden_dataset_path()), embedder=emb)
    cases = collect_golden(args.cases, embedder=emb) if args.cases else []
    shipped = CalibrationProfile.from_json(bundled_path(model).read_text(encoding="utf-8"))
    base = fit.weights_of(shipped)
    if args.cut_costs:
        print("\n".join(cut_costs(suite, halves, base)), "", sep="\n")
        print("\n".join(cut_grid(suite, halves, golden, base)))
        return
    train = [q for q in suite if q.family not in args.validation] + golden + cases

    rank, named = fit.ranking_weights(train, args.l2)
    new = dataclasses.replace(
        base, rank=rank, named_rank=named, chat_floor=fit.CHAT_FLOOR, item_floor=fit.ITEM_FLOOR
    )
    cv = held_out(suite, train, base, args.l2)
    print(f"fitted on {len(train)} queries; validation only: {', '.join(args.validation)}")
    print(
        "family             | before R@10 hit@10 ee | in-sample R@10 hit@10 ee | held out R@10"
        " hit@10 ee regret | kw R@10 vec R@10 RRF R@10"
    )
    worst = 1.0
    for name in sorted({q.family for q in suite}):
        queries = [q for q in suite if q.family == name]
        before = family_figures(queries, lambda _q: base)
        after = family_figures(queries, lambda _q: new)
        out = cv[name]
        h = halves[name]
        r = regret(out, h)
        worst = min(worst, r)
        print(
            f"{name:18s} | {before['R@10']:.3f} {before['hit@10']:.3f} "
            f"{before.get('expect_empty', float('nan')):.2f} | {after['R@10']:.3f} "
            f"{after['hit@10']:.3f} {after.get('expect_empty', float('nan')):.2f} | "
            f"{out['R@10']:.3f} {out['hit@10']:.3f} {out.get('expect_empty', float('nan')):.2f} "
            f"{r:+.3f} | {h['keyword']['R@10']:.3f} {h['vector']['R@10']:.3f} {h['rrf']['R@10']:.3f}"
        )
    print(f"worst held-out regret: {worst:+.3f}")
    for label, queries in (("golden", golden), ("calibration cases", cases)):
        if queries:
            family = queries[0].family
            rank_out, named_out = fit.ranking_weights(
                [q for q in train if q.family != family], args.l2
            )
            out_w = dataclasses.replace(new, rank=rank_out, named_rank=named_out)
            print(f"{label}: before   {labelled_figures(queries, base)}")
            print(f"{label}: after    {labelled_figures(queries, new)}")
            print(f"{label}: held out {labelled_figures(queries, out_w)} (fitted without it)")
    names = fit.FEATURE_NAMES
    print("ranking:", {n: round(float(w), 3) for n, w in zip(names, rank, strict=True) if w})
    if named is not None:
        print("named:", {n: round(float(w), 3) for n, w in zip(names, named, strict=True) if w})
    if args.write:
        profile = dataclasses.replace(
            new.profile(shipped.embedder, fitted_on="", version=__version__),
            fitted_on=f"{shipped.fitted_on.split(';')[0]}; ranking: monotone, "
            f"every suite family but {', '.join(args.validation)} + golden + calibration cases",
            fitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        path = bundled_path(model)
        path.write_text(profile.to_json(), encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
