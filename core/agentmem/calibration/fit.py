"""Fitting a calibration profile on labelled candidates (numpy only).

The input is what recall's engine scored for each labelled case, before any cut-off: one
feature row per candidate (:data:`~agentmem.recall.ranking.FEATURE_NAMES`), a relevance label
each, the candidate's kind and token count (:class:`Labelled`; the evaluation suite collects
them). Two logistic regressions are fitted by Newton's method (:func:`logistic`):

- the **calibration** (weights over :data:`~agentmem.recall.ranking.CALIBRATION_FEATURES` and a
  bias; L2 penalty, one of :data:`CALIBRATION_L2S`): the score recall compares with
  ``min_score``;
- the **ranking** (monotone weights over :data:`~agentmem.recall.ranking.RANK_FEATURES`, with
  the signs :data:`~agentmem.recall.ranking.RANK_SIGNS`; rows balanced per query and per
  family, :func:`ranking_rows`; one set for queries naming someone and one for the others,
  :func:`ranking_weights`): the order of a query's candidates;

the calibration on raw features and on standardized ones (where the penalty weighs every
feature alike, whatever the spread of the embedder's cosines) at each penalty, keeping the fit
whose scores have the lowest held-out log loss (:func:`fit_profile`);

then the **score gap** (how far below the best a self-contained item may score) is chosen from
:data:`GAPS` for the best Recall@5 + Precision@5, and a row of :data:`GAPS` none beats keeps
no gap.

Every figure of the report (:func:`evaluate`) is computed the way recall runs: order by the
ranking, drop scores below ``min_score`` (0.3) and outside the gap, keep ``top_k`` (5), cut at
the token budget (:func:`returned`), per family: Recall@5, Precision@5, the share of
expect-empty cases left empty, the expected calibration error of the scores (10 bins), and the
shares of relevant and of irrelevant candidates at or above ``min_score``. :func:`fit_profile`
reports them in-sample, held out (k-fold by group: a conversation or a case) and with each
family left out of the fit.

Example:
    >>> profile, report = fit_profile(queries, identity, fitted_on="suite")  # doctest: +SKIP
    >>> report.families["paraphrase"].held_out.recall  # doctest: +SKIP
    0.83
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..recall.ranking import (
    CALIBRATION_FEATURES,
    FEATURE_NAMES,
    RANK_FEATURES,
    RANK_SIGNS,
    kept_indices,
    names_something,
)
from .profile import CalibrationProfile, EmbedderIdentity

Array = npt.NDArray[np.float64]

#: The ``min_score``, ``top_k`` and token budget the figures are computed at (recall's
#: defaults for a short answer).
MIN_SCORE = 0.3
TOP_K = 5
BUDGET = 1000
#: L2 penalties. The ranking's rows weigh 1 per query on average (:func:`ranking_rows`), so
#: its penalty is small beside them: on the suite, held out (LoCoMo left out a conversation
#: at a time), 1.0 gives LoCoMo R@10 0.794, 0.1 0.800, 0.02 0.805, every other family the
#: same (benchmarks/fit_ranking.py --l2).
CALIBRATION_L2 = 1.0
RANKING_L2 = 0.02
#: The calibration penalties :func:`fit_profile` tries (on raw and on standardized features;
#: the one with the lowest held-out log loss is kept). With MiniLM, raw features at 0.3 (held
#: out log loss 0.307 against 0.313 at 1.0); with e5, standardized ones (0.312, raw 0.338).
CALIBRATION_L2S = (CALIBRATION_L2, 0.3)
#: Queries naming someone (a speaker or a name their candidates carry; with a relevant
#: candidate) needed to fit their own ordering; with fewer, one ordering serves every query.
MIN_NAMED_QUERIES = 30
#: The floors relative to the best score a fitted profile keeps chat messages and other items
#: down to (``Scoring.chat_floor``, ``item_floor``). Shares of a calibrated score, so not
#: tied to an embedder; chosen on the evaluation suite with MiniLM: they bring implicit
#: recall from 0.267 to 0.511 hit@10 and paraphrase-only facts from 0.653 to 0.775 R@10, for
#: a golden Precision@5 of 0.858 instead of 0.871 (benchmarks/fit_ranking.py; lower floors
#: keep more answers and answer more questions about nothing stored).
CHAT_FLOOR = 0.3
ITEM_FLOOR = 0.5
#: Score gaps :func:`fit_gap` tries.
GAPS = (0.6, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.15)
_CAL = [FEATURE_NAMES.index(n) for n in CALIBRATION_FEATURES]
_RANK = [FEATURE_NAMES.index(n) for n in RANK_FEATURES]


class Labelled(Protocol):
    """One labelled case's candidates (row ``i`` of each array is the ``i``-th candidate).

    :class:`agentmem.evaluation.suite.LabelledQuery` is one.
    """

    @property
    def family(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def expect_empty(self) -> bool: ...
    @property
    def evidence(self) -> tuple[str, ...]: ...
    @property
    def features(self) -> Array: ...
    @property
    def labels(self) -> Array: ...
    @property
    def kinds(self) -> tuple[str, ...]: ...
    @property
    def units(self) -> tuple[tuple[str, ...], ...]: ...
    @property
    def tokens(self) -> npt.NDArray[np.int64]: ...
    @property
    def unknown_code(self) -> bool: ...
    @property
    def asks(self) -> tuple[bool, ...]: ...


@dataclass(frozen=True)
class Weights:
    """A fitted model, aligned with :data:`FEATURE_NAMES`: calibration weights and bias,
    ranking weights and the score gap."""

    cal: Array
    bias: float
    rank: Array
    gap: float | None
    named_rank: Array | None = None
    chat_floor: float | None = CHAT_FLOOR
    item_floor: float | None = ITEM_FLOOR

    def rank_for(self, features: Array) -> Array:
        """The ordering weights of one query's candidates (``ranking.rank_weights_for``)."""
        if self.named_rank is not None and names_something(features):
            return self.named_rank
        return self.rank

    def profile(
        self, identity: EmbedderIdentity, *, fitted_on: str, version: str
    ) -> CalibrationProfile:
        """These weights as a profile (only the features each model uses)."""
        return CalibrationProfile(
            embedder=identity,
            weights={FEATURE_NAMES[i]: round(float(self.cal[i]), 4) for i in _CAL},
            bias=round(float(self.bias), 4),
            rank_weights=_named(self.rank),
            named_rank_weights=None if self.named_rank is None else _named(self.named_rank),
            score_gap=self.gap,
            chat_floor=self.chat_floor,
            item_floor=self.item_floor,
            fitted_on=fitted_on,
            fitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
            agentmem_version=version,
        )


