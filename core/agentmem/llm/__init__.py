"""Language-model tasks (extraction, summaries, judge, answers): protocol and implementations."""

from __future__ import annotations

from .base import LLM, Answer, ChatTurn, Extracted, SummaryDelta, Verdict

__all__ = ["LLM", "Answer", "ChatTurn", "Extracted", "SummaryDelta", "Verdict"]
