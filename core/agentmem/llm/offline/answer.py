"""The offline answer: the one sentence of the evidence that best answers the question.

Extractive, so it can only be as right as the evidence, and it is careful about which
sentence it takes:

- **never the question itself**: sentences that are questions, or that say nothing the
  question does not already say ("Where do I live?" stored as a message), are not answers;
- **never a superseded statement**: when one offered sentence says an attribute changed
  ("we raised the budget to 4500 euros") and another states the same attribute, the older
  statement is dropped (the store retires superseded memories before this; this guards
  raw messages and memories without a shared topic key);
- **from the best evidence**: sentences are ranked by embedding cosine to the question (plus
  a little word overlap, and :data:`ANSWER_TYPE_BONUS` when the sentence has what the
  question asks for: a date for "when", a number for "how many", a place for "where", a
  name for "who"), ties going to the evidence offered first (the caller offers derived
  memories first, then by recall rank); thanks, greetings and remarks to the listener are
  no answers; a chat message offered as "Maria: I met Jean" is read as "Maria met Jean";
  a sentence that opens with a pronoun ("It was in Lisbon") brings the one before along;
- **asked in the first person**: "where do I live?" is also compared as "where does the
  user live?", since memories are stored in the third person;
- **empty when nothing is relevant**: cosine below :data:`ANSWER_MIN_COSINE` (or, without an
  embedder, word overlap below :data:`ANSWER_MIN_OVERLAP`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...speakers import speaker_prefix
from ..base import Answer
from .extract import clean, substance
from .perspective import USER, third_person
from .summary import changes_attribute
from .text import content_words, sentences

if TYPE_CHECKING:
    from ...embeddings import Embedder

__all__ = ["ANSWER_MIN_COSINE", "ANSWER_MIN_OVERLAP", "answer"]

#: Minimum cosine between the question and an answer sentence.
ANSWER_MIN_COSINE = 0.35
#: Without an embedder: minimum share of the question's words an answer sentence has.
ANSWER_MIN_OVERLAP = 0.5
#: Score lost per position of the evidence in the offered order (ties go to the first).
RANK_PENALTY = 0.01
#: Added to a sentence that has the kind of answer the question asks for.
ANSWER_TYPE_BONUS = 0.1
_LISTENER_START = re.compile(r"^(?:you|your|you're|you've|for|to|about|with)\b", re.I)
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december)"
)
_ANSWER_TYPES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (
        re.compile(r"^\s*(?:when|what (?:date|day|year|month|time))\b", re.I),
        re.compile(
            rf"\b(?:{_MONTH}|(?:19|20)\d\d|monday|tuesday|wednesday|thursday|friday|"
            rf"saturday|sunday|yesterday|today|tomorrow|ago|last|next|since|week|weekend)\b",
            re.I,
        ),
    ),
    (
        re.compile(r"^\s*how (?:many|much|long|old|often|far)\b", re.I),
        re.compile(
            r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|dozen|hundred|"
            r"thousand|once|twice|daily|weekly|monthly|every|hours?|days?|weeks?|months?|"
            r"years?)\b",
            re.I,
        ),
    ),
    (re.compile(r"^\s*where\b", re.I), re.compile(r"\b(?:in|at|to|from|near) [A-Z]\w+")),
    (
        re.compile(r"^\s*(?:who|whose|what is (?:the )?name|what(?:'s| is| are) .*names?)\b", re.I),
        re.compile(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]+\b"),
    ),
)
_PRONOUN_START = re.compile(r"^(?:it|it's|that|this|they|he|she|there|then)\b", re.I)


def stems(text: str) -> set[str]:
    """Content words with common suffixes cut ("lives" and "living" -> "liv")."""
    out = set()
    for w in content_words(text):
        for suffix in ("ing", "ed", "es", "s"):
            if len(w) > len(suffix) + 2 and w.endswith(suffix):
                w = w[: -len(suffix)]
                break
        out.add(w)
    return out


def _restates(question_stems: set[str], sentence: str) -> bool:
    """True when ``sentence`` is a question or adds nothing to the question's words."""
    if sentence.rstrip().endswith("?"):
        return True
    words = stems(sentence)
    return not words or words <= question_stems


