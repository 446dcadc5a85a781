"""Small helpers for timing figures: percentiles, summaries, sizes, peak RSS."""

from __future__ import annotations

import math
import resource
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..storage.datadir import dir_size

__all__ = ["dir_size", "peak_rss_bytes", "percentile", "phase_summary", "summarize"]


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 1]; 0.0 for no values."""
    if not values:
        return 0.0
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(values_ms: Sequence[float]) -> dict[str, float]:
    """n, mean, p50, p95, p99 and max of latencies in milliseconds (rounded to 0.001 ms)."""
    if not values_ms:
        return {"n": 0, "mean": 0.0, "p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    return {
        "n": len(values_ms),
        "mean": round(sum(values_ms) / len(values_ms), 3),
        "p50": round(percentile(values_ms, 0.50), 3),
        "p95": round(percentile(values_ms, 0.95), 3),
        "p99": round(percentile(values_ms, 0.99), 3),
        "max": round(max(values_ms), 3),
    }


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (``ru_maxrss``)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


def phase_summary(runs: Sequence[Mapping[str, float]], phases: Sequence[str]) -> dict[str, Any]:
    """Mean, p50 and p95 (ms) of each phase over profiled recalls, with its share of the mean
    ``total``. A phase that runs beside the others (the query embedding on its worker
    thread) has a share too, but is not part of the sum of the rest."""
    n = len(runs)
    mean_total = sum(r.get("total", 0.0) for r in runs) / n if n else 0.0
    out: dict[str, dict[str, float]] = {}
    for phase in (*phases, "total"):
        values = [r.get(phase, 0.0) for r in runs]
        if not any(values):
            continue
        mean = sum(values) / n
        out[phase] = {
            "mean": round(mean, 3),
            "p50": round(percentile(values, 0.50), 3),
            "p95": round(percentile(values, 0.95), 3),
            "share": round(mean / mean_total, 3) if mean_total else 0.0,
        }
    return {"recalls": n, "phases": out}
