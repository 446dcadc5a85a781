"""Where :meth:`agentmem.AgentMemory.calibrate` gets its labelled data.

The labelled cases that ship with agentmem, and the code that writes them into a scratch store
and collects recall's candidates, belong to the evaluation layer, above the facade. So the
facade does not import them: the evaluation layer registers its collector here when it is
imported (:func:`register`; the package root imports it with the engine's names, e.g. on
``agentmem.AgentMemory``, and ``agentmem calibrate`` imports it), and calibrate asks for it
(:func:`shipped`).

Example:
    >>> labelled = shipped(default_embedder())  # doctest: +SKIP
    >>> labelled.score_families  # doctest: +SKIP
    frozenset({'golden', 'calibration'})
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..embeddings import Embedder
from ..errors import ConfigError
from .fit import Labelled

Progress = Callable[[int, int], None]
"""``progress(done, total)``: sets of cases collected so far."""


@dataclass(frozen=True)
class LabelledSet:
    """Labelled cases to fit a profile on.

    Attributes:
        cases: Every case's labelled candidates.
        described: What they are (kept in the profile).
        score_families: The families the calibrated score is fitted on; the ordering is
            fitted on every family. Empty: every family.
    """

    cases: Sequence[Labelled]
    described: str
    score_families: frozenset[str] = frozenset()


Collector = Callable[[Embedder, Progress | None], LabelledSet]
"""Collects the shipped labelled cases with an embedder."""

_collector: list[Collector] = []


def register(collector: Collector) -> None:
    """Make ``collector`` the source of :func:`shipped` (the last one registered wins)."""
    _collector[:] = [collector]


def shipped(embedder: Embedder, progress: Progress | None = None) -> LabelledSet:
    """The shipped labelled cases' candidates, collected with ``embedder``.

    Raises:
        ConfigError: no collector is registered (``agentmem.evaluation`` was not imported).
    """
    if not _collector:
        raise ConfigError(
            "no labelled data to calibrate on: import agentmem.evaluation.calibration_data "
            "(using agentmem.AgentMemory does) or pass the labelled cases to calibrate()"
        )
    return _collector[0](embedder, progress)


__all__ = ["Collector", "LabelledSet", "Progress", "register", "shipped"]
