"""Keyword statistics of one tenant: what its recall's IDF is counted over.

All tenants share one Tantivy index, and Tantivy's BM25 takes its statistics from the whole
index: how many documents there are (N) and how many hold a term (n). Left alone, what tenant
A stores would move the scores and order of tenant B's recall, and B could learn whether, and
how often, a word occurs in A's rows by recalling it beside a word of its own. So every IDF
recall uses (the keyword search's order and scores, the coverage feature, the scoring of rows
not indexed yet) is counted over the querying tenant's live documents only:
:func:`tenant_stats` counts them (one count search per term and field that holds it), and
:class:`TenantIdf` turns them into the per-query boosts that make Tantivy's term scores use
the tenant's IDF instead of its own. That goes for the filters too: a term query on the tenant,
the partition or the session scores its own IDF, added to every row it selects.

A store of one tenant with nothing deleted scores exactly as Tantivy alone does (every factor
is 1.0, and no boost is added). Counting live documents only also drops what Tantivy counts of
replaced and deleted entries until a merge rewrites their segment.

What stays index-wide: Tantivy's length normalisation divides a row's length by the average
length of its field over the index: every analysed token in ``content`` (or ``content_intl``)
in the files, deleted entries' included, over every document in the files, of every tenant.
Tantivy takes it from the index and lets no query give its own. That one number shifts how
much a tenant's short rows gain over its long ones: another tenant writing long or short rows
moves it, and so a tenant's scores, slightly; it tells how long the index's rows are on
average, never which words any row holds. A deployment that must hide even that gives each
tenant a data dir of its own.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import tantivy

#: The text fields (see :mod:`.keyword_index`): English rows, the others.
TEXT_FIELDS = ("content", "content_intl")


def bm25_idf(docs: int, holding: int) -> float:
    """BM25's inverse document frequency (Tantivy's formula) of a term ``holding`` of
    ``docs`` documents hold."""
    return math.log(1.0 + (docs - holding + 0.5) / (holding + 0.5))


@dataclass(frozen=True, slots=True)
class TenantStats:
    """A tenant's live documents, and how many of them hold each counted term, by field."""

    tenant: str
    docs: int
    holding: Mapping[tuple[str, str], int]
    """(field, term) -> the tenant's live documents holding ``term`` in ``field``."""

    def field_idf(self, field: str, term: str) -> float:
        return bm25_idf(self.docs, self.holding[field, term])

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """BM25 IDF of each term over the tenant's rows (a row holds its text in one field)."""
        return {t: bm25_idf(self.docs, sum(self.holding[f, t] for f in TEXT_FIELDS)) for t in terms}


def text_pairs(terms: Iterable[str]) -> list[tuple[str, str]]:
    """(field, term) of ``terms`` in every text field."""
    return [(f, t) for t in terms for f in TEXT_FIELDS]


class CountCache:
    """Counts of a tenant's live documents, kept while the index's files stay the same.

    The counts of a tenant's documents, and of those in one partition, run over long postings
    (0.6 ms for 25,000 of them) and repeat from one recall to the next. They are kept under a
    fingerprint of the files searched (live documents, segments, documents in the files):
    every commit that adds or deletes a document changes it, and a change clears them all. A
    commit whose merge happened to make up for it exactly would leave a tenant its counts of
    the commit before until the next one: never another tenant's.

    What it costs (100,000 bench rows of two tenants, the keyword side of a recall over two
    partitions, a loaded 2-core machine): with the counts kept, 2.2 -> 2.55 ms against the
    index-wide statistics; the first recall after a commit counts again (the tenant, its two
    partitions, the query's terms: about 2.3 ms more). A store of one tenant counts nothing
    (see :func:`tenant_stats`).
    """

    def __init__(self, limit: int = 50_000) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._files: tuple[int, int, int] | None = None
        self._found: dict[tuple[str, str, str], int] = {}

    def count(
        self,
        searcher: tantivy.Searcher,
        files: tuple[int, int, int],
        key: tuple[str, str, str],
        query: tantivy.Query,
    ) -> int:
        """Live documents matching ``query``, known by ``key`` in ``files``."""
        with self._lock:
            if files != self._files or len(self._found) >= self._limit:
                self._files, self._found = files, {}
            found = self._found.get(key)
        if found is None:
            found = _count(searcher, query)
            with self._lock:
                if files == self._files:
                    self._found[key] = found
        return found


