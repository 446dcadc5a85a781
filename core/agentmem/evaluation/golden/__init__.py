"""Golden-dataset evaluation of recall quality ("Memory Golden Dataset" format).

A dataset is a JSON document ``{"version", "description", "cases": [...]}``. Each case::

    {
      "id": "recall-preference-001",
      "setup_memories": [{"content": "User prefers uv over pip", "type": "preference"}],
      "query": "What package manager should I use?",
      "expected_retrievals": ["User prefers uv over pip"],
      "rubric": "Memory about uv preference MUST appear in top 3 results"
    }

plus these optional keys:

- top level: ``family`` (the task family the cases belong to, a label of the evaluation
  suite, :mod:`agentmem.evaluation.suite`) and ``distractors`` (setup memories written into
  every case's store before the case's own: a shared pool of plausible neighbours; an
  expected content may name one);
- per case: ``types`` (memory_types filter), ``kinds`` (kinds filter), ``scope`` (recall
  scope, default ``any``), ``forbidden`` (contents that must never come back),
  ``expect_empty`` (the query must return nothing), ``expected_passages`` (verbatim passages
  of a ``document_chunk`` setup memory: a hit is expected when its chunk contains one,
  whichever chunk of the document that is; instead of, or besides,
  ``expected_retrievals``), ``tags`` (free labels; the first is usually the category, used
  for the per-tag breakdown), ``token_budget``, and the querying identity
  ``tenant_id``/``user_id``/``agent_id``/``session_id`` (defaults ``acme``, ``alice``,
  ``assistant``, ``s-current``);
- per setup memory: ``kind`` (``memory`` default, ``chat_message``, ``tool_output``,
  ``document_chunk``), ``type`` (memory type of a ``memory``, default ``fact``), ``scope``
  (of a ``memory``: user/agent/tenant/session, default user), ``role`` (chat messages,
  default user), ``topic_key``, ``importance``, ``metadata``, ``event_time`` (messages),
  ``tool_name``/``tool_call_id`` (tool outputs), ``source_ref`` (documents), and the
  owner ``tenant_id``/``user_id``/``agent_id``/``session_id`` (default: the case's).

How a case runs: every case gets its own tenant and user ids (prefixed with the case
number) inside one :class:`~agentmem.AgentMemory` on a temporary directory, with one shared
embedder. The distractors, then the case's setup memories are written in order with the API
call of their kind (so a later memory with the same ``topic_key`` supersedes an earlier one),
the indexes are flushed, and the query is recalled with ``top_k=5``. Hits are matched to
setup memories by record id (a document's content matches any of its chunks; an oversized
tool output matches its elided preview).

Metrics:

- **Recall@5**: share of a case's expected contents (and passages) among its hits, averaged
  over the cases that expect something.
- **Precision@5**: share of a case's hits that are expected, averaged over the cases that
  returned anything (an ``expect_empty`` case that returns anything scores 0).
- **Latency** p50/p95 of the recall calls (warn above 200 ms p95, not blocking).
- **Token budget compliance**: every recall's token count within its budget.
- **Cross-user / cross-tenant safety**: a hit owned by another tenant, or by another user in
  a private scope (user facts, conversations), is a violation.
- **expect_empty pass rate**, forbidden hits, and a per-case table of misses.

Blocking: Recall@5 >= 0.8, Precision@5 >= 0.7, no cross-user or cross-tenant item, no budget
violation.

Example:
    >>> from agentmem.evaluation import golden_dataset_path, load_dataset, run_golden
    >>> report = run_golden(load_dataset(golden_dataset_path()))  # doctest: +SKIP
    >>> report.passed, round(report.recall_at_k, 3)  # doctest: +SKIP
    (True, 0.93)
"""

from __future__ import annotations

from ..tracking import MlflowError, MlflowUnavailable
from .dataset import (
    DEFAULT_AGENT,
    DEFAULT_SESSION,
    DEFAULT_TENANT,
    DEFAULT_USER,
    DatasetError,
    GoldenCase,
    GoldenDataset,
    SetupMemory,
    load_dataset,
    parse_dataset,
)
from .output import log_to_mlflow, write_report
from .render import markdown, render
from .results import (
    TOP_K,
    CaseResult,
    GoldenReport,
    KindSummary,
    ReturnedItem,
    TagSummary,
    Thresholds,
    summarize,
)
from .run import (
    ProgressCallback,
    bind_case,
    case_prefix,
    relation,
    run_golden,
    score_case,
    write_case,
)

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_SESSION",
    "DEFAULT_TENANT",
    "DEFAULT_USER",
    "TOP_K",
    "CaseResult",
    "DatasetError",
    "GoldenCase",
    "GoldenDataset",
    "GoldenReport",
    "KindSummary",
    "MlflowError",
    "MlflowUnavailable",
    "ProgressCallback",
    "ReturnedItem",
    "SetupMemory",
    "TagSummary",
    "Thresholds",
    "bind_case",
    "case_prefix",
    "load_dataset",
    "log_to_mlflow",
    "markdown",
    "parse_dataset",
    "relation",
    "render",
    "run_golden",
    "score_case",
    "summarize",
    "write_case",
    "write_report",
]
