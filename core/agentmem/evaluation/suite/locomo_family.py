"""The LoCoMo family: the conversations of a LoCoMo file given at run time (never shipped),
and the suite's own expect-empty questions for them.

The conversations are written by :func:`agentmem.evaluation.locomo.ingest_conversation`; a
row's units are its dia ids; a question is asked from a new session with scope ``history``.
The expect-empty questions (:data:`LOCOMO_EMPTY_FILE`) are templates naming ``{speaker_a}``
or ``{speaker_b}``, asked of every conversation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...memory import AgentMemory
from ..golden.dataset import DatasetError
from ..locomo.data import CATEGORIES
from ..locomo.data import Conversation as LocomoConversation
from ..locomo.ingest import TENANT as LOCOMO_TENANT
from ..locomo.ingest import ingest_conversation
from ..locomo.metrics import hit_dia_ids
from .cases import SuiteCase, WrittenFamily
from .families import suite_dir

#: The suite's expect-empty questions for LoCoMo conversations (templates).
LOCOMO_EMPTY_FILE = "locomo_empty.json"
#: The session LoCoMo questions are asked from (a new one: every turn is history).
LOCOMO_QUERY_SESSION = "suite-query"
#: Placeholders a LoCoMo expect-empty template may use.
LOCOMO_PLACEHOLDERS = ("{speaker_a}", "{speaker_b}")


@dataclass(frozen=True, slots=True)
class EmptyTemplate:
    """A question about something no conversation holds, naming a speaker by placeholder."""

    id: str
    query: str
    tags: tuple[str, ...] = ()

    def ask(self, conv: LocomoConversation) -> str:
        return self.query.replace("{speaker_a}", conv.speaker_a).replace(
            "{speaker_b}", conv.speaker_b
        )


def load_locomo_empty(path: str | os.PathLike[str] | None = None) -> tuple[EmptyTemplate, ...]:
    """The suite's expect-empty templates for LoCoMo (default: the bundled file)."""
    p = Path(path) if path is not None else suite_dir() / LOCOMO_EMPTY_FILE
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(str(p), [("file", str(exc))]) from exc
    problems: list[tuple[str, str]] = []
    raw = data.get("cases") if isinstance(data, Mapping) else None
    if not isinstance(raw, list) or not raw:
        raise DatasetError(str(p), [("cases", "must be a non-empty list")])
    out: list[EmptyTemplate] = []
    seen: set[str] = set()
    for n, case in enumerate(raw):
        where = f"cases[{n}]"
        if not isinstance(case, Mapping):
            problems.append((where, "must be an object"))
            continue
        id_, query, tags = case.get("id"), case.get("query"), case.get("tags", [])
        if not isinstance(id_, str) or not id_ or id_ in seen:
            problems.append((f"{where}.id", "must be a unique non-empty string"))
            continue
        seen.add(id_)
        if case.get("expect_empty") is not True:
            problems.append((f"{where}.expect_empty", "must be true (templates expect nothing)"))
        if not isinstance(query, str) or not any(ph in query for ph in LOCOMO_PLACEHOLDERS):
            problems.append((f"{where}.query", f"must name one of {list(LOCOMO_PLACEHOLDERS)}"))
            continue
        leftover = query
        for ph in LOCOMO_PLACEHOLDERS:
            leftover = leftover.replace(ph, "")
        if "{" in leftover or "}" in leftover:
            problems.append((f"{where}.query", "has a placeholder other than speaker_a/b"))
            continue
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            problems.append((f"{where}.tags", "must be a list of strings"))
            continue
        out.append(EmptyTemplate(id_, query, tuple(tags)))
    if problems:
        raise DatasetError(str(p), problems)
    return tuple(out)


def write_locomo(
    mem: AgentMemory,
    conversations: Sequence[LocomoConversation],
    empty: Sequence[EmptyTemplate] = (),
) -> WrittenFamily:
    """Write LoCoMo conversations; cases are their scored questions (categories 1-4) and the
    expect-empty templates asked of each conversation."""
    rows = sum(ingest_conversation(mem, conv, False) for conv in conversations)
    cases: list[SuiteCase] = []
    for conv in conversations:
        identity = mem.bind(
            LOCOMO_TENANT, user_id=conv.sample_id, session_id=LOCOMO_QUERY_SESSION
        ).identity
        for q in conv.questions:
            cases.append(
                SuiteCase(
                    family="locomo",
                    id=f"{conv.sample_id}:q{q.index}",
                    group=conv.sample_id,
                    query=q.question,
                    evidence=frozenset(q.evidence),
                    expect_empty=False,
                    identity=identity,
                    scope="history",
                    tags=(CATEGORIES[q.category],),
                )
            )
        for t in empty:
            cases.append(
                SuiteCase(
                    family="locomo",
                    id=f"{conv.sample_id}:{t.id}",
                    group=conv.sample_id,
                    query=t.ask(conv),
                    evidence=frozenset(),
                    expect_empty=True,
                    identity=identity,
                    scope="history",
                    tags=t.tags,
                )
            )

    def units(row_id: str, content: str, metadata: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(hit_dia_ids(metadata))

    return WrittenFamily("locomo", tuple(cases), units, rows)


__all__ = [
    "LOCOMO_EMPTY_FILE",
    "LOCOMO_PLACEHOLDERS",
    "LOCOMO_QUERY_SESSION",
    "EmptyTemplate",
    "load_locomo_empty",
    "write_locomo",
]
