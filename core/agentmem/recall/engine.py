"""The recall pipeline:

query -> keyword search (Tantivy) + vector search (Chroma), per partition
      -> isolation gate (rows re-read from SQLite, checked against the bound identity)
      -> weighted RRF + calibration -> rerank? (fail-open) -> min_score -> top_k -> token budget

The query embedding runs on a worker thread while the keyword side is searched and its rows
are read; candidates are read as light :class:`~agentmem.storage.rows.Brief` rows, and only the
hits returned are fully parsed.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import scopes as scope_rules
from ..config import MemoryConfig
from ..embeddings import Embedder, FloatArray
from ..errors import RerankError, StorageError
from ..models import Identity, RecallHit, RecallResult
from ..phrasing import asks
from ..rerank import Reranker
from ..storage.keyword_index import KeywordFilter, KeywordIndex
from ..storage.keyword_stats import TenantStats
from ..storage.records import RecordStore
from ..storage.rows import Brief
from ..storage.vector_index import VectorIndex, collection_name
from ..telemetry.tracing import short_hash
from ..tokens import count_tokens, truncate_to_tokens
from . import profile as recall_profile
from .pending import Pending, PendingScorer, merge
from .ranking import (
    UNCALIBRATED,
    Candidate,
    Scoring,
    brevity,
    features,
    kept,
    monotone,
    rrf,
    score_all,
)
from .request import RecallRequest
from .text import (
    Code,
    TextScorer,
    codes,
    compound_identifiers,
    identifier_terms,
    identifier_words,
    name_phrases,
)

if TYPE_CHECKING:
    from ..storage.access import AccessTracker

log = logging.getLogger("agentmem")

#: Below this many tokens left in the budget, the next item is dropped rather than cut (the
#: first one is always cut to the budget).
MIN_TRUNCATED_TOKENS = 16
RERANK_CANDIDATES = 20
#: How much more a query's identifier term weighs in the keyword search than its other terms.
IDENTIFIER_BOOST = 3.0
#: How many times deeper a list the gate mostly refused is searched again (see _crowded).
DEEPER = 8
#: Seconds recall waits for the embedding of rows not yet in the vector index.
PENDING_EMBED_TIMEOUT = 1.0
#: Threads embedding queries and searching vectors (recalls from several threads at once,
#: e.g. a server's requests, each take one).
VECTOR_WORKERS = 4


@dataclass(frozen=True, slots=True)
class _QueryText:
    """What the keyword side makes of a query's text (see :func:`_query_text`)."""

    terms: list[str]
    boosts: dict[str, float]
    phrases: list[tuple[str, ...]]
    codes: list[Code]
    needles: list[str]
    compounds: frozenset[str] = frozenset()


def _query_text(query: str, keywords: KeywordIndex, use_keyword: bool) -> _QueryText:
    """The query's analysed terms and, when the keyword side searches (a vector-only recall
    has no reason to hold the rows saying them), what its words weigh there."""
    terms = keywords.query_terms(query)
    # names the tokenizer cuts up ("db-replica-07"): a row naming another is about another
    # (like the identifiers among the terms, whichever side searches)
    compounds = compound_identifiers(query)
    if not use_keyword:
        return _QueryText(terms, {}, [], [], [], compounds)
    # A term naming one thing exactly (an order, a ticket, a host) outweighs the words
    # around it: "medical record MED-SY2FJL" is about the row naming MED-SY2FJL, not the rows
    # saying "medical record" of another id (keyed by the query's terms as searched: "504s"
    # is an identifier, whose term is 504).
    identifiers = [t for t in terms if identifier_terms([t])]
    return _QueryText(
        terms,
        dict.fromkeys(identifiers, IDENTIFIER_BOOST),
        # a name said whole ("Bongani Park") outweighs rows saying its words apart
        name_phrases(query, keywords.analyze),
        # a code nothing found says ("OPS-4478"): nothing stored is what was asked about
        codes(query, keywords.analyze),
        # the identifiers as typed, for the backlog rows whose raw content names them
        identifier_words(query, keywords.analyze) if identifiers else [],
        compounds,
    )


