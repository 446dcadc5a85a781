"""Telemetry of agentmem: OpenTelemetry spans (:mod:`.tracing`, off unless configured) and
the observation of every recall (:mod:`.recalls`), which the server's Prometheus metrics and
the inspector read. Nothing here carries stored content or query text.

Example:
    >>> from opentelemetry.sdk.trace import TracerProvider  # doctest: +SKIP
    >>> use_tracer_provider(TracerProvider())  # doctest: +SKIP
"""

from __future__ import annotations

from .recalls import RECENT, RecallObservation, RecallObservations
from .tracing import use_tracer_provider

__all__ = ["RECENT", "RecallObservation", "RecallObservations", "use_tracer_provider"]
