"""What a candidate's text says about a query: the text features of ranking, one row at a time.

For each candidate row, :class:`TextScorer` works out how many analysed terms it has, how much
of the query's IDF it covers, whether it names identifiers other than the query's, whether
the query names its speaker and whether it says a name the query gives (see :mod:`agentmem.recall.ranking` for how they are used). It
reads the row's analysed terms as the keyword indexer stored them, and analyses the text only
for a row the indexer has not reached yet. Each row is looked at once per query, so the rows
the keyword side found can be scored while the query is still being embedded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..phrasing import words
from ..speakers import resolve_speaker
from ..storage.rows import Brief
from ..write.index_text import analysed_terms
from .ranking import coverage

_DIGIT = re.compile(r"\d")


@dataclass(frozen=True, slots=True)
class TextEvidence:
    """The text features of one row for one query."""

    terms: int
    """Analysed terms of the row's keyword text (repeats included)."""
    coverage: float
    id_miss: float
    speaker_match: bool
    name_match: bool = False
    """The query names someone or something (a :func:`name_phrases` run) whose every term
    the row contains."""
    says_code: bool | None = None
    """The row says one of the query's codes (:func:`codes`; None: the query gives none)."""


class TextScorer:
    """Text evidence of rows for one query (``terms``: the query's distinct analysed terms,
    ``idf``: their IDF over the tenant's rows; ``phrases``: its :func:`name_phrases`;
    ``codes``: its :func:`codes`; ``compounds``: its :func:`compound_identifiers`)."""

    def __init__(
        self,
        terms: Sequence[str],
        idf: Mapping[str, float],
        analyze: Callable[[str], list[str]],
        phrases: Sequence[tuple[str, ...]] = (),
        codes: Sequence[Code] = (),
        compounds: frozenset[str] = frozenset(),
    ) -> None:
        self._idf = idf
        self._phrases = [set(p) for p in phrases]
        self._codes = codes
        self._analyze = analyze
        self._query_terms = set(terms)
        self._id_terms = identifier_terms(terms)
        self._compounds = compounds
        self._named: dict[str, bool] = {}  # speaker -> named in the query
        self._seen: dict[str, TextEvidence] = {}

    def prime(self, rows: Iterable[Brief]) -> None:
        """Work out the evidence of ``rows`` now (while the query is being embedded)."""
        for row in rows:
            self.evidence(row)

    def evidence(self, row: Brief) -> TextEvidence:
        found = self._seen.get(row.id)
        if found is None:
            found = self._seen[row.id] = self._evidence(row)
        return found

    def _evidence(self, row: Brief) -> TextEvidence:
        if row.kw_terms is not None and row.kw_term_count is not None:
            # stored by the keyword indexer: no analysis per candidate
            doc_set = set(row.kw_terms.split())
            n_terms = row.kw_term_count
        else:  # not indexed yet (read-your-writes), or an older data dir not yet filled in
            doc_terms = analysed_terms(self._analyze, row.content, row.speaker)
            doc_set = set(doc_terms)
            n_terms = len(doc_terms)
        cov = coverage(self._idf, doc_set) if self._idf else 0.0
        id_miss = 0.0
        id_terms, compounds = self._id_terms, self._compounds
        # (the row's identifiers are only looked for when the query names one: this runs for
        # every candidate of every recall)
        doc_ids = set(identifier_terms(doc_set)) if id_terms or compounds else set()
        own = compound_identifiers(row.content) if compounds else frozenset()
        if doc_ids - set(id_terms) or own - compounds:
            # The memory names identifiers of its own but not (all of) the query's: it is
            # about another order, ticket or host. A memory naming none, such as a refund
            # policy for "order 4711 refund", is not penalised.
            missing = sum(1 for t in id_terms if t not in doc_set and t not in doc_ids)
            id_miss = (missing + len(compounds - own)) / (len(id_terms) + len(compounds))
            if id_miss == 1.0:
                # The words around an identifier say nothing when the identifier itself
                # differs ("INV-2024-0412 was paid" for "is INV-2024-0498 paid?"), and
                # neither does the meaning of the whole, which those words dominate (the
                # engine then zeroes the cosine too).
                cov = 0.0
        speaker_match = False
        # a tool output speaks for no person ("Status: delivered" names nobody)
        role = "tool" if row.kind == "tool_output" else None
        speaker, _ = resolve_speaker(role, row.content, row.speaker)
        if self._query_terms and speaker is not None:
            named = self._named.get(speaker)
            if named is None:
                name = set(self._analyze(speaker))
                named = self._named[speaker] = bool(name) and name <= self._query_terms
            speaker_match = named
        name_match = any(p <= doc_set for p in self._phrases)
        says_code = any(says(c, doc_set) for c in self._codes) if self._codes else None
        return TextEvidence(n_terms, cov, id_miss, speaker_match, name_match, says_code)


