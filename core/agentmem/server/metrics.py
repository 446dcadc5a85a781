"""Prometheus metrics of ``agentmem serve`` (``GET /metrics``, or the metrics port).

============================================  ============================================
metric                                        what
============================================  ============================================
``agentmem_http_requests_total``              requests by ``route`` (the route's template,
                                              ``other`` for an unknown path), ``method``,
                                              ``status`` (``2xx`` ... ``5xx``)
``agentmem_http_request_duration_seconds``    their latency (histogram, same labels)
``agentmem_rate_limited_requests_total``      requests refused with 429
``agentmem_recalls_total``                    recalls by ``degraded`` (``true``: the vector
                                              half was incomplete)
``agentmem_recall_duration_seconds``          a recall's time in the engine (histogram)
``agentmem_recall_phase_seconds``             per ``phase`` of the recall profiler
``agentmem_recall_results``                   items returned per recall (histogram)
``agentmem_recall_hit_score``                 score of each returned item (histogram)
``agentmem_index_pending_rows``               rows not yet in the ``keyword`` / ``vector``
                                              index (read at scrape time)
``agentmem_index_failed_rows``                rows whose embedding failed (``reindex``)
``agentmem_job_runs_total``                   background job runs by ``job``, ``outcome``
``agentmem_job_last_run_timestamp_seconds``   when each job last finished
``agentmem_job_last_run_ok``                  1 if that run succeeded
``agentmem_job_last_duration_seconds``        how long it took
``agentmem_ready``                            1 once the store is open and the model loaded
``agentmem_build_info``                       the version (value 1)
============================================  ============================================

Every label value is one of a fixed set (routes, methods, phases, jobs, status classes):
never content, a user's or tenant's id, or a raw path. There is no per-tenant label: the
tenants of a server are as many as its operator creates (a SaaS has one per customer), each
would multiply every series, and tenant ids are often customer names; a tenant's own view is
its recall observations (:class:`~agentmem.telemetry.RecallObservations`), read behind its key.

Example:
    >>> metrics = ServerMetrics(ctx, jobs)  # doctest: +SKIP
    >>> b"agentmem_recalls_total" in metrics.render()  # doctest: +SKIP
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest

from .. import __version__
from ..context import StoreContext
from ..recall.profile import PHASES
from ..telemetry.recalls import RecallObservation
from .jobs import JobRunner

__all__ = ["CONTENT_TYPE", "LOOPBACK", "OTHER_ROUTE", "ServerMetrics", "status_class"]

#: The content type of :meth:`ServerMetrics.render` (the text exposition format).
CONTENT_TYPE = CONTENT_TYPE_LATEST
#: The ``route`` label of a request whose path is no route of the server.
OTHER_ROUTE = "other"
#: The only address the metrics port listens on (it asks for no key).
LOOPBACK = "127.0.0.1"

_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_PHASE_SECONDS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
_RESULTS = (0, 1, 2, 3, 5, 10, 20)
_SCORES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def status_class(status: int) -> str:
    """``2xx``, ``4xx``, ...: the ``status`` label of a response status."""
    return f"{status // 100}xx"


class ServerMetrics:
    """The metrics of one server (a registry of its own: several apps in one process, as in
    tests, do not share counters).

    Args:
        ctx: The store (its index backlog is read at scrape time).
        jobs: The background jobs (their status is read at scrape time), if they run.
        ready: Tells whether the server is ready.
    """

    def __init__(
        self, ctx: StoreContext, jobs: JobRunner | None, ready: Callable[[], bool]
    ) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "agentmem_http_requests",
            "HTTP requests by route template, method and status class.",
            ["route", "method", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "agentmem_http_request_duration_seconds",
            "HTTP request latency by route template, method and status class.",
            ["route", "method", "status"],
            buckets=_SECONDS,
            registry=r,
        )
        self.rate_limited = Counter(
            "agentmem_rate_limited_requests",
            "Requests refused because their key was over its rate (429).",
            registry=r,
        )
        self.recalls = Counter(
            "agentmem_recalls",
            "Recalls answered; degraded=true: the vector half was incomplete.",
            ["degraded"],
            registry=r,
        )
        self.recall_seconds = Histogram(
            "agentmem_recall_duration_seconds",
            "A recall's wall time in the engine.",
            buckets=_SECONDS,
            registry=r,
        )
        self.phase_seconds = Histogram(
            "agentmem_recall_phase_seconds",
            "Time per phase of a recall (embed_model and vector_search run beside the others).",
            ["phase"],
            buckets=_PHASE_SECONDS,
            registry=r,
        )
        self.results = Histogram(
            "agentmem_recall_results",
            "Items returned per recall.",
            buckets=_RESULTS,
            registry=r,
        )
        self.scores = Histogram(
            "agentmem_recall_hit_score",
            "Calibrated score of each item a recall returned.",
            buckets=_SCORES,
            registry=r,
        )
        for degraded in ("false", "true"):  # both series exist from the start, at 0
            self.recalls.labels(degraded=degraded)
        for phase in PHASES:
            self.phase_seconds.labels(phase=phase)
        r.register(_StoreCollector(ctx, jobs, ready))

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        labels = (route, method, status_class(status))
        self.requests.labels(*labels).inc()
        self.latency.labels(*labels).observe(seconds)

    def observe_recall(self, o: RecallObservation) -> None:
        """A recall listener (:meth:`RecallObservations.subscribe`)."""
        self.recalls.labels(degraded="true" if o.degraded else "false").inc()
        self.recall_seconds.observe(o.latency_ms / 1000)
        for phase, ms in o.phases.items():
            if phase in PHASES:
                self.phase_seconds.labels(phase=phase).observe(ms / 1000)
        self.results.observe(o.results)
        for score in o.scores:
            self.scores.observe(score)

    def render(self) -> bytes:
        """Every metric in the Prometheus text format (reads the store's index backlog)."""
        return generate_latest(self.registry)

    def serve(self, port: int) -> tuple[str, Callable[[], None]]:
        """Serve the metrics without a key on ``127.0.0.1:port`` (0: a free port), in a
        thread of its own; returns its URL and the function that stops it. Loopback only:
        whoever reaches the port reads the metrics.

        Raises:
            OSError: the port cannot be bound.
        """
        server, _ = start_http_server(port, addr=LOOPBACK, registry=self.registry)

        def stop() -> None:
            server.shutdown()
            server.server_close()

        return f"http://{LOOPBACK}:{server.server_port}/metrics", stop


class _StoreCollector:
    """The metrics read at scrape time: index backlog, jobs, readiness, version."""

    def __init__(self, ctx: StoreContext, jobs: JobRunner | None, ready: Callable[[], bool]):
        self.ctx = ctx
        self.jobs = jobs
        self.ready = ready

    def describe(self) -> list[Metric]:
        return []  # read only at scrape time: the registry must not collect at register

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "agentmem_build_info", "The agentmem version serving.", labels=["version"]
        )
        info.add_metric([__version__], 1)
        yield info
        yield GaugeMetricFamily(
            "agentmem_ready",
            "1 once the store is open and the model loaded.",
            1 if self.ready() else 0,
        )
        keyword, vector, failed = self.ctx.records.index.pending_counts()
        pending = GaugeMetricFamily(
            "agentmem_index_pending_rows",
            "Rows written but not yet in the index (recall reads them from the records).",
            labels=["index"],
        )
        pending.add_metric(["keyword"], keyword)
        pending.add_metric(["vector"], vector)
        yield pending
        yield GaugeMetricFamily(
            "agentmem_index_failed_rows",
            "Rows whose embedding failed (keyword-searchable only; agentmem reindex retries).",
            failed,
        )
        if self.jobs is not None:
            yield from _job_metrics(self.jobs)


def _job_metrics(jobs: JobRunner) -> Iterator[Metric]:
    runs = CounterMetricFamily(
        "agentmem_job_runs", "Background job runs by outcome.", labels=["job", "outcome"]
    )
    last = GaugeMetricFamily(
        "agentmem_job_last_run_timestamp_seconds",
        "When the job last finished (Unix time).",
        labels=["job"],
    )
    last_ok = GaugeMetricFamily(
        "agentmem_job_last_run_ok", "1 if the job's last run succeeded.", labels=["job"]
    )
    duration = GaugeMetricFamily(
        "agentmem_job_last_duration_seconds", "How long the job's last run took.", labels=["job"]
    )
    for s in jobs.status():
        runs.add_metric([s.name, "ok"], s.runs - s.failures)
        runs.add_metric([s.name, "failed"], s.failures)
        if s.last_run is not None:
            last.add_metric([s.name], s.last_run.timestamp())
            last_ok.add_metric([s.name], 1 if s.last_ok else 0)
        if s.last_duration_ms is not None:
            duration.add_metric([s.name], s.last_duration_ms / 1000)
    yield from (runs, last, last_ok, duration)
