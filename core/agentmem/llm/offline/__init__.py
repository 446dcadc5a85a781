"""The deterministic offline LLM: rules and embeddings, no network, no model download.

:class:`OfflineLLM` is the default when no Anthropic key is configured. It is honest about
being a heuristic: its :attr:`~OfflineLLM.name` (``offline-heuristic-v1``) is recorded as the
extractor of every memory it extracts. Its results have the shapes the Anthropic path gives
(self-contained third-person memories with types, topic keys and source ids).

- **extract** (:mod:`.extract`): what each person states, as self-contained memories: the
  speaker's name (or "the user") instead of "I", relative dates resolved from the message
  time, typed (fact, preference, event, decision, instruction, task) by the rule table
  (:mod:`.rules`), with topic keys for single-valued attributes and the source turn's id.
- **summarize** (:mod:`.summary`): who talked when, then the session's memories, latest
  value of each changed fact only, constraints first, within the word limit.
- **summary_delta**: an ``append`` delta with such a summary and the keyed facts.
- **judge** (:mod:`.judge`): SUPERSEDE only for the same single-valued attribute of the
  same person (same topic key, or the same numeric attribute with another value).
- **answer** (:mod:`.answer`): the one evidence sentence that best answers the question
  (never the question itself, never a superseded statement); empty when none is relevant.

Example:
    >>> from agentmem.llm import ChatTurn, OfflineLLM
    >>> llm = OfflineLLM()
    >>> [(e.content, e.topic_key) for e in llm.extract([ChatTurn("user", "I live in Berlin")])]
    [('The user lives in Berlin.', 'user.residence')]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base import Answer, ChatTurn, Extracted, SummaryDelta, Verdict
from . import answer as answering
from . import extract as extraction
from . import judge as judging
from . import summary as summaries

if TYPE_CHECKING:
    from ...embeddings import Embedder

#: Recorded as the extractor of every memory this implementation extracts.
OFFLINE_NAME = "offline-heuristic-v1"
#: Kept for callers of the previous module layout.
ANSWER_MIN_COSINE = answering.ANSWER_MIN_COSINE
ANSWER_MIN_OVERLAP = answering.ANSWER_MIN_OVERLAP

__all__ = ["ANSWER_MIN_COSINE", "ANSWER_MIN_OVERLAP", "OFFLINE_NAME", "OfflineLLM"]


class OfflineLLM:
    """Rule- and embedding-based implementation of the :class:`~agentmem.llm.LLM` protocol.

    Args:
        embedder: Used by :meth:`answer` to rank evidence sentences by similarity to the
            question; without one, word overlap alone decides.
        min_substance: Content words beyond small talk a plain statement needs to become a
            memory (see :mod:`agentmem.llm.offline.extract`).

    Example:
        >>> llm = OfflineLLM()
        >>> llm.judge("I moved to Lisbon", [("m1", "I live in Berlin")])[0].decision
        'SUPERSEDE'
    """

    def __init__(
        self, embedder: Embedder | None = None, *, min_substance: int = extraction.MIN_SUBSTANCE
    ) -> None:
        self._embedder = embedder
        self.min_substance = min_substance

    @property
    def name(self) -> str:
        return OFFLINE_NAME

    def __repr__(self) -> str:
        return f"OfflineLLM(name={OFFLINE_NAME!r})"

    def extract(self, turns: Sequence[ChatTurn]) -> list[Extracted]:
        """Memories stated by the people in ``turns`` (assistant, tool and system turns
        without a speaker name are context only)."""
        return extraction.extract(turns, min_substance=self.min_substance)

    def summarize(self, turns: Sequence[ChatTurn], *, max_words: int = 200) -> str:
        """A summary of at most ``max_words`` words."""
        return summaries.summarize(turns, max_words=max_words, min_substance=self.min_substance)

    def summary_delta(self, current: str, turns: Sequence[ChatTurn]) -> SummaryDelta:
        """An ``append`` delta: a short summary plus the keyed facts stated in ``turns``."""
        facts = []
        for e in self.extract(turns):
            if e.topic_key is None:
                continue
            fact: dict[str, str] = {"key": e.topic_key, "value": e.content}
            if e.source_ids:
                fact["source_event"] = e.source_ids[0]
            facts.append(fact)
        budget = max(30, min(120, sum(len(t.content.split()) for t in turns) // 3))
        return SummaryDelta(
            mode="append",
            summary_update=summaries.summarize(
                turns, max_words=budget, min_substance=self.min_substance, lead=False
            ),
            add_facts=tuple(facts),
            add_references=tuple(t.id for t in turns if t.id),
        )

    def judge(self, new: str, candidates: Sequence[tuple[str, str]]) -> list[Verdict]:
        """SUPERSEDE a candidate stating the same single-valued attribute as ``new``."""
        return judging.judge(new, candidates)

    def answer(self, question: str, memories: Sequence[tuple[str, str]]) -> Answer:
        """The evidence sentence that best answers ``question``; empty when none is relevant."""
        return answering.answer(question, memories, self._embedder)
