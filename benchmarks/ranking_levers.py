"""Measure ranking levers for conversational recall on a LoCoMo file, leave one conversation out.

Each lever adds signals to the candidates recall already gathers (``RecallEngine.candidates``
at scope ``history``, as ``fit_calibration.py`` collects them), the ordering model is refitted
without the held-out conversation (``fit_calibration.fit``, the shipped calibration and score
gap kept), and evidence Recall@10 is reported at ``min_score`` 0 and at default settings,
overall and by category, with the paired difference against the baseline refitted the same
way (mean over questions and its standard error). No lever calls a model at query time.

Levers (``--levers``, default all):

- ``session_keys``: a key per session standing for all its turns, searched as a whole: the
  IDF-weighted share of the query's terms the session's turns contain between them
  (``coverage``), BM25 of the query over the sessions' joint keyword text (``bm25``), the
  cosine of the query with the mean of the session's turn vectors (``centroid``) and the mean
  of its three best turn cosines (``top3``); a turn gets its session's value relative to the
  best session of the query. This is the ideal of a session summary as a key (every word and
  turn of the session, nothing lost to summarising).
- ``summaries``: the session summaries ``close_session`` writes (the offline LLM), which
  default recall searches: each turn gets the fused rank, cosine and keyword coverage of its
  session's summary when the summary is a candidate, and the summaries themselves are left
  out of the ranked list.
- ``neighbours``: the fused rank of the turn just before and just after a candidate in its
  session (when they are candidates too).
- ``listwise``: the same features, fitted with a per-question softmax over the candidates
  (the evidence turns share the target) instead of a logistic regression per candidate.
- ``diversity``: a greedy re-ranking that lowers a turn's ranking value by ``--diversity``
  per turn of the same session already chosen within two turns of it.

Usage:
    python benchmarks/ranking_levers.py --locomo path/to/locomo-dev.json
        [--embed-cache DIR] [--l2 1.0] [--levers session_keys,summaries,...]

The LoCoMo file is read from where it lies; it is never copied into the project.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from agentmem import AgentMemory
from agentmem.calibration import bundled_profile
from agentmem.embeddings import Embedder
from agentmem.evaluation import locomo
from agentmem.evaluation.locomo.data import Conversation
from agentmem.evaluation.locomo.ingest import turn_text
from agentmem.recall.ranking import FEATURE_NAMES, RANK_FEATURES
from agentmem.tokens import count_tokens
from agentmem.write.index_text import index_text, keyword_text, with_key
from agentmem.write.keys import restatement

#: The shipped MiniLM calibration (this script measures the packaged embedder).
_SHIPPED = bundled_profile("all-MiniLM-L6-v2-int8", 384).scoring()  # type: ignore[union-attr]
WEIGHTS, BIAS, SCORE_GAP = _SHIPPED.weights or (), _SHIPPED.bias, _SHIPPED.score_gap


def _fit_calibration() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fit_calibration", Path(__file__).resolve().parent / "fit_calibration.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fit_calibration", module)
    spec.loader.exec_module(module)
    return module


fc = _fit_calibration()
LEVERS = ("session_keys", "summaries", "neighbours", "listwise", "diversity")
NF = len(FEATURE_NAMES)
RANK = [FEATURE_NAMES.index(n) for n in RANK_FEATURES]
#: Turns either side of a chosen one that the diversity lever treats as the same exchange.
DIVERSITY_WINDOW = 2


@dataclass
class Session:
    """A session's joint key: its turns' keyword terms and vectors."""

    terms: Counter[str]
    vectors: np.ndarray


@dataclass
class Question:
    """One question's candidates (a ``fit_calibration.Query``) and what the levers read."""

    query: Any
    sessions: list[str | None]
    turns: list[tuple[int, int] | None]
    vector: np.ndarray
    terms: list[str]
    idf: dict[str, float]
    extra: dict[str, list[float]] = field(default_factory=dict)


