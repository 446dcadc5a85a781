"""The task families of the suite: where their data is, and how each is written into a store.

Every family is written into a fresh store of its own (so one family's rows never change
another's keyword statistics) and becomes a :class:`WrittenFamily`: its cases, each with the
identity and scope it is asked with, and a labeller naming the evidence units a stored row
carries. A hit is relevant to a case when it carries one of the case's evidence units.

- **golden format** (``paraphrase``, ``identifiers``, ``tool_outputs``, ``documents``):
  :func:`write_golden_shared` writes the distractors, then every case's setup memories, into
  one store as one user (the family's shared store): each case's neighbours are the other
  cases' memories as well as the pool. The evidence units of a row are the content of the
  setup memory that wrote it (a document's content for each of its chunks) and the expected
  passages its content holds. :func:`write_golden_isolated` writes each case into a store of
  its own, as ``agentmem eval --dataset`` does (the golden set and the calibration cases).
- **conversation format** (``implicit``, ``temporal``): see :mod:`.conversations`; a row's
  unit is its turn id.
- **LoCoMo** (``locomo``): the conversations of a LoCoMo file given at run time (never
  shipped), written by :func:`agentmem.evaluation.locomo.ingest_conversation`; a row's units
  are its dia ids. Its expect-empty questions are the suite's own (:data:`LOCOMO_EMPTY_FILE`):
  templates naming ``{speaker_a}`` or ``{speaker_b}``, asked of every conversation.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...memory import AgentMemory
from ...models import Identity
from ..golden.dataset import (
    DEFAULT_AGENT,
    DEFAULT_TENANT,
    DEFAULT_USER,
    DatasetError,
    GoldenDataset,
    SetupMemory,
    load_dataset,
)
from ..golden.run import bind_case, write_case
from ..locomo.data import CATEGORIES
from ..locomo.data import Conversation as LocomoConversation
from ..locomo.ingest import TENANT as LOCOMO_TENANT
from ..locomo.ingest import ingest_conversation
from ..locomo.metrics import hit_dia_ids
from .conversations import (
    TURN_ID_KEY,
    ConversationSet,
    load_conversations,
    session_messages,
)

#: Every family, in report order.
FAMILIES: tuple[str, ...] = (
    "locomo",
    "implicit",
    "paraphrase",
    "identifiers",
    "tool_outputs",
    "documents",
    "temporal",
)
#: Families in the golden format (shared store per family).
GOLDEN_FAMILIES: frozenset[str] = frozenset(
    {"paraphrase", "identifiers", "tool_outputs", "documents"}
)
#: Families in the conversation format.
CONVERSATION_FAMILIES: frozenset[str] = frozenset({"implicit", "temporal"})
#: The suite's expect-empty questions for LoCoMo conversations (templates).
LOCOMO_EMPTY_FILE = "locomo_empty.json"
#: The session LoCoMo questions are asked from (a new one: every turn is history).
LOCOMO_QUERY_SESSION = "suite-query"
#: Placeholders a LoCoMo expect-empty template may use.
LOCOMO_PLACEHOLDERS = ("{speaker_a}", "{speaker_b}")

_DATA = Path(__file__).resolve().parent.parent / "data" / "suite"

#: ``units(row_id, content, metadata)``: the evidence units a stored row carries.
Labeller = Callable[[str, str, Mapping[str, Any]], tuple[str, ...]]


def suite_dir() -> Path:
    """The installed directory of the suite's family files (package data)."""
    return _DATA