def identifier_terms(terms: Iterable[str]) -> list[str]:
    """The terms that name one thing exactly: letters mixed with digits (``9f3c2ab``,
    ``jd0146``) or a number of three digits or more that is not a year (``4471``, ``0387``).
    Years and one- or two-digit numbers are left out: they are mostly dates and counts,
    which text states in many ways; so are ordinals and clock times. A number's plural is
    the number ("504s" is ``504``, "1990s" the year 1990)."""
    out = []
    for t in terms:
        if _DIGIT.search(t) is None:
            continue
        if _PLURAL_NUMBER.fullmatch(t):
            t = t[:-1]
        if t.isdigit() and (len(t) < 3 or (len(t) == 4 and t[:2] in ("19", "20"))):
            continue
        if _NOT_IDENTIFIER.fullmatch(t):
            continue
        out.append(t)
    return out


#: Terms mixing letters and digits that are dates and times, not names: ordinals ("21st"),
#: clock times ("9am", "10pm") and the joint of an ISO timestamp ("2024-05-21T09:00" gives
#: "21t09").
_NOT_IDENTIFIER = re.compile(r"\d{1,4}(?:st|nd|rd|th)|\d{1,2}(?:am|pm)|\d{1,2}t\d{1,2}")


#: A number's plural ("504s", "1990s").
_PLURAL_NUMBER = re.compile(r"\d+s")


def compound_identifiers(text: str) -> frozenset[str]:
    """The names ``text`` gives, as typed and lowercased, that say one thing exactly with
    fewer than three digits: a snake-case name (``STRIPE_WEBHOOK_SECRET``, ``parse_config``)
    or letters and a short number joined by hyphens (``db-replica-07``, ``KB-87-TKL``). The
    keyword tokenizer cuts them into words that say little alone (``secret``, ``07``), so
    :func:`identifier_terms` cannot see them; a row naming another one (``db-replica-03``)
    is about another host, variable or product."""
    out = set()
    for raw in text.split():
        if "_" in raw or "-" in raw:  # most words have neither: this runs over candidates
            word = raw.strip(_EDGE_PUNCTUATION).removesuffix("'s")
            if _COMPOUND.fullmatch(word):
                out.add(word.lower())
    return frozenset(out)


#: A snake-case name, or hyphen-joined parts one of which is a number of one or two digits
#: (letters first: "2024-05-21" is a date).
_COMPOUND = re.compile(r"[^\W\d_][^\W_]*(?:_[^\W_]+)+|[^\W\d_]+(?:-[^\W_]+)*-\d{1,2}(?:-[^\W_]+)*")


#: A code as rows may say it: for each of its parts, the terms that say that part (a row
#: says the code when it has one of each).
Code = tuple[frozenset[str], ...]


def codes(query: str, analyze: Callable[[str], list[str]]) -> list[Code]:
    """The codes ``query`` gives: words as typed that can only name one thing exactly, a
    ticket, an order, a commit, an error or a flight (``OPS-4478``, ``INV-2024-0499``,
    ``E1045``, ``9f3c2ac``, ``LH1239``, ``#100489``).

    A code has three digits or more and either a letter right before a digit, or letters
    and digits in parts joined by a hyphen, or ``#`` before a number. Amounts, quantities
    and dates are not codes, however many digits they have ("£400", "14,000 words", "$22k",
    "500mg", "2024-05-21T09:00", "COVID-19"): a number alone or with a unit after it says
    how much, not which one.

    Each part of a code (a run of letters or digits the analyser keeps) may be said as
    written or as analysed: a row in another language is analysed otherwise ("OPS" is
    ``op`` in English and ``ops`` unstemmed)."""
    out: list[Code] = []
    for raw in query.split():
        word = raw.strip(_EDGE_PUNCTUATION)
        if sum(ch.isdigit() for ch in word) < 3 or _DATE.match(word):
            continue
        hashed = _HASH_NUMBER.fullmatch(word) is not None
        parts = word.split("-")
        joined = (
            len(parts) > 1
            and any(p.isalpha() for p in parts)
            and any(_DIGIT.search(p) for p in parts)
        )
        if hashed or joined or _LETTER_DIGIT.search(word):
            forms = [frozenset({p.lower(), *kept}) for p in words(word) if (kept := analyze(p))]
            if forms:
                out.append(tuple(forms))
    return list(dict.fromkeys(out))


