"""Where a recall's time goes: wall time per phase, for ``agentmem bench --profile`` and for
the telemetry of every recall (:mod:`agentmem.telemetry.recalls`: spans, metrics).

The engine marks the end of each phase of a recall (:data:`PHASES`) on the profile that is
active in the calling context (:func:`profiling`); with none active, a mark is one context
variable lookup. The query embedding and the vector searches run on a worker thread beside
the keyword side: their times are recorded as ``embed_model`` and ``vector_search``
(:data:`BESIDE`: overlapped, so not part of the sum of the other phases), and the time
recall then still waits for them as ``vector_wait``.

Example:
    >>> prof = RecallProfile()
    >>> with profiling(prof):  # doctest: +SKIP
    ...     memory.recall("where does Alice live?")
    >>> sorted(prof.runs[0])  # doctest: +SKIP
    ['budget', 'embed_model', 'gate_keyword', 'gate_vector', ...]
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["BESIDE", "PHASES", "RecallProfile", "active", "profiling", "recording"]

#: The phases of one recall, in pipeline order (``embed_model`` runs beside the others).
PHASES: tuple[str, ...] = (
    "plan",
    "keyword_search",
    "gate_keyword",
    "pending",
    "vector_wait",
    "gate_vector",
    "score",
    "rerank",
    "budget",
    "access",
    "log",
    "embed_model",
    "vector_search",
)
#: Phases run on the vector worker, beside the phases of the calling thread.
BESIDE: frozenset[str] = frozenset({"embed_model", "vector_search"})

_ACTIVE: ContextVar[RecallProfile | None] = ContextVar("agentmem_recall_profile", default=None)


def active() -> RecallProfile | None:
    """The profile recording the current context's recalls, if any."""
    return _ACTIVE.get()


@contextlib.contextmanager
def profiling(profile: RecallProfile) -> Iterator[RecallProfile]:
    """Record every recall made in this context (this thread or task) on ``profile``."""
    token = _ACTIVE.set(profile)
    try:
        yield profile
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def recording() -> Iterator[RecallProfile]:
    """A profile of its own for the recall made inside the block; its run is also added to
    the profile that was active around it (a benchmark's), so both see it."""
    outer = _ACTIVE.get()
    profile = RecallProfile()
    try:
        with profiling(profile):
            yield profile
    finally:
        if outer is not None:
            outer.runs.extend(profile.runs)


class RecallProfile:
    """Per-phase wall times (ms) of the recalls made while it is active.

    Attributes:
        runs: One ``{phase: ms}`` per finished recall (``total``: its wall time).
        segments: The last recall's phases as ``(phase, start, end)`` marks of
            :func:`time.perf_counter` (a phase marked twice has two), for spans.
        facts: Counts the last recall reported at its end (``candidates``).
    """

    def __init__(self) -> None:
        self.runs: list[dict[str, float]] = []
        self.segments: list[tuple[str, float, float]] = []
        self.facts: dict[str, int] = {}
        self._current: dict[str, float] | None = None
        self._started = 0.0
        self._last = 0.0

    def begin(self) -> None:
        """Start timing one recall."""
        self._current = {}
        self.segments = []
        self.facts = {}
        self._started = self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        """The time since the previous mark belongs to ``phase``."""
        now = time.perf_counter()
        if self._current is not None:
            self._current[phase] = self._current.get(phase, 0.0) + (now - self._last) * 1000
            self.segments.append((phase, self._last, now))
        self._last = now

    def add(self, phase: str, ms: float, started: float | None = None) -> None:
        """Record ``ms`` measured elsewhere (the embedding, on its worker thread), which began
        at ``started`` (a :func:`time.perf_counter` value) when known."""
        if self._current is not None:
            self._current[phase] = self._current.get(phase, 0.0) + ms
            if started is not None:
                self.segments.append((phase, started, started + ms / 1000))

    def end(self, **facts: int) -> None:
        """Close the recall: its total is the wall time since :meth:`begin`."""
        if self._current is None:
            return
        self._current["total"] = (time.perf_counter() - self._started) * 1000
        self.runs.append(self._current)
        self.facts = facts
        self._current = None

    @property
    def started(self) -> float:
        """When the current (or last) recall began (:func:`time.perf_counter`)."""
        return self._started