def family_path(name: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """The file of family ``name`` in ``directory`` (default :func:`suite_dir`)."""
    if name not in FAMILIES or name == "locomo":
        raise ValueError(f"no family file for {name!r}; families with files: {data_families()}")
    return Path(directory if directory is not None else _DATA) / f"{name}.json"


def data_families() -> tuple[str, ...]:
    """The families whose data is a file of the suite (all but LoCoMo)."""
    return tuple(f for f in FAMILIES if f != "locomo")


@dataclass(frozen=True, slots=True)
class SuiteCase:
    """One question of a family, as it is asked of the family's store."""

    family: str
    id: str
    group: str
    """The unit a validation leaves out together: a conversation, or the case itself."""
    query: str
    evidence: frozenset[str]
    """Evidence units a relevant hit carries (empty for an expect-empty case)."""
    expect_empty: bool
    identity: Identity
    scope: str
    tags: tuple[str, ...] = ()
    kinds: tuple[str, ...] | None = None
    memory_types: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class WrittenFamily:
    """A family written into a store: its cases and the labeller of its rows."""

    name: str
    cases: tuple[SuiteCase, ...]
    units: Labeller
    rows: int
    """Rows written (a document counts its chunks)."""


# -- golden format --------------------------------------------------------------------------------
def load_golden_family(path: str | os.PathLike[str]) -> GoldenDataset:
    """A golden-format family file; its distractors and cases must belong to one user (the
    family's shared store), and its contents must name one setup memory each."""
    dataset = load_dataset(Path(path))
    problems: list[tuple[str, str]] = []
    shared = (DEFAULT_TENANT, DEFAULT_USER, DEFAULT_AGENT)
    for n, case in enumerate(dataset.cases):
        owners = {(case.tenant_id, case.user_id, case.agent_id)}
        owners.update(case.owner(m)[:3] for m in case.setup)
        if owners != {shared}:
            problems.append(
                (f"cases[{n}]({case.id})", "a shared store has one tenant, user, agent")
            )
    for n, m in enumerate(dataset.distractors):
        if (m.tenant_id, m.user_id, m.agent_id) != (None, None, None):
            problems.append((f"distractors[{n}]", "a shared store has one tenant, user, agent"))
    first: dict[str, str] = {}
    for n, m in enumerate(dataset.distractors):
        first.setdefault(m.content, f"distractors[{n}]")
    for case in dataset.cases:
        for m in case.setup:
            where = first.setdefault(m.content, case.id)
            if where != case.id:
                problems.append((case.id, f"content also written by {where}: {m.content[:60]!r}"))
    if problems:
        raise DatasetError(str(path), problems)
    return dataset


def write_golden_shared(mem: AgentMemory, dataset: GoldenDataset) -> WrittenFamily:
    """Write a golden-format family into one shared store (see the module docstring)."""
    name = dataset.family or Path(dataset.source).stem
    owners: dict[str, SetupMemory] = {}
    written = 0
    for n, case in enumerate(dataset.cases):
        # the distractors first, once; tool call ids numbered across the whole family
        pool = dataset.distractors if n == 0 else ()
        got = write_case(mem, n, case, pool, prefix=name, first_call=written)
        written += len(pool) + len(case.setup)
        for id_, m in got.items():
            owners.setdefault(id_, m)
    cases = tuple(
        _golden_case(name, case, bind_case(mem, n, case, prefix=name).identity, case.id)
        for n, case in enumerate(dataset.cases)
    )
    return WrittenFamily(name, cases, _golden_units(owners, dataset), len(owners))


def write_golden_isolated(mem: AgentMemory, dataset: GoldenDataset) -> WrittenFamily:
    """Write every case of a golden dataset into a store of its own, as ``agentmem eval
    --dataset`` runs it (the distractors into each)."""
    name = dataset.family or Path(dataset.source).stem
    owners: dict[str, SetupMemory] = {}
    cases = []
    for n, case in enumerate(dataset.cases):
        owners.update(write_case(mem, n, case, dataset.distractors))
        cases.append(_golden_case(name, case, bind_case(mem, n, case).identity, case.id))
    return WrittenFamily(name, tuple(cases), _golden_units(owners, dataset), len(owners))


def _golden_case(name: str, case: Any, identity: Identity, group: str) -> SuiteCase:
    return SuiteCase(
        family=name,
        id=case.id,
        group=group,
        query=case.query,
        evidence=frozenset((*case.expected, *case.expected_passages)),
        expect_empty=case.expect_empty,
        identity=identity,
        scope=case.scope,
        tags=case.tags,
        kinds=case.kinds,
        memory_types=case.types,
    )


def _golden_units(owners: Mapping[str, SetupMemory], dataset: GoldenDataset) -> Labeller:
    passages = {p for case in dataset.cases for p in case.expected_passages}

    def units(row_id: str, content: str, metadata: Mapping[str, Any]) -> tuple[str, ...]:
        owner = owners.get(row_id)
        if owner is None:
            return ()
        if owner.kind != "document_chunk" or not passages:
            return (owner.content,)
        return (owner.content, *(p for p in passages if p in content))

    return units


# -- conversation format --------------------------------------------------------------------------
def write_conversations(mem: AgentMemory, data: ConversationSet) -> WrittenFamily:
    """Write every conversation (one user each, in tenant ``suite.<family>``)."""
    tenant = f"suite.{data.family}"
    rows = 0
    for conv in data.conversations:
        for session in conv.sessions:
            bound = mem.bind(tenant, user_id=conv.id, session_id=session.id)
            rows += len(bound.add_messages(session_messages(session)))
    cases = tuple(
        SuiteCase(
            family=data.family,
            id=case.id,
            group=case.conversation,
            query=case.query,
            evidence=frozenset(case.evidence),
            expect_empty=case.expect_empty,
            identity=mem.bind(tenant, user_id=case.conversation, session_id=case.session).identity,
            scope="history",
            tags=case.tags,
        )
        for case in data.cases
    )

    def units(row_id: str, content: str, metadata: Mapping[str, Any]) -> tuple[str, ...]:
        turn = metadata.get(TURN_ID_KEY)
        return (turn,) if isinstance(turn, str) else ()

    return WrittenFamily(data.family, cases, units, rows)


# -- LoCoMo ---------------------------------------------------------------------------------------
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
    p = Path(path) if path is not None else _DATA / LOCOMO_EMPTY_FILE
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


def load_family(
    name: str, directory: str | os.PathLike[str] | None = None
) -> GoldenDataset | ConversationSet:
    """The data of family ``name`` (not ``locomo``) from ``directory`` (default: bundled)."""
    path = family_path(name, directory)
    data = load_conversations(path) if name in CONVERSATION_FAMILIES else load_golden_family(path)
    if data.family and data.family != name:
        raise DatasetError(str(path), [("family", f"is {data.family!r}, expected {name!r}")])
    return data


def write_family(mem: AgentMemory, data: GoldenDataset | ConversationSet) -> WrittenFamily:
    """Write a loaded family file into ``mem`` (see the module docstring)."""
    if isinstance(data, ConversationSet):
        return write_conversations(mem, data)
    return write_golden_shared(mem, data)


__all__ = [
    "CONVERSATION_FAMILIES",
    "FAMILIES",
    "GOLDEN_FAMILIES",
    "LOCOMO_EMPTY_FILE",
    "LOCOMO_QUERY_SESSION",
    "EmptyTemplate",
    "Labeller",
    "SuiteCase",
    "WrittenFamily",
    "data_families",
    "family_path",
    "load_family",
    "load_golden_family",
    "load_locomo_empty",
    "suite_dir",
    "write_conversations",
    "write_family",
    "write_golden_isolated",
    "write_golden_shared",
    "write_locomo",
]