def _named(rank: Array) -> dict[str, float]:
    return {FEATURE_NAMES[i]: round(float(rank[i]), 4) for i in _RANK}


# -- the regression ------------------------------------------------------------------------------
def logistic(
    x: Array, y: Array, l2: float, weight: Array | None = None, *, standardize: bool = False
) -> Array:
    """Weighted logistic regression by Newton's method: the weights of ``x``'s columns, then
    the intercept (last; not penalised); L2 penalty ``l2`` on the others.

    With ``standardize``, the columns are scaled to unit variance for the fit and the weights
    scaled back: the penalty then weighs every feature alike, whatever its spread. That is
    what makes one penalty fit every embedder: e5's cosines of related and unrelated texts
    lie within ~0.15 of each other, MiniLM's ~0.6 apart, so on raw features the same penalty
    shrinks e5's cosine weight far more (golden Recall@5 0.71 vs 0.85 fitted standardized).
    """
    mu = np.zeros(x.shape[1])
    sd = np.ones(x.shape[1])
    if standardize:
        mu = x.mean(axis=0)
        sd = x.std(axis=0)
        sd[sd < 1e-9] = 1.0  # a constant column (a feature this data never varies) stays
    xb = np.hstack([(x - mu) / sd, np.ones((len(x), 1))])
    sw = np.ones(len(x)) if weight is None else weight
    w = np.zeros(xb.shape[1])
    reg = np.eye(xb.shape[1]) * l2
    reg[-1, -1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -60, 60)))
        grad = xb.T @ (sw * (p - y)) + reg @ w
        hess = (xb * (sw * p * (1 - p))[:, None]).T @ xb + reg + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    raw = w[:-1] / sd
    result: Array = np.concatenate([raw, [w[-1] - float((raw * mu).sum())]])
    return result


