"""What recent recalls looked like, for metrics, traces and the inspector.

Every recall made through the operation layer is observed once (:func:`observe`): its phase
times come from the recall profiler (:mod:`agentmem.recall.profile`, the engine's own phase
marks), its counts and flags from its result. The observation is

- kept in a small ring per open store (:class:`RecallObservations`, the last
  :data:`RECENT`), which a page of recall latency over time or of the score distribution of
  the last queries reads;
- handed to the ring's listeners (the server's Prometheus metrics);
- and, when tracing is on, written as an ``agentmem.recall`` span with one child span per
  phase (``agentmem.recall.<phase>``, from the profiler's marks).

An observation holds ids and numbers only: never the query or any stored content.

Example:
    >>> ring = RecallObservations()
    >>> [o.latency_ms for o in ring.recent(tenant_id="acme")]
    []
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..models import Identity, RecallResult
from ..recall.profile import BESIDE, RecallProfile, recording
from . import tracing

__all__ = ["RECENT", "RecallObservation", "RecallObservations", "observe"]

log = logging.getLogger("agentmem.telemetry")

#: Recalls kept per store (about 1 KB each).
RECENT = 512


@dataclass(frozen=True, slots=True)
class RecallObservation:
    """One finished recall, as numbers (no query, no content).

    Attributes:
        at: When it finished (UTC).
        tenant_id: The tenant it ran for (a reader shows a tenant only its own).
        user_id: The bound user, if any.
        agent_id: The bound agent, if any.
        scope: The scope asked for (``any``, ``user``, ...).
        latency_ms: Its wall time in the engine.
        phases: Milliseconds per phase (:data:`agentmem.recall.profile.PHASES`).
        results: Items returned.
        candidates: Candidates scored before the cut-offs.
        degraded: Whether the vector half was incomplete.
        rerank_used: Whether a reranker ordered the items.
        truncated: Whether the token budget cut the answer.
        token_count: Tokens returned.
        scores: The returned items' scores, best first.
        hit_ids: The returned items' ids, best first.
    """

    at: datetime
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    scope: str
    latency_ms: float
    phases: Mapping[str, float]
    results: int
    candidates: int
    degraded: bool
    rerank_used: bool
    truncated: bool
    token_count: int
    scores: tuple[float, ...]
    hit_ids: tuple[str, ...]


Listener = Callable[[RecallObservation], None]


class RecallObservations:
    """The last ``size`` recalls of one store, and who wants to hear of each new one."""

    def __init__(self, size: int = RECENT) -> None:
        self._ring: deque[RecallObservation] = deque(maxlen=size)
        self._listeners: tuple[Listener, ...] = ()
        self._lock = threading.Lock()

    def add(self, observation: RecallObservation) -> None:
        """Keep ``observation`` and hand it to every listener (a failing listener is
        logged: it must not fail the recall)."""
        self._ring.append(observation)
        for listener in self._listeners:
            try:
                listener(observation)
            except Exception as exc:
                log.error("a recall listener failed: %s", type(exc).__name__)

    def recent(
        self,
        *,
        tenant_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        limit: int | None = None,
    ) -> list[RecallObservation]:
        """The kept recalls (of ``tenant_id``, ``user_id`` and ``agent_id`` only, those
        given), oldest first; the last ``limit`` of them."""
        wanted = {"tenant_id": tenant_id, "user_id": user_id, "agent_id": agent_id}
        kept = [
            o
            for o in list(self._ring)
            if all(v is None or getattr(o, k) == v for k, v in wanted.items())
        ]
        return kept if limit is None else kept[-limit:] if limit > 0 else []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with each new observation (in the recalling thread); returns
        the function that stops it."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = tuple(x for x in self._listeners if x is not listener)

        return unsubscribe


def observe(
    observations: RecallObservations,
    identity: Identity,
    scope: str,
    run: Callable[[], RecallResult],
) -> RecallResult:
    """Run one recall (``run``) observed: profiled, kept, and traced when tracing is on."""
    wall_ns, perf = time.time_ns(), time.perf_counter()
    attributes: tracing.Attributes = {
        "agentmem.tenant_hash": tracing.short_hash(identity.tenant_id),
        "agentmem.recall.scope": scope,
    }
    with recording() as prof, tracing.span("agentmem.recall", attributes) as current:
        result = run()
        observation = _observation(identity, scope, result, prof)
        if current is not None:
            _annotate(current, observation)
            _phase_spans(current, prof, wall_ns, perf)
    observations.add(observation)
    return result


def _observation(
    identity: Identity, scope: str, result: RecallResult, prof: RecallProfile
) -> RecallObservation:
    phases = dict(prof.runs[-1]) if prof.runs else {}
    total = phases.pop("total", 0.0)
    return RecallObservation(
        at=datetime.now(UTC),
        tenant_id=identity.tenant_id,
        user_id=identity.user_id,
        agent_id=identity.agent_id,
        scope=scope,
        latency_ms=total,
        phases=phases,
        results=len(result.items),
        candidates=prof.facts.get("candidates", 0),
        degraded=result.degraded,
        rerank_used=result.rerank_used,
        truncated=result.truncated,
        token_count=result.token_count,
        scores=tuple(h.score for h in result.items),
        hit_ids=tuple(h.id for h in result.items),
    )


def _annotate(current: Any, o: RecallObservation) -> None:
    current.set_attributes(
        {
            "agentmem.recall.results": o.results,
            "agentmem.recall.candidates": o.candidates,
            "agentmem.recall.degraded": o.degraded,
            "agentmem.recall.rerank_used": o.rerank_used,
            "agentmem.recall.truncated": o.truncated,
            "agentmem.recall.token_count": o.token_count,
        }
    )


def _phase_spans(parent: Any, prof: RecallProfile, wall_ns: int, perf: float) -> None:
    """One child span of ``parent`` per phase mark of the profile, at the times it marked."""
    tracer = tracing.tracer()
    if tracer is None:
        return
    from opentelemetry import trace

    context = trace.set_span_in_context(parent)

    def ns(t: float) -> int:
        return wall_ns + int((t - perf) * 1e9)

    for phase, start, end in prof.segments:
        child = tracer.start_span(
            f"agentmem.recall.{phase}",
            context=context,
            start_time=ns(start),
            attributes={"agentmem.recall.phase": phase, "agentmem.recall.beside": phase in BESIDE},
        )
        child.end(end_time=ns(end))