def _turn_pos(dias: Sequence[str]) -> tuple[int, int] | None:
    if not dias:
        return None
    head, _, tail = dias[0][1:].partition(":")
    return int(head), int(tail)


def session_keys(
    conv: Conversation, emb: Embedder, analyze: Callable[[str], list[str]]
) -> dict[str, Session]:
    """Every session's joint key, from the texts the indexes see for its turns."""
    terms: dict[str, Counter[str]] = defaultdict(Counter)
    texts: dict[str, list[str]] = defaultdict(list)
    for s in conv.sessions:
        sid = f"{conv.sample_id}:s{s.number}"
        for i, t in enumerate(s.turns):
            text = turn_text(t, False)
            if not text:
                continue
            role = "assistant" if t.speaker and t.speaker == conv.speaker_b else "user"
            when = None if s.start is None else s.start + timedelta(seconds=i)
            key = restatement("chat_message", role, text, t.speaker or None, when)
            terms[sid].update(analyze(with_key(keyword_text(text, t.speaker or None), key)))
            texts[sid].append(with_key(index_text(text, t.speaker or None), key))
    return {sid: Session(terms[sid], np.asarray(emb.embed_documents(texts[sid]))) for sid in texts}


def session_scores(q: Question, sessions: dict[str, Session]) -> dict[str, dict[str, float]]:
    """Per session: coverage, BM25, centroid cosine and mean of the three best turn cosines."""
    df: Counter[str] = Counter()
    for s in sessions.values():
        df.update(set(s.terms))
    n = len(sessions)
    avgdl = sum(sum(s.terms.values()) for s in sessions.values()) / max(n, 1)
    total_idf = sum(q.idf.values())
    out = {}
    for sid, s in sessions.items():
        dl = sum(s.terms.values())
        bm25 = 0.0
        for t in set(q.terms):
            tf = s.terms.get(t, 0)
            if tf:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                bm25 += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))
        centroid = s.vectors.mean(axis=0)
        sims = np.sort(s.vectors @ q.vector)
        out[sid] = {
            "coverage": sum(w for t, w in q.idf.items() if t in s.terms) / total_idf
            if total_idf > 0
            else 0.0,
            "bm25": bm25,
            "centroid": float(centroid @ q.vector / (np.linalg.norm(centroid) or 1.0)),
            "top3": float(sims[-3:].mean()),
        }
    return out


def collect(
    path: str, emb: Embedder, close_sessions: bool = False, with_sessions: bool = False
) -> list[Question]:
    """Per question (scope ``history``): candidates, labels and what the levers read. With
    ``close_sessions`` every session is closed after writing it (summary rows are then
    candidates: each turn gets its session summary's ``summary_*`` values and the summary
    rows are dropped); with ``with_sessions`` every turn gets its session key's values
    (``session_*``, relative to the best session of the question)."""
    convs = locomo.load_locomo(path)
    out = []
    with tempfile.TemporaryDirectory() as tmp, AgentMemory(tmp, embedder=emb) as mem:
        for conv in convs:
            locomo.ingest_conversation(mem, conv, False, close_sessions)
        mem.flush()
        for conv in convs:
            keys = session_keys(conv, emb, mem.keywords.analyze) if with_sessions else {}
            bound = mem.bind(locomo.TENANT, user_id=conv.sample_id, session_id="levers:query")
            for lq in conv.questions:
                ranked, visible, _ = mem.engine.candidates(
                    bound.identity, fc._request(lq.question, "history")
                )
                rows = [visible[c.id][1] for c in ranked]
                feats = np.array([c.features for c in ranked], float).reshape(-1, NF)
                summary = {r.session_id: i for i, r in enumerate(rows) if r.kind == "summary"}
                keep = [i for i, r in enumerate(rows) if r.kind != "summary"]
                dias = [locomo.hit_dia_ids(rows[i].metadata) for i in keep]
                evidence = set(lq.evidence)
                query = fc.Query(
                    source="locomo",
                    group=conv.sample_id,
                    feats=feats[keep].reshape(-1, NF),
                    labels=np.array([1.0 if evidence & set(d) else 0.0 for d in dias]),
                    kinds=[rows[i].kind for i in keep],
                    tokens=np.array([count_tokens(rows[i].content) for i in keep]),
                    category=lq.category,
                    dias=dias,
                    evidence=list(lq.evidence),
                )
                terms = mem.keywords.query_terms(lq.question)
                q = Question(
                    query=query,
                    sessions=[rows[i].session_id for i in keep],
                    turns=[_turn_pos(d) for d in dias],
                    vector=np.asarray(emb.embed_query(lq.question)),
                    terms=terms,
                    idf=mem.keywords.idf(terms, locomo.TENANT) if terms else {},
                )
                if close_sessions:
                    for name, col in (("fused", 2), ("cos", 0), ("coverage", 1)):
                        q.extra[f"summary_{name}"] = [
                            float(feats[summary[s], col]) if s in summary else 0.0
                            for s in q.sessions
                        ]
                if keys:
                    scores = session_scores(q, keys)
                    for name in ("coverage", "bm25", "centroid", "top3"):
                        best = max(v[name] for v in scores.values())
                        q.extra[f"session_{name}"] = [
                            scores[s][name] - best if s in scores else 0.0 for s in q.sessions
                        ]
                out.append(q)
    return out