Part = tuple[Array, Array, float]
"""(feature rows, labels, weight of each row) of one group of training rows."""


def _stack(parts: Sequence[Part], cols: list[int]) -> tuple[Array, Array, Array]:
    x = np.vstack([f[:, cols] for f, _, _ in parts])
    y = np.concatenate([lab for _, lab, _ in parts])
    w = np.concatenate([np.full(len(lab), wt) for _, lab, wt in parts])
    return x, y, w


def calibration_weights(
    parts: Sequence[Part], l2: float = CALIBRATION_L2, *, standardize: bool = False
) -> tuple[Array, float]:
    """Calibration weights over :data:`CALIBRATION_FEATURES` (0 elsewhere) and the bias."""
    x, y, w = _stack([p for p in parts if len(p[1])], _CAL)
    fitted = logistic(x, y, l2, w, standardize=standardize)
    full = np.zeros(len(FEATURE_NAMES))
    full[_CAL] = fitted[:-1]
    return full, float(fitted[-1])


def monotone_logistic(
    x: Array, y: Array, l2: float, weight: Array, signs: Sequence[int], *, standardize: bool
) -> Array:
    """:func:`logistic` with each weight held to its sign (``signs``: 1, -1, or 0 for free),
    by active set: while a weight has the wrong sign, the worst one is fixed at 0 and the
    others refitted (at most one refit per column)."""
    free = list(range(x.shape[1]))
    while True:
        fitted = logistic(x[:, free], y, l2, weight, standardize=standardize)
        wrong = [
            (abs(float(w)), n)
            for n, (col, w) in enumerate(zip(free, fitted[:-1], strict=True))
            if signs[col] * w < 0
        ]
        if not wrong:
            out = np.zeros(x.shape[1] + 1)
            out[free] = fitted[:-1]
            out[-1] = fitted[-1]
            return out
        del free[max(wrong)[1]]


def ranking_rows(
    queries: Sequence[Labelled], family_weights: Mapping[str, float] | None = None
) -> list[tuple[Labelled, Part, Part]]:
    """Training rows of the ordering, per query with relevant and irrelevant candidates:
    (the query, its relevant rows, its irrelevant rows). The relevant rows weigh as much in
    all as the irrelevant ones (an ordering is judged within its query, whatever its number
    of candidates), and every family as much as the others (times ``family_weights[family]``,
    default 1): no kind of question outvotes the others by its number of cases. A query
    weighs 1 on average."""
    usable = [
        q for q in queries if not q.expect_empty and 0 < float(q.labels.sum()) < len(q.labels)
    ]
    per_family: dict[str, int] = {}
    for q in usable:
        per_family[q.family] = per_family.get(q.family, 0) + 1
    weight = {f: (family_weights or {}).get(f, 1.0) for f in per_family}
    scale = len(usable) / max(sum(weight.values()), 1e-12)
    rows = []
    for q in usable:
        share = scale * weight[q.family] / per_family[q.family] / 2
        relevant = q.labels == 1
        rows.append(
            (
                q,
                (q.features[relevant], q.labels[relevant], share / float(relevant.sum())),
                (q.features[~relevant], q.labels[~relevant], share / float((~relevant).sum())),
            )
        )
    return rows


