"""The LLM protocol: every task agentmem may hand to a language model.

Each method is one task with a structured result, so an implementation can be a hosted model
(Anthropic, via tool use for structured output) or the deterministic offline heuristics.
Implementations raise :class:`~agentmem.errors.LLMError` when a task fails after retries;
callers decide whether that is fail-open (judge, summaries) or reported (extraction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ..results import ChatTurn as ChatTurn  # re-exported: it lived here
from ..speakers import metadata_speaker

if TYPE_CHECKING:
    from ..models import MemoryItem


def chat_turn(item: MemoryItem) -> ChatTurn:
    """The :class:`ChatTurn` of a stored message: its role, content, id, the speaker its
    metadata names (``metadata["speaker"]``) and its event time."""
    return ChatTurn(
        role=item.role or "user",
        content=item.content,
        id=item.id,
        speaker=metadata_speaker(item.metadata),
        time=item.event_time,
    )


@dataclass(frozen=True, slots=True)
class Extracted:
    """A discrete memory extracted from a conversation."""

    content: str
    memory_type: str
    topic_key: str | None = None
    keywords: tuple[str, ...] = ()
    queries: tuple[str, ...] = ()
    source_ids: tuple[str, ...] = ()
    scope: str = "user"


@dataclass(frozen=True, slots=True)
class SummaryDelta:
    """A structured update of a reference summary (see :mod:`agentmem.tiers.working`)."""

    mode: Literal["append", "overwrite"]
    summary_update: str
    add_facts: tuple[dict[str, Any], ...] = ()
    remove_fact_keys: tuple[str, ...] = ()
    add_references: tuple[str, ...] = ()
    remove_references: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judge's decision on one candidate: does the new memory supersede it?"""

    candidate_id: str
    decision: Literal["SUPERSEDE", "KEEP"]


@dataclass(frozen=True, slots=True)
class Answer:
    """A grounded answer and the memory ids it used (empty text when nothing was relevant)."""

    text: str
    used_ids: tuple[str, ...] = field(default_factory=tuple)


@runtime_checkable
class LLM(Protocol):
    """What agentmem asks of a language model."""

    @property
    def name(self) -> str:
        """Model or implementation name, recorded as a memory's extractor."""
        ...

    def extract(self, turns: Sequence[ChatTurn]) -> list[Extracted]:
        """Discrete memories stated in ``turns`` (facts, preferences, decisions, ...)."""
        ...

    def summarize(self, turns: Sequence[ChatTurn], *, max_words: int = 200) -> str:
        """A summary of ``turns`` of at most about ``max_words`` words."""
        ...

    def summary_delta(self, current: str, turns: Sequence[ChatTurn]) -> SummaryDelta:
        """How to update the reference summary ``current`` with ``turns`` rolling off."""
        ...

    def judge(self, new: str, candidates: Sequence[tuple[str, str]]) -> list[Verdict]:
        """For each (id, content) candidate: does ``new`` supersede (contradict/replace) it?"""
        ...

    def answer(self, question: str, memories: Sequence[tuple[str, str]]) -> Answer:
        """An answer to ``question`` grounded only in the (id, content) ``memories``."""
        ...
