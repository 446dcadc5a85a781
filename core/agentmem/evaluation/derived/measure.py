"""Scores of derived memories against gold observations (extraction, summaries, answers).

**Matching.** A gold observation is *covered* by a text when their embeddings (the default
MiniLM embedder; rows are unit length, so a dot product is the cosine) reach
:data:`MATCH_COSINE` (0.6). Matching is done per session: a session's memories against that
session's observations.

- extraction **recall**: share of gold observations covered by at least one memory extracted
  from their session; **precision**: share of extracted memories that cover at least one
  observation of their session.
- summary **coverage**: share of a session's observations covered by a sentence of its
  summary; the summary's length in words is reported against the limit.
- **answers**: an answer is right when it contains every expected word (case-insensitive),
  none of the words to avoid, is not the question itself, and is empty exactly when the
  question is marked ``none``.

Example:
    >>> figures = measure_extraction(load_gold("eval/derived_travel.json"), OfflineLLM())  # doctest: +SKIP
    >>> figures.recall  # doctest: +SKIP
    0.8
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...embeddings import Embedder, FloatArray
from ...llm.base import LLM
from .gold import GoldConversation, session_turns

#: Cosine at or above which a text covers a gold observation (both directions).
MATCH_COSINE = 0.6
#: The session summary's word limit (``TierConfig.summary_max_words``' default).
SUMMARY_MAX_WORDS = 200

__all__ = [
    "MATCH_COSINE",
    "SUMMARY_MAX_WORDS",
    "AnswerFigures",
    "Counts",
    "ExtractionFigures",
    "SummaryFigures",
    "TextEmbeddings",
    "measure_answers",
    "measure_extraction",
    "measure_summaries",
]


class TextEmbeddings:
    """Vectors of texts, each embedded once per run (the grid of a leave-one-out search
    re-scores the same memories many times)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._cache: dict[str, FloatArray] = {}

    def __call__(self, texts: Sequence[str]) -> FloatArray:
        import numpy as np

        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, vec in zip(missing, self.embedder.embed_documents(missing), strict=True):
                self._cache[text] = vec
        if not texts:
            return np.zeros((0, self.embedder.dimensions), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


@dataclass(frozen=True, slots=True)
class Counts:
    """Matched / total on both sides of one comparison."""

    gold: int = 0
    gold_matched: int = 0
    predicted: int = 0
    predicted_matched: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.gold + other.gold,
            self.gold_matched + other.gold_matched,
            self.predicted + other.predicted,
            self.predicted_matched + other.predicted_matched,
        )

    @property
    def recall(self) -> float:
        return self.gold_matched / self.gold if self.gold else 0.0

    @property
    def precision(self) -> float:
        return self.predicted_matched / self.predicted if self.predicted else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "gold": self.gold,
            "gold_matched": self.gold_matched,
            "predicted": self.predicted,
            "predicted_matched": self.predicted_matched,
            "recall": round(self.recall, 4),
            "precision": round(self.precision, 4),
        }


def match(
    embed: Callable[[Sequence[str]], FloatArray],
    gold: Sequence[str],
    predicted: Sequence[str],
    threshold: float = MATCH_COSINE,
) -> tuple[list[bool], list[bool]]:
    """(gold covered?, predicted covering?) per text, by cosine >= ``threshold``."""
    if not gold or not predicted:
        return [False] * len(gold), [False] * len(predicted)
    sim = embed(list(gold)) @ embed(list(predicted)).T
    ok = sim >= threshold
    return [bool(v) for v in ok.any(axis=1).flat], [bool(v) for v in ok.any(axis=0).flat]


