"""Derived memories measured against gold annotations (``agentmem eval --extraction FILE``).

- :mod:`.gold`: labelled LoCoMo-shaped conversations (gold observations, summaries,
  constraints, answers).
- :mod:`.measure`: extraction recall/precision, summary coverage, answer correctness.
"""

from __future__ import annotations

from .gold import GoldAnswer, GoldConversation, GoldSession, Observation, load_gold, session_turns
from .measure import (
    MATCH_COSINE,
    SUMMARY_MAX_WORDS,
    AnswerFigures,
    Counts,
    ExtractionFigures,
    SummaryFigures,
    TextEmbeddings,
    measure_answers,
    measure_extraction,
    measure_summaries,
)

__all__ = [
    "MATCH_COSINE",
    "SUMMARY_MAX_WORDS",
    "AnswerFigures",
    "Counts",
    "ExtractionFigures",
    "GoldAnswer",
    "GoldConversation",
    "GoldSession",
    "Observation",
    "SummaryFigures",
    "TextEmbeddings",
    "load_gold",
    "measure_answers",
    "measure_extraction",
    "measure_summaries",
    "session_turns",
]