@dataclass(slots=True)
class _VectorSide:
    """What the vector worker found: the query vector and one list per target collection."""

    vector: FloatArray | None = None
    lists: list[list[tuple[str, float]]] | None = None
    embed_error: Exception | None = None
    search_error: StorageError | None = None
    embed_ms: float = 0.0
    search_ms: float = 0.0
    embed_at: float = 0.0
    search_at: float = 0.0


class RecallEngine:
    """Runs recall requests against the three stores. Stateless between calls (it keeps one
    worker thread for query embeddings; :meth:`close` stops it).

    ``scoring`` is the embedder's calibration profile compiled for the ranking
    (:class:`~agentmem.recall.ranking.Scoring`; :data:`~agentmem.recall.ranking.UNCALIBRATED`
    without one). Replacing it (a new profile) is one attribute assignment: a recall in
    flight keeps the one it read.
    """

    def __init__(
        self,
        records: RecordStore,
        keywords: KeywordIndex,
        vectors: VectorIndex,
        embedder: Embedder,
        reranker: Reranker | None,
        config: MemoryConfig,
        scoring: Scoring = UNCALIBRATED,
    ) -> None:
        self.records = records
        self.scoring = scoring
        self.keywords = keywords
        self.vectors = vectors
        self.embedder = embedder
        self.reranker = reranker
        self.config = config
        #: Counts hits in memory (no write per hit); set by ``AgentMemory``.
        self.access: AccessTracker | None = None
        #: The vector index lost vectors the records say it holds, and nothing re-embeds
        #: them here (a read-only open): every answer is ``degraded``.
        self.vectors_lost = False
        self._vector_pool: ThreadPoolExecutor | None = None
        self._pending_pool: ThreadPoolExecutor | None = None
        self._pending_job: Future[list[tuple[str, float]]] | None = None
        self.pending = PendingScorer(records, embedder, config.pending_scan)

    def recall(self, identity: Identity, req: RecallRequest) -> RecallResult:
        started = time.perf_counter()
        prof = recall_profile.active()
        if prof is not None:
            prof.begin()
        notes: dict[str, bool] = {}
        scoring = self.scoring
        ranked, visible, _ = self.candidates(identity, req, notes=notes, scoring=scoring)
        n_candidates = len(ranked)
        ranked, rerank_used = self.rerank(req, ranked, visible)
        if prof is not None:
            prof.lap("rerank")
        best = best_score([c.score for c in ranked], scoring, rerank_used)
        ranked = self.select(req, ranked, visible, rerank_used, scoring)
        hits, token_count, truncated = budget(ranked, visible, req.token_budget)
        if prof is not None:
            prof.lap("budget")
        if self.access is not None and hits:
            self.access.record([h.id for h in hits])
        if prof is not None:
            prof.lap("access")
        degraded = self.degraded(notes)
        result = RecallResult(
            items=hits,
            total=len(hits),
            degraded=degraded,
            rerank_used=rerank_used,
            truncated=truncated,
            token_count=token_count,
            best_score=None if hits else best,
        )
        log.info(
            json.dumps(
                {
                    "event": "recall",
                    "correlation_id": uuid.uuid4().hex,
                    "tenant_hash": short_hash(identity.tenant_id),
                    "query_hash": short_hash(req.query),
                    "scope": req.scope,
                    "results": len(hits),
                    "candidates": n_candidates,
                    "degraded": degraded,
                    "rerank_used": rerank_used,
                    "latency_ms": round((time.perf_counter() - started) * 1000, 2),
                }
            )
        )
        if prof is not None:
            prof.lap("log")
            prof.end(candidates=n_candidates)
        return result

    def rerank(
        self, req: RecallRequest, ranked: list[Candidate], visible: Mapping[str, tuple[str, Brief]]
    ) -> tuple[list[Candidate], bool]:
        """The candidates reordered by the reranker (its head of :data:`RERANK_CANDIDATES`,
        with the reranker's scores), and whether it was used. A failing reranker leaves the
        fused order, with a warning (fail open)."""
        if not (req.rerank and self.reranker is not None and ranked):
            return ranked, False
        head = ranked[:RERANK_CANDIDATES]
        try:
            scores = self.reranker.rerank(req.query, [visible[c.id][1].content for c in head])
            if len(scores) != len(head):
                raise RerankError(f"reranker returned {len(scores)} scores for {len(head)}")
            # every score first: one that fails leaves the fused scores all in place
            new_scores = [float(s) for s in scores]
        except Exception as exc:  # fail open: the fused order, a warning
            log.warning(
                json.dumps(
                    {
                        "event": "rerank_failed",
                        "reranker": getattr(self.reranker, "name", "?"),
                        "error": type(exc).__name__,
                        "detail": str(exc)[:200],
                    }
                )
            )
            return ranked, False
        for c, score in zip(head, new_scores, strict=True):
            c.score = score
        return sorted(head, key=lambda c: c.score, reverse=True), True

    def degraded(self, notes: Mapping[str, bool]) -> bool:
        """Whether a recall with these notes (see :meth:`candidates`) is degraded."""
        return (
            self.vectors_lost
            or notes.get("vector_skipped", False)
            or notes.get("pending_overflow", False)
        )

    @staticmethod
    def score_gap(scoring: Scoring, rerank_used: bool) -> float | None:
        """The score gap :func:`~.ranking.kept` cuts with: the gap was fitted on calibrated
        scores; a reranker's scores are on another scale, its own (meaningful without a
        profile too)."""
        return None if rerank_used else scoring.score_gap

    def select(
        self,
        req: RecallRequest,
        ranked: Sequence[Candidate],
        visible: Mapping[str, tuple[str, Brief]],
        rerank_used: bool,
        scoring: Scoring,
    ) -> list[Candidate]:
        """The candidates recall returns before the token budget: those
        :func:`~.ranking.kept` keeps, the first ``top_k``, their scores made non-increasing."""
        kinds = [visible[c.id][1].kind for c in ranked]
        gap = self.score_gap(scoring, rerank_used)
        calibrated = scoring.calibrated or rerank_used
        out = kept(
            ranked, kinds, req.min_score, scoring, gap=gap, calibrated=calibrated, floors=req.floors
        )
        out = out[: req.top_k]
        for c, score in zip(out, monotone([c.score for c in out]), strict=True):
            c.score = score
        return out

    def candidates(
        self,
        identity: Identity,
        req: RecallRequest,
        *,
        notes: dict[str, bool] | None = None,
        scoring: Scoring | None = None,
        refused: set[str] | None = None,
    ) -> tuple[list[Candidate], dict[str, tuple[str, Brief]], list[str]]:
        """Every admitted candidate, scored (with ``scoring``, default :attr:`scoring`) and
        best first, before rerank and cut-offs. If the query cannot be embedded or the vector
        index cannot be read, the search is keyword-only (``notes`` gets ``vector_skipped``;
        recall reports ``degraded``); ``refused`` gets the ids the isolation gate refused.
        """
        prof = recall_profile.active()
        lap = prof.lap if prof is not None else _no_lap
        wanted_scopes, by_partition = self._plans(identity, req)
        use_keyword = "keyword" in req.retrievers
        use_vector = "vector" in req.retrievers
        pool = self.config.candidates * (4 if req.filters else 1)
        searches = _searches(identity, req, by_partition)
        gate = _Gate(identity, req, wanted_scopes, searches, pool, refused)
        q = _query_text(req.query, self.keywords, use_keyword)
        terms, boosts, phrases = q.terms, q.boosts, q.phrases
        lap("plan")
        # The query embedding (~3 ms of model time, which releases the GIL) and the vector
        # searches it feeds run on worker threads while the keyword side is searched and its
        # rows are read.
        vector_job = None
        # the rows not indexed yet are read before either index is searched (see .pending)
        pending_read = threading.Event()
        if searches and use_vector:
            vector_job = self._vector_async(gate, pending_read)
        try:
            pending = self.pending.read(identity.tenant_id, list(by_partition), q.needles)
        finally:
            pending_read.set()
        lap("pending")
        # every IDF below is counted over this tenant's rows only (see storage.keyword_stats)
        stats = self.keywords.tenant_stats(
            identity.tenant_id, [*terms, *(t for p in phrases for t in p)]
        )
        keyword_lists = [
            self.keywords.search(terms, flt, pool, boosts, phrases, stats) if use_keyword else []
            for _, flt, _ in searches
        ]
        lap("keyword_search")
        # Isolation gate: only rows the records store confirms for this identity survive.
        visible: dict[str, tuple[str, Brief]] = {}
        self._gate_keywords(gate, (terms, boosts, phrases, stats), keyword_lists, visible)
        lap("gate_keyword")
        # Rows the indexes had not caught up with are scored here.
        kw_rows, vec_rows = _admit_pending(gate, pending, visible)
        idf = stats.idf(terms)
        if kw_rows and terms and use_keyword:
            self._score_pending_keywords(gate, idf, boosts, phrases, kw_rows, keyword_lists)

        # the text evidence of the rows found so far is worked out while the query embeds
        scorer = TextScorer(terms, idf, self.keywords.analyze, phrases, q.codes, q.compounds)
        scorer.prime(row for _, row in visible.values())
        lap("pending")
        query_vec, vector_lists = self._await_vectors(vector_job, notes, prof)
        lap("vector_wait")
        if query_vec is not None:
            self._gate_vectors(gate, query_vec, vector_lists, visible, vec_rows, notes)
            lap("gate_vector")
        if notes is not None and pending.overflow:
            notes["pending_overflow"] = True

        candidates = self._score(
            scorer, keyword_lists, vector_lists, visible, scoring or self.scoring
        )
        ranked = sorted(candidates.values(), key=lambda c: c.rank, reverse=True)
        lap("score")
        return ranked, visible, list(by_partition)

    def _plans(
        self, identity: Identity, req: RecallRequest
    ) -> tuple[set[str], dict[str, list[scope_rules.ScopePlan]]]:
        """The scopes a recall searches, and its scope plans by partition."""
        plans = scope_rules.plan(identity, req.scope, req.tiers, req.target_agent)
        if req.scope == "any":  # a scope weighted 0 is left out of the fused recall
            weights = self.config.scope_weights
            plans = [p for p in plans if weights.get(p.scope, 1.0) > 0]
        by_partition: dict[str, list[scope_rules.ScopePlan]] = defaultdict(list)
        for p in plans:
            by_partition[p.partition].append(p)
        return {p.scope for p in plans}, by_partition

    def _gate_keywords(
        self,
        gate: _Gate,
        query: tuple[list[str], dict[str, float], list[tuple[str, ...]], TenantStats],
        keyword_lists: list[list[tuple[str, float]]],
        visible: dict[str, tuple[str, Brief]],
    ) -> None:
        """Admit the keyword hits this identity may see, searching deeper where others
        crowded them out. ``query`` is (terms, boosts, phrases, the tenant's statistics)."""
        identity, req, wanted, searches, pool, refused = gate
        terms, boosts, phrases, stats = query
        self._admit_ids(identity, req, wanted, keyword_lists, visible, refused)
        for n in _crowded(keyword_lists, visible, pool):
            keyword_lists[n] = self.keywords.search(
                terms, searches[n][1], pool * DEEPER, boosts, phrases, stats
            )
            self._admit_ids(identity, req, wanted, keyword_lists[n : n + 1], visible, refused)

    def _score_pending_keywords(
        self,
        gate: _Gate,
        idf: Mapping[str, float],
        boosts: Mapping[str, float],
        phrases: Sequence[tuple[str, ...]],
        kw_rows: Mapping[str, list[Brief]],
        keyword_lists: list[list[tuple[str, float]]],
    ) -> None:
        """Merge the keyword scores of rows not in the keyword index yet into the lists."""
        weights = {t: w * boosts.get(t, 1.0) for t, w in idf.items()}
        phrase_idf = {p: sum(idf.get(t, 0.0) for t in p) for p in phrases}
        for n, (partition, _, _) in enumerate(gate.searches):
            extra = self.pending.keyword_scores(
                self.keywords.analyze, weights, kw_rows[partition], phrase_idf
            )
            keyword_lists[n] = merge(keyword_lists[n], extra[: gate.pool])

    def _gate_vectors(
        self,
        gate: _Gate,
        query_vec: FloatArray,
        vector_lists: list[list[tuple[str, float]]],
        visible: dict[str, tuple[str, Brief]],
        vec_rows: Mapping[str, list[Brief]],
        notes: dict[str, bool] | None,
    ) -> None:
        """Admit the vector hits this identity may see (searching deeper where others
        crowded them out), then add the rows whose vectors are not written yet."""
        identity, req, wanted, searches, pool, refused = gate
        self._admit_ids(identity, req, wanted, vector_lists, visible, refused)
        for n in _crowded(vector_lists, visible, pool):
            target = (collection_name(identity.tenant_id, searches[n][0]), searches[n][2])
            vector_lists[n] = self.vectors.search_many([target], query_vec, pool * DEEPER)[0]
            self._admit_ids(identity, req, wanted, vector_lists[n : n + 1], visible, refused)
        if vec_rows and vector_lists:
            self._score_unembedded(query_vec, searches, vec_rows, vector_lists, notes)

    def _score_unembedded(
        self,
        query_vec: FloatArray,
        searches: Sequence[tuple[str, KeywordFilter, dict[str, Any] | None]],
        rows: Mapping[str, list[Brief]],
        vector_lists: list[list[tuple[str, float]]],
        notes: dict[str, bool] | None,
    ) -> None:
        """Add rows whose vectors are not written yet to the vector lists (the newest
        ``pending_scan // 4`` of them; past that, or if embedding fails, ``degraded``)."""
        budget = max(self.pending.limit // 4, 1)
        todo = [(n, r) for n, (p, _, _) in enumerate(searches) for r in rows.get(p, ())]
        if len(todo) > budget:
            todo.sort(key=lambda pair: pair[1].event_time_iso, reverse=True)
            todo = todo[:budget]
            if notes is not None:
                notes["pending_overflow"] = True
        # on its own thread with a deadline: the embedder is shared with the indexer, and a
        # hung or failing model must cost recall its pending rows' vectors, never the answer
        if self._pending_job is not None and not self._pending_job.done():
            scored = None  # an earlier call is still stuck in the embedder
        else:
            if self._pending_pool is None:
                self._pending_pool = ThreadPoolExecutor(1, thread_name_prefix="agentmem-pending")
            batch = [r for _, r in todo]
            self._pending_job = self._pending_pool.submit(
                self.pending.vector_scores, query_vec, batch
            )
            try:
                scored = dict(self._pending_job.result(timeout=PENDING_EMBED_TIMEOUT))
            except Exception as exc:  # timeout or embedder failure
                event = {"event": "pending_embed_failed", "error": type(exc).__name__}
                log.warning(json.dumps(event))
                scored = None
        if scored is None:  # the pending rows stay keyword-only
            if notes is not None:
                notes["vector_skipped"] = True
            return
        per_list: dict[int, list[tuple[str, float]]] = defaultdict(list)
        for n, row in todo:
            per_list[n].append((row.id, scored[row.id]))
        for n, extra in per_list.items():
            vector_lists[n] = merge(vector_lists[n], extra)

    def _vector_async(self, gate: _Gate, pending_read: threading.Event) -> Future[_VectorSide]:
        """Start the vector side of a recall (embed, then search every partition's collection)
        on a worker."""
        tenant = gate.identity.tenant_id
        targets = [(collection_name(tenant, p), w) for p, _, w in gate.searches]
        if self._vector_pool is None:
            self._vector_pool = ThreadPoolExecutor(
                VECTOR_WORKERS, thread_name_prefix="agentmem-query-vectors"
            )
        return self._vector_pool.submit(
            self._vector_side, gate.req.query, targets, gate.pool, pending_read
        )

    def _vector_side(
        self,
        query: str,
        targets: Sequence[tuple[str, dict[str, Any] | None]],
        n: int,
        pending_read: threading.Event,
    ) -> _VectorSide:
        """Embed the query, then, once the caller has read the pending rows, search every
        target collection with it (on a worker)."""
        side = _VectorSide()
        side.embed_at = time.perf_counter()
        try:
            side.vector = self.embedder.embed_query(query)
        except Exception as exc:  # keyword-only rather than no recall
            side.embed_error = exc
            return side
        finally:
            side.embed_ms = (time.perf_counter() - side.embed_at) * 1000
        pending_read.wait()
        side.search_at = time.perf_counter()
        try:
            side.lists = self.vectors.search_many(targets, side.vector, n)
        except StorageError as exc:  # an unreadable vector index: keyword-only, degraded
            side.search_error = exc
        side.search_ms = (time.perf_counter() - side.search_at) * 1000
        return side

    def _await_vectors(
        self,
        job: Future[_VectorSide] | None,
        notes: dict[str, bool] | None,
        prof: recall_profile.RecallProfile | None = None,
    ) -> tuple[FloatArray | None, list[list[tuple[str, float]]]]:
        """The query vector and the vector lists; (None, []) when the query could not be
        embedded, (vector, []) when the index could not be searched (``vector_skipped``)."""
        if job is None:
            return None, []
        side = job.result()
        if prof is not None:
            prof.add("embed_model", side.embed_ms, side.embed_at)
            prof.add("vector_search", side.search_ms, side.search_at or None)
        if side.embed_error is not None:
            error = type(side.embed_error).__name__
            log.warning(json.dumps({"event": "query_embed_failed", "error": error}))
        elif side.search_error is not None:
            event = {"event": "vector_query_failed", "detail": str(side.search_error)[:200]}
            log.warning(json.dumps(event))
        if (side.vector is None or side.lists is None) and notes is not None:
            notes["vector_skipped"] = True
        return side.vector, side.lists or []

    def _admit_ids(
        self,
        identity: Identity,
        req: RecallRequest,
        wanted_scopes: set[str],
        lists: Sequence[Sequence[tuple[str, float]]],
        visible: dict[str, tuple[str, Brief]],
        refused: set[str] | None,
    ) -> None:
        """Read the rows of ids not seen yet and admit those this identity may see (the
        others go to ``refused``)."""
        ids = {i for lst in lists for i, _ in lst}
        ids.difference_update(visible)
        for row in self.records.memories.briefs(identity.tenant_id, sorted(ids)):
            scope = _admit(identity, row, req, wanted_scopes)
            if scope is not None:
                visible[row.id] = (scope, row)
        if refused is not None:
            refused.update(ids.difference(visible))

    def close(self) -> None:
        """Stop the worker threads and wait for them (idempotent): none may still be in the
        embedder or the vector index when they close."""
        for pool in (self._vector_pool, self._pending_pool):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self._vector_pool = self._pending_pool = None

    def _score(
        self,
        scorer: TextScorer,
        keyword_lists: Sequence[Sequence[tuple[str, float]]],
        vector_lists: Sequence[Sequence[tuple[str, float]]],
        visible: Mapping[str, tuple[str, Brief]],
        scoring: Scoring,
    ) -> dict[str, Candidate]:
        cands: dict[str, Candidate] = {}
        fusion_lists: list[tuple[str, list[str]]] = []
        floor_cos: dict[str, float] = {}
        for kind, lists in (("kw", keyword_lists), ("vec", vector_lists)):
            for lst in lists:
                per_scope: dict[str, list[str]] = defaultdict(list)
                for id_, value in _best_first(lst, visible):
                    scope = visible[id_][0]
                    per_scope[scope].append(id_)
                    c = cands.setdefault(id_, Candidate(id=id_, scope=scope))
                    if kind == "kw":
                        c.in_keyword = True
                        c.bm25 = value
                        c.kw_rank = len(per_scope[scope])
                    else:
                        c.in_vector = True
                        c.cos = c.vec_cos = value
                        c.vec_rank = len(per_scope[scope])
                        floor_cos[scope] = min(floor_cos.get(scope, value), value)
                fusion_lists.extend(per_scope.items())
        if not cands:
            return cands
        fused = rrf(fusion_lists, self.config.scope_weights, self.config.rrf_k)
        max_weight = max(
            (self.config.scope_weights.get(s, 1.0) for s, _ in fusion_lists), default=1.0
        )
        fused_max = 2 * max_weight / (self.config.rrf_k + 1)
        for c in cands.values():
            c.fused = fused.get(c.id, 0.0)
            if c.cos is None:
                c.cos = floor_cos.get(c.scope, 0.0)
            row = visible[c.id][1]
            text = scorer.evidence(row)
            if row.kind == "chat_message":
                c.terms = text.terms
                c.asks = asks(row.content)
            c.coverage = text.coverage
            c.id_miss = text.id_miss
            if text.id_miss == 1.0:
                c.cos = 0.0  # another identifier: its meaning is that of the words around it
            c.speaker_match = text.speaker_match
            c.name_match = text.name_match
            c.says_code = text.says_code
        _context_features(cands, visible)
        best_cos = max(max(c.cos or 0.0, 0.0) for c in cands.values())
        best_coverage = max(c.coverage for c in cands.values())
        best_bm25 = max(c.bm25 for c in cands.values())
        chat = [brevity(c.terms) for c in cands.values() if c.terms is not None]
        mean_brevity = sum(chat) / len(chat) if chat else 0.0
        for c in cands.values():
            c.features = features(c, fused_max, best_cos, best_coverage, best_bm25, mean_brevity)
        score_all(list(cands.values()), scoring)
        return cands


def _best_first(
    hits: Sequence[tuple[str, float]], visible: Mapping[str, tuple[str, Brief]]
) -> list[tuple[str, float]]:
    """The visible ``hits``, best first, equal scores in write order.

    Tantivy orders equal scores by segment, and which segment holds a row depends on when the
    indexer committed it: left to the index, two rows of the same score would swap ranks from
    one store of the same rows to the next (one segment gives them in write order)."""
    shown = [(id_, value) for id_, value in hits if id_ in visible]
    return sorted(shown, key=lambda hit: (-hit[1], visible[hit[0]][1].seq))


def _context_features(
    cands: Mapping[str, Candidate], visible: Mapping[str, tuple[str, Brief]]
) -> None:
    """Features of a chat message from its conversation: how well the message just before it
    matched (an answer follows its question)."""
    by_pos: dict[tuple[str | None, int], Candidate] = {}
    for c in cands.values():
        row = visible[c.id][1]
        if row.kind != "chat_message":
            continue
        by_pos[(row.session_id, row.seq)] = c
    for (session, seq), c in by_pos.items():
        prev = by_pos.get((session, seq - 1))
        if prev is not None:
            c.prev_coverage = prev.coverage
            c.prev_cos = max(prev.cos or 0.0, 0.0)


#: One search of a recall: (partition, keyword filter, vector ``where``).
Search = tuple[str, KeywordFilter, dict[str, Any] | None]


class _Gate(NamedTuple):
    """What a recall admits hits by: whose recall, its scopes, and where it searched."""

    identity: Identity
    req: RecallRequest
    wanted_scopes: set[str]
    searches: list[Search]
    pool: int
    #: Gets the ids offered that the gate refused (None: not kept).
    refused: set[str] | None


def _no_lap(phase: str) -> None:
    """Stands for :meth:`~agentmem.recall.profile.RecallProfile.lap` when nothing profiles."""


def _searches(
    identity: Identity, req: RecallRequest, by_partition: Mapping[str, list[scope_rules.ScopePlan]]
) -> list[Search]:
    """One keyword filter and vector ``where`` per partition searched."""
    searches: list[Search] = []
    for partition, group in by_partition.items():
        session = group[0].session if len(group) == 1 else None
        not_session = group[0].not_session if len(group) == 1 else None
        flt = KeywordFilter(
            tenant=identity.tenant_id,
            partitions=(partition,),
            session=session,
            not_session=not_session,
            kinds=req.kinds,
            memory_types=req.memory_types,
        )
        where = _vector_where(session, not_session, req.kinds, req.memory_types)
        searches.append((partition, flt, where))
    return searches


def _admit_pending(
    gate: _Gate, pending: Pending, visible: dict[str, tuple[str, Brief]]
) -> tuple[dict[str, list[Brief]], dict[str, list[Brief]]]:
    """Admit the rows the indexes have not caught up with that this identity may see;
    those missing from the keyword index, and from the vector index, by partition."""
    kw_rows: dict[str, list[Brief]] = defaultdict(list)
    vec_rows: dict[str, list[Brief]] = defaultdict(list)
    for row, kw_missing, vec_missing in pending.rows:
        scope = _admit(gate.identity, row, gate.req, gate.wanted_scopes)
        if scope is None:
            if gate.refused is not None:
                gate.refused.add(row.id)
            continue
        visible.setdefault(row.id, (scope, row))
        if kw_missing:
            kw_rows[row.partition].append(row)
        if vec_missing:
            vec_rows[row.partition].append(row)
    return kw_rows, vec_rows


def _crowded(
    lists: Sequence[Sequence[tuple[str, float]]], visible: Mapping[str, Any], pool: int
) -> list[int]:
    """The lists that came back full yet mostly of rows the gate refused (superseded versions
    of a fact upserted many times, rows a metadata filter or tier leaves out): what the
    request may see lies deeper, so they are searched again :data:`DEEPER` times as deep."""
    return [
        n
        for n, lst in enumerate(lists)
        if len(lst) >= pool and sum(1 for i, _ in lst if i in visible) < pool // 2
    ]


def _admit(identity: Identity, row: Brief, req: RecallRequest, wanted: set[str]) -> str | None:
    if row.superseded_by is not None and not req.include_superseded:
        return None
    scope = scope_rules.visible_scope(
        identity,
        tenant_id=row.tenant_id,
        scope=row.scope,
        partition=row.partition,
        session_id=row.session_id,
        user_id=row.user_id,
        agent_id=row.agent_id,
        tier=row.tier,
        target_agent=req.target_agent,
    )
    if scope is None or scope not in wanted:
        return None
    if req.tiers is not None and scope_rules.row_tier(row.tier, scope) not in req.tiers:
        return None
    if req.kinds is not None and row.kind not in req.kinds:
        return None
    if req.memory_types is not None and row.memory_type not in req.memory_types:
        return None
    for key, value in req.filters.items():
        if row.metadata.get(key) != value:
            return None
    return scope


def _vector_where(
    session: str | None,
    not_session: str | None,
    kinds: tuple[str, ...] | None,
    memory_types: tuple[str, ...] | None,
) -> dict[str, Any] | None:
    clauses: list[dict[str, Any]] = []
    if session is not None:
        clauses.append({"session_id": session})
    if not_session is not None:
        clauses.append({"session_id": {"$ne": not_session}})
    if kinds is not None:
        clauses.append({"kind": {"$in": list(kinds)}})
    if memory_types is not None:
        clauses.append({"memory_type": {"$in": list(memory_types)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def best_score(scores: Sequence[float], scoring: Scoring, rerank_used: bool) -> float | None:
    """The best of the candidates' ``scores`` before the cut-offs (before :meth:`select`
    evens them out), when they are on ``min_score``'s scale: calibrated, or the reranker's."""
    if not scores or not (scoring.calibrated or rerank_used):
        return None
    return max(scores)


def budget(
    ranked: Sequence[Candidate], visible: Mapping[str, tuple[str, Brief]], budget: int
) -> tuple[list[RecallHit], int, bool]:
    hits: list[RecallHit] = []
    used = 0
    truncated = False
    for c in ranked:
        item = visible[c.id][1]
        content = item.content
        n = count_tokens(content) if item.content_tokens is None else item.content_tokens
        if used + n > budget:
            room = budget - used
            truncated = True
            if room < MIN_TRUNCATED_TOKENS and hits:  # the best item is cut, never dropped
                break
            content, n = _fit(content, room)
            if n == 0:
                break
        hits.append(
            RecallHit(
                id=item.id,
                kind=item.kind,
                memory_type=item.memory_type,
                scope=c.scope,
                content=content,
                score=round(min(max(c.score, 0.0), 1.0), 6),
                source_ref=item.source_ref,
                event_time=item.event_time,
                session_id=item.session_id,
                metadata=dict(item.metadata),
            )
        )
        used += n
        if truncated:
            break
    return hits, used, truncated


def _fit(text: str, room: int) -> tuple[str, int]:
    """``text`` cut to at most ``room`` tokens (re-encoding a cut can add a token)."""
    target = room
    while target > 0:
        cut = truncate_to_tokens(text, target)
        n = count_tokens(cut)
        if n <= room and cut.strip():
            return cut, n
        target -= max(n - room, 1)
    return "", 0
