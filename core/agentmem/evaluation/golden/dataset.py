"""The golden dataset format: its model and a parser that lists every problem it finds.

See :mod:`agentmem.evaluation.golden` for the format.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ValidationError
from ...models import KINDS, MEMORY_TYPES, RECALL_SCOPES, REMEMBER_SCOPES

log = logging.getLogger("agentmem.evaluation")

DEFAULT_TENANT = "acme"
DEFAULT_USER = "alice"
DEFAULT_AGENT = "assistant"
DEFAULT_SESSION = "s-current"

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
        "expected_passages",
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
    expected_passages: tuple[str, ...] = ()
    """Passages of documents (``document_chunk`` setup memories) that must come back: a
    chunk containing one is expected, whichever chunk of its document that is."""
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
    warnings: tuple[str, ...] = ()
    """What the parser accepted but ignored (e.g. top-level keys it does not know)."""
    family: str = ""
    """The task family the cases belong to (a label of the evaluation suite), if any."""
    distractors: tuple[SetupMemory, ...] = ()
    """Setup memories written into every case's store before the case's own."""


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
    warnings: list[str] = []
    # The format grows (a newer file may carry a field this version does not read): a key
    # beside the cases is ignored with a warning, while an unknown key inside a case or a
    # memory is still refused, since there it is most likely a misspelt field.
    unknown = set(data) - {"version", "description", "family", "distractors", "cases"}
    if unknown:
        warnings.append(f"{source}: ignoring unknown top-level keys {sorted(unknown)}")
        log.warning("%s", warnings[-1])
    version = data.get("version", "")
    if not isinstance(version, str):
        problems.append(("version", f"must be a string, got {_jtype(version)}"))
        version = ""
    description = data.get("description", "")
    if not isinstance(description, str):
        problems.append(("description", f"must be a string, got {_jtype(description)}"))
        description = ""
    family = data.get("family", "")
    if not isinstance(family, str):
        problems.append(("family", f"must be a string, got {_jtype(family)}"))
        family = ""
    distractors: list[SetupMemory] = []
    raw_distractors = data.get("distractors", [])
    if not isinstance(raw_distractors, list):
        problems.append(("distractors", f"must be a list, got {_jtype(raw_distractors)}"))
    else:
        for n, m in enumerate(raw_distractors):
            parsed = _parse_memory(m, f"distractors[{n}]", problems)
            if parsed is not None:
                distractors.append(parsed)
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
            case = _parse_case(raw, f"cases[{n}]", problems, distractors)
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
        cases=tuple(cases),
        version=version,
        description=description,
        source=source,
        warnings=tuple(warnings),
        family=family,
        distractors=tuple(distractors),
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


def _parse_case(
    raw: Any,
    where: str,
    problems: list[tuple[str, str]],
    distractors: Sequence[SetupMemory] = (),
) -> GoldenCase | None:
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

    # ``expect_empty: true`` says there is nothing to retrieve: it implies an empty list.
    if (
        "expected_retrievals" not in raw
        and "expected_passages" not in raw
        and raw.get("expect_empty") is not True
    ):
        problems.append(
            (
                f"{label}.expected_retrievals",
                "is required (or expected_passages, or set expect_empty to true)",
            )
        )
    expected = _content_list(raw, "expected_retrievals", label, problems)
    passages = _content_list(raw, "expected_passages", label, problems)
    forbidden = _content_list(raw, "forbidden", label, problems)
    expect_empty = raw.get("expect_empty", False)
    if not isinstance(expect_empty, bool):
        problems.append((f"{label}.expect_empty", f"must be a boolean, got {_jtype(expect_empty)}"))
        expect_empty = False
    if expect_empty and expected:
        problems.append((f"{label}.expected_retrievals", "must be empty when expect_empty is true"))
    if expect_empty and passages:
        problems.append((f"{label}.expected_passages", "must be empty when expect_empty is true"))
    if not expect_empty and not expected and not passages and "expected_retrievals" in raw:
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

    # Expected and forbidden contents must name setup memories the case can reason about
    # (its own, or the distractors every case's store holds).
    pool = [*distractors, *setup]
    contents = {m.content for m in pool}
    case_tenant = ident["tenant_id"] or DEFAULT_TENANT
    for key, values in (("expected_retrievals", expected), ("forbidden", forbidden)):
        for n, content in enumerate(values):
            if content not in contents:
                problems.append(
                    (
                        f"{label}.{key}[{n}]",
                        f"{short(content)!r} is not the content of any setup memory",
                    )
                )
    for n, content in enumerate(expected):
        if content in forbidden:
            problems.append((f"{label}.expected_retrievals[{n}]", "is also listed in forbidden"))
        elif content in contents and not any(
            m.content == content and (m.tenant_id or case_tenant) == case_tenant for m in pool
        ):
            problems.append(
                (
                    f"{label}.expected_retrievals[{n}]",
                    "belongs only to another tenant's memory, which the query can never see",
                )
            )
    documents = [m.content for m in pool if m.kind == "document_chunk"]
    for n, passage in enumerate(passages):
        if not passage.strip():
            problems.append((f"{label}.expected_passages[{n}]", "must not be blank"))
        elif not any(passage in doc for doc in documents):
            problems.append(
                (
                    f"{label}.expected_passages[{n}]",
                    f"{short(passage)!r} is not a passage of any document_chunk setup memory",
                )
            )
    if len(problems) > before:
        return None
    return GoldenCase(
        id=case_id,
        query=query,
        setup=tuple(setup),
        expected=tuple(dict.fromkeys(expected)),
        expected_passages=tuple(dict.fromkeys(passages)),
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


def short(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
