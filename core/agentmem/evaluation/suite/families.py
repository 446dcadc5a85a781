"""The task families of the suite: their names, where their data is, and how each is loaded
and written into a store.

Every family is written into a fresh store of its own (so one family's rows never change
another's keyword statistics) and becomes a :class:`~.cases.WrittenFamily`. The formats:

- **golden format** (``paraphrase``, ``identifiers``, ``tool_outputs``, ``documents``): one
  shared store per family, see :mod:`.golden_family`;
- **conversation format** (``implicit``, ``implicit_dialogue``, ``temporal``): see
  :mod:`.conversations`;
- **LoCoMo** (``locomo``): a LoCoMo file given at run time, see :mod:`.locomo_family`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...memory import AgentMemory
from ..golden.dataset import DatasetError, GoldenDataset
from .cases import WrittenFamily
from .conversations import ConversationSet, load_conversations, write_conversations
from .golden_family import load_golden_family, write_golden_shared

#: Every family, in report order.
FAMILIES: tuple[str, ...] = (
    "locomo",
    "implicit",
    "implicit_dialogue",
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
CONVERSATION_FAMILIES: frozenset[str] = frozenset({"implicit", "implicit_dialogue", "temporal"})
#: Families kept to validate what is fitted on the others: the suite reports them, and a fit
#: (:func:`~agentmem.evaluation.suite.collect_suite`) collects one only when it is named.
VALIDATION_FAMILIES: frozenset[str] = frozenset({"implicit_dialogue"})

_DATA = Path(__file__).resolve().parent.parent / "data" / "suite"


def suite_dir() -> Path:
    """The installed directory of the suite's family files (package data)."""
    return _DATA


def data_families() -> tuple[str, ...]:
    """The families whose data is a file of the suite (all but LoCoMo)."""
    return tuple(f for f in FAMILIES if f != "locomo")


def family_path(name: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """The file of family ``name`` in ``directory`` (default :func:`suite_dir`)."""
    if name not in data_families():
        raise ValueError(f"no family file for {name!r}; families with files: {data_families()}")
    return Path(directory if directory is not None else _DATA) / f"{name}.json"


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
    """Write a loaded family file into ``mem`` (by its format's writer)."""
    if isinstance(data, ConversationSet):
        return write_conversations(mem, data)
    return write_golden_shared(mem, data)


__all__ = [
    "CONVERSATION_FAMILIES",
    "FAMILIES",
    "GOLDEN_FAMILIES",
    "VALIDATION_FAMILIES",
    "data_families",
    "family_path",
    "load_family",
    "suite_dir",
    "write_family",
]
