"""Fit the recall score calibration on a golden dataset, with cross-validated figures.

The calibrated score is ``sigmoid(bias + w . features)`` over the features computed in
``agentmem.ranking.features`` (``agentmem.ranking.FEATURE_NAMES``: cosine, IDF-weighted
keyword coverage, normalised weighted RRF, the gaps to the best candidate of the same query,
and so on). This script:

1. writes every case of the dataset into one fresh store (as ``agentmem eval`` does),
2. collects every admitted candidate of every case's query with its features and a label
   (is its content one of the case's expected retrievals?),
3. fits an L2-regularised logistic regression (Newton's method, numpy only) over the
   calibration features (``agentmem.ranking.CALIBRATION_FEATURES``; the others get weight 0),
4. reports Recall@5 / Precision@5 at the default ``min_score`` under k-fold cross-validation
   by case (weights fitted on the other folds), so the figure is not measured on the data the
   weights were fitted on; then prints the weights fitted on all cases for ``ranking.py``.

The ranking weights (``RANK_WEIGHTS``: the order of candidates within a query) are fitted
the same way on LoCoMo evidence labels when ``--locomo FILE`` is given, with a
leave-one-conversation-out Recall@10 (the benchmark file is read from where it lies; it is
never copied into the project).

Usage:
    python benchmarks/fit_calibration.py [--dataset eval/memory_golden_dataset.json]
        [--locomo path/to/locomo-dev.json] [--folds 5] [--embed-cache DIR]

``--embed-cache DIR`` keeps document and query vectors on disk (as ``agentmem eval --locomo
--embed-cache`` does; the same directory can be shared), so a refit after a feature change
does not re-embed the corpora.
"""

from __future__ import annotations

import argparse
import random
import tempfile

import numpy as np

from agentmem import AgentMemory
from agentmem.config import MAX_TOP_K
from agentmem.embeddings import CachedEmbedder, Embedder, default_embedder
from agentmem.evaluation.embed_cache import DiskEmbeddingCache
from agentmem.evaluation.golden import bind_case, load_dataset, write_case
from agentmem.ranking import BIAS, CALIBRATION_FEATURES, FEATURE_NAMES, RANK_WEIGHTS, WEIGHTS
from agentmem.recall import RecallRequest


def embedder(cache_dir: str | None) -> Embedder:
    """The default embedder, behind an on-disk vector cache if ``cache_dir`` is given."""
    if cache_dir is None:
        return default_embedder()
    return CachedEmbedder(DiskEmbeddingCache(default_embedder().inner, cache_dir))


def collect(
    dataset_path: str, cache_dir: str | None = None
) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """Per case: (features matrix, labels, expect_empty)."""
    dataset = load_dataset(dataset_path)
    out = []
    emb = embedder(cache_dir)
    with tempfile.TemporaryDirectory() as tmp, AgentMemory(tmp, embedder=emb) as mem:
        for n, case in enumerate(dataset.cases):
            write_case(mem, n, case)
        mem.flush()
        for n, case in enumerate(dataset.cases):
            bound = bind_case(mem, n, case)
            req = RecallRequest(
                query=case.query,
                top_k=MAX_TOP_K,
                scope=case.scope,
                kinds=case.kinds,
                memory_types=case.types,
                rerank=False,
                min_score=0.0,
                token_budget=10**9,
                filters={},
            )
            ranked, visible, _ = mem.engine.candidates(bound.identity, req)
            expected = set(case.expected)
            feats = np.array([c.features for c in ranked], dtype=float).reshape(-1, len(WEIGHTS))
            labels = np.array([visible[c.id][1].content in expected for c in ranked], dtype=float)
            out.append((feats, labels, not case.expected))
    return out


