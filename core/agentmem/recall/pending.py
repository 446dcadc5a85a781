"""Read-your-writes: rows the indexes have not caught up with, scored by recall itself.

A write returns once its row is committed to the records store; the background indexer adds
it to Tantivy and Chroma shortly after (about 100 ms, longer during a bulk import). So that
the next recall sees it anyway, recall reads the searched partitions' pending rows from the
records store and scores them on the spot. It reads them before searching either index: the
indexer clears a row's pending flag only once the index shows the row, so a row it finishes
during the recall is found one way or the other. A pending row is scored by

- **keywords**: BM25 of the query terms, and of its name phrases, over the row's analysed
  text, with the IDF the keyword search uses (the tenant's: :mod:`..storage.keyword_stats`;
  length normalisation left out: no index statistics exist for a row not yet in it);
- **meaning**: the row embedded now and compared with the query vector (a small LRU keeps
  these vectors, so back-to-back recalls do not embed the same rows again).

Both see what the indexer will index: the text plus a chat message's restatement key
(:mod:`agentmem.write.keys`), computed when the row is read (kept in an LRU as well).

The work is bounded: at most ``pending_scan`` rows (the newest) are read and keyword-scored,
and at most a quarter of them embedded. A backlog past that (a bulk import, a node catching
up) is answered from what the indexes have plus the rows scored, and the result says
``degraded``. One exception: a query naming an identifier (an order number, a ticket id)
also gets the older backlog rows whose content names it, found by the records store
(``LIKE``) and scored the same way. Meaning rarely finds an identifier, so without them
"ticket INC-3LEW13" would miss its row until the keyword index reaches it. The lookup scans
the backlog: with 100,000 rows pending on SQLite such a recall took 46 ms instead of 9.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..embeddings import Embedder, FloatArray
from ..phrasing import words
from ..speakers import metadata_speaker
from ..storage.records import RecordStore
from ..storage.rows import Brief, Row
from ..write.index_text import index_text, keyword_text, row_key
from ..write.keys import with_key

#: BM25 term-frequency saturation (Tantivy's default).
BM25_K1 = 1.2
#: Vectors of pending rows kept between recalls.
VECTOR_CACHE_SIZE = 4096


@dataclass
class Pending:
    """The pending rows of the searched partitions, as recall sees them."""

    rows: list[tuple[Brief, bool, bool]] = field(default_factory=list)
    """(row, keyword entry missing, vector missing), newest first."""
    overflow: bool = False
    """More rows are pending than were read: results may miss some of them."""


def brief_of(row: Row, seq: int) -> Brief:
    """The light recall form of a stored row (``seq``: its write order)."""
    item = row.item
    metadata = item.metadata or {}
    return Brief(
        item.id,
        item.tenant_id,
        item.user_id,
        item.agent_id,
        item.session_id,
        item.kind,
        item.memory_type,
        item.scope,
        item.superseded_by,
        row.partition,
        row.tier,
        item.content,
        json.dumps(metadata, ensure_ascii=False),
        item.source_ref,
        item.event_time.isoformat(),
        seq,
        _metadata=metadata,
    )


class PendingScorer:
    """Reads and scores pending rows (one per recall engine)."""

    def __init__(self, records: RecordStore, embedder: Embedder, limit: int) -> None:
        self._records = records
        self._embedder = embedder
        self.limit = limit
        self._cache: OrderedDict[str, FloatArray] = OrderedDict()
        #: id -> (content, restatement key): the content is compared, so a row redacted
        #: since never keeps the key of what it said.
        self._keys: OrderedDict[str, tuple[str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def read(
        self, tenant_id: str, partitions: Sequence[str], identifiers: Sequence[str] = ()
    ) -> Pending:
        """The newest pending rows of ``partitions`` (at most ``limit``); past that backlog,
        also the older ones whose content names one of ``identifiers`` as a whole word (the
        query's words naming one thing exactly, as typed: see
        :func:`~agentmem.recall.text.identifier_words`)."""
        index = self._records.index
        if self.limit <= 0:  # scoring pending rows is switched off
            return Pending(overflow=bool(index.pending_in_partitions(tenant_id, partitions, 1)))
        found = index.pending_in_partitions(tenant_id, partitions, self.limit + 1)
        overflow = len(found) > self.limit
        found = found[: self.limit]
        if overflow and identifiers:
            seen = {seq for seq, _, _, _ in found}
            named = index.keyword_pending_naming(tenant_id, partitions, identifiers, self.limit)
            found += [f for f in named if f[0] not in seen]
        for _, row, _, _ in found:
            self._remember_key(row)
        return Pending(
            rows=[(brief_of(row, seq), kw, vec) for seq, row, kw, vec in found],
            overflow=overflow,
        )

    def _remember_key(self, row: Row) -> None:
        item = row.item
        with self._lock:
            known = self._keys.get(item.id)
            if known is not None and known[0] == item.content:
                self._keys.move_to_end(item.id)
                return
        key = row_key(row)
        with self._lock:
            self._keys[item.id] = (item.content, key)
            while len(self._keys) > VECTOR_CACHE_SIZE:
                self._keys.popitem(last=False)

    def key(self, row: Brief) -> str:
        """The restatement key of a row read by :meth:`read` ("" for none)."""
        with self._lock:
            known = self._keys.get(row.id)
        return known[1] if known is not None and known[0] == row.content else ""

    def keyword_scores(
        self,
        analyze: Callable[[str], list[str]],
        idf: dict[str, float],
        rows: Sequence[Brief],
        phrases: Mapping[tuple[str, ...], float],
    ) -> list[tuple[str, float]]:
        """(id, BM25) of the rows containing a query term, best first; a row saying one of
        ``phrases`` (analysed terms in order -> their summed IDF) scores it as well, as the
        keyword index's phrase search does."""
        out: list[tuple[str, float]] = []
        for row in rows:
            text = with_key(keyword_text(row.content, row.speaker), self.key(row))
            analysed = analyze(text)
            counts: dict[str, int] = {}
            for term in analysed:
                if term in idf:
                    counts[term] = counts.get(term, 0) + 1
            if counts:
                score = sum(idf[t] * _saturated(tf) for t, tf in counts.items())
                positioned: list[str | None] | None = None
                for phrase, weight in phrases.items():
                    if not _occurrences(analysed, phrase):
                        continue
                    # the index keeps a gap where the analyser dropped a word ("Caroline's
                    # sister": its "s"), so a phrase spanning one is not said there
                    positioned = _positioned(text, analyze) if positioned is None else positioned
                    said = _occurrences(positioned, phrase)
                    if said:
                        score += weight * _saturated(said)
                out.append((row.id, score))
        out.sort(key=lambda pair: pair[1], reverse=True)
        return out

    def vector_scores(self, query: FloatArray, rows: Sequence[Brief]) -> list[tuple[str, float]]:
        """(id, cosine) of the rows (embedding those not cached), best first."""
        with self._lock:
            missing = [r for r in rows if r.id not in self._cache]
        if missing:
            texts = [
                with_key(index_text(r.content, metadata_speaker(r.metadata)), self.key(r))
                for r in missing
            ]
            vectors = self._embedder.embed_documents(texts)
            with self._lock:
                for row, vec in zip(missing, vectors, strict=True):
                    self._cache[row.id] = vec
                while len(self._cache) > VECTOR_CACHE_SIZE:
                    self._cache.popitem(last=False)
        with self._lock:
            matrix = np.stack([self._cache[r.id] for r in rows])
        sims = matrix @ query
        out = [(r.id, float(s)) for r, s in zip(rows, sims.tolist(), strict=True)]
        out.sort(key=lambda pair: pair[1], reverse=True)
        return out


def _saturated(tf: int) -> float:
    """BM25's term-frequency factor (no length normalisation)."""
    return tf * (BM25_K1 + 1) / (tf + BM25_K1)


def _positioned(text: str, analyze: Callable[[str], list[str]]) -> list[str | None]:
    """The analysed terms of ``text`` at their positions in the keyword index: None where the
    analyser dropped a word (a stop word, an over-long word)."""
    out: list[str | None] = []
    for word in words(text):
        out.extend(analyze(word) or [None])
    return out


def _occurrences(terms: Sequence[str | None], phrase: Sequence[str]) -> int:
    """How often ``phrase`` occurs in ``terms`` as a contiguous run."""
    n = len(phrase)
    return sum(1 for i in range(len(terms) - n + 1) if tuple(terms[i : i + n]) == tuple(phrase))


def merge(
    ranked: list[tuple[str, float]], extra: Sequence[tuple[str, float]]
) -> list[tuple[str, float]]:
    """``ranked`` (best first) with ``extra`` hits placed by score (ids already in it are
    left where they are)."""
    if not extra:
        return ranked
    have = {i for i, _ in ranked}
    out = ranked + [(i, s) for i, s in extra if i not in have]
    out.sort(key=lambda pair: pair[1], reverse=True)
    return out
