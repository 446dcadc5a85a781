"""LoCoMo long-conversation retrieval benchmark (``agentmem eval --locomo FILE``).

LoCoMo (Maharana et al., ACL 2024) is a JSON list of samples, each a long two-person
conversation (``conversation``: ``speaker_a``, ``speaker_b``, ``session_N`` lists of turns
``{speaker, dia_id, text}`` and ``session_N_date_time``) plus questions (``qa``: ``question``,
``evidence`` dia ids, ``category`` 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial).

**Ingestion.** One fresh data dir, tenant ``locomo``; one user id per sample (its
``sample_id``), one agentmem session per LoCoMo session (``<sample_id>:s<N>``). Every turn
becomes a chat message through :meth:`~agentmem.BoundMemory.add_messages` (one bulk call per
session), then :meth:`~agentmem.AgentMemory.flush` waits for both indexes:

- role ``user`` for ``speaker_a`` and ``assistant`` for ``speaker_b`` (the role is not indexed;
  both speakers are people, and the speaker's name is what the indexes see),
- metadata ``{"dia_id": "D3:7", "speaker": "Caroline", "session": 3}``; the indexer prepends
  the ``speaker`` to the indexed text,
- ``event_time`` is the session's date-time (``"1:56 pm on 8 May, 2023"``, read as UTC) plus
  one second per turn, so turn order is preserved,
- optionally (``captions=True``, ``--captions``) the BLIP caption of a shared image is
  appended to the turn's text as ``[shared an image: ...]``; off by default, so the stored
  text is the turn text alone, as in the naive baseline,
- optionally (``close_sessions=True``, ``--close-sessions``) each session is closed after
  it is written, as an application would: its summary row (searched by default recall; a
  summary hit carries the dia ids of the turns it came from) and chunks are written, and
  the sessions beyond the mid-term window are promoted to long-term. Off by default.

**Queries.** Every question of categories 1-4 with at least one resolvable evidence turn is
asked once per mode, bound to its sample's user in a new session (so every turn is
``history``), with ``top_k=20`` (the core's maximum), ``min_score=0.0`` and a token budget
of 100,000, so neither the threshold nor the budget cuts the ranking; the ``defaults`` mode
asks as an application does, so the configured threshold and budget apply.

**Modes** (same data dir, same run):

- ``hybrid``: the public :meth:`~agentmem.BoundMemory.recall` (fusion, calibration, default
  reranker setting).
- ``defaults``: the same recall at default settings, ``recall(q, top_k=20,
  scope="history")``: what an application gets (``hits`` says how many items came back).
- ``keyword`` / ``vector``: one retriever alone: the engine's own candidate step with only
  that retriever (same scope plan, filters and identity gate as recall; read-only), ordered
  by the retriever's own score (see :mod:`.retrieval`).
- ``langchain`` / ``llamaindex``: the peer pipelines of ``agentmem bench`` (the builders
  of :mod:`agentmem.bench.peers`: LangChain ``EnsembleRetriever`` over ``BM25Retriever`` +
  Chroma, LlamaIndex ``QueryFusionRetriever`` over BM25 + a Chroma ``VectorStoreIndex``),
  built once per conversation on that conversation's turns only, one document per turn
  with the text agentmem indexes for it (:func:`agentmem.write.index_text.index_text`: the speaker
  and the turn text, without agentmem's preceding-turn context), asked for ``k=20``. They
  use agentmem's embedder: document vectors are embedded once per conversation through
  the run's embedder (so ``--embed-cache`` serves the vectors agentmem's own index
  computed for the same texts) and shared by both peers; a query vector comes from the
  same query cache the ``vector`` mode reads. A peer whose packages are missing (the
  ``bench`` extra) or that fails to build is left out and reported in
  ``summary["peers"]``, not fatal. ``summary["hybrid_minus_peer_recall@10"]`` gives
  agentmem's hybrid Recall@10 minus each peer's, overall and per category.

By default every mode runs; peers only when installed.

**Scoring** at turn granularity: walk the hits in order, collect the distinct dia ids they
carry (``metadata["dia_id"]``, or a list ``metadata["dia_ids"]`` for chunks and summaries),
and cut at ``k`` turns, so a hit carrying many turns earns nothing extra. Recall@k is the
share of a question's evidence turns among the first ``k``; NDCG@10 uses binary relevance,
``DCG = sum(rel_i / log2(i + 1))`` over the first 10 turns, divided by the DCG of the ideal
ranking (all evidence first). Scores are averaged over questions, per category and overall.

**Evidence** is parsed defensively: an entry like ``"D8:6; D9:17"`` is split, ``"D:11:26"``
and ``"d3:7 "`` are normalised to ``D11:26``/``D3:7``, entries naming no turn of the
conversation are dropped (and counted); a question left with no evidence is skipped (and
counted).

Example:
    >>> from agentmem.evaluation import locomo
    >>> report = locomo.run_locomo("locomo-dev.json")  # doctest: +SKIP
    >>> report.summary["modes"]["hybrid"]["overall"]["recall@10"]  # doctest: +SKIP
    0.61
"""

from __future__ import annotations

from ...storage.embedding_cache import DiskEmbeddingCache
from .data import (
    CATEGORIES,
    Conversation,
    Question,
    Session,
    Turn,
    load_locomo,
    normalise_dia_id,
    parse_evidence,
    parse_session_datetime,
)
from .ingest import TENANT, ingest_conversation, turn_documents, turn_text
from .metrics import KS, METRICS, NDCG_K, hit_dia_ids, ndcg_at_k, ranked_turns, recall_at_k
from .peers import DELTA_METRIC, PEER_MODES
from .report import LocomoReport, log_to_mlflow
from .retrieval import MIN_SCORE, MODES, QUERY_SESSION, TOKEN_BUDGET, TOP_K, single_retriever
from .run import ALL_MODES, ProgressFn, run_locomo

__all__ = [
    "ALL_MODES",
    "CATEGORIES",
    "DELTA_METRIC",
    "KS",
    "METRICS",
    "MIN_SCORE",
    "MODES",
    "NDCG_K",
    "PEER_MODES",
    "QUERY_SESSION",
    "TENANT",
    "TOKEN_BUDGET",
    "TOP_K",
    "Conversation",
    "DiskEmbeddingCache",
    "LocomoReport",
    "ProgressFn",
    "Question",
    "Session",
    "Turn",
    "hit_dia_ids",
    "ingest_conversation",
    "load_locomo",
    "log_to_mlflow",
    "ndcg_at_k",
    "normalise_dia_id",
    "parse_evidence",
    "parse_session_datetime",
    "ranked_turns",
    "recall_at_k",
    "run_locomo",
    "single_retriever",
    "turn_documents",
    "turn_text",
]