def fit(
    x: np.ndarray,
    y: np.ndarray,
    l2: float = 1.0,
    iters: int = 50,
    sample_weight: np.ndarray | None = None,
) -> np.ndarray:
    """Weighted logistic regression with an intercept (last weight), L2 on the others."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    sw = np.ones(len(x)) if sample_weight is None else sample_weight
    w = np.zeros(xb.shape[1])
    reg = np.eye(xb.shape[1]) * l2
    reg[-1, -1] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -60, 60)))
        grad = xb.T @ (sw * (p - y)) + reg @ w
        hess = (xb * (sw * p * (1 - p))[:, None]).T @ xb + reg + 1e-9 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def fit_calibration(x: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    """:func:`fit` over the calibration features only; weight 0 for every other feature."""
    cols = [FEATURE_NAMES.index(n) for n in CALIBRATION_FEATURES]
    w = fit(x[:, cols], y, l2)
    full = np.zeros(x.shape[1] + 1)
    full[cols] = w[:-1]
    full[-1] = w[-1]
    return full


def collect_locomo(
    path: str, cache_dir: str | None = None
) -> list[tuple[str, np.ndarray, list[list[str]], list[str]]]:
    """Per LoCoMo question: (sample id, features, dia ids of each candidate, evidence)."""
    from agentmem.evaluation import locomo

    convs = locomo.load_locomo(path)
    out = []
    emb = embedder(cache_dir)
    with tempfile.TemporaryDirectory() as tmp, AgentMemory(tmp, embedder=emb) as mem:
        for conv in convs:
            locomo.ingest(mem, conv, False)
        mem.flush()
        for conv in convs:
            bound = mem.bind(locomo.TENANT, user_id=conv.sample_id, session_id="fit:query")
            for q in conv.questions:
                req = RecallRequest(
                    query=q.question,
                    top_k=MAX_TOP_K,
                    scope="any",
                    kinds=None,
                    memory_types=None,
                    rerank=False,
                    min_score=0.0,
                    token_budget=10**9,
                    filters={},
                )
                ranked, visible, _ = mem.engine.candidates(bound.identity, req)
                feats = np.array([c.features for c in ranked], dtype=float).reshape(
                    -1, len(WEIGHTS)
                )
                dias = [locomo.hit_dia_ids(visible[c.id][1].metadata) for c in ranked]
                out.append((conv.sample_id, feats, dias, list(q.evidence)))
    return out


def locomo_labels(q: tuple[str, np.ndarray, list[list[str]], list[str]]) -> np.ndarray:
    evidence = set(q[3])
    return np.array([1.0 if evidence & set(d) else 0.0 for d in q[2]])


def locomo_recall(questions: list, w: np.ndarray, k: int = 10) -> float:
    """Evidence Recall@k at turn granularity (as ``agentmem eval --locomo`` scores it)."""
    total = 0.0
    for _, feats, dias, evidence in questions:
        seen: list[str] = []
        if len(feats):
            for i in np.argsort(-score(feats, w), kind="stable"):
                seen.extend(d for d in dias[i] if d not in seen)
                if len(seen) >= k:
                    break
        total += sum(1 for e in evidence if e in seen[:k]) / len(evidence)
    return total / len(questions)


def score(feats: np.ndarray, w: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(feats @ w[:-1] + w[-1], -60, 60)))


def evaluate(
    cases: list, weights: list[np.ndarray], threshold: float, k: int = 5
) -> tuple[float, float, float]:
    """Recall@k, Precision@k, expect-empty pass rate: each case cut with its own calibration
    weights, ordered by the shipped ranking weights (as recall does)."""
    rank_w = np.array(RANK_WEIGHTS)
    recalls, precisions, empties = [], [], []
    for (feats, labels, empty), w in zip(cases, weights, strict=True):
        if len(feats) == 0:
            if empty:
                empties.append(1.0)
            else:
                recalls.append(0.0)
            continue
        s = score(feats, w)
        order = np.argsort(-(feats @ rank_w), kind="stable")
        chosen = [i for i in order if s[i] >= threshold][:k]
        hits = labels[chosen].sum() if chosen else 0.0
        if empty:
            empties.append(1.0 if not chosen else 0.0)
            if chosen:
                precisions.append(0.0)
            continue
        recalls.append(hits / labels.sum() if labels.sum() else 0.0)
        if chosen:
            precisions.append(hits / len(chosen))
    return float(np.mean(recalls)), float(np.mean(precisions)), float(np.mean(empties or [1.0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="eval/memory_golden_dataset.json")
    parser.add_argument("--locomo", default=None, help="also fit the ranking on a LoCoMo file")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--threshold", type=float, default=0.3)
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--embed-cache", default=None, help="on-disk embedding cache directory")
    args = parser.parse_args()
    names = ", ".join(FEATURE_NAMES)

    # Calibration (WEIGHTS, BIAS): the golden set's relevance labels; k-fold by case.
    golden = collect(args.dataset, args.embed_cache)
    current = np.array([*WEIGHTS, BIAS])
    print(f"golden: {len(golden)} cases, {sum(len(c[1]) for c in golden)} candidates")
    r, p, e = evaluate(golden, [current] * len(golden), args.threshold)
    print(f"shipped calibration  R@5 {r:.3f}  P@5 {p:.3f}  empty {e:.3f}")
    order = list(range(len(golden)))
    random.Random(0).shuffle(order)
    fold_of = {case: i % args.folds for i, case in enumerate(order)}
    per_case: list[np.ndarray] = [current] * len(golden)
    for fold in range(args.folds):
        train = [c for i, c in enumerate(golden) if fold_of[i] != fold and len(c[0])]
        x = np.vstack([c[0] for c in train])
        w = fit_calibration(x, np.concatenate([c[1] for c in train]), args.l2)
        for i in range(len(golden)):
            if fold_of[i] == fold:
                per_case[i] = w
    for t in (0.2, 0.3, 0.4, 0.5):
        r, p, e = evaluate(golden, per_case, t)
        print(f"{args.folds}-fold CV  min_score {t:.1f}  R@5 {r:.3f}  P@5 {p:.3f}  empty {e:.3f}")
    train = [c for c in golden if len(c[0])]
    x = np.vstack([c[0] for c in train])
    w = fit_calibration(x, np.concatenate([c[1] for c in train]), args.l2)
    print("WEIGHTS = (" + ", ".join(f"{v:.3f}" for v in w[:-1]) + f")  # {names}")
    print(f"BIAS = {w[-1]:.3f}")

    # Ranking (RANK_WEIGHTS): LoCoMo evidence labels; leave one conversation out.
    if args.locomo:
        loco = collect_locomo(args.locomo, args.embed_cache)
        shipped = np.array([*RANK_WEIGHTS, 0.0])
        print(
            f"locomo: {len(loco)} questions; shipped ranking R@10 {locomo_recall(loco, shipped):.3f}"
        )
        total = 0.0
        for held in sorted({q[0] for q in loco}):
            train_q = [q for q in loco if q[0] != held and len(q[1])]
            w = fit(
                np.vstack([q[1] for q in train_q]),
                np.concatenate([locomo_labels(q) for q in train_q]),
                args.l2,
            )
            test = [q for q in loco if q[0] == held]
            total += locomo_recall(test, w) * len(test)
        print(f"leave-one-conversation-out R@10 {total / len(loco):.3f}")
        train_q = [q for q in loco if len(q[1])]
        w = fit(
            np.vstack([q[1] for q in train_q]),
            np.concatenate([locomo_labels(q) for q in train_q]),
            args.l2,
        )
        print("RANK_WEIGHTS = (" + ", ".join(f"{v:.3f}" for v in w[:-1]) + f")  # {names}")


if __name__ == "__main__":
    main()