def neighbour_fused(q: Question, offset: int) -> list[float]:
    """The fused rank of the turn ``offset`` turns away in the same session (0 if none)."""
    at = {t: i for i, t in enumerate(q.turns) if t is not None}
    fused = q.query.feats[:, FEATURE_NAMES.index("fused")]
    out = []
    for t in q.turns:
        j = None if t is None else at.get((t[0], t[1] + offset))
        out.append(float(fused[j]) if j is not None else 0.0)
    return out


# -- fitting and scoring ---------------------------------------------------------------------
def with_columns(qs: Sequence[Question], names: Sequence[str]) -> list[Any]:
    """The questions' queries with the ``extra`` columns ``names`` appended to the features."""
    out = []
    for q in qs:
        cols = [np.asarray(q.extra[n], float).reshape(-1, 1) for n in names]
        out.append(replace(q.query, feats=np.hstack([q.query.feats, *cols])))
    return out


def fit_pointwise(qs: Sequence[Any], cols: Sequence[int], l2: float) -> np.ndarray:
    qs = [q for q in qs if len(q.feats)]
    x = np.vstack([q.feats[:, cols] for q in qs])
    y = np.concatenate([q.labels for q in qs])
    full = np.zeros(qs[0].feats.shape[1])
    full[list(cols)] = fc.fit(x, y, l2)[:-1]
    return full


def fit_listwise(qs: Sequence[Any], cols: Sequence[int], l2: float) -> np.ndarray:
    """Weights minimising the per-question softmax cross-entropy of the evidence candidates
    (sharing the target), L2-penalised; Newton steps with a backtracking line search."""
    data = [
        (q.feats[:, cols], q.labels / q.labels.sum())
        for q in qs
        if len(q.feats) and q.labels.sum() > 0
    ]

    def loss(w: np.ndarray) -> float:
        total = 0.5 * l2 * float(w @ w)
        for x, y in data:
            z = x @ w
            z = z - z.max()
            total -= float(y @ (z - np.log(np.exp(z).sum())))
        return total

    w = np.zeros(len(cols))
    for _ in range(50):
        grad = l2 * w
        hess = l2 * np.eye(len(cols))
        for x, y in data:
            z = x @ w
            p = np.exp(z - z.max())
            p /= p.sum()
            grad = grad + x.T @ (p - y)
            xp = x.T @ p
            hess = hess + (x * p[:, None]).T @ x - np.outer(xp, xp)
        step = np.linalg.solve(hess + 1e-9 * np.eye(len(cols)), grad)
        t, before = 1.0, loss(w)
        while loss(w - t * step) > before and t > 1e-4:
            t /= 2
        w = w - t * step
        if np.abs(t * step).max() < 1e-8:
            break
    full = np.zeros(qs[0].feats.shape[1])
    full[list(cols)] = w
    return full


