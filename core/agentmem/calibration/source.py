"""Where :meth:`agentmem.AgentMemory.calibrate` gets its labelled data.

The labelled cases that ship with agentmem, and the code that writes them into a scratch store
and collects recall's candidates, belong to the evaluation layer, above the facade. So the
facade does not import them: the evaluation layer registers its collector here when it is
imported (:func:`register`; the package root imports it with the engine's names, e.g. on
``agentmem.AgentMemory``, and ``agentmem calibrate`` imports it), and calibrate asks for it
(:func:`shipped`).

Example:
    >>> queries, described = shipped(default_embedder())  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..embeddings import Embedder
from ..errors import ConfigError
from .fit import Labelled

Progress = Callable[[int, int], None]
"""``progress(done, total)``: cases collected so far."""
Collector = Callable[[Embedder, Progress | None], tuple[Sequence[Labelled], str]]
"""Collects the shipped labelled cases with an embedder: (the cases, what they are, e.g.
``"golden v1 (125 cases)"``)."""

_collector: list[Collector] = []


def register(collector: Collector) -> None:
    """Make ``collector`` the source of :func:`shipped` (the last one registered wins)."""
    _collector[:] = [collector]


def shipped(embedder: Embedder, progress: Progress | None = None) -> tuple[Sequence[Labelled], str]:
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


__all__ = ["Collector", "Progress", "register", "shipped"]