def answer(
    question: str, memories: Sequence[tuple[str, str]], embedder: Embedder | None = None
) -> Answer:
    """The best answer sentence of ``memories`` (see the module docstring)."""
    q = question.strip()
    if not q or not memories:
        return Answer(text="")
    q_stems = stems(q)
    units: list[tuple[int, str, str, str | None]] = []  # (order, id, sentence, previous)
    for order, (mid, content) in enumerate(memories):
        previous: str | None = None
        for s in _evidence_sentences(content):
            if not _restates(q_stems, s) and not _small_talk(s):
                units.append((order, mid, s, previous))
            previous = s
    units = _without_superseded(units)
    if not units:
        return Answer(text="")
    cosines = _cosines(embedder, q, [s for _, _, s, _ in units])
    expected = _expected_answer(q)
    best: tuple[float, int, str, str, str | None] | None = None
    for (order, mid, s, previous), cos in zip(units, cosines, strict=True):
        overlap = len(q_stems & stems(s)) / len(q_stems) if q_stems else 0.0
        if cos is None:
            relevant, score = overlap >= ANSWER_MIN_OVERLAP, overlap
        else:
            relevant = cos >= ANSWER_MIN_COSINE or (overlap >= 0.75 and cos >= 0.2)
            score = cos + 0.2 * overlap
        score -= RANK_PENALTY * order
        score += ANSWER_TYPE_BONUS if expected is not None and expected.search(s) else 0.0
        if relevant and (best is None or score > best[0]):
            best = (score, order, mid, s, previous)
    if best is None:
        return Answer(text="")
    _, _, mid, s, previous = best
    parts = [previous, s] if previous and _PRONOUN_START.match(s) else [s]
    return Answer(text=" ".join(_sentence_end(p) for p in parts), used_ids=(mid,))


def _evidence_sentences(content: str) -> list[str]:
    """The sentences of one piece of evidence, self-contained: a chat message offered as
    "Maria: I met Jean yesterday" becomes "Maria met Jean yesterday"."""
    found = speaker_prefix(content)
    if found is None:
        return sentences(content) or [content]
    name, text = found
    return [third_person(s, name) for s in sentences(text)] or [text]


def _small_talk(sentence: str) -> bool:
    """Thanks, greetings, remarks to the listener: no answer to anything."""
    cleaned = clean(sentence)
    if not cleaned or _LISTENER_START.match(cleaned):
        return True
    return substance(cleaned) == 0


def _expected_answer(question: str) -> re.Pattern[str] | None:
    """What the answer to a wh-question looks like (a date for "when", a number for "how
    many"), or None."""
    for rx, answer_rx in _ANSWER_TYPES:
        if rx.search(question):
            return answer_rx
    return None


def _without_superseded(
    units: list[tuple[int, str, str, str | None]],
) -> list[tuple[int, str, str, str | None]]:
    dropped: set[int] = set()
    for i, (_, mid_a, a, _) in enumerate(units):
        for j, (_, mid_b, b, _) in enumerate(units):
            if (
                i != j
                and mid_a != mid_b
                and changes_attribute(b, a)
                and not changes_attribute(a, b)
            ):
                dropped.add(i)
                break
    return [u for i, u in enumerate(units) if i not in dropped]


def _cosines(embedder: Embedder | None, question: str, texts: list[str]) -> list[float | None]:
    """Cosine of each text to the question, or to the question asked about "the user"
    ("where do I live?" -> "where does the user live?"), whichever is higher: memories are
    stored in the third person, questions to an assistant are asked in the first."""
    if embedder is None:
        return [None] * len(texts)
    docs = embedder.embed_documents(texts)
    best = docs @ embedder.embed_query(question)
    about_user = third_person(question, USER)
    if about_user != question:
        best = np.maximum(best, docs @ embedder.embed_query(about_user))
    return [float(v) for v in best]


def _sentence_end(s: str) -> str:
    s = s.strip()
    return s if s.endswith((".", "!", "?", ")")) else s + "."
