"""Golden-dataset evaluation of recall quality (seed 004, "Memory Golden Dataset").

A dataset is a JSON document ``{"version", "description", "cases": [...]}``. Each case::

    {
      "id": "recall-preference-001",
      "setup_memories": [{"content": "User prefers uv over pip", "type": "preference"}],
      "query": "What package manager should I use?",
      "expected_retrievals": ["User prefers uv over pip"],
      "rubric": "Memory about uv preference MUST appear in top 3 results"
    }

plus these optional keys:

- per case: ``types`` (memory_types filter), ``kinds`` (kinds filter), ``scope`` (recall
  scope, default ``any``), ``forbidden`` (contents that must never come back),
  ``expect_empty`` (the query must return nothing), ``tags`` (free labels; the first is
  usually the category, used for the per-tag breakdown), ``token_budget``, and the querying
  identity ``tenant_id``/``user_id``/``agent_id``/``session_id`` (defaults ``acme``,
  ``alice``, ``assistant``, ``s-current``);
- per setup memory: ``kind`` (``memory`` default, ``chat_message``, ``tool_output``,
  ``document_chunk``), ``type`` (memory type of a ``memory``, default ``fact``), ``scope``
  (of a ``memory``: user/agent/tenant/session, default user), ``role`` (chat messages,
  default user), ``topic_key``, ``importance``, ``metadata``, ``event_time`` (messages),
  ``tool_name``/``tool_call_id`` (tool outputs), ``source_ref`` (documents), and the
  owner ``tenant_id``/``user_id``/``agent_id``/``session_id`` (default: the case's).

How a case runs: every case gets its own tenant and user ids (prefixed with the case
number) inside one :class:`~agentmem.AgentMemory` on a temporary directory, with one shared
embedder. Setup memories are written in order with the API call of their kind (so a later
memory with the same ``topic_key`` supersedes an earlier one), the indexes are flushed, and
the query is recalled with ``top_k=5``. Hits are matched to setup memories by record id
(a document's content matches any of its chunks; an oversized tool output matches its
elided preview).

Metrics (seed 004 "Metrics & Thresholds"):

- **Recall@5**: share of a case's expected contents among its hits, averaged over the
  cases that expect something.
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
    >>> from agentmem.evaluation import load_dataset, run_golden
    >>> report = run_golden(load_dataset("eval/memory_golden_dataset.json"))  # doctest: +SKIP
    >>> report.passed, round(report.recall_at_k, 3)  # doctest: +SKIP
    (True, 0.93)
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..embeddings import Embedder, default_embedder
from ..errors import AgentMemError, ValidationError
from ..memory import AgentMemory, BoundMemory
from ..models import KINDS, MEMORY_TYPES, RECALL_SCOPES, REMEMBER_SCOPES, RecallResult
from ..tokens import count_tokens

if TYPE_CHECKING:
    from rich.console import Console

    from ..config import MemoryConfig

#: Default querying identity of a case (and owner of its setup memories).
DEFAULT_TENANT = "acme"
DEFAULT_USER = "alice"
DEFAULT_AGENT = "assistant"
DEFAULT_SESSION = "s-current"

TOP_K = 5
SETUP_KINDS = ("memory", "chat_message", "tool_output", "document_chunk")
MESSAGE_ROLES = ("user", "assistant", "system")
#: Home scopes whose rows belong to one user: another user's row in them is a leak.
PRIVATE_SCOPES = frozenset({"user", "session"})

_CASE_KEYS = frozenset(
    {
        "id",
        "setup_memories",
        "query",
        "expected_retrievals",
        "rubric",
        "types",
        "kinds",
        "scope",
        "forbidden",
        "expect_empty",
        "tags",
        "token_budget",
        "tenant_id",
        "user_id",
        "agent_id",
        "session_id",
    }
)
_MEMORY_KEYS = frozenset(
    {
        "content",
        "type",
        "kind",
        "scope",
        "role",
        "topic_key",
        "importance",
        "metadata",
        "event_time",
        "tool_name",
        "tool_call_id",
        "source_ref",
        "tenant_id",
        "user_id",
        "agent_id",
        "session_id",
    }
)
#: Keys that only make sense for some kinds.
_KIND_ONLY_KEYS: dict[str, tuple[str, ...]] = {
    "type": ("memory",),
    "scope": ("memory",),
    "topic_key": ("memory",),
    "importance": ("memory",),
    "role": ("chat_message",),
    "event_time": ("chat_message",),
    "tool_name": ("tool_output",),
    "tool_call_id": ("tool_output",),
    "source_ref": ("document_chunk",),
}
_IDENTITY_KEYS = ("tenant_id", "user_id", "agent_id", "session_id")
_MAX_LISTED_ERRORS = 20


# -- dataset model ------------------------------------------------------------------------------
class DatasetError(ValidationError):
    """A golden dataset that cannot be loaded: every problem found, each with its JSON path.

    Attributes:
        problems: ``(path, message)`` pairs, e.g. ``("cases[3].setup_memories[0].kind", ...)``.
    """

    def __init__(self, source: str, problems: Sequence[tuple[str, str]]) -> None:
        shown = [f"  {where}: {what}" for where, what in problems[:_MAX_LISTED_ERRORS]]
        more = len(problems) - len(shown)
        if more > 0:
            shown.append(f"  ... and {more} more")
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(
            "dataset",
            f"{source} is not a valid golden dataset ({len(problems)} {noun}):\n"
            + "\n".join(shown),
            source=source,
        )
        self.problems: list[tuple[str, str]] = list(problems)


@dataclass(frozen=True, slots=True)
class SetupMemory:
    """One memory a case writes before its query (see the module docstring for the keys)."""

    content: str
    kind: str = "memory"
    memory_type: str | None = None
    scope: str | None = None
    role: str | None = None
    topic_key: str | None = None
    importance: float | None = None
    metadata: Mapping[str, Any] | None = None
    event_time: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    source_ref: str | None = None
    tenant_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None

    @property
    def home_scope(self) -> str:
        """The scope the row lives in: a memory's scope, session for messages, tenant for docs."""
        if self.kind == "memory":
            return self.scope or "user"
        if self.kind == "document_chunk":
            return "tenant"
        return "session"


