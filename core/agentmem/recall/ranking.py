"""Fusion and calibration: from two ranked candidate lists per scope to scores in [0, 1].

1. **Weighted Reciprocal Rank Fusion** (k=60) over every (scope, retriever) list, each
   weighted by its scope's class prior.
2. **Features** of each candidate (:func:`features`, names in :data:`FEATURE_NAMES`):

   - ``cos``: cosine similarity of query and memory embeddings (absolute, comparable across
     queries; for a keyword-only candidate, the lowest similarity its scope's vector list
     reached, an upper bound),
   - ``coverage``: the IDF-weighted share of the query's terms the memory contains,
   - ``fused``: the weighted RRF value, normalised to [0, 1],
   - ``cos_gap`` and ``coverage_gap``: how far the candidate trails the best candidate of the
     same query on each signal (a near miss next to a clear winner is probably not relevant),
   - ``bm25_rel``: the candidate's BM25 score over the best of the query,
   - ``speaker_match``: the query names the memory's speaker (``metadata["speaker"]``, or a
     ``"Name: text"`` prefix of the content, read by :mod:`agentmem.speakers`; every analysed term of the name among the
     query's terms): "what did Alice say about X" is about what Alice said,
   - ``in_keyword`` and ``in_vector``: which retrievers found the candidate (a keyword-only
     candidate's ``cos`` is only a bound, a vector-only one has no BM25 score),
   - ``brevity``: how much shorter a chat message is than the query's other chat-message
     candidates (``1 - log(1 + n) / log(1 + LENGTH_SCALE)`` over its ``n`` analysed terms,
     floored at 0, minus the mean of those candidates); 0 for every other kind,
   - ``prev_coverage`` and ``prev_cos``: for a chat message, how well the message just
     before it in its session matched (when that one is a candidate too): an answer such as
     "Thursday at 15:40" shares nothing with "when is the dentist?", its question does,
   - ``id_miss``: the share of the query's identifiers (``OPS-4471``, ``9f3c2ab``: terms
     mixing letters and digits, or numbers of three digits or more that are not years; and
     names the tokenizer cuts up, ``db-replica-07``, ``STRIPE_WEBHOOK_SECRET``:
     :func:`~agentmem.recall.text.compound_identifiers`) the memory lacks when it names
     identifiers of its own: ``OPS-4470`` is another ticket
     however similar the rest of the text (its keyword coverage and cosine then count for
     nothing),
   - ``name_match``: the query names someone or something (a run of capitalised words,
     :func:`agentmem.recall.text.name_phrases`: "Bongani Park", "New York") whose every
     analysed term the memory contains.

The weights below belong to an embedder (its cosines are on its own scale): they are a
:class:`Scoring` compiled from the embedder's calibration profile (:mod:`agentmem.calibration`;
the bundled MiniLM ships one, ``agentmem calibrate`` fits one for any other), never
constants of this module.

3. **Calibration**: ``score = sigmoid(bias + weights . features)`` over
   :data:`CALIBRATION_FEATURES`, a logistic regression on fully labelled cases of every kind
   of content. A query unrelated to every memory lands below the default ``min_score`` of
   0.3.

4. **Ranking**: candidates are ordered by a second linear model over
   :data:`RANK_FEATURES` (``rank_weights``), whose weights are **monotone**: each has the sign
   :data:`RANK_SIGNS` gives it (more similarity, more coverage, a better fused rank never
   lower a candidate), so the order generalises to kinds of question it was not fitted on.
   There are two sets of them: a question that names a speaker of the conversation ("what
   did Caroline say about ...") or someone or something its candidates name ("which host
   does Bongani Park look after?") is ordered by ``named_rank_weights`` (its words and names
   carry it), any other by ``rank_weights`` (its meaning may share no word with its
   answer). What is returned is decided by :func:`kept_indices`: nothing unless the best
   candidate reaches ``min_score``; then a chat message ordered first, and the items at or
   above ``min_score`` or above a share of the best score (``chat_floor`` for chat
   messages, ``item_floor`` for the rest), a self-contained item (anything but a chat
   message) within the profile's ``score_gap`` of the best candidate that is not a question
   asked in the conversation too. A query giving a code (``OPS-4478``) that no candidate
   says gets nothing. The scores of the items kept are made non-increasing down the list,
   so higher is better everywhere.

5. **Without a profile** (:data:`UNCALIBRATED`): candidates are ordered and scored by their
   fused rank, and ``min_score`` applies to keyword evidence only: recall returns nothing
   unless some candidate contains at least ``min_score`` of the query's terms (IDF-weighted),
   so a query unrelated to every memory still returns nothing; when one does, the fused
   list is returned as it is (vector-only candidates included).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

#: Names of the features, in the order of :func:`features` and of the weights below.
FEATURE_NAMES: tuple[str, ...] = (
    "cos",
    "coverage",
    "fused",
    "cos_gap",
    "coverage_gap",
    "bm25_rel",
    "speaker_match",
    "in_keyword",
    "in_vector",
    "brevity",
    "prev_coverage",
    "prev_cos",
    "id_miss",
    "name_match",
)

#: Analysed terms from which a chat message's ``brevity`` is 0.
LENGTH_SCALE = 100

#: The features the calibrated score is fitted on (weight 0 for the others).
CALIBRATION_FEATURES: tuple[str, ...] = (
    "cos",
    "coverage",
    "fused",
    "cos_gap",
    "coverage_gap",
    "id_miss",
    "prev_coverage",
    "prev_cos",
)
#: The features the ordering is fitted on: all but the gaps, which within one query are the
#: best candidate's value minus ``cos`` or ``coverage`` (the same feature, negated: only the
#: order within a query counts, so a weight on one and on the other cannot be told apart).
RANK_FEATURES: tuple[str, ...] = tuple(n for n in FEATURE_NAMES if not n.endswith("_gap"))
#: The sign each ranking weight must have (1: never negative, -1: never positive, 0: free).
#: More similarity, keyword coverage, fused rank, BM25, a named speaker or a better-matching
#: turn before it never lowers a candidate; naming another identifier never raises one.
#: Fitted without these constraints on conversational questions alone, the ordering leaned
#: on words so far that recall by meaning fell below its own vector half.
RANK_SIGNS: Mapping[str, int] = {
    "cos": 1,
    "coverage": 1,
    "fused": 1,
    "bm25_rel": 1,
    "speaker_match": 1,
    "in_keyword": 0,
    "in_vector": 0,
    "brevity": 0,
    "prev_coverage": 1,
    "prev_cos": 1,
    "id_miss": -1,
    "name_match": 1,
}
_NAMED = [FEATURE_NAMES.index("speaker_match"), FEATURE_NAMES.index("name_match")]


@dataclass(frozen=True, slots=True)
class Scoring:
    """How recall scores and orders candidates: a calibration profile compiled against
    :data:`FEATURE_NAMES` (:meth:`agentmem.calibration.CalibrationProfile.scoring`), or
    :data:`UNCALIBRATED`.

    Attributes:
        weights: Calibration weights aligned with :data:`FEATURE_NAMES` (0 outside
            :data:`CALIBRATION_FEATURES`); None for the rank-based fallback.
        bias: The calibration's intercept.
        rank_weights: Ordering weights aligned with :data:`FEATURE_NAMES`; only the order
            matters, so there is no bias.
        named_rank_weights: The ordering of a query that names a speaker or a name one of its
            candidates carries (``speaker_match``, ``name_match``: :func:`names_something`);
            None: ``rank_weights`` for every query.
        score_gap: How far below the best candidate's score a self-contained item (a fact,
            preference, tool output or document chunk) may score and still be returned when
            ``min_score`` is above 0; None: no such cut.
        chat_floor: A chat message scoring at least this share of the best candidate's
            score is returned even below ``min_score`` (once the best has reached it; see
            :func:`kept_indices`); None: ``min_score`` alone.
        item_floor: The same for a self-contained item (still within ``score_gap``).
    """

    weights: tuple[float, ...] | None
    bias: float = 0.0
    rank_weights: tuple[float, ...] | None = None
    named_rank_weights: tuple[float, ...] | None = None
    score_gap: float | None = None
    chat_floor: float | None = None
    item_floor: float | None = None

    @property
    def calibrated(self) -> bool:
        """False for the rank-based fallback (no profile fitted for the embedder)."""
        return self.weights is not None


#: The honest fallback for an embedder without a calibration profile: its cosines mean
#: nothing known, so candidates are ordered by their fused rank alone (naive weighted RRF),
#: scored by it (``fused``: 1.0 first in both lists, 0.5 first in one), and ``min_score`` is
#: compared with keyword evidence only (see :func:`kept`).
UNCALIBRATED = Scoring(weights=None)
_FUSED = FEATURE_NAMES.index("fused")


@dataclass(slots=True)
class Candidate:
    """Evidence gathered for one candidate row."""

    id: str
    scope: str
    fused: float = 0.0
    cos: float | None = None
    coverage: float = 0.0
    in_keyword: bool = False
    in_vector: bool = False
    bm25: float = 0.0
    kw_rank: int = 0
    vec_rank: int = 0
    #: The cosine the vector index returned (None: not found by it); ``cos`` is what ranking
    #: uses, which differs for a keyword-only candidate and one naming another identifier.
    vec_cos: float | None = None
    speaker_match: bool = False
    name_match: bool = False
    #: Whether the row says one of the query's codes (``OPS-4478``; None: the query gives
    #: none; :func:`agentmem.recall.text.codes`).
    says_code: bool | None = None
    #: Analysed terms of a chat message (None for other kinds).
    terms: int | None = None
    #: A chat message asking a question (:func:`agentmem.phrasing.asks`).
    asks: bool = False
    prev_coverage: float = 0.0
    prev_cos: float = 0.0
    id_miss: float = 0.0
    score: float = 0.0
    rank: float = 0.0
    features: tuple[float, ...] = ()


def rrf(
    lists: Sequence[tuple[str, Sequence[str]]],
    weights: Mapping[str, float],
    k: int = 60,
) -> dict[str, float]:
    """Weighted RRF: ``sum(weight[scope] / (k + rank))`` over (scope, ranked ids) lists."""
    out: dict[str, float] = {}
    for scope, ids in lists:
        w = weights.get(scope, 1.0)
        for rank, id_ in enumerate(ids, start=1):
            out[id_] = out.get(id_, 0.0) + w / (k + rank)
    return out


def coverage(query_idf: Mapping[str, float], doc_terms: set[str]) -> float:
    """IDF-weighted share of query terms present in the document, in [0, 1]."""
    total = sum(query_idf.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in query_idf.items() if t in doc_terms) / total


def brevity(terms: int | None) -> float:
    """How short a chat message of ``terms`` analysed terms is, in [0, 1] (None: not chat)."""
    if terms is None:
        return 0.0
    return max(1.0 - math.log1p(terms) / math.log1p(LENGTH_SCALE), 0.0)


def features(
    c: Candidate,
    fused_max: float,
    best_cos: float,
    best_coverage: float,
    best_bm25: float,
    mean_brevity: float = 0.0,
) -> tuple[float, ...]:
    """The features of a candidate, relative to the best of its query (``mean_brevity``: the
    mean :func:`brevity` of the query's chat-message candidates)."""
    cos = 0.0 if c.cos is None else max(c.cos, 0.0)
    fused = min(c.fused / fused_max, 1.0) if fused_max > 0 else 0.0
    return (
        cos,
        c.coverage,
        fused,
        best_cos - cos,
        best_coverage - c.coverage,
        c.bm25 / best_bm25 if best_bm25 > 0 else 0.0,
        1.0 if c.speaker_match else 0.0,
        1.0 if c.in_keyword else 0.0,
        1.0 if c.in_vector else 0.0,
        0.0 if c.terms is None else brevity(c.terms) - mean_brevity,
        c.prev_coverage,
        c.prev_cos,
        c.id_miss,
        1.0 if c.name_match else 0.0,
    )


def monotone(scores: Sequence[float]) -> list[float]:
    """Scores made non-increasing down a ranked list (each at least the ones below it)."""
    out = list(scores)
    for i in range(len(out) - 2, -1, -1):
        out[i] = max(out[i], out[i + 1])
    return out


def kept_indices(
    scores: Sequence[float],
    chat: Sequence[bool],
    min_score: float,
    *,
    gap: float | None = None,
    chat_floor: float | None = None,
    item_floor: float | None = None,
    asks: Sequence[bool] | None = None,
) -> list[int]:
    """Positions (in the given order) of the calibrated candidates recall returns.

    With ``min_score`` 0 (the caller asked for everything), all of them. Otherwise nothing
    unless the best candidate scores at least ``min_score`` (the query has an answer), then:

    - a **self-contained** item (a fact, preference, tool output or document chunk, which says
      its whole piece) scoring at least ``min_score`` (or ``item_floor`` times the
      best score, when lower) and within ``gap`` of the best candidate that does not ask
      (``asks``: a chat message asking a question): when one answers the question clearly,
      another of the same topic scoring far below it is a neighbour (the user's other card,
      the office's opening hours next to its holiday), not a second answer. A question asked
      in the conversation ("which activities sound fun for the coast weekend?") shares the
      query's words without answering it: it does not push out the fact that does ("I run
      10 km on Sunday mornings");
    - a **chat message** scoring at least ``min_score`` (or ``chat_floor`` times the
      best score, when lower): the answer to a question about a conversation is spread over
      several turns, each scoring well below the best one, and a remark that recalls an
      earlier exchange by its meaning ("I agreed to volunteer again and now I'm drowning"
      after "learning to say no made me less stressed") scores low on every absolute scale.

    The floors relative to the best score only ever keep more than ``min_score`` alone, and
    only once the best candidate has passed it: a query unrelated to every memory still
    returns nothing. The first item returned is always one that reached ``min_score`` (the
    first such in the given order, moved ahead if a floor kept a weaker one before it): a
    weak turn ranked first does not push a confident answer from the top, nor take its score
    (scores are made non-increasing down the list).

    Once the query has an answer, a chat message the ordering put first is always returned,
    whatever its score: the ordering and the scores are two models, and the ordering knows
    the turn's context (how well the turn before it matched, how short it is). Where they
    disagree (a remark's earlier exchange, ordered first, scoring far below a turn sharing
    its words) the ordering's pick comes second rather than not at all. A self-contained
    item ordered first still has to pass the gap.
    """
    if min_score <= 0:
        return list(range(len(scores)))
    if not scores or max(scores) < min_score:
        return []
    best = max(scores)

    def floor(ratio: float | None) -> float:
        return min_score if ratio is None else min(min_score, ratio * best)

    chat_min = floor(chat_floor)
    item_min = floor(item_floor)
    if gap is not None:
        answers = [s for n, s in enumerate(scores) if asks is None or not asks[n]]
        item_min = max(item_min, max(answers, default=best) - gap)
    kept = [
        i
        for i, (score, is_chat) in enumerate(zip(scores, chat, strict=True))
        if (i == 0 and is_chat) or score >= (chat_min if is_chat else item_min)
    ]
    first = next(i for i in kept if scores[i] >= min_score)  # the best one is kept
    return [first, *(i for i in kept if i != first)]


def unknown_code(ranked: Sequence[Candidate]) -> bool:
    """Whether the query gives a code (a ticket, an order, a commit, an error:
    ``OPS-4478``; :func:`agentmem.recall.text.codes`) that none of its candidates says: it
    asks about one thing exactly, and nothing stored is that thing."""
    said = [c.says_code for c in ranked if c.says_code is not None]
    return bool(said) and not any(said)


def kept(
    ranked: Sequence[Candidate],
    kinds: Sequence[str],
    min_score: float,
    scoring: Scoring,
    *,
    gap: float | None = None,
    calibrated: bool = True,
    floors: bool = True,
) -> list[Candidate]:
    """The candidates recall returns, in order (``kinds``: each candidate's kind; ``gap``:
    the score gap of self-contained items; ``floors``: whether the profile's floors apply,
    see :func:`kept_indices`).

    Uncalibrated (``calibrated=False``, no profile for the embedder), scores are fused ranks,
    which say nothing about relevance: ``min_score`` is compared with keyword evidence
    instead. Nothing is returned unless some candidate covers at least ``min_score`` of the
    query's terms; otherwise every candidate is, in order.

    Either way, with ``min_score`` above 0, a query giving a code no candidate says
    (:func:`unknown_code`: "what's the status of OPS-4478?" when only OPS-4471 is
    stored) gets nothing: its neighbours, however similar, are about other things.
    """
    if min_score > 0 and unknown_code(ranked):
        return []
    if not calibrated:
        if min_score > 0 and max((c.coverage for c in ranked), default=0.0) < min_score:
            return []
        return list(ranked)
    chat = [kind == "chat_message" for kind in kinds]
    positions = kept_indices(
        [c.score for c in ranked],
        chat,
        min_score,
        gap=gap,
        chat_floor=scoring.chat_floor if floors else None,
        item_floor=scoring.item_floor if floors else None,
        asks=[c.asks for c in ranked],
    )
    return [ranked[i] for i in positions]


def score_all(cands: Sequence[Candidate], scoring: Scoring) -> None:
    """Set every candidate's ``score`` and ordering key ``rank`` from its features (one
    matrix product for the whole list rather than a Python loop per candidate)."""
    if not cands:
        return
    x = np.array([c.features for c in cands], dtype=np.float64)
    if scoring.weights is None or scoring.rank_weights is None:
        fused = x[:, _FUSED].tolist()
        for c, value in zip(cands, fused, strict=True):
            c.score = c.rank = value
        return
    z = np.clip(x @ np.asarray(scoring.weights) + scoring.bias, -60.0, 60.0)
    scores = 1.0 / (1.0 + np.exp(-z))
    ranks = x @ np.asarray(rank_weights_for(x, scoring))
    for c, score, rank in zip(cands, scores.tolist(), ranks.tolist(), strict=True):
        c.score = score
        c.rank = rank


def names_something(x: npt.NDArray[np.float64]) -> bool:
    """Whether a query's candidates (feature rows) show it names a speaker of one of them or a
    name one of them carries."""
    return bool(len(x)) and bool(x[:, _NAMED].max() > 0)


def rank_weights_for(x: npt.NDArray[np.float64], scoring: Scoring) -> tuple[float, ...]:
    """The ordering weights for one query's candidates (feature rows ``x``)."""
    assert scoring.rank_weights is not None
    if scoring.named_rank_weights is not None and names_something(x):
        return scoring.named_rank_weights
    return scoring.rank_weights