# -- extraction ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExtractionFigures:
    """Extraction scored against gold observations (see the module docstring)."""

    by_conversation: Mapping[str, Counts]
    messages: int
    seconds: float
    memories: tuple[dict[str, Any], ...] = ()
    """Every extracted memory: sample, session, content, type, topic key, sources, matched."""
    missed: tuple[dict[str, Any], ...] = ()
    """Every gold observation no memory covered."""

    @property
    def total(self) -> Counts:
        return sum(self.by_conversation.values(), Counts())

    @property
    def recall(self) -> float:
        return self.total.recall

    @property
    def precision(self) -> float:
        return self.total.precision

    @property
    def ms_per_message(self) -> float:
        return 1000 * self.seconds / self.messages if self.messages else 0.0

    def shape(self) -> dict[str, Any]:
        """Share of memories with a type, a topic key and source turns."""
        n = len(self.memories) or 1
        types: dict[str, int] = {}
        for m in self.memories:
            types[m["memory_type"]] = types.get(m["memory_type"], 0) + 1
        return {
            "memory_types": dict(sorted(types.items())),
            "with_topic_key": round(sum(1 for m in self.memories if m["topic_key"]) / n, 4),
            "with_source_ids": round(sum(1 for m in self.memories if m["source_ids"]) / n, 4),
            "first_person": round(
                sum(1 for m in self.memories if _FIRST_PERSON.search(m["content"])) / n, 4
            ),
        }


_FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself)\b")


def measure_extraction(
    convs: Sequence[GoldConversation],
    llm: LLM,
    embedder: Embedder | Callable[[Sequence[str]], FloatArray],
    *,
    threshold: float = MATCH_COSINE,
) -> ExtractionFigures:
    """Extract every session with ``llm`` and score the memories (see the module docstring)."""
    embed = embedder if isinstance(embedder, TextEmbeddings) else TextEmbeddings(embedder)  # type: ignore[arg-type]
    by_conv: dict[str, Counts] = {}
    memories: list[dict[str, Any]] = []
    missed: list[dict[str, Any]] = []
    messages = 0
    seconds = 0.0
    for conv in convs:
        total = Counts()
        for session in conv.sessions:
            turns = session_turns(conv, session)
            started = time.perf_counter()
            extracted = llm.extract(turns)
            seconds += time.perf_counter() - started
            messages += len(turns)
            gold = [o.text for o in session.observations]
            got = [e.content for e in extracted]
            gold_ok, got_ok = match(embed, gold, got, threshold)
            total = total + Counts(len(gold), sum(gold_ok), len(got), sum(got_ok))
            for e, ok in zip(extracted, got_ok, strict=True):
                memories.append(
                    {
                        "sample_id": conv.sample_id,
                        "session": session.number,
                        "content": e.content,
                        "memory_type": e.memory_type,
                        "topic_key": e.topic_key,
                        "source_ids": list(e.source_ids),
                        "matched": ok,
                    }
                )
            for o, ok in zip(session.observations, gold_ok, strict=True):
                if not ok:
                    missed.append(
                        {
                            "sample_id": conv.sample_id,
                            "session": session.number,
                            "observation": o.text,
                            "dia_ids": list(o.dia_ids),
                        }
                    )
        by_conv[conv.sample_id] = total
    return ExtractionFigures(by_conv, messages, seconds, tuple(memories), tuple(missed))


# -- summaries -------------------------------------------------------------------------------
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class SummaryFigures:
    by_conversation: Mapping[str, Counts]
    words: tuple[int, ...]
    max_words: int
    must: int = 0
    must_kept: int = 0
    must_not: int = 0
    must_not_dropped: int = 0
    summaries: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def coverage(self) -> float:
        return sum(self.by_conversation.values(), Counts()).recall

    @property
    def within_limit(self) -> float:
        return (
            sum(1 for w in self.words if w <= self.max_words) / len(self.words)
            if self.words
            else 1.0
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "coverage": round(self.coverage, 4),
            "by_conversation": {k: round(v.recall, 4) for k, v in self.by_conversation.items()},
            "sessions": len(self.words),
            "max_words": self.max_words,
            "words_median": statistics.median(self.words) if self.words else 0,
            "words_max": max(self.words, default=0),
            "within_limit": round(self.within_limit, 4),
            "constraints_kept": f"{self.must_kept}/{self.must}",
            "superseded_dropped": f"{self.must_not_dropped}/{self.must_not}",
        }