def ranking_weights(
    queries: Sequence[Labelled],
    l2: float = RANKING_L2,
    *,
    standardize: bool = True,
    family_weights: Mapping[str, float] | None = None,
) -> tuple[Array, Array | None]:
    """Monotone ordering weights over :data:`RANK_FEATURES` (signs :data:`RANK_SIGNS`; 0
    elsewhere): for queries that name no one, and for those that do (None when
    fewer than :data:`MIN_NAMED_QUERIES` of them can be fitted on). Families are balanced
    over all the queries (:func:`ranking_rows`), then the rows split by regime."""
    signs = [RANK_SIGNS[FEATURE_NAMES[i]] for i in _RANK]
    rows = ranking_rows(queries, family_weights)

    def fit(subset: Sequence[tuple[Labelled, Part, Part]]) -> Array:
        x, y, w = _stack([part for _, *parts in subset for part in parts], _RANK)
        full = np.zeros(len(FEATURE_NAMES))
        full[_RANK] = monotone_logistic(x, y, l2, w, signs, standardize=standardize)[:-1]
        return full

    named = [r for r in rows if names_something(r[0].features)]
    general = fit([r for r in rows if not names_something(r[0].features)] or rows)
    if len(named) < MIN_NAMED_QUERIES:
        return general, None
    return general, fit(named)


# -- recall, simulated -------------------------------------------------------------------------------
def scores(features: Array, cal: Array, bias: float) -> Array:
    """Calibrated scores of candidate rows."""
    result: Array = 1.0 / (1.0 + np.exp(-np.clip(features @ cal + bias, -60, 60)))
    return result


def returned(
    features: Array,
    kinds: Sequence[str],
    tokens: npt.NDArray[np.int64],
    weights: Weights,
    *,
    min_score: float = MIN_SCORE,
    top_k: int = TOP_K,
    budget: int = BUDGET,
    unknown_code: bool = False,
    asks: Sequence[bool] = (),
) -> list[int]:
    """Indices of the candidates recall returns, in order: ranked, ``min_score``, the floors
    and the score gap (``ranking.kept_indices``; ``asks``: which candidates are chat messages
    asking a question, none when empty), ``top_k``, token budget (``unknown_code``: the query
    gives a code no candidate says, which ``ranking.kept`` answers with nothing)."""
    if not len(features) or (min_score > 0 and unknown_code):
        return []
    s = scores(features, weights.cal, weights.bias)
    order = np.argsort(-(features @ weights.rank_for(features)), kind="stable")
    positions = kept_indices(
        s[order].tolist(),
        [kinds[i] == "chat_message" for i in order],
        min_score,
        gap=weights.gap,
        chat_floor=weights.chat_floor,
        item_floor=weights.item_floor,
        asks=[bool(asks[i]) for i in order] if len(asks) else None,
    )
    keep = [int(order[n]) for n in positions]
    out: list[int] = []
    used = 0
    for i in keep[:top_k]:
        if used + int(tokens[i]) > budget:
            if budget - used >= 16:  # recall cuts the item to what is left
                out.append(i)
            break
        out.append(i)
        used += int(tokens[i])
    return out


