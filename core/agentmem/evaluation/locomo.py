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
  appended to the turn's text as ``[shared an image: ...]``; off by default, so the indexed
  text is the turn text alone, as in the naive baseline.

**Queries.** Every question of categories 1-4 with at least one resolvable evidence turn is
asked once per mode, bound to its sample's user in a new session (so every turn is
``history``), with ``top_k=20`` (the core's maximum), ``min_score=0.0`` and a token budget
of 100,000, so neither the threshold nor the budget cuts the ranking.

**Modes** (same data dir, same run):

- ``hybrid``: the public :meth:`~agentmem.BoundMemory.recall` (fusion, calibration, default
  reranker setting).
- ``keyword`` / ``vector``: one retriever alone. These reach below the public API (see
  :func:`single_retriever_search`): they build the same per-partition plan and filters as
  :class:`~agentmem.recall.engine.RecallEngine`, query ``mem.keywords`` or ``mem.vectors``
  directly, and pass every row through the same identity gate; read-only.
- ``langchain`` / ``llamaindex``: the peer pipelines of ``agentmem bench`` (the builders
  of :mod:`agentmem.bench.peers`: LangChain ``EnsembleRetriever`` over ``BM25Retriever`` +
  Chroma, LlamaIndex ``QueryFusionRetriever`` over BM25 + a Chroma ``VectorStoreIndex``),
  built once per conversation on that conversation's turns only, one document per turn
  with the text agentmem indexes for it (:func:`agentmem.write.indexer.index_text`: the speaker
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

import contextlib
import hashlib
import json
import math
import os
import re
import sqlite3
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .. import scopes as scope_rules
from ..config import MAX_TOP_K, MemoryConfig
from ..embeddings import CachedEmbedder, Embedder, FloatArray, default_embedder
from ..errors import ValidationError
from ..memory import AgentMemory, BoundMemory
from ..models import Identity
from ..rerank import Reranker
from ..storage.keyword_index import KeywordFilter
from ..storage.vector_index import collection_name
from ..write.index_text import index_text

__all__ = [
    "ALL_MODES",
    "CATEGORIES",
    "KS",
    "METRICS",
    "MODES",
    "PEER_MODES",
    "Conversation",
    "DiskEmbeddingCache",
    "LocomoReport",
    "Question",
    "Session",
    "Turn",
    "add_arguments",
    "hit_dia_ids",
    "load_locomo",
    "ndcg_at_k",
    "parse_evidence",
    "parse_session_datetime",
    "ranked_turns",
    "recall_at_k",
    "run_cli",
    "run_locomo",
    "single_retriever_search",
    "turn_documents",
]

#: Scored categories and their names (category 5, adversarial, has no evidence to retrieve).
CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: agentmem's own modes.
MODES: tuple[str, ...] = ("hybrid", "keyword", "vector")
#: The peer pipelines (the names of :data:`agentmem.bench.peers.PEERS`).
PEER_MODES: tuple[str, ...] = ("langchain", "llamaindex")
ALL_MODES: tuple[str, ...] = (*MODES, *PEER_MODES)
#: The metric the hybrid-minus-peer comparison reports.
DELTA_METRIC = "recall@10"
#: Recall cut-offs, in turns.
KS: tuple[int, ...] = (5, 10, 20)
NDCG_K = 10
TENANT = "locomo"
QUERY_SESSION = "locomo-eval-query"
#: Recall settings that keep the threshold and the token budget from cutting the ranking.
TOP_K = MAX_TOP_K
TOKEN_BUDGET = 100_000
MIN_SCORE = 0.0

ProgressFn = Callable[[str, int, int], None]


# -- the data ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    number: int
    date_time: str | None
    start: datetime | None
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    sample_id: str
    index: int
    """Position in the sample's ``qa`` list."""
    question: str
    category: int
    evidence: tuple[str, ...]
    """Normalised dia ids that name a turn of the conversation."""
    dropped: tuple[str, ...] = ()
    """Evidence entries that could not be parsed or name no turn."""
    answer: Any = None


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    """Scored questions: categories 1-4 with at least one resolvable evidence turn."""
    skipped: Mapping[str, int] = field(default_factory=dict)
    """Counters of what parsing left out (see :func:`load_locomo`)."""

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


_DIA_RE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.IGNORECASE)
_SESSION_RE = re.compile(r"session_(\d+)")
_DATE_FORMATS = (
    "%I:%M %p on %d %B, %Y",
    "%I:%M %p on %d %b, %Y",
    "%I:%M %p on %d %B %Y",
    "%I:%M %p on %d %b %Y",
    "%H:%M on %d %B, %Y",
)


def normalise_dia_id(raw: str) -> str | None:
    """``"d3 : 7"`` -> ``"D3:7"``; None when ``raw`` is not one dia id."""
    m = _DIA_RE.fullmatch(raw.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else None


def parse_evidence(raw: Any) -> tuple[list[str], list[str]]:
    """(dia ids, unparseable entries) of a question's ``evidence`` value.

    Accepts a list of strings or one string; an entry may hold several ids separated by
    ``;``, ``,`` or whitespace (``"D8:6; D9:17"``). Ids are normalised and de-duplicated,
    in order.

    Example:
        >>> parse_evidence(["D8:6; D9:17", "D:11:26", "D8:6", "nonsense"])
        (['D8:6', 'D9:17', 'D11:26'], ['nonsense'])
    """
    if raw is None:
        return [], []
    entries = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, list) else [raw]
    ids: dict[str, None] = {}
    bad: list[str] = []
    for entry in entries:
        if not isinstance(entry, str):
            bad.append(repr(entry))
            continue
        found = [f"D{int(a)}:{int(b)}" for a, b in _DIA_RE.findall(entry)]
        rest = _DIA_RE.sub("", entry).strip(" ;,\t\n")
        if not found or rest:
            bad.append(entry)
        for dia in found:
            ids.setdefault(dia, None)
    return list(ids), bad


def parse_session_datetime(raw: Any) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` -> an aware UTC datetime; None when unparseable."""
    if not isinstance(raw, str):
        return None
    text = " ".join(raw.split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _sessions(conv: Mapping[str, Any], skipped: dict[str, int]) -> tuple[Session, ...]:
    numbers = sorted(
        int(m.group(1))
        for key in conv
        if (m := _SESSION_RE.fullmatch(key)) and isinstance(conv[key], list)
    )
    out: list[Session] = []
    for n in numbers:
        raw_date = conv.get(f"session_{n}_date_time")
        start = parse_session_datetime(raw_date)
        if start is None:
            skipped["session_dates_unparsed"] += 1
        turns: list[Turn] = []
        for t in conv[f"session_{n}"]:
            if not isinstance(t, Mapping):
                skipped["turns_malformed"] += 1
                continue
            dia = normalise_dia_id(str(t.get("dia_id", "")))
            text = t.get("text")
            caption = t.get("blip_caption")
            text = text.strip() if isinstance(text, str) else ""
            caption = caption.strip() if isinstance(caption, str) and caption.strip() else None
            if dia is None or (not text and caption is None):
                skipped["turns_malformed"] += 1
                continue
            turns.append(Turn(dia, str(t.get("speaker") or "").strip(), text, caption))
        out.append(Session(n, raw_date if isinstance(raw_date, str) else None, start, tuple(turns)))
    return tuple(out)


def load_locomo(source: str | os.PathLike[str] | Sequence[Any]) -> list[Conversation]:
    """Parse a LoCoMo file (or its already-loaded JSON list) defensively.

    Per conversation, ``skipped`` counts: ``category_5`` and ``category_other`` questions,
    ``no_evidence`` (scored category, but no evidence entry names a turn),
    ``evidence_unresolved`` (entries dropped: unparseable or naming no turn),
    ``evidence_split`` (entries holding several ids), ``turns_malformed`` and
    ``session_dates_unparsed``.

    Raises:
        ValidationError: the file is not JSON or not a list of samples with a conversation.
    """
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValidationError("locomo", f"cannot read {path}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise ValidationError("locomo", f"{path} is not JSON: {exc.msg}") from exc
    else:
        data = source
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, list) or not data:
        raise ValidationError("locomo", "must be a non-empty JSON list of samples")
    out: list[Conversation] = []
    seen: set[str] = set()
    for n, sample in enumerate(data):
        if not isinstance(sample, Mapping) or not isinstance(sample.get("conversation"), Mapping):
            raise ValidationError(f"locomo[{n}]", "is not a sample with a 'conversation' object")
        sample_id = str(sample.get("sample_id") or f"sample-{n}")
        if sample_id in seen:
            sample_id = f"{sample_id}-{n}"
        seen.add(sample_id)
        conv = sample["conversation"]
        skipped: dict[str, int] = defaultdict(int)
        sessions = _sessions(conv, skipped)
        known = {t.dia_id for s in sessions for t in s.turns}
        questions: list[Question] = []
        for qi, qa in enumerate(sample.get("qa") or []):
            if not isinstance(qa, Mapping) or not isinstance(qa.get("question"), str):
                skipped["qa_malformed"] += 1
                continue
            try:
                category = int(qa.get("category"))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                category = -1
            if category == 5:
                skipped["category_5"] += 1
                continue
            if category not in CATEGORIES:
                skipped["category_other"] += 1
                continue
            raw_ev = qa.get("evidence")
            ids, bad = parse_evidence(raw_ev)
            if isinstance(raw_ev, list):
                skipped["evidence_split"] += sum(
                    1 for e in raw_ev if isinstance(e, str) and len(_DIA_RE.findall(e)) > 1
                )
            evidence = tuple(i for i in ids if i in known)
            dropped = (*bad, *(i for i in ids if i not in known))
            skipped["evidence_unresolved"] += len(dropped)
            if not evidence or not qa["question"].strip():
                skipped["no_evidence"] += 1
                continue
            questions.append(
                Question(
                    sample_id=sample_id,
                    index=qi,
                    question=qa["question"],
                    category=category,
                    evidence=evidence,
                    dropped=tuple(dropped),
                    answer=qa.get("answer"),
                )
            )
        out.append(
            Conversation(
                sample_id=sample_id,
                speaker_a=str(conv.get("speaker_a") or ""),
                speaker_b=str(conv.get("speaker_b") or ""),
                sessions=sessions,
                questions=tuple(questions),
                skipped=dict(skipped),
            )
        )
    return out


# -- metrics ----------------------------------------------------------------------------------
def hit_dia_ids(metadata: Mapping[str, Any] | None) -> list[str]:
    """The dia ids a hit carries: ``metadata["dia_id"]`` and/or the list ``metadata["dia_ids"]``."""
    if not metadata:
        return []
    out: list[str] = []
    for key in ("dia_id", "dia_ids"):
        value = metadata.get(key)
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if isinstance(v, str):
                dia = normalise_dia_id(v)
                if dia is not None:
                    out.append(dia)
    return out


def ranked_turns(hits: Iterable[Sequence[str]], limit: int | None = None) -> list[str]:
    """Distinct dia ids in hit order (each hit given as the dia ids it carries), cut at ``limit``.

    Example:
        >>> ranked_turns([["D1:2"], ["D1:2", "D1:3", "D1:4"], ["D2:1"]], limit=3)
        ['D1:2', 'D1:3', 'D1:4']
    """
    seen: dict[str, None] = {}
    for dias in hits:
        for dia in dias:
            if dia not in seen:
                seen[dia] = None
                if limit is not None and len(seen) >= limit:
                    return list(seen)
    return list(seen)


def recall_at_k(ranked: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """Share of ``evidence`` turns among the first ``k`` ranked turns (0.0 if no evidence)."""
    ev = set(evidence)
    if not ev:
        return 0.0
    return len(ev.intersection(ranked[:k])) / len(ev)


def ndcg_at_k(ranked: Sequence[str], evidence: Iterable[str], k: int = NDCG_K) -> float:
    """Binary-relevance NDCG of the first ``k`` ranked turns."""
    ev = set(evidence)
    if not ev:
        return 0.0
    dcg = sum(1.0 / math.log2(i + 2) for i, dia in enumerate(ranked[:k]) if dia in ev)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(ev), k)))
    return dcg / ideal


def _score(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    out = {f"recall@{k}": recall_at_k(ranked, evidence, k) for k in KS}
    out[f"ndcg@{NDCG_K}"] = ndcg_at_k(ranked, evidence, NDCG_K)
    return out


METRICS: tuple[str, ...] = (*(f"recall@{k}" for k in KS), f"ndcg@{NDCG_K}")
_SHORT = {**{f"recall@{k}": f"R@{k}" for k in KS}, f"ndcg@{NDCG_K}": f"nDCG@{NDCG_K}"}


# -- retrieval --------------------------------------------------------------------------------
def single_retriever_search(
    mem: AgentMemory, identity: Identity, query: str, retriever: str, limit: int
) -> list[dict[str, Any]]:
    """Keyword-only or vector-only search, below the public API (read-only).

    Mirrors what :class:`~agentmem.recall.engine.RecallEngine` does for ``scope="any"`` before
    fusion: the same scope plan grouped by partition, the same session / not-session
    narrowing (a partition serving both ``session`` and ``history`` is searched unfiltered),
    the same stores (``mem.keywords.search`` with a :class:`KeywordFilter`, or
    ``mem.vectors.query`` on the partition's collection), then the same identity gate
    (rows re-read with ``mem.records.get_many`` and checked by
    :func:`agentmem.scopes.visible_scope`; superseded rows are left out). Lists of several
    partitions are merged by raw score (BM25, or cosine similarity).

    Returns the metadata dicts of the admitted rows, best first.
    """
    if retriever not in ("keyword", "vector"):
        raise ValueError(f"retriever must be 'keyword' or 'vector', not {retriever!r}")
    plans = scope_rules.plan(identity, "any")
    by_partition: dict[str, list[scope_rules.ScopePlan]] = defaultdict(list)
    for p in plans:
        by_partition[p.partition].append(p)
    wanted = {p.scope for p in plans}
    scored: list[tuple[float, str]] = []
    terms = mem.keywords.query_terms(query) if retriever == "keyword" else []
    query_vec = mem.embedder.embed_query(query) if retriever == "vector" else None
    for partition, group in by_partition.items():
        session = group[0].session if len(group) == 1 else None
        not_session = group[0].not_session if len(group) == 1 else None
        if retriever == "keyword":
            flt = KeywordFilter(
                tenant=identity.tenant_id,
                partitions=(partition,),
                session=session,
                not_session=not_session,
            )
            found = mem.keywords.search(terms, flt, limit)
        else:
            assert query_vec is not None
            where: dict[str, Any] | None = None
            if session is not None:
                where = {"session_id": session}
            elif not_session is not None:
                where = {"session_id": {"$ne": not_session}}
            found = mem.vectors.query(
                collection_name(identity.tenant_id, partition), query_vec, limit, where
            )
        scored.extend((score, id_) for id_, score in found)
    scored.sort(key=lambda s: s[0], reverse=True)
    order = [id_ for _, id_ in scored]
    rows = {r.item.id: r for r in mem.records.get_many(identity.tenant_id, order)}
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for id_ in order:
        row = rows.get(id_)
        if row is None or id_ in seen or row.item.superseded_by is not None:
            continue
        item = row.item
        scope = scope_rules.visible_scope(
            identity,
            tenant_id=item.tenant_id,
            scope=item.scope,
            partition=row.partition,
            session_id=item.session_id,
            user_id=item.user_id,
            agent_id=item.agent_id,
        )
        if scope is None or scope not in wanted:
            continue
        seen.add(id_)
        out.append(dict(item.metadata))
        if len(out) >= limit:
            break
    return out


def _hybrid(m: BoundMemory, query: str) -> list[dict[str, Any]]:
    result = m.recall(query, top_k=TOP_K, min_score=MIN_SCORE, token_budget=TOKEN_BUDGET)
    return [hit.metadata for hit in result.items]


def _turn_text(turn: Turn, captions: bool) -> str:
    """The content a turn is ingested with (its text, plus its image caption if asked)."""
    if captions and turn.caption:
        return f"{turn.text} [shared an image: {turn.caption}]".strip()
    return turn.text


def turn_documents(conv: Conversation, captions: bool = False) -> list[tuple[str, str]]:
    """``(dia_id, text)`` per ingested turn, in order: what the peers index for a turn.

    The text is what agentmem's indexes see for the turn's chat message
    (:func:`agentmem.write.indexer.index_text`: ``"Speaker: content"``), without the
    preceding-turn context agentmem adds to its own keyword index.
    """
    return [
        (turn.dia_id, index_text(text, turn.speaker or None))
        for session in conv.sessions
        for turn in session.turns
        if (text := _turn_text(turn, captions))
    ]


def _ingest(mem: AgentMemory, conv: Conversation, captions: bool) -> int:
    n = 0
    for session in conv.sessions:
        if not session.turns:
            continue
        m = mem.bind(
            TENANT, user_id=conv.sample_id, session_id=f"{conv.sample_id}:s{session.number}"
        )
        messages = []
        for i, turn in enumerate(session.turns):
            text = _turn_text(turn, captions)
            if not text:
                continue
            role = "assistant" if turn.speaker and turn.speaker == conv.speaker_b else "user"
            meta: dict[str, Any] = {"dia_id": turn.dia_id, "session": session.number}
            if turn.speaker:
                meta["speaker"] = turn.speaker
            messages.append(
                {
                    "role": role,
                    "content": text,
                    "metadata": meta,
                    "event_time": None
                    if session.start is None
                    else session.start + timedelta(seconds=i),
                }
            )
        m.add_messages(messages)
        n += len(messages)
    return n


class DiskEmbeddingCache:
    """An :class:`~agentmem.embeddings.Embedder` that keeps every vector it computes on disk.

    Keyed by model name and exact text (sha256), so a changed text (say, a new indexed-text
    format) is embedded afresh while unchanged ones are read back: repeated LoCoMo runs
    spend their time on retrieval, not on the model. A SQLite file ``embeddings.sqlite3``
    in ``path``; safe to share between the indexer thread and the caller.

    Example:
        >>> cache = DiskEmbeddingCache(OnnxMiniLMEmbedder(), "~/.cache/agentmem-locomo")  # doctest: +SKIP
    """

    def __init__(self, inner: Embedder, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.path = Path(path).expanduser()
        self.path.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path / "embeddings.sqlite3", check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def _key(self, text: str) -> str:
        raw = f"{self.inner.model_name}\x1f{text}".encode("utf-8", errors="surrogatepass")
        return hashlib.sha256(raw).hexdigest()

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        import numpy as np

        texts = list(texts)
        keys = [self._key(t) for t in texts]
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                found.update(
                    self._db.execute(
                        f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk
                    ).fetchall()
                )
        missing = [i for i, k in enumerate(keys) if k not in found]
        for i, k in enumerate(keys):
            if k in found:
                out[i] = np.frombuffer(found[k], dtype=np.float32)
        if missing:
            vectors = self.inner.embed_documents([texts[i] for i in missing])
            out[missing] = vectors
            with self._lock, self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                    [
                        (keys[i], vectors[j].astype(np.float32).tobytes())
                        for j, i in enumerate(missing)
                    ],
                )
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        return out

    def embed_query(self, text: str) -> FloatArray:
        vector: FloatArray = self.embed_documents([text])[0]
        return vector

    def close(self) -> None:
        with self._lock:
            self._db.close()


# -- the run ----------------------------------------------------------------------------------
def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


@dataclass
class LocomoReport:
    """Result of :func:`run_locomo`.

    Attributes:
        summary: JSON-ready figures (see :meth:`to_dict`).
        questions: one JSON-ready record per scored question: its evidence, and per mode the
            ranked turns (first 20), the rank of each evidence turn (None if not in the
            first 20) and its metrics.
    """

    summary: dict[str, Any]
    questions: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return self.summary

    def markdown(self) -> str:
        """The summary as Markdown tables."""
        s = self.summary
        lines = [
            "# LoCoMo evidence retrieval",
            "",
            f"Dataset `{s['dataset']}`: {s['conversations']} conversations, {s['turns']} turns, "
            f"{s['questions']['scored']} scored questions (categories 1-4).",
            "",
            f"Settings: top_k={s['settings']['top_k']}, min_score={s['settings']['min_score']}, "
            f"token_budget={s['settings']['token_budget']}, captions={s['settings']['captions']}, "
            f"embedder `{s['settings']['embedder']}`. Scored at turn granularity.",
            "",
            "| mode | " + " | ".join(METRICS) + " | p50 ms | p95 ms |",
            "|---|" + "---:|" * (len(METRICS) + 2),
        ]
        for mode, res in s["modes"].items():
            o = res["overall"]
            lat = res["latency_ms"]
            lines.append(
                f"| {mode} | "
                + " | ".join(f"{o[m]:.3f}" for m in METRICS)
                + f" | {lat['p50']:.1f} | {lat['p95']:.1f} |"
            )
        cats = [c for c in CATEGORIES if str(c) in next(iter(s["modes"].values()))["by_category"]]
        peers = s.get("peers") or {}
        if peers:
            lines += ["", "## Peers", ""]
            lines += [
                f"- `{name}`: {info['retriever']}; {info['status']}" for name, info in peers.items()
            ]
            lines += ["", f"Documents: {s['settings']['peer_documents']}."]
        deltas = s.get(f"hybrid_minus_peer_{DELTA_METRIC}") or {}
        if deltas:
            lines += [
                "",
                "## agentmem hybrid Recall@10 minus peer Recall@10",
                "",
                "| peer | all | " + " | ".join(f"{c} {CATEGORIES[c]}" for c in cats) + " |",
                "|---|---:|" + "---:|" * len(cats),
            ]
            for name, d in deltas.items():
                lines.append(
                    f"| {name} | {d['overall']:+.3f} | "
                    + " | ".join(f"{d['by_category'][str(c)]:+.3f}" for c in cats)
                    + " |"
                )
        lines += ["", "## Per category (Recall@10 / NDCG@10)", ""]
        lines.append("| mode | " + " | ".join(f"{c} {CATEGORIES[c]} (n)" for c in cats) + " |")
        lines.append("|---|" + "---:|" * len(cats))
        for mode, res in s["modes"].items():
            cells = []
            for c in cats:
                r = res["by_category"][str(c)]
                cells.append(f"{r['recall@10']:.3f} / {r['ndcg@10']:.3f} ({r['n']})")
            lines.append(f"| {mode} | " + " | ".join(cells) + " |")
        lines += ["", "## Per category, all metrics", ""]
        lines.append("| mode | category | n | " + " | ".join(METRICS) + " |")
        lines.append("|---|---|---:|" + "---:|" * len(METRICS))
        for mode, res in s["modes"].items():
            for c in cats:
                r = res["by_category"][str(c)]
                lines.append(
                    f"| {mode} | {c} {CATEGORIES[c]} | {r['n']} | "
                    + " | ".join(f"{r[m]:.3f}" for m in METRICS)
                    + " |"
                )
        t = s["timing_s"]
        q = s["questions"]
        peer_index = f", peer indexes {t['peer_index']:.1f} s" if t.get("peer_index") else ""
        lines += [
            "",
            f"Wall time {t['total']:.1f} s (ingest {t['ingest']:.1f} s, indexing {t['index']:.1f} s, "
            f"queries {t['queries']:.1f} s{peer_index}).",
            "",
            f"Skipped: {q['skipped']}.",
            "",
        ]
        return "\n".join(lines)

    def rich_table(self) -> Any:
        """The overall and per-category figures as a :class:`rich.table.Table`."""
        from rich.table import Table

        s = self.summary
        table = Table(
            title=f"LoCoMo evidence retrieval ({s['questions']['scored']} questions, "
            f"{s['turns']} turns, {s['timing_s']['total']:.1f} s)"
        )
        table.add_column("mode", no_wrap=True)
        table.add_column("category", no_wrap=True)
        table.add_column("n", justify="right")
        for m in METRICS:
            table.add_column(_SHORT[m], justify="right")
        table.add_column("p50 ms", justify="right")
        for mode, res in s["modes"].items():
            rows = [("all", res["overall"])] + [
                (f"{c} {CATEGORIES[int(c)]}", r) for c, r in res["by_category"].items()
            ]
            for i, (cat, r) in enumerate(rows):
                table.add_row(
                    mode if i == 0 else "",
                    cat,
                    str(r["n"]),
                    *(f"{r[m]:.3f}" for m in METRICS),
                    f"{res['latency_ms']['p50']:.1f}" if i == 0 else "",
                    end_section=i == len(rows) - 1,
                )
        return table

    def rich_deltas(self) -> Any:
        """agentmem hybrid Recall@10 minus each peer's, as a :class:`rich.table.Table`.

        None when the run had no peer or no hybrid mode.
        """
        from rich.table import Table

        deltas = self.summary.get(f"hybrid_minus_peer_{DELTA_METRIC}") or {}
        if not deltas:
            return None
        cats = list(self.summary["modes"]["hybrid"]["by_category"])
        table = Table(title="agentmem hybrid R@10 minus peer R@10 (> 0: agentmem ahead)")
        table.add_column("peer", no_wrap=True)
        table.add_column("all", justify="right")
        for c in cats:
            table.add_column(f"{c} {CATEGORIES[int(c)]}", justify="right")
        for name, d in deltas.items():
            table.add_row(
                name, f"{d['overall']:+.3f}", *(f"{d['by_category'][c]:+.3f}" for c in cats)
            )
        return table

    def write(self, out_dir: str | os.PathLike[str]) -> list[Path]:
        """Write ``locomo.json``, ``locomo.md`` and ``locomo_questions.jsonl`` into ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / "locomo.json", out / "locomo.md", out / "locomo_questions.jsonl"]
        paths[0].write_text(json.dumps(self.summary, indent=2) + "\n", encoding="utf-8")
        paths[1].write_text(self.markdown(), encoding="utf-8")
        with paths[2].open("w", encoding="utf-8") as fh:
            for q in self.questions:
                fh.write(json.dumps(q, ensure_ascii=False) + "\n")
        return paths


def run_locomo(
    source: str | os.PathLike[str] | Sequence[Any],
    *,
    modes: Sequence[str] | None = None,
    limit_questions: int | None = None,
    samples: Sequence[str] | None = None,
    captions: bool = False,
    home: str | os.PathLike[str] | None = None,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    config: MemoryConfig | None = None,
    embed_cache: str | os.PathLike[str] | None = None,
    progress: ProgressFn | None = None,
) -> LocomoReport:
    """Ingest a LoCoMo file into a fresh store and score evidence retrieval per mode.

    Args:
        source: Path of a LoCoMo JSON file, or its parsed JSON list.
        modes: Any of :data:`ALL_MODES` (``hybrid``, ``keyword``, ``vector``, ``langchain``,
            ``llamaindex``); default all of them. A peer mode whose packages are not
            installed, or that fails to build, is left out and reported in
            ``summary["peers"]``; asking only for peers that cannot run is an error.
        limit_questions: Score at most this many questions (file order); conversations left
            without questions are not ingested.
        samples: Only these ``sample_id``s.
        captions: Append image captions to turn texts.
        home: Data dir to use (must be new or empty); default a temporary dir, removed after.
        embedder, reranker, config: Passed to :class:`~agentmem.AgentMemory`.
        embed_cache: Directory of an on-disk embedding cache (see
            :class:`DiskEmbeddingCache`): repeated runs embed only texts they have not seen.
            Latencies then exclude the model time of cached queries.
        progress: ``progress(stage, done, total)`` callback.
    """
    modes = list(dict.fromkeys(ALL_MODES if modes is None else modes))
    unknown = set(modes) - set(ALL_MODES)
    if unknown or not modes:
        raise ValidationError(
            "modes", f"must be a non-empty subset of {ALL_MODES}, got {list(modes)}"
        )
    if limit_questions is not None and limit_questions < 1:
        raise ValidationError("limit_questions", "must be a positive integer")
    started = time.perf_counter()
    convs = load_locomo(source)
    if samples:
        wanted = set(samples)
        missing = wanted - {c.sample_id for c in convs}
        if missing:
            raise ValidationError("samples", f"not in the file: {sorted(missing)}")
        convs = [c for c in convs if c.sample_id in wanted]
    peers = _peer_plan([m for m in modes if m in PEER_MODES])
    modes = [m for m in modes if m not in peers or peers[m]["status"] == "ok"]
    if not modes:
        raise ValidationError(
            "modes",
            "none of the requested modes can run: "
            + "; ".join(f"{name}: {info['status']}" for name, info in peers.items()),
        )
    skipped: dict[str, int] = defaultdict(int)
    for c in convs:
        for key, n in c.skipped.items():
            skipped[key] += n
    total_scored = sum(len(c.questions) for c in convs)
    plan: list[tuple[Conversation, tuple[Question, ...]]] = []
    budget = limit_questions if limit_questions is not None else total_scored
    for c in convs:
        qs = c.questions[: max(budget, 0)]
        budget -= len(qs)
        if qs:
            plan.append((c, qs))
    if limit_questions is not None:
        skipped["over_limit"] = total_scored - sum(len(qs) for _, qs in plan)

    disk_cache: DiskEmbeddingCache | None = None
    if embed_cache is not None:
        base = embedder if embedder is not None else default_embedder()
        inner = base.inner if isinstance(base, CachedEmbedder) else base
        disk_cache = DiskEmbeddingCache(inner, embed_cache)
        embedder = CachedEmbedder(disk_cache)
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if home is None:
        tmp = tempfile.TemporaryDirectory(prefix="agentmem-locomo-")
        home = tmp.name
    try:
        mem = AgentMemory(home, embedder=embedder, reranker=reranker, config=config)
        try:
            t0 = time.perf_counter()
            n_turns = 0
            for i, (c, _) in enumerate(plan):
                n_turns += _ingest(mem, c, captions)
                if progress:
                    progress("ingest", i + 1, len(plan))
            t1 = time.perf_counter()
            mem.flush()
            t2 = time.perf_counter()
            questions, latencies, modes, peer_s = _ask(
                mem, plan, modes, progress, peers=peers, captions=captions
            )
            t3 = time.perf_counter()
            embedder_name = mem.embedder.model_name
        finally:
            mem.close()
    finally:
        if tmp is not None:
            tmp.cleanup()
        if disk_cache is not None:
            disk_cache.close()

    summary: dict[str, Any] = {
        "dataset": str(source) if isinstance(source, str | os.PathLike) else "<in-memory>",
        "conversations": len(plan),
        "turns": n_turns,
        "questions": {
            "scored": len(questions),
            "by_category": {
                str(c): sum(1 for q in questions if q["category"] == c)
                for c in CATEGORIES
                if any(q["category"] == c for q in questions)
            },
            "skipped": dict(sorted(skipped.items())),
        },
        "settings": {
            "top_k": TOP_K,
            "min_score": MIN_SCORE,
            "token_budget": TOKEN_BUDGET,
            "captions": captions,
            "embedder": embedder_name,
            "reranker": getattr(reranker, "name", None) if reranker is not None else None,
            "roles": "speaker_a=user, speaker_b=assistant",
            "embed_cache": None
            if disk_cache is None
            else {
                "path": str(disk_cache.path),
                "hits": disk_cache.hits,
                "misses": disk_cache.misses,
            },
        },
        "modes": {mode: _aggregate(questions, mode, latencies[mode]) for mode in modes},
        "timing_s": {
            "ingest": round(t1 - t0, 3),
            "index": round(t2 - t1, 3),
            "queries": round(t3 - t2 - peer_s, 3),
            "peer_index": round(peer_s, 3),
            "total": round(time.perf_counter() - started, 3),
        },
    }
    if peers:
        summary["peers"] = peers
        summary["settings"]["peer_documents"] = (
            "one per turn of the question's conversation: speaker-prefixed turn text "
            "(agentmem's index_text, no preceding-turn context); k=20; agentmem's embedder"
        )
        if "hybrid" in summary["modes"]:
            summary[f"hybrid_minus_peer_{DELTA_METRIC}"] = _deltas(summary["modes"])
    return LocomoReport(summary=summary, questions=questions)


def _peer_plan(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per requested peer: its pipeline and ``status`` (``ok`` or ``skipped: <why>``)."""
    if not names:
        return {}
    from ..bench import peers as peer_lib

    status = peer_lib.peer_status()
    return {
        name: {
            "retriever": peer_lib.RETRIEVERS[name],
            "status": "ok" if status.get(name) is None else f"skipped: {status[name]}",
        }
        for name in names
    }


def _deltas(modes: Mapping[str, Any]) -> dict[str, Any]:
    """Hybrid's :data:`DELTA_METRIC` minus each peer's, overall and per category."""
    hybrid = modes["hybrid"]
    out: dict[str, Any] = {}
    for name, res in modes.items():
        if name not in PEER_MODES:
            continue
        out[name] = {
            "overall": round(hybrid["overall"][DELTA_METRIC] - res["overall"][DELTA_METRIC], 4),
            "by_category": {
                c: round(r[DELTA_METRIC] - res["by_category"][c][DELTA_METRIC], 4)
                for c, r in hybrid["by_category"].items()
            },
        }
    return out


class _PeerIndexes:
    """The peer pipelines of one conversation: built on its turns, closed after its questions."""

    def __init__(
        self,
        mem: AgentMemory,
        conv: Conversation,
        names: Sequence[str],
        work: Path,
        captions: bool,
    ) -> None:
        from ..bench import peers as peer_lib

        self._lib = peer_lib
        docs = turn_documents(conv, captions)
        self.dia_ids = [dia for dia, _ in docs]
        texts = [text for _, text in docs]
        self.searches: dict[str, Callable[[str], list[int]]] = {}
        self.failed: dict[str, str] = {}
        self.build_s: dict[str, float] = {}
        self._clients: list[Any] = []
        t = time.perf_counter()
        # embedded once through the run's embedder (the disk cache, when there is one, holds
        # the vectors agentmem's own index computed for these texts), shared by every peer
        vectors = mem.embedder.embed_documents(texts)
        self.embed_s = time.perf_counter() - t
        shared = peer_lib.PrecomputedEmbedder(mem.embedder, texts, vectors)
        for name in names:
            t = time.perf_counter()
            try:
                # k capped at the corpus (LlamaIndex's BM25 warns otherwise); same hits
                k = min(TOP_K, len(texts))
                search, client = peer_lib.BUILDERS[name](work / name, texts, shared, k)
            except Exception as exc:  # a peer that fails to build is reported, not fatal
                self.failed[name] = f"failed to build: {type(exc).__name__}: {exc}"[:300]
                continue
            self.searches[name] = search
            self._clients.append(client)
            self.build_s[name] = time.perf_counter() - t

    def search(self, name: str, query: str) -> list[dict[str, Any]]:
        """The peer's hits as metadata carrying their turn's ``dia_id``, best first."""
        return [{"dia_id": self.dia_ids[i]} for i in self.searches[name](query)[:TOP_K]]

    def close(self) -> None:
        for client in self._clients:
            self._lib.close_client(client)
        self._clients.clear()


def _ask(
    mem: AgentMemory,
    plan: Sequence[tuple[Conversation, tuple[Question, ...]]],
    modes: Sequence[str],
    progress: ProgressFn | None,
    *,
    peers: dict[str, dict[str, Any]] | None = None,
    captions: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, list[float]], list[str], float]:
    """Ask every question in every mode (hybrid first, so its query embedding is uncached).

    Peer modes are built per conversation, before its questions; one that fails to build
    is dropped from the run (its figures so far removed) and its ``peers`` entry says why.
    Returns (records, latencies, the modes that ran, seconds spent building peer indexes).
    """
    modes = list(modes)
    peers = peers if peers is not None else {}
    latencies: dict[str, list[float]] = {m: [] for m in modes}
    records: list[dict[str, Any]] = []
    total = sum(len(qs) for _, qs in plan)
    done = 0
    limit = max(TOP_K, mem.config.candidates)
    peer_s = 0.0
    for conv, qs in plan:
        m = mem.bind(TENANT, user_id=conv.sample_id, session_id=QUERY_SESSION)
        with contextlib.ExitStack() as stack:
            index = _open_peers(mem, conv, modes, peers, captions, stack)
            if index is not None:
                peer_s += index.embed_s + sum(index.build_s.values())
                for name, why in index.failed.items():
                    peers[name]["status"] = why
                    modes.remove(name)
                    del latencies[name]
                    for earlier in records:
                        earlier["modes"].pop(name, None)
            for q in qs:
                rec: dict[str, Any] = {
                    "sample_id": q.sample_id,
                    "qa_index": q.index,
                    "category": q.category,
                    "question": q.question,
                    "evidence": list(q.evidence),
                    "dropped_evidence": list(q.dropped),
                    "modes": {},
                }
                for mode in modes:
                    t = time.perf_counter()
                    if mode == "hybrid":
                        metas = _hybrid(m, q.question)
                    elif mode in PEER_MODES:
                        assert index is not None
                        metas = index.search(mode, q.question)
                    else:
                        metas = single_retriever_search(mem, m.identity, q.question, mode, limit)
                    latencies[mode].append((time.perf_counter() - t) * 1000)
                    ranked = ranked_turns((hit_dia_ids(md) for md in metas), max(KS))
                    ranks = {e: (ranked.index(e) + 1 if e in ranked else None) for e in q.evidence}
                    rec["modes"][mode] = {
                        "turns": ranked,
                        "evidence_ranks": ranks,
                        **{k: round(v, 6) for k, v in _score(ranked, q.evidence).items()},
                    }
                records.append(rec)
                done += 1
                if progress:
                    progress("questions", done, total)
    return records, latencies, modes, peer_s


def _open_peers(
    mem: AgentMemory,
    conv: Conversation,
    modes: Sequence[str],
    peers: dict[str, dict[str, Any]],
    captions: bool,
    stack: contextlib.ExitStack,
) -> _PeerIndexes | None:
    """Build the conversation's peer indexes (closed and removed when ``stack`` exits)."""
    names = [mode for mode in modes if mode in PEER_MODES]
    if not names:
        return None
    work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agentmem-locomo-peers-")))
    index = _PeerIndexes(mem, conv, names, work, captions)
    stack.callback(index.close)
    for name, secs in index.build_s.items():
        info = peers[name]
        info["build_s"] = round(info.get("build_s", 0.0) + secs, 3)
        info["documents"] = info.get("documents", 0) + len(index.dia_ids)
    return index


def _aggregate(
    questions: Sequence[Mapping[str, Any]], mode: str, latencies: Sequence[float]
) -> dict[str, Any]:
    def block(qs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(qs)}
        for metric in METRICS:
            out[metric] = round(_mean([q["modes"][mode][metric] for q in qs]), 4)
        return out

    by_cat = {
        str(c): {"name": name, **block([q for q in questions if q["category"] == c])}
        for c, name in CATEGORIES.items()
        if any(q["category"] == c for q in questions)
    }
    return {
        "overall": block(questions),
        "by_category": by_cat,
        "latency_ms": {
            "p50": round(_percentile(latencies, 0.5), 2),
            "p95": round(_percentile(latencies, 0.95), 2),
            "mean": round(_mean(latencies), 2),
        },
    }


# -- command line (``agentmem eval --locomo FILE``; the eval command calls these) ---------------
def add_arguments(parser: Any) -> None:
    """LoCoMo options of ``agentmem eval`` (``--locomo`` itself is added by the command)."""
    group = parser.add_argument_group("LoCoMo (with --locomo)")
    group.add_argument(
        "--limit-questions",
        metavar="N",
        type=int,
        default=None,
        help="score at most N questions (file order); for quick runs",
    )
    group.add_argument(
        "--modes",
        default=None,
        help=(
            f"comma-separated subset of {','.join(ALL_MODES)} (default: all; the peers "
            "langchain and llamaindex need the bench extra and are skipped, with a note, "
            "when it is not installed)"
        ),
    )
    group.add_argument(
        "--sample",
        action="append",
        metavar="ID",
        default=None,
        help="only this sample_id (repeatable)",
    )
    group.add_argument(
        "--embed-cache",
        metavar="DIR",
        type=Path,
        default=None,
        help="keep embeddings in DIR across runs (repeat runs skip the model for known texts)",
    )
    group.add_argument(
        "--captions",
        action="store_true",
        help="append shared images' captions to the turn text ([shared an image: ...])",
    )


def run_cli(args: Any) -> int:
    """Run ``agentmem eval --locomo FILE`` from parsed arguments; exit status 0.

    Uses ``args.locomo``, ``json``, ``out`` (writes ``locomo.json``, ``locomo.md`` and
    ``locomo_questions.jsonl``), ``workdir`` (keep the store there), ``mlflow`` and the
    options of :func:`add_arguments`.
    """
    from ..cli._common import Output, shared_embedder

    out = Output.from_args(args)
    raw_modes = getattr(args, "modes", None)
    modes = None if raw_modes is None else [m.strip() for m in str(raw_modes).split(",")]
    if modes is not None:
        modes = [m for m in modes if m]
    workdir = getattr(args, "workdir", None)
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
        if any(Path(workdir).iterdir()):
            raise ValidationError("workdir", f"{workdir} is not empty")
    with out.progress("LoCoMo", total=None) as update:

        def progress(stage: str, done: int, total: int) -> None:
            update(done, total)

        report = run_locomo(
            args.locomo,
            modes=modes,
            limit_questions=getattr(args, "limit_questions", None),
            samples=getattr(args, "sample", None),
            captions=bool(getattr(args, "captions", False)),
            home=workdir,
            embedder=shared_embedder(),
            embed_cache=getattr(args, "embed_cache", None),
            progress=progress,
        )
    if out.json:
        out.result(report.to_dict())
    else:
        out.print(report.rich_table())
        deltas = report.rich_deltas()
        if deltas is not None:
            out.print(deltas)
        q = report.summary["questions"]
        out.print(f"skipped: {q['skipped']}")
    for name, info in (report.summary.get("peers") or {}).items():
        if info["status"] != "ok":
            out.note(f"peer {name}: {info['status']}")
    if getattr(args, "out", None) is not None:
        paths = report.write(args.out)
        out.note("wrote " + ", ".join(str(p) for p in paths))
    mlflow_dir = getattr(args, "mlflow", None)
    if mlflow_dir is not None:
        tracking = (
            Path(mlflow_dir)
            if mlflow_dir
            else (Path(args.out) / "mlruns" if getattr(args, "out", None) else Path("mlruns"))
        )
        out.note(_log_mlflow(report, tracking))
    return 0


def _log_mlflow(report: LocomoReport, tracking: Path) -> str:
    try:
        import mlflow
    except ImportError:
        return "--mlflow: mlflow is not installed; skipped"
    mlflow.set_tracking_uri(tracking.resolve().as_uri())
    mlflow.set_experiment("agentmem-locomo")
    s = report.summary
    with mlflow.start_run() as run:
        mlflow.log_params({k: str(v) for k, v in s["settings"].items()})
        for mode, res in s["modes"].items():
            for metric in METRICS:
                mlflow.log_metric(f"{mode}.{metric}".replace("@", "_at_"), res["overall"][metric])
            for cat, r in res["by_category"].items():
                for metric in METRICS:
                    name = f"{mode}.cat{cat}.{metric}".replace("@", "_at_")
                    mlflow.log_metric(name, r[metric])
        for peer, d in (s.get(f"hybrid_minus_peer_{DELTA_METRIC}") or {}).items():
            name = f"hybrid_minus_{peer}.{DELTA_METRIC}".replace("@", "_at_")
            mlflow.log_metric(name, d["overall"])
        return f"logged to MLflow at {tracking} (run {run.info.run_id})"