def measure_summaries(
    convs: Sequence[GoldConversation],
    llm: LLM,
    embedder: Embedder | Callable[[Sequence[str]], FloatArray],
    *,
    max_words: int = SUMMARY_MAX_WORDS,
    threshold: float = MATCH_COSINE,
) -> SummaryFigures:
    """Summarise every session and score its coverage of the gold observations."""
    embed = embedder if isinstance(embedder, TextEmbeddings) else TextEmbeddings(embedder)  # type: ignore[arg-type]
    by_conv: dict[str, Counts] = {}
    words: list[int] = []
    must = must_kept = must_not = must_not_dropped = 0
    rows: list[dict[str, Any]] = []
    for conv in convs:
        total = Counts()
        for session in conv.sessions:
            turns = session_turns(conv, session)
            if not turns:
                continue
            text = llm.summarize(turns, max_words=max_words)
            words.append(len(text.split()))
            sentences = [s for s in _SENTENCE.split(text) if s.strip()]
            gold = [o.text for o in session.observations]
            gold_ok, _ = match(embed, gold, sentences, threshold)
            total = total + Counts(len(gold), sum(gold_ok), len(sentences), 0)
            lowered = text.lower()
            kept = [m for m in session.must if m.lower() in lowered]
            leaked = [m for m in session.must_not if m.lower() in lowered]
            must += len(session.must)
            must_kept += len(kept)
            must_not += len(session.must_not)
            must_not_dropped += len(session.must_not) - len(leaked)
            rows.append(
                {
                    "sample_id": conv.sample_id,
                    "session": session.number,
                    "words": len(text.split()),
                    "coverage": sum(gold_ok) / len(gold) if gold else None,
                    "summary": text,
                    "constraints_missing": [m for m in session.must if m not in kept],
                    "superseded_kept": leaked,
                }
            )
        by_conv[conv.sample_id] = total
    return SummaryFigures(
        by_conv, tuple(words), max_words, must, must_kept, must_not, must_not_dropped, tuple(rows)
    )


# -- answers ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AnswerFigures:
    asked: int
    right: int
    rows: tuple[dict[str, Any], ...]

    @property
    def accuracy(self) -> float:
        return self.right / self.asked if self.asked else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"asked": self.asked, "right": self.right, "accuracy": round(self.accuracy, 4)}


def judge_answer(
    question: str, text: str, expect: Sequence[str], avoid: Sequence[str], none: bool
) -> str | None:
    """None when ``text`` is right for the question, else what is wrong with it."""
    lowered = text.lower()
    if none:
        return None if not text.strip() else "answered a question nothing answers"
    if not text.strip():
        return "empty"
    if _norm(text) == _norm(question) or _norm(question) in _norm(text):
        return "repeats the question"
    missing = [w for w in expect if w.lower() not in lowered]
    if missing:
        return f"missing {missing}"
    leaked = [w for w in avoid if w.lower() in lowered]
    if leaked:
        return f"contains {leaked}"
    return None


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def measure_answers(
    convs: Sequence[GoldConversation],
    ask: Callable[[GoldConversation, str], str],
) -> AnswerFigures:
    """Ask each labelled question through ``ask(conversation, question) -> answer text``."""
    rows: list[dict[str, Any]] = []
    right = 0
    for conv in convs:
        for qa in conv.answers:
            text = ask(conv, qa.question)
            problem = judge_answer(qa.question, text, qa.expect, qa.avoid, qa.none)
            right += problem is None
            rows.append(
                {
                    "sample_id": conv.sample_id,
                    "question": qa.question,
                    "answer": text,
                    "ok": problem is None,
                    "problem": problem,
                }
            )
    return AnswerFigures(len(rows), right, tuple(rows))