# -- figures ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Figures:
    """Recall and calibration figures of a set of cases (see the module docstring); None where
    the set has no case (or candidate) of that kind."""

    cases: int
    recall: float | None
    precision: float | None
    expect_empty: float | None
    ece: float | None
    kept_relevant: float | None
    kept_irrelevant: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "R@5": self.recall,
            "P@5": self.precision,
            "expect_empty": self.expect_empty,
            "ece": self.ece,
            "kept_relevant": self.kept_relevant,
            "kept_irrelevant": self.kept_irrelevant,
        }


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def figures(items: Sequence[tuple[Labelled, Weights]]) -> Figures:
    """The figures of cases, each scored with its own weights (held-out ones differ)."""
    recalls: list[float] = []
    precisions: list[float] = []
    empties: list[float] = []
    all_s: list[Array] = []
    all_y: list[Array] = []
    for q, w in items:
        idx = returned(q.features, q.kinds, q.tokens, w, unknown_code=q.unknown_code, asks=q.asks)
        if len(q.labels):
            all_s.append(scores(q.features, w.cal, w.bias))
            all_y.append(q.labels)
        if q.expect_empty:
            empties.append(0.0 if idx else 1.0)
            if idx:
                precisions.append(0.0)
            continue
        if q.evidence:
            found = {u for i in idx for u in q.units[i]}
            recalls.append(len(found.intersection(q.evidence)) / len(q.evidence))
        if idx:
            precisions.append(float(q.labels[idx].mean()))
    ece = kept_rel = kept_irr = None
    if all_s:
        s, y = np.concatenate(all_s), np.concatenate(all_y)
        bins = np.minimum((s * 10).astype(int), 9)
        ece = float(
            sum(
                abs(s[bins == b].mean() - y[bins == b].mean()) * (bins == b).sum()
                for b in set(bins.tolist())
            )
            / len(s)
        )
        if (y == 1).any():
            kept_rel = float((s[y == 1] >= MIN_SCORE).mean())
        if (y == 0).any():
            kept_irr = float((s[y == 0] >= MIN_SCORE).mean())
    return Figures(
        len(items), _mean(recalls), _mean(precisions), _mean(empties), ece, kept_rel, kept_irr
    )


# -- fitting a profile --------------------------------------------------------------------------------
def fit_gap(
    queries: Sequence[Labelled],
    cal: Array,
    bias: float,
    rank: Array,
    named_rank: Array | None = None,
) -> float | None:
    """The score gap with the best Recall@5 + Precision@5 on ``queries`` (None when no gap
    beats cutting nothing)."""

    def value(gap: float | None) -> float:
        f = figures([(q, Weights(cal, bias, rank, gap, named_rank)) for q in queries])
        return (f.recall or 0.0) + (f.precision or 0.0)

    best, best_value = None, value(None)
    for gap in GAPS:
        v = value(gap)
        if v > best_value + 1e-9:
            best, best_value = gap, v
    return best


def scored_cases(queries: Sequence[Labelled], score_families: Collection[str]) -> list[Labelled]:
    """The cases the calibrated score is fitted on: those of ``score_families`` (every case
    when empty, or when none is of those families)."""
    return [q for q in queries if q.family in score_families] or list(queries)


def fit_weights(
    queries: Sequence[Labelled],
    *,
    standardize: bool = False,
    l2: float = CALIBRATION_L2,
    score_families: Collection[str] = (),
) -> Weights:
    """Calibration (penalty ``l2``) and score gap fitted on :func:`scored_cases`, every case
    weighing alike; the ranking on every case, every family weighing alike
    (:func:`ranking_rows`)."""
    scored = scored_cases(queries, score_families)
    parts = [(q.features, q.labels, 1.0) for q in scored if len(q.labels)]
    if not parts or not any(p[1].any() for p in parts):
        raise ValueError("no relevant candidate among the labelled cases: nothing to fit")
    cal, bias = calibration_weights(parts, l2, standardize=standardize)
    rank, named = ranking_weights(queries, standardize=standardize)
    return Weights(cal, bias, rank, fit_gap(scored, cal, bias, rank, named), named)


@dataclass(frozen=True)
class Fit:
    """How the calibration of a profile is fitted: on standardized features or raw ones, at
    L2 penalty ``l2``."""

    standardize: bool
    l2: float

    def __str__(self) -> str:
        return f"{'standardized' if self.standardize else 'raw'} features, L2 {self.l2}"


@dataclass(frozen=True)
class FamilyFigures:
    """One family's figures with the weights fitted on every case (``in_sample``), with
    those fitted without the case's fold (``held_out``), and with those fitted without the
    whole family (``left_out``; None for ``"all"`` and with a single family)."""

    in_sample: Figures
    held_out: Figures
    left_out: Figures | None = None


