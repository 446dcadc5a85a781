"""A family's cases as the suite asks them, and the labeller of its stored rows.

Every family, whatever its file format, is written into a store as a :class:`WrittenFamily`:
its cases, each with the identity and scope it is asked with and the evidence units a
relevant hit carries, and a labeller naming the units a stored row carries (a turn id, the
content of the setup memory that wrote it, passages, LoCoMo dia ids).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...models import Identity

#: ``units(row_id, content, metadata)``: the evidence units a stored row carries.
Labeller = Callable[[str, str, Mapping[str, Any]], tuple[str, ...]]


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


__all__ = ["Labeller", "SuiteCase", "WrittenFamily"]
