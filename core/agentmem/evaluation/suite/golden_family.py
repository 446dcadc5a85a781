"""Golden-format families: the distractors and every case's memories in one shared store.

:func:`write_golden_shared` writes the distractors, then every case's setup memories, into one
store as one user (the family's shared store): each case's neighbours are the other cases'
memories as well as the pool. The evidence units of a row are the content of the setup
memory that wrote it (a document's content for each of its chunks) and the expected passages
its content holds. :func:`write_golden_isolated` writes each case into a store of its own, as
``agentmem eval --dataset`` does (the golden set and the calibration cases).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...memory import AgentMemory
from ...models import Identity
from ..golden.dataset import (
    DEFAULT_AGENT,
    DEFAULT_TENANT,
    DEFAULT_USER,
    DatasetError,
    GoldenCase,
    GoldenDataset,
    SetupMemory,
    load_dataset,
)
from ..golden.run import bind_case, write_case
from .cases import Labeller, SuiteCase, WrittenFamily


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


def _golden_case(name: str, case: GoldenCase, identity: Identity, group: str) -> SuiteCase:
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
    # in file order: a row's units are the same, in the same order, on every run
    passages = tuple(dict.fromkeys(p for case in dataset.cases for p in case.expected_passages))

    def units(row_id: str, content: str, metadata: Mapping[str, Any]) -> tuple[str, ...]:
        owner = owners.get(row_id)
        if owner is None:
            return ()
        if owner.kind != "document_chunk" or not passages:
            return (owner.content,)
        return (owner.content, *(p for p in passages if p in content))

    return units


__all__ = ["load_golden_family", "write_golden_isolated", "write_golden_shared"]