@dataclass(frozen=True)
class CalibrationReport:
    """What :meth:`agentmem.AgentMemory.calibrate` fitted and how well it does, per family.

    Attributes:
        profile: The profile fitted on every case (saved in the data dir by calibrate).
        families: Family name -> its figures (``"all"``: every case together).
        folds: Folds of the held-out figures (by group: a conversation, or a case).
        cases: Cases fitted on.
        candidates: Candidate rows fitted on.
        seconds: How long the fit took, collection included when calibrate collected.
        held_out_log_loss: Each way of fitting the calibration tried (:class:`Fit`, as text)
            -> the held-out log loss of its scores; the lowest was kept.
    """

    profile: CalibrationProfile
    families: Mapping[str, FamilyFigures]
    folds: int
    cases: int
    candidates: int
    seconds: float = 0.0
    held_out_log_loss: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile.to_dict(),
            "families": {
                name: {
                    "in_sample": f.in_sample.to_dict(),
                    "held_out": f.held_out.to_dict(),
                    "left_out": None if f.left_out is None else f.left_out.to_dict(),
                }
                for name, f in self.families.items()
            },
            "folds": self.folds,
            "cases": self.cases,
            "candidates": self.candidates,
            "seconds": self.seconds,
            "held_out_log_loss": dict(self.held_out_log_loss),
        }


def held_out(
    queries: Sequence[Labelled],
    folds: int,
    seed: int = 0,
    *,
    standardize: bool = False,
    l2: float = CALIBRATION_L2,
    score_families: Collection[str] = (),
) -> list[Weights]:
    """For each query, the weights fitted on the folds it is not in (k-fold by group)."""
    groups = sorted({q.group for q in queries})
    random.Random(seed).shuffle(groups)
    fold_of = {g: n % folds for n, g in enumerate(groups)}
    out: list[Weights | None] = [None] * len(queries)
    for f in range(min(folds, len(groups))):
        train = [q for q in queries if fold_of[q.group] != f]
        weights = fit_weights(train, standardize=standardize, l2=l2, score_families=score_families)
        for i, q in enumerate(queries):
            if fold_of[q.group] == f:
                out[i] = weights
    return [w for w in out if w is not None]


def log_loss(items: Sequence[tuple[Labelled, Weights]]) -> float:
    """The mean log loss of the calibrated scores of the candidates of ``items`` (each case
    with its own weights): how far the scores are from the labels as probabilities (a proper
    scoring rule: lowest for scores that are the true chances of relevance)."""
    losses = []
    for q, w in items:
        if len(q.labels):
            s = np.clip(scores(q.features, w.cal, w.bias), 1e-9, 1 - 1e-9)
            losses.append(-(q.labels * np.log(s) + (1 - q.labels) * np.log(1 - s)))
    return float(np.concatenate(losses).mean()) if losses else float("inf")


def _left_out(
    queries: Sequence[Labelled], family: str, fitted: Fit, score_families: Collection[str]
) -> Figures | None:
    """``family``'s figures with weights fitted on every other family (None when there is
    none, or when nothing is left to fit)."""
    rest = [q for q in queries if q.family != family]
    if family == "all" or not rest or not any(q.labels.any() for q in rest):
        return None
    weights = fit_weights(
        rest, standardize=fitted.standardize, l2=fitted.l2, score_families=score_families
    )
    return figures([(q, weights) for q in queries if q.family == family])


