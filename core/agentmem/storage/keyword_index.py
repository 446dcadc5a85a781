"""Keyword search over the records: an on-disk Tantivy index with a stemming analyzer.

English text (``content``) is analysed by :func:`build_analyzer` (English stop words, English
stemmer); text in another language (``content_intl``, :mod:`.language`) by
:func:`build_intl_analyzer` (lowercased and folded, no stop words, never stemmed), CJK text cut
into character pairs first. Each row goes into one of the two fields; a query is analysed as
its own text is (:meth:`KeywordIndex.analyze`) and searched in both, so an identifier or a name
matches across languages, and a store of English text only scores exactly as with one field.

User and agent queries never go through Tantivy's query parser: the query text is run through
the same analyzer as the documents and turned into a boolean query of term queries (and of
phrase queries over analysed terms, for names said whole), so no character or word (``"``,
``:``, ``AND``, ``*``) can raise a syntax error or change the query's meaning. Identity filters are term queries on raw (untokenized) fields.
Every IDF a search scores with is the querying tenant's, never the whole index's (see
:mod:`.keyword_stats`).

One writer owns the index (the background indexer); ``commit()`` is followed by ``reload()``
so searchers see new documents.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import tantivy

from ..errors import StorageError
from .datadir import writable
from .keyword_stats import (
    TEXT_FIELDS,
    CountCache,
    TenantIdf,
    TenantStats,
    tenant_stats,
    text_pairs,
)
from .language import cjk_bigrams, language

ANALYZER = "agentmem_en"
INTL_ANALYZER = "agentmem_intl"

#: Common English function words: dropped from documents and queries alike, so a question
#: like "where do I live" searches for "live".
STOPWORDS: frozenset[str] = frozenset(
    """a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could did didn do does doesn doing don
    down during each few for from further had hadn has hasn have haven having he her here
    hers herself him himself his how i if in into is isn it its itself just let me more most
    my myself no nor not now of off on once only or other ought our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was wasn we were weren what
    when where which while who whom why will with won would you your yours yourself
    yourselves ll re ve s t d m""".split()
)

_FIELDS_RAW = ("id", "tenant", "partition", "session", "kind", "memory_type", "scope")


def build_analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.custom_stopword(sorted(STOPWORDS)))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def build_intl_analyzer() -> tantivy.TextAnalyzer:
    """Text that is not English: lowercased and folded, never stemmed (after
    :func:`~.language.cjk_bigrams` for CJK text)."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name in _FIELDS_RAW:
        builder.add_text_field(name, stored=(name == "id"), tokenizer_name="raw")
    builder.add_text_field("content", stored=False, tokenizer_name=ANALYZER)
    builder.add_text_field("content_intl", stored=False, tokenizer_name=INTL_ANALYZER)
    return builder.build()


class KeywordIndexFormatError(StorageError):
    """The keyword index on disk has the schema of another agentmem version (rebuilt from
    the records)."""


def prepared(text: str) -> tuple[str, str]:
    """(the field, the text as the field's analyzer takes it) of a row's or query's text."""
    lang = language(text)
    if lang == "en":
        return "content", text
    return "content_intl", cjk_bigrams(text) if lang == "cjk" else text


@dataclass(frozen=True, slots=True)
class KeywordDoc:
    id: str
    tenant: str
    partition: str
    session: str
    kind: str
    memory_type: str
    scope: str
    content: str


@dataclass(frozen=True, slots=True)
class KeywordFilter:
    """Rows a keyword search may return: one tenant, some partitions, optional equalities."""

    tenant: str
    partitions: tuple[str, ...]
    session: str | None = None
    not_session: str | None = None
    scopes: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    memory_types: tuple[str, ...] | None = None