def says(code: Code, doc_terms: set[str]) -> bool:
    """Whether a row of analysed terms ``doc_terms`` says ``code`` (each part, one way)."""
    return all(not forms.isdisjoint(doc_terms) for forms in code)


#: What may stand around a code in a sentence ("(OPS-4478).").
_EDGE_PUNCTUATION = "\"'()[]{}<>.,;:!?"
#: A letter right before a digit ("E1045", "LH1239", "9f3c2ac"; not "500mg" or "22k").
_LETTER_DIGIT = re.compile(r"[^\W\d_]\d")
_HASH_NUMBER = re.compile(r"#\d+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def identifier_words(query: str, analyze: Callable[[str], list[str]]) -> list[str]:
    """The words of ``query``, as typed, whose analysed term is an identifier (see
    :func:`identifier_terms`): what the raw content of a row naming the same thing contains.
    The analysed term may not be in it ("SKU-42BY" is indexed as "sku" and the stemmed
    "42bi"; "CAFÉ9X" as "cafe9x")."""
    return [
        w
        for w in dict.fromkeys(words(query))
        if _DIGIT.search(w) is not None and identifier_terms(analyze(w))
    ]


#: A word starting with a letter, with what may open it and what may close it in a sentence
#: (a full stop included).
_CAPITALISED = re.compile(r"[\"'(\[]*([^\W\d_][\w'’.-]*?)([.,;:!?)\]\"]*)")
#: The closing marks that end a sentence.
_SENTENCE_END = re.compile(r"[.!?]")
#: Words whose full stop marks an abbreviation within a name ("Dr. Seuss", "St. Louis"), as
#: does an initial's ("J. R. R. Tolkien").
_TITLES = frozenset("Dr Mr Mrs Ms Mx Prof St Mt Ft Jr Sr Sgt Capt Gen Col Lt Rev".split())


def name_phrases(query: str, analyze: Callable[[str], list[str]]) -> list[tuple[str, ...]]:
    """The analysed terms of each run of capitalised words in ``query`` giving two terms or
    more (a full name, a place, a product, a code: "Bongani Park", "New York", "GitHub
    Actions", "Émile Zola", "MED-FWWUGJ"), for keyword search to reward the rows that say
    them together.

    A word the analyser drops (a stop word: "Did", "What"), a word that is not capitalised,
    and a closing mark (",", ")", a full stop but an initial's or a title's: "Dr. Seuss")
    end a run; so does a word the index holds with
    a gap after it ("Caroline's": its "s" is dropped, so "Caroline's Sister" is no phrase in
    the index) and a word with a gap inside ("Rock-and-Roll") is in no run. A run that opens
    a sentence may be capitalised only for that ("Describe Bongani Park"), so it also gives
    the run without its first word; a phrase no row says ("describ bongani park") adds
    nothing."""
    runs: list[tuple[str, ...]] = []
    run: list[list[str]] = []  # the analysed terms of each word of the current run
    run_opens = False  # the run's first word opens a sentence
    opens = True  # the next word opens a sentence

    def close() -> None:
        for part in (run, run[1:] if run_opens else []):
            terms = tuple(t for word in part for t in word)
            if len(terms) >= 2:  # two words, or one of two parts ("MED-FWWUGJ")
                runs.append(terms)
        run.clear()

    for word in query.split():
        m = _CAPITALISED.fullmatch(word)
        capital = m is not None and m.group(1)[0].isupper()
        parts = [analyze(w) for w in words(m.group(1))] if m is not None and capital else []
        kept = [i for i, terms in enumerate(parts) if terms]
        whole = bool(kept) and kept == list(range(len(kept)))  # no gap before a kept part
        if whole:
            if not run:
                run_opens = opens
            run.append([t for terms in parts for t in terms])
        closing = m.group(2) if m is not None else ""
        abbreviated = m is not None and closing == "." and _abbreviation(m.group(1))
        if not whole or len(kept) < len(parts) or (closing and not abbreviated):
            close()
        opens = _SENTENCE_END.search(word[-1:]) is not None and not abbreviated
    close()
    return list(dict.fromkeys(runs))


def _abbreviation(word: str) -> bool:
    """Whether ``word`` followed by a full stop is an initial or a title ("J.", "Dr.")."""
    return (len(word) == 1 and word.isupper()) or word in _TITLES
