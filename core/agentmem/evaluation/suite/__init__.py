"""The evaluation suite: recall measured per task family, against its own halves
(``agentmem eval --suite``).

Recall has to work on every kind of question an agent asks of its memory, not only on the
kind its ranking was fitted on. Each family is labelled and reported on its own, with data
the project owns (package data, :func:`suite_dir`), written by hand for this suite:

=====================  ========================================================================
family                 what it asks
=====================  ========================================================================
``locomo``             conversational factual questions of a LoCoMo file given at run time
                       (``--locomo``; never shipped), plus the suite's own expect-empty questions
``implicit``           a later remark that shares few words with the earlier exchange it should
                       bring back (cue and trigger), inside long conversations
``implicit_dialogue``  the same between two named people (either may say cue or trigger),
                       the links more remote; written apart from ``implicit`` and kept for
                       validation: reported, never fitted on (:data:`VALIDATION_FAMILIES`)
``paraphrase``         facts and preferences (remembered, or said in chat) asked with no analysed
                       content term in common with them
``identifiers``        ticket ids, SKUs, order numbers, error codes, hosts, commit hashes beside
                       near misses (OPS-4470 next to OPS-4471), inside longer text
``tool_outputs``       JSON payloads, logs, CLI output, API responses (``add_tool_output``),
                       found by what the user later asks
``documents``          policies, manuals, READMEs, meeting notes (``add_document``, chunked by
                       agentmem), each question answered by one chunk
``temporal``           multi-session conversations with dates: when something happened, what
                       changed, what was said in an earlier session
=====================  ========================================================================

Every family also has expect-empty cases: a question of its style about something never
stored, for which recall at default settings should return nothing. Every store holds at
least about a hundred plausible distractors (same domain, similar words).

**Formats.** ``paraphrase``, ``identifiers``, ``tool_outputs`` and ``documents`` are golden
datasets (:mod:`agentmem.evaluation.golden`) with a ``family`` and a shared ``distractors``
pool; ``documents`` cases name ``expected_passages``. They are written into one shared store
per family (:mod:`.golden_family`). ``implicit``, ``implicit_dialogue`` (whose turns name
their speaker) and ``temporal`` are in the conversation format (:mod:`.conversations`).

**Systems**, all on the same store: ``agentmem`` at default settings (the public ``recall``
with ``top_k=10`` and the case's scope, ``history`` for a conversation, nothing else set);
the ``keyword`` half and the ``vector`` half alone (the engine's own retrievers, ordered by
BM25 or by plain cosine, no threshold; :mod:`agentmem.evaluation.halves`); naive ``rrf``
(``k=60`` over the two halves' lists). Metrics: :mod:`.metrics`.

**Candidates** (:mod:`.candidates`): for every case, the engine's scored candidates before
any cut, with their features and labels, so ranking and calibration can be refitted offline.

Example:
    >>> from agentmem.evaluation.suite import run_suite
    >>> report = run_suite(["paraphrase"])  # doctest: +SKIP
    >>> report.families["paraphrase"]["systems"]["agentmem"]["R@10"]  # doctest: +SKIP
    0.71
"""

from __future__ import annotations

from .candidates import (
    LabelledQuery,
    candidate_request,
    collect,
    collect_case,
    collect_golden,
    collect_locomo,
    collect_suite,
    load_candidates,
    save_candidates,
)
from .cases import SuiteCase, WrittenFamily
from .conversations import (
    Conversation,
    ConversationCase,
    ConversationSession,
    ConversationSet,
    ConversationTurn,
    load_conversations,
    parse_conversations,
)
from .families import (
    CONVERSATION_FAMILIES,
    FAMILIES,
    GOLDEN_FAMILIES,
    VALIDATION_FAMILIES,
    family_path,
    load_family,
    suite_dir,
    write_family,
)
from .locomo_family import load_locomo_empty
from .metrics import METRICS, SYSTEM_LABELS, SYSTEMS, CaseOutcome, SystemOutcome
from .report import SuiteReport
from .run import ProgressFn, evaluate_case, run_suite
from .stores import family_store, family_stores, plan

__all__ = [
    "CONVERSATION_FAMILIES",
    "FAMILIES",
    "GOLDEN_FAMILIES",
    "METRICS",
    "SYSTEMS",
    "SYSTEM_LABELS",
    "VALIDATION_FAMILIES",
    "CaseOutcome",
    "Conversation",
    "ConversationCase",
    "ConversationSession",
    "ConversationSet",
    "ConversationTurn",
    "LabelledQuery",
    "ProgressFn",
    "SuiteCase",
    "SuiteReport",
    "SystemOutcome",
    "WrittenFamily",
    "candidate_request",
    "collect",
    "collect_case",
    "collect_golden",
    "collect_locomo",
    "collect_suite",
    "evaluate_case",
    "family_path",
    "family_store",
    "family_stores",
    "load_candidates",
    "load_conversations",
    "load_family",
    "load_locomo_empty",
    "parse_conversations",
    "plan",
    "run_suite",
    "save_candidates",
    "suite_dir",
    "write_family",
]
