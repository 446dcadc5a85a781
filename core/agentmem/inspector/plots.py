"""The plots of the start page, as geometry a template draws as inline SVG (no script, no
library): recall latency over time and the score distribution of the last queries, from the
store's recent recall observations (:class:`~agentmem.telemetry.RecallObservations`: numbers
only, never a query or content).

Example:
    >>> latency_plot([]).empty
    'no recall observed yet'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..telemetry import RecallObservation

__all__ = ["Bar", "Dot", "Plot", "latency_plot", "score_plot"]

WIDTH, HEIGHT = 560, 180
#: Margins of the drawing area: left (y labels), right, top, bottom (x labels).
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 10, 24
#: Bins of the score histogram over [0, 1].
BINS = 20
#: Queries the score distribution is drawn from.
LAST_QUERIES = 100


@dataclass(frozen=True, slots=True)
class Dot:
    x: float
    y: float
    label: str
    warn: bool = False


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str


@dataclass(frozen=True, slots=True)
class Plot:
    """One plot: marks in SVG coordinates and axis labels; ``empty`` says why there is none."""

    title: str
    width: int = WIDTH
    height: int = HEIGHT
    dots: list[Dot] = field(default_factory=list)
    line: str = ""
    bars: list[Bar] = field(default_factory=list)
    x_labels: list[tuple[float, str]] = field(default_factory=list)
    y_labels: list[tuple[float, str]] = field(default_factory=list)
    rules: list[tuple[float, str]] = field(default_factory=list)
    empty: str | None = None
    note: str = ""

    @property
    def bottom(self) -> float:
        return self.height - BOTTOM

    @property
    def right(self) -> float:
        return self.width - RIGHT


def _ceiling(value: float) -> float:
    """A round number at least ``value`` (1, 2 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return float(step * power)
    return 10.0 * power  # pragma: no cover


def _y(value: float, top: float) -> float:
    return HEIGHT - BOTTOM - (HEIGHT - BOTTOM - TOP) * (value / top)


def latency_plot(observations: Sequence[RecallObservation]) -> Plot:
    """Each recall's latency at the time it finished (red: degraded)."""
    title = "recall latency over time (ms)"
    if not observations:
        return Plot(title, empty="no recall observed yet")
    obs = sorted(observations, key=lambda o: o.at)
    start, end = obs[0].at, obs[-1].at
    span = (end - start).total_seconds()
    top = _ceiling(max(o.latency_ms for o in obs))
    inner = WIDTH - LEFT - RIGHT
    dots = []
    for o in obs:
        offset = (o.at - start).total_seconds() / span if span > 0 else 0.5
        x = LEFT + inner * offset
        label = f"{o.at:%H:%M:%S} {o.latency_ms:.1f} ms, {o.results} result(s)"
        dots.append(Dot(round(x, 1), round(_y(o.latency_ms, top), 1), label, o.degraded))
    ordered = sorted(o.latency_ms for o in obs)
    p50 = ordered[len(ordered) // 2]
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return Plot(
        title,
        dots=dots,
        line=" ".join(f"{d.x},{d.y}" for d in dots),
        x_labels=[(LEFT, f"{start:%H:%M:%S}"), (WIDTH - RIGHT, f"{end:%H:%M:%S}")],
        y_labels=[
            (_y(0, top), "0"),
            (_y(top / 2, top), f"{top / 2:g}"),
            (_y(top, top), f"{top:g}"),
        ],
        note=f"{len(obs)} recall(s), median {p50:.1f} ms, p95 {p95:.1f} ms",
    )


def score_plot(observations: Sequence[RecallObservation], min_score: float) -> Plot:
    """How the scores of the items the last :data:`LAST_QUERIES` recalls returned spread
    over [0, 1], with the ``min_score`` cut marked."""
    title = f"scores returned by the last {LAST_QUERIES} recalls"
    scores = [s for o in list(observations)[-LAST_QUERIES:] for s in o.scores]
    if not scores:
        return Plot(title, empty="no recall returned anything yet")
    counts = [0] * BINS
    for s in scores:
        counts[min(int(min(max(s, 0.0), 1.0) * BINS), BINS - 1)] += 1
    top = _ceiling(max(counts))
    inner = WIDTH - LEFT - RIGHT
    width = inner / BINS
    bars = []
    for n, count in enumerate(counts):
        if not count:
            continue
        y = _y(count, top)
        low, high = n / BINS, (n + 1) / BINS
        bars.append(
            Bar(
                round(LEFT + n * width + 1, 1),
                round(y, 1),
                round(width - 2, 1),
                round(HEIGHT - BOTTOM - y, 1),
                f"{low:.2f}-{high:.2f}: {count}",
            )
        )
    ticks = [(LEFT + inner * t, f"{t:g}") for t in (0, 0.25, 0.5, 0.75, 1)]
    return Plot(
        title,
        bars=bars,
        x_labels=ticks,
        y_labels=[(_y(0, top), "0"), (_y(top, top), f"{top:g}")],
        rules=[(round(LEFT + inner * min_score, 1), f"min_score {min_score:g}")],
        note=f"{len(scores)} item(s) of {min(len(observations), LAST_QUERIES)} recall(s)",
    )