def diversified(q: Any, rank: np.ndarray, turns: Sequence[Any], penalty: float) -> list[int]:
    """Indices in greedy order: each pick's ranking value lowered by ``penalty`` per turn of
    its session already picked within :data:`DIVERSITY_WINDOW` turns."""
    value = q.feats @ rank
    left = list(range(len(value)))
    picked: list[int] = []
    while left and len(picked) < fc.MAX_TOP_K:

        def adjusted(i: int) -> float:
            t = turns[i]
            near = sum(
                1
                for j in picked
                if t is not None
                and turns[j] is not None
                and turns[j][0] == t[0]
                and abs(turns[j][1] - t[1]) <= DIVERSITY_WINDOW
            )
            return float(value[i]) - penalty * near

        best = max(left, key=adjusted)
        picked.append(best)
        left.remove(best)
    return picked


@dataclass
class Result:
    name: str
    min0: dict[str, float]
    defaults: dict[str, float] | None
    #: Per question: Recall@10 at min_score 0, and at default settings (None: not measured).
    at0: np.ndarray
    at_defaults: np.ndarray | None


def _calibration(width: int) -> np.ndarray:
    return np.concatenate([np.array(WEIGHTS), np.zeros(width - NF), [BIAS]])


def _ordering(rank: np.ndarray) -> Any:
    """One fitted ordering as the core's weights (one ordering for every query, no floors:
    the levers are measured against the cut they were designed for)."""
    return fc.core_fit.Weights(np.zeros(len(rank)), 0.0, rank, None, None, None, None)


def _by_category(qs: Sequence[Any], values: np.ndarray) -> dict[str, float]:
    out = {"all": float(values.mean())}
    for c, name in locomo.CATEGORIES.items():
        mine = [v for q, v in zip(qs, values, strict=True) if q.category == c]
        if mine:
            out[name] = float(np.mean(mine))
    return out


def held_out(
    name: str,
    qs: Sequence[Any],
    cols: Sequence[int],
    fit: Callable[[Sequence[Any], Sequence[int], float], np.ndarray],
    l2: float,
    order: Callable[[Any, np.ndarray], list[int]] | None = None,
) -> Result:
    """Leave-one-conversation-out Recall@10 of an ordering fitted with ``fit`` on ``cols``
    (``order``: a re-ranking of the candidates instead of the fitted order, measured at
    ``min_score`` 0 only)."""
    cal = _calibration(qs[0].feats.shape[1])
    items = []
    for group in sorted({q.group for q in qs}):
        rank = fit([q for q in qs if q.group != group], cols, l2)
        items += [(q, cal, rank) for q in qs if q.group == group]
    ordered = [q for q, _, _ in items]

    def recall(q: Any, idx: list[int]) -> float:
        return float(fc.evidence_recall(q, idx)) if len(q.feats) else 0.0

    if order is not None:
        at0 = np.array([recall(q, order(q, rank)) for q, _, rank in items])
        return Result(name, _by_category(ordered, at0), None, at0, None)
    at0 = np.array(
        [recall(q, fc.returned(q, c, _ordering(r), -1.0, fc.MAX_TOP_K, 10**9)) for q, c, r in items]
    )
    at_def = np.array(
        [
            recall(
                q,
                fc.returned(q, c, _ordering(r), fc.MIN_SCORE, fc.MAX_TOP_K, fc.BUDGET, SCORE_GAP),
            )
            for q, c, r in items
        ]
    )
    return Result(name, _by_category(ordered, at0), _by_category(ordered, at_def), at0, at_def)


def _fmt(d: dict[str, float]) -> str:
    return " ".join(f"{k} {v:.3f}" for k, v in d.items())