class KeywordIndex:
    """Tantivy index of record contents.

    Example:
        >>> idx = KeywordIndex(tmp_path / "keywords")  # doctest: +SKIP
        >>> idx.add([KeywordDoc(...)]); idx.commit()  # doctest: +SKIP
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        #: Opened for searching only: no writer, nothing created or changed in ``path``.
        self.read_only = read_only
        self.analyzer = build_analyzer()
        self.intl_analyzer = build_intl_analyzer()
        self._schema = _schema()
        self._lock = threading.Lock()
        #: Counts behind the tenants' keyword statistics (see :mod:`.keyword_stats`).
        self._counts = CountCache()
        self._writer: tantivy.IndexWriter | None = None
        self._dirty = False  # writes not yet committed
        self._closed = False
        #: A private dir standing in for an unwritable ``path`` (see :func:`_read_only_view`).
        self._view: Path | None = None
        try:
            if read_only:
                if not tantivy.Index.exists(str(path)):
                    raise StorageError(f"there is no keyword index at {path}")
                if not writable(path):
                    self._view = _read_only_view(path)
                where = self._view or path
            else:
                path.mkdir(parents=True, exist_ok=True)
                where = path
            self._index = self._open_index(where)
            if self._view is not None:
                self._index.config_reader("Manual")  # the view's meta.json never changes
        except BaseException as exc:
            self._remove_view()
            if not isinstance(exc, ValueError | OSError):
                raise
            if "schema does not match" in str(exc):
                raise KeywordIndexFormatError(
                    f"keyword index at {path} was written by another version of agentmem "
                    f"(another schema): {exc}"
                ) from exc
            raise StorageError(f"cannot open keyword index at {path}: {exc}") from exc

    def _open_index(self, where: Path) -> tantivy.Index:
        index = tantivy.Index(self._schema, path=str(where), reuse=True)
        index.register_tokenizer(ANALYZER, build_analyzer())
        index.register_tokenizer(INTL_ANALYZER, build_intl_analyzer())
        return index

    def recreate_if_lost(self) -> bool:
        """Start an empty index in place of one whose files were deleted under this process
        (its ``meta.json`` is gone); True if it did. The caller queues every row again.

        Tantivy keeps writing into the open files of a deleted dir, and every commit fails
        from then on: without this, a process running when ``keywords/`` was removed would
        never index another row (and only a restart would find the loss).
        """
        with self._lock:
            if self._closed or self.read_only or (self.path / "meta.json").exists():
                return False
            # the old writer's files and lock are gone with the dir: nothing to commit or free
            self._writer = None
            self._dirty = False
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                self._index = self._open_index(self.path)
            except (ValueError, OSError) as exc:
                raise StorageError(f"cannot recreate keyword index at {self.path}: {exc}") from exc
            return True

    def _remove_view(self) -> None:
        view, self._view = self._view, None
        if view is not None:
            shutil.rmtree(view, ignore_errors=True)

    def analyze(self, text: str) -> list[str]:
        """The terms of ``text`` as its language's analyzer makes them (see the module
        docstring)."""
        field, prepared_text = prepared(text)
        analyzer = self.analyzer if field == "content" else self.intl_analyzer
        return list(analyzer.analyze(prepared_text))

    # -- writing (single owner) --------------------------------------------------------------
    def _w(self) -> tantivy.IndexWriter:
        if self._closed:
            raise StorageError(f"keyword index at {self.path} is closed")
        if self.read_only:
            raise StorageError(f"keyword index at {self.path} is open read-only")
        self._dirty = True
        if self._writer is None:
            try:
                self._writer = self._index.writer(heap_size=64_000_000, num_threads=1)
            except ValueError as exc:
                raise StorageError(f"cannot lock keyword index at {self.path}: {exc}") from exc
        return self._writer

    def add(self, docs: Sequence[KeywordDoc]) -> None:
        """Add (or replace, by id) documents; visible after :meth:`commit`."""
        with self._lock:
            writer = self._w()
            try:
                for doc in docs:
                    writer.delete_documents_by_term("id", doc.id)
                    writer.add_document(_document(doc))
            except ValueError as exc:  # e.g. its worker died on a deleted file
                raise StorageError(f"keyword index write failed: {exc}") from exc

    def delete(self, ids: Sequence[str]) -> None:
        with self._lock:
            writer = self._w()
            try:
                for id_ in ids:
                    writer.delete_documents_by_term("id", id_)
            except ValueError as exc:
                raise StorageError(f"keyword index write failed: {exc}") from exc

    def delete_all(self) -> None:
        with self._lock:
            self._w().delete_all_documents()

    def rewrite(self, batches: Iterable[Sequence[KeywordDoc]]) -> int:
        """Replace every document with ``batches``, in one commit, and delete the old files.

        A deleted document stays in its segment's files (terms, postings) until a merge
        rewrites the segment, and tantivy-py cannot ask for a merge; replacing every document
        empties every old segment, so the commit drops them all and the files go with them.
        Searchers see the old documents until the commit, then the new ones. Returns how many
        documents were written.
        """
        n = 0
        with self._lock:
            writer = self._w()
            try:
                writer.delete_all_documents()
                for batch in batches:
                    for doc in batch:
                        writer.add_document(_document(doc))
                        n += 1
                writer.commit()
                self._dirty = False
            except BaseException as exc:
                # nothing of a half-done rewrite may reach a later commit
                writer.rollback()
                if isinstance(exc, ValueError):
                    raise StorageError(f"keyword index rewrite failed: {exc}") from exc
                raise
        self._index.reload()
        with self._lock:
            if self._writer is not None:  # (None once closed meanwhile)
                self._writer.garbage_collect_files()
        return n

    def entries(self, ids: Sequence[str]) -> int:
        """How many of ``ids`` have an entry in the files (deleted-but-unmerged ones too)."""
        searcher = self._index.searcher()
        return sum(1 for id_ in ids if searcher.doc_freq("id", id_) > 0)

    def live_entries(self, partition: str, tenant: str | None = None) -> int:
        """Live entries under ``partition`` (of ``tenant``, or of every tenant)."""
        searcher = self._index.searcher()
        flt = (
            tantivy.Query.all_query()
            if tenant is None
            else tantivy.Query.term_query(self._schema, "tenant", tenant)
        )
        found = searcher.terms_with_prefix("partition", partition, filter_query=flt)
        return sum(int(n) for term, n in found if term == partition)

    def stored_entries(self, partition: str) -> int:
        """Entries under ``partition`` still in the files, live or deleted (a deleted entry
        stays until its segment is rewritten), of every tenant."""
        return self.doc_freq("partition", partition)

    def doc_freq(self, field: str, term: str) -> int:
        """Entries in the files whose ``field`` holds ``term`` (an analyzed term for
        ``content``), deleted ones included until their segment is rewritten."""
        return int(self._index.searcher().doc_freq(field, term))

    def commit(self) -> None:
        with self._lock:
            if self._writer is None:
                return
            try:
                self._writer.commit()
            except ValueError as exc:
                raise StorageError(f"keyword index commit failed: {exc}") from exc
            self._dirty = False
        self._index.reload()

    def close(self) -> None:
        """Commit what is left, wait for segment merges, and stop following the files.

        Once this returns nothing touches the directory, so it can be removed at once: the
        reader stops watching ``meta.json`` (its reload would otherwise recreate the meta
        lock file up to half a second later), and a commit with nothing to commit is
        skipped (it would rewrite ``meta.json`` and wake that watcher).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._writer is not None:
                try:
                    if self._dirty:
                        self._writer.commit()
                    self._writer.wait_merging_threads()
                except ValueError:
                    pass
                self._writer = None
            with contextlib.suppress(ValueError):  # its dir was deleted: nothing to follow
                self._index.config_reader("Manual")
            self._remove_view()

    # -- reading -----------------------------------------------------------------------------
    def num_docs(self) -> int:
        return int(self._index.searcher().num_docs)

    def all_ids(self, tenant: str | None = None) -> set[str]:
        """Ids of every live entry (of ``tenant``, or of every tenant)."""
        searcher = self._index.searcher()
        n = searcher.num_docs
        if n == 0:
            return set()
        query = (
            tantivy.Query.all_query()
            if tenant is None
            else tantivy.Query.term_query(self._schema, "tenant", tenant)
        )
        result = searcher.search(query, limit=n)
        return {searcher.doc(addr)["id"][0] for _, addr in result.hits}

    def query_terms(self, text: str) -> list[str]:
        """Distinct analyzed terms of a query, in order."""
        seen: dict[str, None] = {}
        for term in self.analyze(text):
            seen.setdefault(term, None)
        return list(seen)

    def tenant_stats(self, tenant: str, terms: Iterable[str]) -> TenantStats:
        """``tenant``'s keyword statistics for ``terms`` (see :mod:`.keyword_stats`)."""
        searcher = self._index.searcher()
        return tenant_stats(searcher, self._schema, tenant, text_pairs(terms), cache=self._counts)

    def idf(self, terms: Sequence[str], tenant: str) -> dict[str, float]:
        """BM25-style inverse document frequency of each term over ``tenant``'s live rows."""
        return self.tenant_stats(tenant, terms).idf(terms)

    def search(
        self,
        terms: Sequence[str],
        flt: KeywordFilter,
        limit: int,
        boosts: Mapping[str, float] | None = None,
        phrases: Sequence[Sequence[str]] = (),
        stats: TenantStats | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 search for any of ``terms`` among the rows ``flt`` allows: (id, score) best
        first; a term's score is multiplied by its entry in ``boosts``; a row with one of
        ``phrases`` (analysed terms, adjacent and in order) scores that phrase as well.

        Every IDF in the score is ``flt.tenant``'s (see :mod:`.keyword_stats`), counted here
        unless ``stats`` (of that tenant) has the counts."""
        if not terms or not flt.partitions:
            return []
        schema = self._schema
        must = tantivy.Occur.Must
        searcher = self._index.searcher()
        if not any(searcher.doc_freq("partition", p) for p in flt.partitions):
            return []  # nothing was ever indexed there (a dictionary lookup, no search)
        filters = self._filters(flt)
        wanted = text_pairs({*terms, *(t for p in phrases for t in p)})
        wanted += [pair for _, _, pair in filters if pair is not None]
        own = tenant_stats(searcher, schema, flt.tenant, wanted, stats, self._counts)
        idf = TenantIdf(searcher, own)
        boosts = boosts or {}

        def scaled(
            q: tantivy.Query, field: str, words: Sequence[str], by: float = 1.0
        ) -> tantivy.Query | None:
            factor = idf.factor(field, words)
            if factor is None:
                return None
            factor *= by
            return q if factor == 1.0 else tantivy.Query.boost_query(q, factor)

        # a field holding none of a query's terms is left out: it adds nothing to a score
        text = [
            scaled(tantivy.Query.term_query(schema, f, t), f, [t], boosts.get(t, 1.0))
            for f in TEXT_FIELDS
            for t in terms
        ]
        text += [
            scaled(tantivy.Query.phrase_query(schema, f, list(p)), f, p)
            for f in TEXT_FIELDS
            for p in phrases
        ]
        should = [(tantivy.Occur.Should, q) for q in text if q is not None]
        if not should:
            return []
        clauses = [(must, tantivy.Query.boolean_query(should))]
        for occur, q, pair in filters:
            clauses.append((occur, q if pair is None else scaled(q, pair[0], pair[1:]) or q))
        try:
            result = searcher.search(tantivy.Query.boolean_query(clauses), limit=limit, count=False)
        except ValueError as exc:
            raise StorageError(f"keyword search failed: {exc}") from exc
        return [(searcher.doc(addr)["id"][0], float(score)) for score, addr in result.hits]

    def _filters(
        self, flt: KeywordFilter
    ) -> list[tuple[tantivy.Occur, tantivy.Query, tuple[str, str] | None]]:
        """The clauses selecting the rows ``flt`` allows, each with the (field, value) of its
        term query when it is one: that scores the IDF of its term, which must be the
        tenant's too (a term set query scores a constant 1.0, an exclusion nothing)."""
        must = tantivy.Occur.Must
        out: list[tuple[tantivy.Occur, tantivy.Query, tuple[str, str] | None]] = []
        for field, values in (
            ("tenant", (flt.tenant,)),
            ("partition", flt.partitions),
            ("session", None if flt.session is None else (flt.session,)),
            ("not_session", None if flt.not_session is None else (flt.not_session,)),
            ("scope", flt.scopes),
            ("kind", flt.kinds),
            ("memory_type", flt.memory_types),
        ):
            if values is None:
                continue
            if field == "not_session":
                q = tantivy.Query.term_query(self._schema, "session", values[0])
                out.append((tantivy.Occur.MustNot, q, None))
            elif len(values) == 1:
                q = tantivy.Query.term_query(self._schema, field, values[0])
                out.append((must, q, (field, values[0])))
            else:
                out.append(
                    (must, tantivy.Query.term_set_query(self._schema, field, list(values)), None)
                )
        return out


def _read_only_view(path: Path) -> Path:
    """A private dir through which Tantivy reads the index in an unwritable ``path``.

    Opening an index takes a lock file beside its ``meta.json`` (created when missing, opened
    for writing when present), which read-only media refuse. The view holds copies of the
    small metadata files and links to the segment files, so no content is copied; Tantivy's
    lock files are made in the view.
    """
    view = Path(tempfile.mkdtemp(prefix="agentmem-keywords-"))
    try:
        for entry in path.iterdir():
            if entry.name.endswith(".lock"):
                continue
            if entry.name in ("meta.json", ".managed.json"):
                shutil.copyfile(entry, view / entry.name)  # one consistent list of segments
            else:
                (view / entry.name).symlink_to(entry)
    except BaseException:
        shutil.rmtree(view, ignore_errors=True)
        raise
    return view


def _document(doc: KeywordDoc) -> tantivy.Document:
    field, text = prepared(doc.content)
    return tantivy.Document(
        id=doc.id,
        tenant=doc.tenant,
        partition=doc.partition,
        session=doc.session,
        kind=doc.kind,
        memory_type=doc.memory_type,
        scope=doc.scope,
        **{field: text},
    )