@dataclass(frozen=True, slots=True)
class GoldenCase:
    """One query with its setup memories and the expected outcome."""

    id: str
    query: str
    setup: tuple[SetupMemory, ...]
    expected: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    expect_empty: bool = False
    rubric: str = ""
    types: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    scope: str = "any"
    tags: tuple[str, ...] = ()
    token_budget: int | None = None
    tenant_id: str = DEFAULT_TENANT
    user_id: str = DEFAULT_USER
    agent_id: str = DEFAULT_AGENT
    session_id: str = DEFAULT_SESSION

    def owner(self, m: SetupMemory) -> tuple[str, str, str, str]:
        """(tenant, user, agent, session) a setup memory is written as (case ids, unprefixed)."""
        return (
            m.tenant_id or self.tenant_id,
            m.user_id or self.user_id,
            m.agent_id or self.agent_id,
            m.session_id or self.session_id,
        )


@dataclass(frozen=True, slots=True)
class GoldenDataset:
    """A validated golden dataset."""

    cases: tuple[GoldenCase, ...]
    version: str = ""
    description: str = ""
    source: str = "<memory>"


def load_dataset(path: str | Path) -> GoldenDataset:
    """Read and validate a golden dataset file; raises :class:`DatasetError` listing problems."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(str(p), [("file", exc.strerror or str(exc))]) from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(str(p), [("file", f"not UTF-8 text ({exc.reason})")]) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            str(p), [(f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}")]
        ) from exc
    return parse_dataset(data, source=str(p))


def parse_dataset(data: Any, *, source: str = "<memory>") -> GoldenDataset:
    """Validate a parsed golden dataset (a dict); raises :class:`DatasetError` listing problems."""
    problems: list[tuple[str, str]] = []
    if not isinstance(data, Mapping):
        raise DatasetError(source, [("$", f"must be a JSON object, got {_jtype(data)}")])
    unknown = set(data) - {"version", "description", "cases"}
    if unknown:
        problems.append(("$", f"unknown keys {sorted(unknown)}"))
    version = data.get("version", "")
    if not isinstance(version, str):
        problems.append(("version", f"must be a string, got {_jtype(version)}"))
        version = ""
    description = data.get("description", "")
    if not isinstance(description, str):
        problems.append(("description", f"must be a string, got {_jtype(description)}"))
        description = ""
    raw_cases = data.get("cases")
    cases: list[GoldenCase] = []
    if raw_cases is None:
        problems.append(("cases", "is required"))
    elif not isinstance(raw_cases, list):
        problems.append(("cases", f"must be a list, got {_jtype(raw_cases)}"))
    elif not raw_cases:
        problems.append(("cases", "must not be empty"))
    else:
        seen: dict[str, int] = {}
        for n, raw in enumerate(raw_cases):
            case = _parse_case(raw, f"cases[{n}]", problems)
            if case is None:
                continue
            if case.id in seen:
                problems.append(
                    (f"cases[{n}].id", f"duplicate id {case.id!r} (also cases[{seen[case.id]}])")
                )
            seen.setdefault(case.id, n)
            cases.append(case)
    if problems:
        raise DatasetError(source, problems)
    return GoldenDataset(
        cases=tuple(cases), version=version, description=description, source=source
    )


def _jtype(value: Any) -> str:
    return {
        dict: "object",
        list: "list",
        str: "string",
        bool: "boolean",
        int: "number",
        float: "number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _text(obj: Mapping[str, Any], key: str, where: str, problems: list[tuple[str, str]]) -> Any:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append((f"{where}.{key}", f"must be a non-empty string, got {_jtype(value)}"))
        return None
    return value


def _choices(
    obj: Mapping[str, Any],
    key: str,
    allowed: Sequence[str],
    where: str,
    problems: list[tuple[str, str]],
) -> tuple[str, ...] | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        problems.append((f"{where}.{key}", "must be a non-empty list of strings"))
        return None
    bad = [v for v in value if v not in allowed]
    if bad:
        problems.append((f"{where}.{key}", f"unknown values {bad}; allowed: {list(allowed)}"))
        return None
    return tuple(value)


def _content_list(
    obj: Mapping[str, Any], key: str, where: str, problems: list[tuple[str, str]]
) -> tuple[str, ...]:
    value = obj.get(key, [])
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append((f"{where}.{key}", "must be a list of strings (exact memory contents)"))
        return ()
    return tuple(value)


def _parse_case(raw: Any, where: str, problems: list[tuple[str, str]]) -> GoldenCase | None:
    if not isinstance(raw, Mapping):
        problems.append((where, f"must be an object, got {_jtype(raw)}"))
        return None
    before = len(problems)
    unknown = set(raw) - _CASE_KEYS
    if unknown:
        problems.append((where, f"unknown keys {sorted(unknown)}"))
    case_id = _text(raw, "id", where, problems)
    if case_id is None and "id" not in raw:
        problems.append((f"{where}.id", "is required"))
    label = f"{where}({case_id})" if case_id else where
    query = _text(raw, "query", label, problems)
    if query is None and "query" not in raw:
        problems.append((f"{label}.query", "is required"))

    setup: list[SetupMemory] = []
    raw_setup = raw.get("setup_memories")
    if raw_setup is None:
        problems.append((f"{label}.setup_memories", "is required (use [] for an empty store)"))
    elif not isinstance(raw_setup, list):
        problems.append((f"{label}.setup_memories", f"must be a list, got {_jtype(raw_setup)}"))
    else:
        for n, m in enumerate(raw_setup):
            parsed = _parse_memory(m, f"{label}.setup_memories[{n}]", problems)
            if parsed is not None:
                setup.append(parsed)

    if "expected_retrievals" not in raw:
        problems.append((f"{label}.expected_retrievals", "is required (use [] with expect_empty)"))
    expected = _content_list(raw, "expected_retrievals", label, problems)
    forbidden = _content_list(raw, "forbidden", label, problems)
    expect_empty = raw.get("expect_empty", False)
    if not isinstance(expect_empty, bool):
        problems.append((f"{label}.expect_empty", f"must be a boolean, got {_jtype(expect_empty)}"))
        expect_empty = False
    if expect_empty and expected:
        problems.append((f"{label}.expected_retrievals", "must be empty when expect_empty is true"))
    if not expect_empty and not expected and "expected_retrievals" in raw:
        problems.append(
            (
                f"{label}.expected_retrievals",
                "is empty: list the expected contents, or set expect_empty to true",
            )
        )
    rubric = raw.get("rubric", "")
    if not isinstance(rubric, str):
        problems.append((f"{label}.rubric", f"must be a string, got {_jtype(rubric)}"))
        rubric = ""
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
        problems.append((f"{label}.tags", "must be a list of non-empty strings"))
        tags = []
    types = _choices(raw, "types", MEMORY_TYPES, label, problems)
    kinds = _choices(raw, "kinds", KINDS, label, problems)
    scope = raw.get("scope", "any")
    if scope not in RECALL_SCOPES:
        problems.append((f"{label}.scope", f"must be one of {list(RECALL_SCOPES)}, got {scope!r}"))
        scope = "any"
    budget = raw.get("token_budget")
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
    ):
        problems.append((f"{label}.token_budget", "must be a positive integer"))
        budget = None
    ident = {key: _text(raw, key, label, problems) for key in _IDENTITY_KEYS}

    # Expected and forbidden contents must name setup memories the case can reason about.
    contents = {m.content for m in setup}
    case_tenant = ident["tenant_id"] or DEFAULT_TENANT
    for key, values in (("expected_retrievals", expected), ("forbidden", forbidden)):
        for n, content in enumerate(values):
            if content not in contents:
                problems.append(
                    (
                        f"{label}.{key}[{n}]",
                        f"{_short(content)!r} is not the content of any setup memory",
                    )
                )
    for n, content in enumerate(expected):
        if content in forbidden:
            problems.append((f"{label}.expected_retrievals[{n}]", "is also listed in forbidden"))
        elif content in contents and not any(
            m.content == content and (m.tenant_id or case_tenant) == case_tenant for m in setup
        ):
            problems.append(
                (
                    f"{label}.expected_retrievals[{n}]",
                    "belongs only to another tenant's memory, which the query can never see",
                )
            )
    if len(problems) > before:
        return None
    return GoldenCase(
        id=case_id,
        query=query,
        setup=tuple(setup),
        expected=tuple(dict.fromkeys(expected)),
        forbidden=tuple(dict.fromkeys(forbidden)),
        expect_empty=expect_empty,
        rubric=rubric,
        types=types,
        kinds=kinds,
        scope=scope,
        tags=tuple(tags),
        token_budget=budget,
        tenant_id=ident["tenant_id"] or DEFAULT_TENANT,
        user_id=ident["user_id"] or DEFAULT_USER,
        agent_id=ident["agent_id"] or DEFAULT_AGENT,
        session_id=ident["session_id"] or DEFAULT_SESSION,
    )


def _parse_memory(raw: Any, where: str, problems: list[tuple[str, str]]) -> SetupMemory | None:
    if not isinstance(raw, Mapping):
        problems.append((where, f"must be an object, got {_jtype(raw)}"))
        return None
    before = len(problems)
    unknown = set(raw) - _MEMORY_KEYS
    if unknown:
        problems.append((where, f"unknown keys {sorted(unknown)}"))
    content: Any = raw.get("content")
    if not isinstance(content, str) or not content.strip():
        problems.append((f"{where}.content", f"must be a non-empty string, got {_jtype(content)}"))
    kind = raw.get("kind", "memory")
    if kind not in SETUP_KINDS:
        problems.append((f"{where}.kind", f"must be one of {list(SETUP_KINDS)}, got {kind!r}"))
        return None
    for key, kinds in _KIND_ONLY_KEYS.items():
        if key in raw and kind not in kinds:
            problems.append((f"{where}.{key}", f"applies only to kind {' or '.join(kinds)}"))
    memory_type = raw.get("type", "fact") if kind == "memory" else None
    if kind == "memory" and memory_type not in MEMORY_TYPES:
        problems.append(
            (f"{where}.type", f"must be one of {list(MEMORY_TYPES)}, got {memory_type!r}")
        )
    scope = raw.get("scope")
    if scope is not None and scope not in REMEMBER_SCOPES:
        problems.append(
            (f"{where}.scope", f"must be one of {list(REMEMBER_SCOPES)}, got {scope!r}")
        )
    role = raw.get("role")
    if role is not None and role not in MESSAGE_ROLES:
        problems.append((f"{where}.role", f"must be one of {list(MESSAGE_ROLES)}, got {role!r}"))
    importance = raw.get("importance")
    if importance is not None and (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not 0.0 <= importance <= 1.0
    ):
        problems.append((f"{where}.importance", "must be a number in [0, 1]"))
    metadata = raw.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        problems.append((f"{where}.metadata", f"must be an object, got {_jtype(metadata)}"))
    strings = {
        key: _text(raw, key, where, problems)
        for key in ("topic_key", "event_time", "tool_name", "tool_call_id", "source_ref")
    }
    ident = {key: _text(raw, key, where, problems) for key in _IDENTITY_KEYS}
    if len(problems) > before:
        return None
    return SetupMemory(
        content=content,
        kind=kind,
        memory_type=memory_type,
        scope=scope,
        role=role,
        importance=None if importance is None else float(importance),
        metadata=dict(metadata) if metadata is not None else None,
        topic_key=strings["topic_key"],
        event_time=strings["event_time"],
        tool_name=strings["tool_name"],
        tool_call_id=strings["tool_call_id"],
        source_ref=strings["source_ref"],
        tenant_id=ident["tenant_id"],
        user_id=ident["user_id"],
        agent_id=ident["agent_id"],
        session_id=ident["session_id"],
    )


# -- results ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Thresholds:
    """Seed-004 thresholds. Recall, precision, isolation and budget block; latency warns."""

    min_recall: float = 0.8
    min_precision: float = 0.7
    max_latency_p95_ms: float = 200.0


@dataclass(frozen=True, slots=True)
class ReturnedItem:
    """One hit of a case, judged against the case's setup memories."""

    content: str
    kind: str
    score: float
    verdict: str
    """``expected``, ``unexpected``, ``forbidden``, ``cross_user``, ``cross_tenant`` or
    ``unknown`` (a row no setup memory wrote)."""


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of one case."""

    id: str
    tags: tuple[str, ...]
    query: str
    rubric: str
    expected: tuple[str, ...]
    expect_empty: bool
    returned: tuple[ReturnedItem, ...]
    found: tuple[str, ...]
    missing: tuple[str, ...]
    recall: float | None
    """Share of expected contents returned; None when the case expects nothing."""
    precision: float | None
    """Share of returned items that are expected; None when nothing was returned."""
    latency_ms: float
    token_count: int
    """``RecallResult.token_count`` as reported by recall."""
    counted_tokens: int
    """Tokens of the returned contents, counted here (cl100k_base)."""
    token_budget: int
    degraded: bool

    @property
    def forbidden_hits(self) -> int:
        return sum(1 for r in self.returned if r.verdict == "forbidden")

    @property
    def cross_user(self) -> int:
        return sum(1 for r in self.returned if r.verdict == "cross_user")

    @property
    def cross_tenant(self) -> int:
        return sum(1 for r in self.returned if r.verdict == "cross_tenant")

    @property
    def budget_ok(self) -> bool:
        return max(self.token_count, self.counted_tokens) <= self.token_budget

    @property
    def empty_ok(self) -> bool | None:
        """For expect_empty cases: whether nothing came back; None for other cases."""
        return (not self.returned) if self.expect_empty else None

    @property
    def problems(self) -> list[str]:
        """What went wrong, most serious first; empty when the case is perfect."""
        out: list[str] = []
        if self.cross_tenant:
            out.append(f"{self.cross_tenant} cross-tenant item(s)")
        if self.cross_user:
            out.append(f"{self.cross_user} cross-user item(s)")
        if not self.budget_ok:
            used = max(self.token_count, self.counted_tokens)
            out.append(f"token budget exceeded ({used} > {self.token_budget})")
        if self.missing:
            out.append(f"missed {len(self.missing)}/{len(self.expected)} expected")
        if self.forbidden_hits:
            out.append(f"{self.forbidden_hits} forbidden item(s)")
        if self.expect_empty and self.returned:
            out.append(f"expected empty, got {len(self.returned)}")
        else:
            extra = sum(1 for r in self.returned if r.verdict in ("unexpected", "unknown"))
            if extra:
                out.append(f"{extra} unexpected item(s)")
        return out

    @property
    def severity(self) -> int:
        """Sort key for the misses table: higher is worse."""
        score = 0
        if self.cross_tenant or self.cross_user:
            score += 1000
        if not self.budget_ok:
            score += 500
        if self.recall is not None:
            score += round((1.0 - self.recall) * 100)
        if self.forbidden_hits:
            score += 50
        if self.expect_empty and self.returned:
            score += 40
        if self.precision is not None:
            score += round((1.0 - self.precision) * 20)
        return score

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tags": list(self.tags),
            "query": self.query,
            "rubric": self.rubric,
            "expect_empty": self.expect_empty,
            "expected": list(self.expected),
            "found": list(self.found),
            "missing": list(self.missing),
            "returned": [
                {"content": r.content, "kind": r.kind, "score": r.score, "verdict": r.verdict}
                for r in self.returned
            ],
            "recall": self.recall,
            "precision": self.precision,
            "latency_ms": round(self.latency_ms, 3),
            "token_count": self.token_count,
            "counted_tokens": self.counted_tokens,
            "token_budget": self.token_budget,
            "budget_ok": self.budget_ok,
            "degraded": self.degraded,
            "problems": self.problems,
        }


@dataclass(frozen=True, slots=True)
class TagSummary:
    """Metrics over the cases carrying one tag."""

    tag: str
    cases: int
    perfect: int
    recall: float | None
    precision: float | None


@dataclass(frozen=True)
class GoldenReport:
    """What :func:`run_golden` returns: aggregate metrics, the verdict and every case.

    Example:
        >>> report.passed, report.reasons  # doctest: +SKIP
        (False, ['Recall@5 0.742 < 0.8'])
    """

    dataset: str
    version: str
    top_k: int
    cases: tuple[CaseResult, ...] = field(repr=False)
    thresholds: Thresholds
    embedder: str
    duration_s: float
    started_at: str
    recall_at_k: float | None
    precision_at_k: float | None
    latency_p50_ms: float
    latency_p95_ms: float
    token_budget_compliance: float
    budget_violations: int
    cross_user_violations: int
    cross_tenant_violations: int
    forbidden_hits: int
    expect_empty_pass_rate: float | None
    degraded_recalls: int
    passed: bool
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    by_tag: tuple[TagSummary, ...] = field(default=(), repr=False)

    @property
    def misses(self) -> list[CaseResult]:
        """Cases with any problem, worst first."""
        return sorted((c for c in self.cases if c.problems), key=lambda c: (-c.severity, c.id))

    def metrics(self) -> dict[str, float]:
        """The numeric metrics (for MLflow and dashboards); n/a values are left out."""
        values: dict[str, float | None] = {
            "recall_at_5" if self.top_k == 5 else f"recall_at_{self.top_k}": self.recall_at_k,
            "precision_at_5" if self.top_k == 5 else f"precision_at_{self.top_k}": (
                self.precision_at_k
            ),
            "latency_p50_ms": self.latency_p50_ms,
            "latency_p95_ms": self.latency_p95_ms,
            "token_budget_compliance": self.token_budget_compliance,
            "budget_violations": float(self.budget_violations),
            "cross_user_violations": float(self.cross_user_violations),
            "cross_tenant_violations": float(self.cross_tenant_violations),
            "forbidden_hits": float(self.forbidden_hits),
            "expect_empty_pass_rate": self.expect_empty_pass_rate,
            "cases": float(len(self.cases)),
            "perfect_cases": float(sum(1 for c in self.cases if not c.problems)),
            "passed": 1.0 if self.passed else 0.0,
        }
        return {k: float(v) for k, v in values.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report (``agentmem eval --json`` prints this)."""
        return {
            "dataset": self.dataset,
            "version": self.version,
            "started_at": self.started_at,
            "duration_s": round(self.duration_s, 3),
            "embedder": self.embedder,
            "top_k": self.top_k,
            "passed": self.passed,
            "reasons": list(self.reasons),
            "warnings": list(self.warnings),
            "thresholds": {
                "min_recall": self.thresholds.min_recall,
                "min_precision": self.thresholds.min_precision,
                "max_latency_p95_ms": self.thresholds.max_latency_p95_ms,
            },
            "metrics": {
                "cases": len(self.cases),
                "perfect_cases": sum(1 for c in self.cases if not c.problems),
                "recall_at_k": self.recall_at_k,
                "precision_at_k": self.precision_at_k,
                "latency_p50_ms": round(self.latency_p50_ms, 3),
                "latency_p95_ms": round(self.latency_p95_ms, 3),
                "token_budget_compliance": self.token_budget_compliance,
                "budget_violations": self.budget_violations,
                "cross_user_violations": self.cross_user_violations,
                "cross_tenant_violations": self.cross_tenant_violations,
                "forbidden_hits": self.forbidden_hits,
                "expect_empty_pass_rate": self.expect_empty_pass_rate,
                "degraded_recalls": self.degraded_recalls,
            },
            "by_tag": [
                {
                    "tag": t.tag,
                    "cases": t.cases,
                    "perfect": t.perfect,
                    "recall": t.recall,
                    "precision": t.precision,
                }
                for t in self.by_tag
            ],
            "misses": [c.id for c in self.misses],
            "cases": [c.to_dict() for c in self.cases],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    def summary_rows(self) -> list[tuple[str, str, str, str]]:
        """(metric, value, threshold, status) rows shared by the rich and Markdown renderings."""
        t = self.thresholds
        rows: list[tuple[str, str, str, str]] = []

        def status(ok: bool | None, blocking: bool = True) -> str:
            if ok is None:
                return "n/a"
            if ok:
                return "PASS"
            return "FAIL" if blocking else "WARN"

        k = self.top_k
        rows.append(
            (
                f"Recall@{k}",
                _fmt(self.recall_at_k),
                f">= {t.min_recall}",
                status(None if self.recall_at_k is None else self.recall_at_k >= t.min_recall),
            )
        )
        rows.append(
            (
                f"Precision@{k}",
                _fmt(self.precision_at_k),
                f">= {t.min_precision}",
                status(
                    None if self.precision_at_k is None else self.precision_at_k >= t.min_precision
                ),
            )
        )
        rows.append(
            (
                "Latency p50 / p95",
                f"{self.latency_p50_ms:.1f} / {self.latency_p95_ms:.1f} ms",
                f"p95 <= {t.max_latency_p95_ms:g} ms (warn)",
                status(self.latency_p95_ms <= t.max_latency_p95_ms, blocking=False),
            )
        )
        rows.append(
            (
                "Token budget compliance",
                f"{self.token_budget_compliance:.1%} ({self.budget_violations} over)",
                "100%",
                status(self.budget_violations == 0),
            )
        )
        rows.append(
            (
                "Cross-user items",
                str(self.cross_user_violations),
                "0",
                status(self.cross_user_violations == 0),
            )
        )
        rows.append(
            (
                "Cross-tenant items",
                str(self.cross_tenant_violations),
                "0",
                status(self.cross_tenant_violations == 0),
            )
        )
        rows.append(("expect_empty pass rate", _fmt(self.expect_empty_pass_rate), "(info)", ""))
        rows.append(("Forbidden items returned", str(self.forbidden_hits), "(info)", ""))
        perfect = sum(1 for c in self.cases if not c.problems)
        rows.append(("Perfect cases", f"{perfect}/{len(self.cases)}", "(info)", ""))
        return rows

    def to_markdown(self) -> str:
        """The report as Markdown (``--out`` writes it as report.md)."""
        verdict = "PASSED" if self.passed else "FAILED"
        lines = [
            f"# agentmem golden evaluation: {verdict}",
            "",
            f"- dataset: `{self.dataset}` (version {self.version or 'n/a'}, "
            f"{len(self.cases)} cases)",
            f"- embedder: `{self.embedder}`; top_k = {self.top_k}",
            f"- run at {self.started_at}, {self.duration_s:.1f} s",
            "",
        ]
        if self.reasons:
            lines += ["## Blocking failures", ""] + [f"- {r}" for r in self.reasons] + [""]
        if self.warnings:
            lines += ["## Warnings", ""] + [f"- {w}" for w in self.warnings] + [""]
        lines += ["## Metrics", "", "| metric | value | threshold | status |", "|---|---|---|---|"]
        lines += [f"| {m} | {v} | {t} | {s} |" for m, v, t, s in self.summary_rows()]
        lines += [
            "",
            "## By tag",
            "",
            "| tag | cases | perfect | recall | precision |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {t.tag} | {t.cases} | {t.perfect} | {_fmt(t.recall)} | {_fmt(t.precision)} |"
            for t in self.by_tag
        ]
        misses = self.misses
        lines += ["", f"## Misses ({len(misses)} cases)", ""]
        if misses:
            lines += [
                "| case | tags | recall | precision | problems | missing | wrong items returned |",
                "|---|---|---|---|---|---|---|",
            ]
            for c in misses:
                wrong = [
                    f"{r.verdict}: {_short(r.content, 70)} ({r.score:.2f})"
                    for r in c.returned
                    if r.verdict != "expected"
                ]
                lines.append(
                    "| "
                    + " | ".join(
                        _md(x)
                        for x in (
                            c.id,
                            ", ".join(c.tags),
                            _fmt(c.recall),
                            _fmt(c.precision),
                            "; ".join(c.problems),
                            "<br>".join(_short(m, 70) for m in c.missing),
                            "<br>".join(wrong),
                        )
                    )
                    + " |"
                )
        lines.append("")
        return "\n".join(lines)

    def render(self, console: Console, *, max_misses: int | None = None) -> None:
        """Print the report with rich tables: metrics, per tag, then the misses."""
        from rich.markup import escape
        from rich.table import Table

        verdict = "[bold green]PASSED[/]" if self.passed else "[bold red]FAILED[/]"
        console.print(
            f"Golden evaluation of [bold]{escape(self.dataset)}[/] "
            f"({len(self.cases)} cases, embedder {escape(self.embedder)}, "
            f"{self.duration_s:.1f} s): {verdict}"
        )
        summary = Table(title="Metrics", title_justify="left")
        for col in ("metric", "value", "threshold", "status"):
            summary.add_column(col)
        colours = {"PASS": "green", "FAIL": "red", "WARN": "yellow"}
        for m, v, t, s in self.summary_rows():
            summary.add_row(m, v, t, f"[{colours[s]}]{s}[/]" if s in colours else s)
        console.print(summary)

        if self.by_tag:
            self._render_tags(console)
        self._render_misses(console, max_misses)
        for w in self.warnings:
            console.print(f"[yellow]warning:[/] {escape(w)}")
        if self.reasons:
            console.print("[bold red]Blocking failures:[/]")
            for r in self.reasons:
                console.print(f"  - {escape(r)}")

    def _render_tags(self, console: Console) -> None:
        from rich.markup import escape
        from rich.table import Table

        tags = Table(title="By tag", title_justify="left")
        for col in ("tag", "cases", "perfect", "recall", "precision"):
            tags.add_column(col, justify="left" if col == "tag" else "right")
        for ts in self.by_tag:
            tags.add_row(
                escape(ts.tag), str(ts.cases), str(ts.perfect), _fmt(ts.recall), _fmt(ts.precision)
            )
        console.print(tags)

    def _render_misses(self, console: Console, max_misses: int | None) -> None:
        from rich.markup import escape
        from rich.table import Table

        misses = self.misses
        shown = misses if max_misses is None else misses[:max_misses]
        if misses:
            table = Table(
                title=f"Misses ({len(misses)} of {len(self.cases)} cases)", title_justify="left"
            )
            table.add_column("case", overflow="fold")
            table.add_column("R", justify="right")
            table.add_column("P", justify="right")
            table.add_column("problems", overflow="fold")
            table.add_column("missing / wrong items", overflow="fold")
            for c in shown:
                details = [f"[red]missing:[/] {escape(_short(m, 80))}" for m in c.missing]
                details += [
                    f"[yellow]{r.verdict}:[/] {escape(_short(r.content, 80))} ({r.score:.2f})"
                    for r in c.returned
                    if r.verdict != "expected"
                ]
                table.add_row(
                    escape(c.id),
                    _fmt(c.recall),
                    _fmt(c.precision),
                    escape("; ".join(c.problems)),
                    "\n".join(details),
                )
            console.print(table)
            if len(shown) < len(misses):
                console.print(f"... {len(misses) - len(shown)} more (see --json or --out)")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _short(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


# -- running --------------------------------------------------------------------------------------
ProgressCallback = Callable[[str, int, int], None]


def relation(case: GoldenCase, m: SetupMemory) -> str:
    """How ``case``'s querying identity relates to the owner of ``m``.

    ``cross_tenant`` for another tenant's row, ``cross_user`` for another user's row in a
    private scope (user facts, conversations), else ``own`` (including another user's
    tenant-wide documents or facts, and agent facts, which the tenant shares).
    """
    tenant, user, _agent, _session = case.owner(m)
    if tenant != case.tenant_id:
        return "cross_tenant"
    if user != case.user_id and m.home_scope in PRIVATE_SCOPES:
        return "cross_user"
    return "own"


def _write_case(mem: AgentMemory, prefix: str, case: GoldenCase) -> dict[str, SetupMemory]:
    """Write a case's setup memories in order; returns record id -> the memory that wrote it."""
    owners: dict[str, SetupMemory] = {}
    for n, m in enumerate(case.setup):
        tenant, user, agent, session = case.owner(m)
        bound = mem.bind(f"{prefix}.{tenant}", f"{prefix}.{user}", agent, session)
        for id_ in _write_memory(bound, m, n):
            owners.setdefault(id_, m)
    return owners


def _write_memory(bound: BoundMemory, m: SetupMemory, n: int) -> list[str]:
    if m.kind == "memory":
        result = bound.remember(
            m.content,
            memory_type=m.memory_type or "fact",
            scope=m.scope or "user",
            importance=m.importance,
            topic_key=m.topic_key,
            metadata=m.metadata,
        )
        return [result.id]
    if m.kind == "chat_message":
        item = bound.add_message(
            m.role or "user", m.content, metadata=m.metadata, event_time=m.event_time
        )
        return [item.id]
    if m.kind == "tool_output":
        item = bound.add_tool_output(
            m.tool_call_id or f"call-{n}",
            m.content,
            tool_name=m.tool_name,
            metadata=m.metadata,
        )
        return [item.id]
    chunks = bound.add_document(m.content, source_ref=m.source_ref, metadata=m.metadata)
    return [c.id for c in chunks]


def score_case(
    case: GoldenCase,
    owners: Mapping[str, SetupMemory],
    result: RecallResult,
    *,
    latency_ms: float = 0.0,
    token_budget: int = 1000,
) -> CaseResult:
    """Judge one recall result against its case.

    Args:
        case: The case that was queried.
        owners: Record id -> the setup memory that wrote it (a document maps every chunk).
        result: What recall returned.
        latency_ms: How long the recall took.
        token_budget: The budget the recall ran with.

    Each hit gets a verdict: ``cross_tenant``/``cross_user`` (see :func:`relation`) before
    anything else, then ``expected``, ``forbidden`` or ``unexpected`` by the content of the
    setup memory that wrote it, or ``unknown`` for a row no setup memory wrote.
    """
    expected = set(case.expected)
    forbidden = set(case.forbidden)
    returned: list[ReturnedItem] = []
    found: set[str] = set()
    for hit in result.items:
        owner = owners.get(hit.id)
        if owner is None:
            verdict = "unknown"
        elif (rel := relation(case, owner)) != "own":
            verdict = rel
        elif owner.content in expected:
            verdict = "expected"
            found.add(owner.content)
        elif owner.content in forbidden:
            verdict = "forbidden"
        else:
            verdict = "unexpected"
        returned.append(ReturnedItem(hit.content, hit.kind, hit.score, verdict))
    relevant = sum(1 for r in returned if r.verdict == "expected")
    recall = len(found) / len(expected) if expected else None
    precision = relevant / len(returned) if returned else None
    return CaseResult(
        id=case.id,
        tags=case.tags,
        query=case.query,
        rubric=case.rubric,
        expected=case.expected,
        expect_empty=case.expect_empty,
        returned=tuple(returned),
        found=tuple(c for c in case.expected if c in found),
        missing=tuple(c for c in case.expected if c not in found),
        recall=recall,
        precision=precision,
        latency_ms=latency_ms,
        token_count=result.token_count,
        counted_tokens=sum(count_tokens(h.content) for h in result.items),
        token_budget=token_budget,
        degraded=result.degraded,
    )


def run_golden(
    dataset: GoldenDataset,
    *,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
    thresholds: Thresholds | None = None,
    top_k: int = TOP_K,
    workdir: str | Path | None = None,
    progress: ProgressCallback | None = None,
) -> GoldenReport:
    """Run every case of ``dataset`` in one fresh store and score it.

    Args:
        dataset: From :func:`load_dataset` or :func:`parse_dataset`.
        embedder: Shared by the whole run; default: the packaged MiniLM, loaded once.
        config: Store configuration; default ``MemoryConfig.from_env()`` (as a user gets it).
        thresholds: Blocking thresholds; default seed 004's.
        top_k: Hits per query (seed 004: 5).
        workdir: Keep the store in this (new or empty) directory instead of a temporary one,
            e.g. to inspect a failing case afterwards; case ``n`` uses tenant ``gNNNN.<tenant>``.
        progress: ``progress(phase, done, total)`` with phase ``write`` then ``recall``.
    """
    thresholds = thresholds or Thresholds()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    shared = embedder or default_embedder()
    with tempfile.TemporaryDirectory(prefix="agentmem-eval-") as tmp:
        home = Path(workdir) if workdir is not None else Path(tmp)
        if workdir is not None and home.exists() and any(home.iterdir()):
            raise ValidationError(
                "workdir", f"{home} is not empty; the evaluation needs a fresh store"
            )
        with AgentMemory(home, embedder=shared, config=config) as mem:
            total = len(dataset.cases)
            written: list[dict[str, SetupMemory]] = []
            for n, case in enumerate(dataset.cases):
                written.append(_write_case(mem, _prefix(n), case))
                if progress is not None:
                    progress("write", n + 1, total)
            # A throwaway tenant warms the embedder, tokenizer and both indexes, so the timed
            # recalls measure a warm process (seed 004's p95 is a steady-state figure).
            warm = mem.bind("golden-warmup", "warmup", DEFAULT_AGENT, DEFAULT_SESSION)
            warm.remember("warm-up memory for the evaluation")
            mem.flush()
            warm.recall("warm-up query")
            results: list[CaseResult] = []
            for n, case in enumerate(dataset.cases):
                bound = mem.bind(
                    f"{_prefix(n)}.{case.tenant_id}",
                    f"{_prefix(n)}.{case.user_id}",
                    case.agent_id,
                    case.session_id,
                )
                budget = case.token_budget or mem.config.token_budget
                t0 = time.perf_counter()
                result = bound.recall(
                    case.query,
                    top_k=top_k,
                    kinds=case.kinds,
                    memory_types=case.types,
                    scope=case.scope,
                    token_budget=case.token_budget,
                )
                latency = (time.perf_counter() - t0) * 1000.0
                results.append(
                    score_case(case, written[n], result, latency_ms=latency, token_budget=budget)
                )
                if progress is not None:
                    progress("recall", n + 1, total)
    return summarize(
        results,
        dataset=dataset,
        thresholds=thresholds,
        top_k=top_k,
        embedder=getattr(shared, "model_name", type(shared).__name__),
        duration_s=time.perf_counter() - started,
        started_at=started_at,
    )


def _prefix(n: int) -> str:
    return f"g{n:04d}"


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(
    results: Sequence[CaseResult],
    *,
    dataset: GoldenDataset,
    thresholds: Thresholds,
    top_k: int = TOP_K,
    embedder: str = "",
    duration_s: float = 0.0,
    started_at: str = "",
) -> GoldenReport:
    """Aggregate per-case results into a :class:`GoldenReport` with the pass/fail verdict."""
    recall = _mean([c.recall for c in results if c.recall is not None])
    precision = _mean([c.precision for c in results if c.precision is not None])
    latencies = [c.latency_ms for c in results]
    budget_violations = sum(1 for c in results if not c.budget_ok)
    cross_user = sum(c.cross_user for c in results)
    cross_tenant = sum(c.cross_tenant for c in results)
    forbidden = sum(c.forbidden_hits for c in results)
    empties = [c for c in results if c.expect_empty]
    empty_rate = _mean([1.0 if not c.returned else 0.0 for c in empties])
    p50 = percentile(latencies, 50)
    p95 = percentile(latencies, 95)

    reasons: list[str] = []
    if recall is not None and recall < thresholds.min_recall:
        reasons.append(f"Recall@{top_k} {recall:.3f} < {thresholds.min_recall}")
    if precision is not None and precision < thresholds.min_precision:
        reasons.append(f"Precision@{top_k} {precision:.3f} < {thresholds.min_precision}")
    if cross_user:
        cases = sorted({c.id for c in results if c.cross_user})
        reasons.append(f"{cross_user} cross-user item(s) returned in {', '.join(cases)}")
    if cross_tenant:
        cases = sorted({c.id for c in results if c.cross_tenant})
        reasons.append(f"{cross_tenant} cross-tenant item(s) returned in {', '.join(cases)}")
    if budget_violations:
        cases = sorted(c.id for c in results if not c.budget_ok)
        reasons.append(f"{budget_violations} recall(s) over their token budget: {', '.join(cases)}")
    warnings: list[str] = []
    if p95 > thresholds.max_latency_p95_ms:
        warnings.append(
            f"latency p95 {p95:.1f} ms > {thresholds.max_latency_p95_ms:g} ms (not blocking)"
        )
    if forbidden:
        cases = sorted({c.id for c in results if c.forbidden_hits})
        warnings.append(f"{forbidden} forbidden item(s) returned in {', '.join(cases)}")
    if empty_rate is not None and empty_rate < 1.0:
        failed = sorted(c.id for c in empties if c.returned)
        warnings.append(
            f"{len(failed)} of {len(empties)} expect_empty case(s) returned items: "
            + ", ".join(failed)
        )
    degraded = sum(1 for c in results if c.degraded)
    if degraded:
        warnings.append(f"{degraded} recall(s) were degraded (indexing had not caught up)")

    tag_names: dict[str, None] = {}
    for c in results:
        for t in c.tags:
            tag_names.setdefault(t, None)
    by_tag = []
    for tag in sorted(tag_names):
        tagged = [c for c in results if tag in c.tags]
        by_tag.append(
            TagSummary(
                tag=tag,
                cases=len(tagged),
                perfect=sum(1 for c in tagged if not c.problems),
                recall=_mean([c.recall for c in tagged if c.recall is not None]),
                precision=_mean([c.precision for c in tagged if c.precision is not None]),
            )
        )
    return GoldenReport(
        dataset=dataset.source,
        version=dataset.version,
        top_k=top_k,
        cases=tuple(results),
        thresholds=thresholds,
        embedder=embedder,
        duration_s=duration_s,
        started_at=started_at,
        recall_at_k=recall,
        precision_at_k=precision,
        latency_p50_ms=p50,
        latency_p95_ms=p95,
        token_budget_compliance=(
            (len(results) - budget_violations) / len(results) if results else 1.0
        ),
        budget_violations=budget_violations,
        cross_user_violations=cross_user,
        cross_tenant_violations=cross_tenant,
        forbidden_hits=forbidden,
        expect_empty_pass_rate=empty_rate,
        degraded_recalls=degraded,
        passed=not reasons,
        reasons=tuple(reasons),
        warnings=tuple(warnings),
        by_tag=tuple(by_tag),
    )


# -- output -----------------------------------------------------------------------------------------
def write_report(report: GoldenReport, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.md`` into ``out_dir`` (created if missing)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "report.json"
    md_path = out / "report.md"
    json_path.write_text(report.to_json() + "\n", encoding="utf-8")
    md_path.write_text(report.to_markdown(), encoding="utf-8")
    return json_path, md_path


class MlflowError(AgentMemError):
    """Logging to MLflow failed (the evaluation itself is unaffected)."""


class MlflowUnavailable(MlflowError):
    """mlflow is not installed; ``--mlflow`` is optional and skipped."""


#: MLflow 3 refuses its file store unless this is set; a local tracking dir is what we want.
_MLFLOW_FILE_STORE_ENV = "MLFLOW_ALLOW_FILE_STORE"


def log_to_mlflow(
    report: GoldenReport, tracking_dir: str | Path, *, experiment: str = "agentmem-golden"
) -> str:
    """Log the report to a local file-based MLflow tracking directory; returns the run id.

    Logs the dataset, version, case count, embedder and top_k as params, every number of
    :meth:`GoldenReport.metrics` as a metric, ``passed`` as a tag and the full report as the
    artifact ``report.json``.

    Raises:
        MlflowUnavailable: mlflow is not installed (it is not a dependency of agentmem).
        MlflowError: mlflow failed; the original exception is chained.
    """
    try:
        import mlflow
    except ImportError as exc:
        raise MlflowUnavailable(
            "mlflow is not installed (pip install mlflow); skipping MLflow logging"
        ) from exc
    path = Path(tracking_dir).expanduser().resolve()
    previous = os.environ.get(_MLFLOW_FILE_STORE_ENV)
    os.environ[_MLFLOW_FILE_STORE_ENV] = "true"
    try:
        path.mkdir(parents=True, exist_ok=True)
        mlflow.set_tracking_uri(path.as_uri())
        mlflow.set_experiment(experiment)
        with mlflow.start_run(run_name=f"golden {Path(report.dataset).name}") as run:
            mlflow.log_params(
                {
                    "dataset": report.dataset,
                    "dataset_version": report.version,
                    "cases": len(report.cases),
                    "embedder": report.embedder,
                    "top_k": report.top_k,
                }
            )
            mlflow.log_metrics(report.metrics())
            mlflow.set_tag("passed", str(report.passed))
            mlflow.log_dict(report.to_dict(), "report.json")
            run_id: str = run.info.run_id
    except Exception as exc:  # mlflow raises many types; translate at the boundary
        raise MlflowError(
            f"MLflow logging to {path} failed: {type(exc).__name__}: {exc}", path=str(path)
        ) from exc
    finally:
        if previous is None:
            os.environ.pop(_MLFLOW_FILE_STORE_ENV, None)
        else:
            os.environ[_MLFLOW_FILE_STORE_ENV] = previous
    return run_id


__all__ = [
    "CaseResult",
    "DatasetError",
    "GoldenCase",
    "GoldenDataset",
    "GoldenReport",
    "MlflowError",
    "MlflowUnavailable",
    "ReturnedItem",
    "SetupMemory",
    "TagSummary",
    "Thresholds",
    "load_dataset",
    "log_to_mlflow",
    "parse_dataset",
    "percentile",
    "relation",
    "run_golden",
    "score_case",
    "summarize",
    "write_report",
]