def tenant_stats(
    searcher: tantivy.Searcher,
    schema: tantivy.Schema,
    tenant: str,
    pairs: Iterable[tuple[str, str]],
    known: TenantStats | None = None,
    cache: CountCache | None = None,
) -> TenantStats:
    """``tenant``'s live documents, and those holding each (field, term) of ``pairs`` (the
    counts ``known`` has for ``tenant`` are kept, and ``cache`` keeps those it counts).

    A term missing from the field's dictionary is not searched; nor is any when the tenant
    holds every entry in the files and none is deleted (a store of one tenant, merged): then
    the dictionary's counts are the tenant's.
    """
    must = tantivy.Occur.Must
    own = tantivy.Query.term_query(schema, "tenant", tenant)
    live = int(searcher.num_docs)
    files = (live, int(searcher.num_segments), in_files(searcher))
    whole = int(searcher.doc_freq("tenant", tenant)) == files[2] == live
    cache = cache or CountCache()

    def count(field: str, term: str, query: tantivy.Query) -> int:
        return cache.count(searcher, files, (tenant, field, term), query)

    if known is None or known.tenant != tenant:
        docs = live if whole else count("tenant", tenant, own)
        known = TenantStats(tenant, docs, {("tenant", tenant): docs})
    holding = dict(known.holding)
    for field, term in pairs:
        if (field, term) in holding:
            continue
        n = int(searcher.doc_freq(field, term)) if known.docs else 0
        if n and not whole:
            q = tantivy.Query.term_query(schema, field, term)
            n = count(field, term, tantivy.Query.boolean_query([(must, q), (must, own)]))
        holding[field, term] = n
    return TenantStats(tenant, known.docs, holding)


def in_files(searcher: tantivy.Searcher) -> int:
    """Every document in the files ``searcher`` reads, deleted ones included until their
    segment is merged away (Tantivy's N): each has exactly one term in a raw field."""
    return sum(int(n) for _, n in searcher.terms_with_prefix("kind", ""))


class TenantIdf:
    """The factors that turn Tantivy's IDF of a query in the files ``searcher`` reads into
    the tenant's (``stats``, which must hold every term asked about).

    Tantivy counts N over every document in the files and n over the entries of the term's
    postings, deleted documents included until their segment is merged away: both are read
    here exactly so, and a factor is exactly 1.0 when they equal the tenant's counts (a store
    of one tenant, nothing deleted).
    """

    def __init__(self, searcher: tantivy.Searcher, stats: TenantStats) -> None:
        self._searcher = searcher
        self._stats = stats
        self._in_files = in_files(searcher)

    def factor(self, field: str, terms: Sequence[str]) -> float | None:
        """Of a term query (one term) or a phrase query (Tantivy sums its terms' IDF); None
        when one of ``terms`` is missing from the field's dictionary (it matches nothing)."""
        holding = [int(self._searcher.doc_freq(field, t)) for t in terms]
        if not all(holding):
            return None
        own = sum(self._stats.field_idf(field, t) for t in terms)
        theirs = sum(bm25_idf(self._in_files, n) for n in holding)
        return 1.0 if own == theirs else own / theirs


def _count(searcher: tantivy.Searcher, query: tantivy.Query) -> int:
    """Live documents matching ``query``."""
    # unscored: scoring the tenant's postings took 40x as long (0.41 against 0.01 ms for
    # 10,000 of them); tantivy's type stubs lack SearchResult.count, which the binding has
    found = searcher.search(tantivy.Query.const_score_query(query, 0.0), limit=1, count=True)
    return int(found.count or 0)  # type: ignore[attr-defined]