def _paired(a: np.ndarray, b: np.ndarray) -> str:
    d = a - b
    se = d.std(ddof=1) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return f"{d.mean():+.4f} (SE {se:.4f}; {int((d > 0).sum())} better, {int((d < 0).sum())} worse)"


def report(result: Result, base: Result | None) -> str:
    pad = " " * len(result.name)
    lines = [f"{result.name}: R@10 min_score 0: {_fmt(result.min0)}"]
    if result.defaults is not None:
        lines.append(f"{pad}  R@10 defaults:    {_fmt(result.defaults)}")
    if base is not None:
        lines.append(f"{pad}  vs baseline, min_score 0: {_paired(result.at0, base.at0)}")
        if result.at_defaults is not None and base.at_defaults is not None:
            diff = _paired(result.at_defaults, base.at_defaults)
            lines.append(f"{pad}  vs baseline, defaults:    {diff}")
    return "\n".join(lines)


def run(path: str, emb: Embedder, levers: Sequence[str], l2: float, penalty: float) -> list[str]:
    """Every lever's figures (and its baseline's), as printed lines."""
    lines = []
    need_keys = "session_keys" in levers
    qs = collect(path, emb, with_sessions=need_keys)
    base_q = with_columns(qs, [])
    base = held_out("baseline", base_q, RANK, fit_pointwise, l2)
    lines.append(report(base, None))
    if need_keys:
        for names in (
            ["session_coverage"],
            ["session_bm25"],
            ["session_centroid"],
            ["session_top3"],
            ["session_coverage", "session_top3"],
        ):
            cols = RANK + list(range(NF, NF + len(names)))
            res = held_out(
                "session keys " + "+".join(names), with_columns(qs, names), cols, fit_pointwise, l2
            )
            lines.append(report(res, base))
    if "neighbours" in levers:
        for q in qs:
            q.extra["prev_fused"] = neighbour_fused(q, -1)
            q.extra["next_fused"] = neighbour_fused(q, 1)
        names = ["prev_fused", "next_fused"]
        res = held_out(
            "neighbours prev+next fused",
            with_columns(qs, names),
            [*RANK, NF, NF + 1],
            fit_pointwise,
            l2,
        )
        lines.append(report(res, base))
    if "listwise" in levers:
        lines.append(report(held_out("listwise", base_q, RANK, fit_listwise, l2), base))
    if "diversity" in levers:
        turns = {id(bq): q.turns for bq, q in zip(base_q, qs, strict=True)}
        res = held_out(
            f"diversity {penalty}",
            base_q,
            RANK,
            fit_pointwise,
            l2,
            order=lambda q, rank: diversified(q, rank, turns[id(q)], penalty),
        )
        lines.append(report(res, base))
    if "summaries" in levers:
        closed = collect(path, emb, close_sessions=True)
        closed_base = held_out(
            "closed sessions, summaries dropped", with_columns(closed, []), RANK, fit_pointwise, l2
        )
        lines.append(report(closed_base, None))
        names = ["summary_fused", "summary_cos", "summary_coverage"]
        res = held_out(
            "summaries lent to their turns",
            with_columns(closed, names),
            RANK + list(range(NF, NF + len(names))),
            fit_pointwise,
            l2,
        )
        lines.append(report(res, closed_base))
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", required=True, help="LoCoMo file (the development split)")
    parser.add_argument("--embed-cache", default=None, help="on-disk embedding cache directory")
    parser.add_argument("--levers", default=",".join(LEVERS))
    parser.add_argument("--l2", type=float, default=1.0, help="L2 of the ordering fit")
    parser.add_argument("--diversity", type=float, default=0.25, help="diversity penalty")
    args = parser.parse_args(argv)
    levers = [x for x in args.levers.split(",") if x]
    unknown = set(levers) - set(LEVERS)
    if unknown:
        parser.error(f"unknown levers {sorted(unknown)}; choose from {LEVERS}")
    for line in run(args.locomo, fc.embedder(args.embed_cache), levers, args.l2, args.diversity):
        print(line, flush=True)


if __name__ == "__main__":
    main()