def fit_profile(
    queries: Sequence[Labelled],
    identity: EmbedderIdentity,
    *,
    fitted_on: str,
    version: str = "",
    folds: int = 5,
    score_families: Collection[str] = (),
) -> CalibrationReport:
    """Fit a profile on every case and report it per family: in-sample, held out (k-fold by
    group) and left out (fitted on the other families).

    The calibrated score and the gap are fitted on the cases of ``score_families`` (every
    case when empty), the ordering on every case (:func:`fit_weights`).

    The calibration is fitted on raw and on standardized features (:func:`logistic`; the
    ordering with it), at each penalty of :data:`CALIBRATION_L2S`; the fit whose scores have
    the lowest log loss held out (k-fold, on the cases the score is fitted on) is kept:
    standardized suits an embedder whose cosines are compressed (e5: golden Recall@5 0.89
    held out, 0.71 raw), raw one whose are not (MiniLM). Log loss judges the scores as probabilities, which is what a
    calibration is for; a family's recall or expect-empty share, counted over a dozen cases,
    moves by whole cases and chose raw for e5.

    Raises:
        ValueError: no case has a relevant candidate (nothing to fit on).
    """
    started = datetime.now(UTC)
    tried = {
        option: held_out(
            queries,
            folds,
            standardize=option.standardize,
            l2=option.l2,
            score_families=score_families,
        )
        for option in (Fit(std, l2) for std in (False, True) for l2 in CALIBRATION_L2S)
    }
    scored = {id(q) for q in scored_cases(queries, score_families)}
    losses = {
        option: log_loss([(q, w) for q, w in zip(queries, cv, strict=True) if id(q) in scored])
        for option, cv in tried.items()
    }
    chosen = min(losses, key=lambda option: losses[option])
    cv = tried[chosen]
    weights = fit_weights(
        queries, standardize=chosen.standardize, l2=chosen.l2, score_families=score_families
    )
    families: dict[str, FamilyFigures] = {}
    names = sorted({q.family for q in queries})
    for name in [*names, "all"]:
        pick = [queries[i] for i, q in enumerate(queries) if name in ("all", q.family)]
        held = [cv[i] for i, q in enumerate(queries) if name in ("all", q.family)]
        families[name] = FamilyFigures(
            figures([(q, weights) for q in pick]),
            figures(list(zip(pick, held, strict=True))),
            _left_out(queries, name, chosen, score_families),
        )
    described = f"{fitted_on}; {chosen}"
    return CalibrationReport(
        profile=weights.profile(identity, fitted_on=described, version=version),
        families=families,
        folds=folds,
        cases=len(queries),
        candidates=sum(len(q.labels) for q in queries),
        seconds=(datetime.now(UTC) - started).total_seconds(),
        held_out_log_loss={str(option): loss for option, loss in losses.items()},
    )


def weights_of(profile: CalibrationProfile) -> Weights:
    """A profile's weights as arrays (to simulate recall with them)."""
    scoring = profile.scoring()
    assert scoring.weights is not None and scoring.rank_weights is not None
    return Weights(
        np.asarray(scoring.weights),
        scoring.bias,
        np.asarray(scoring.rank_weights),
        scoring.score_gap,
        None if scoring.named_rank_weights is None else np.asarray(scoring.named_rank_weights),
        scoring.chat_floor,
        scoring.item_floor,
    )


def evaluate(queries: Iterable[Labelled], weights: Weights) -> dict[str, Figures]:
    """Figures per family (and ``"all"``) of ``queries`` scored with ``weights``."""
    items = list(queries)
    out = {}
    for name in [*sorted({q.family for q in items}), "all"]:
        out[name] = figures([(q, weights) for q in items if name in ("all", q.family)])
    return out


__all__ = [
    "BUDGET",
    "CALIBRATION_L2S",
    "CHAT_FLOOR",
    "GAPS",
    "ITEM_FLOOR",
    "MIN_SCORE",
    "TOP_K",
    "CalibrationReport",
    "FamilyFigures",
    "Figures",
    "Fit",
    "Labelled",
    "Weights",
    "calibration_weights",
    "evaluate",
    "figures",
    "fit_gap",
    "fit_profile",
    "fit_weights",
    "held_out",
    "log_loss",
    "logistic",
    "monotone_logistic",
    "ranking_rows",
    "ranking_weights",
    "returned",
    "scored_cases",
    "scores",
    "weights_of",
]
