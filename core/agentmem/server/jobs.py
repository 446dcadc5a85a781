"""Background work of the server: judge new memories, close idle sessions, run retention.

One thread runs the jobs, each when it is due:

============  ========================================================================
job           does
============  ========================================================================
judge         the supersession judge over memories not judged yet (written with
              ``remember``), every ``judge_interval`` seconds (default 10)
idle_sessions close sessions with no new message for ``session_idle_seconds`` (default
              30 min): summary, chunks, promotion, as ``close_session`` does
retention     anonymize retired rows past their TTLs, every ``retention_interval``
              (default daily; the last run is kept in the data dir, so a restart does not
              run it again early)
============  ========================================================================

A job that raises is logged (its error type and message, never memory content), shown in
the job's status, and retried after ``retry_delay``; the server keeps serving. Each job's
last run and outcome are in :meth:`JobRunner.status` (``GET /v1/admin/stats`` and
``agentmem --url URL --api-key KEY stats``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..config import ServerConfig
from ..context import StoreContext
from ..derived import retention as retention_op
from ..derived import supersession
from ..models import Identity
from ..storage.activity import SessionActivity
from ..storage.rows import now_utc
from ..telemetry import tracing
from ..tiers import sessions as session_tiers

log = logging.getLogger("agentmem.server.jobs")

#: Meta key under which the last successful retention run is kept (ISO time).
RETENTION_LAST_RUN = "server.retention.last_run"


@dataclass
class JobStatus:
    """The state of one background job.

    Attributes:
        name: ``judge``, ``idle_sessions`` or ``retention``.
        interval: Seconds between runs.
        last_run: When it last finished (None before its first run).
        last_ok: Whether that run succeeded.
        last_outcome: What it did (e.g. ``judged 3, superseded 1``) or its error.
        runs: Runs since the server started.
        failures: Failed runs since the server started.
        next_run: When it runs next.
        last_duration_ms: Wall time of the last run.
    """

    name: str
    interval: float
    last_run: datetime | None = None
    last_ok: bool | None = None
    last_outcome: str | None = None
    runs: int = 0
    failures: int = 0
    next_run: datetime | None = None
    last_duration_ms: float | None = None


@dataclass
class Job:
    """A job: ``run`` does one pass and returns a short outcome (no memory content)."""

    name: str
    interval: float
    run: Callable[[], str]
    first_delay: float = 0.0
    on_success: Callable[[datetime], None] | None = None
    status: JobStatus = field(init=False)
    due: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self.status = JobStatus(self.name, self.interval)


class JobRunner:
    """Runs jobs on one daemon thread until :meth:`stop`.

    Example:
        >>> runner = JobRunner([Job("noop", 1.0, lambda: "nothing")], retry_delay=1.0)
        >>> runner.start(); runner.stop()
    """

    def __init__(self, jobs: list[Job], *, retry_delay: float) -> None:
        self.jobs = jobs
        self.retry_delay = retry_delay
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        now = time.monotonic()
        for job in jobs:
            job.due = now + job.first_delay
            job.status.next_run = _wall(job.due)

    def start(self) -> None:
        if self._thread is None and self.jobs:
            self._thread = threading.Thread(target=self._loop, name="agentmem-jobs", daemon=True)
            self._thread.start()

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop after the job that is running (if any) finishes."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def status(self) -> list[JobStatus]:
        with self._lock:
            return [JobStatus(**vars(job.status)) for job in self.jobs]

    def _loop(self) -> None:
        while not self._stop.is_set():
            job = min(self.jobs, key=lambda j: j.due)
            wait = job.due - time.monotonic()
            if wait > 0:
                self._wake.wait(wait)
                self._wake.clear()
                continue
            self.run_once(job)

    def run_once(self, job: Job) -> None:
        """Run ``job`` now and record its outcome (it never raises)."""
        started = time.monotonic()
        with tracing.span("agentmem.job", {"agentmem.job.name": job.name}) as span:
            try:
                outcome = job.run()
                ok = True
            except Exception as exc:  # a failing job must not stop the server
                ok = False
                outcome = f"{type(exc).__name__}: {exc}"
                log.error("background job %s failed: %s", job.name, outcome)
                tracing.failed(span, exc)  # its type: the outcome may quote data
            if span is not None:
                span.set_attribute("agentmem.job.ok", ok)
        finished = time.monotonic()
        at = now_utc()
        if ok and job.on_success is not None:
            try:
                job.on_success(at)
            except Exception as exc:
                log.error("background job %s: recording its run failed: %s", job.name, exc)
        with self._lock:
            s = job.status
            s.last_run = at
            s.last_ok = ok
            s.last_outcome = outcome
            s.runs += 1
            s.failures += 0 if ok else 1
            s.last_duration_ms = round((finished - started) * 1000, 1)
            job.due = finished + (job.interval if ok else min(job.interval, self.retry_delay))
            s.next_run = _wall(job.due)
        if ok:
            log.info("background job %s: %s", job.name, outcome)


def _wall(due: float) -> datetime:
    return now_utc() + timedelta(seconds=max(0.0, due - time.monotonic()))


# -- the three jobs ---------------------------------------------------------------------------
def judge_job(ctx: StoreContext) -> str:
    result = supersession.judge_pending(ctx)
    if not result.judged:
        return "nothing to judge"
    return f"judged {result.judged}, superseded {len(result.superseded)}, failed {result.failed}"


def retention_job(ctx: StoreContext) -> str:
    result = retention_op.run_retention(ctx)
    if result.dry_run:
        return f"dry run: {result.soft_deleted + result.superseded} row(s) due"
    return f"anonymized {result.anonymized}, scrubbed {result.scrubbed}"


class IdleSessions:
    """Closes sessions whose newest message is older than ``idle_seconds``.

    It follows the messages written since its last pass (a watermark on ``seq``); the first
    pass reads every session once and skips those already closed since their last message.
    """

    def __init__(self, ctx: StoreContext, idle_seconds: float) -> None:
        self.ctx = ctx
        self.idle = timedelta(seconds=idle_seconds)
        self.watermark = 0
        self.open: dict[tuple[str, str, str], SessionActivity] = {}

    def run(self) -> str:
        ctx = self.ctx
        ctx.check_open()
        first = self.watermark == 0
        for act in ctx.records.activity.sessions_since(self.watermark):
            self.watermark = max(self.watermark, act.last_seq)
            key = (act.tenant_id, act.partition, act.session_id)
            if first:
                closed = ctx.records.sessions.get(*key)
                if closed is not None and closed.last_seq >= act.last_seq:
                    continue
            self.open[key] = act
        cutoff = now_utc() - self.idle
        closed_now = failed = 0
        for key, act in list(self.open.items()):
            if act.last_at > cutoff:
                continue
            identity = Identity(act.tenant_id, act.user_id, act.agent_id, act.session_id)
            try:
                result = session_tiers.close_session(ctx, identity)
            except Exception as exc:  # keep it: the next pass retries this session
                failed += 1
                log.error("closing idle session failed: %s: %s", type(exc).__name__, exc)
                continue
            if self.open.get(key) is act:  # no newer message arrived meanwhile
                del self.open[key]
            closed_now += 0 if result.already_closed else 1
        outcome = f"closed {closed_now} idle session(s), {len(self.open)} open"
        if failed:
            raise RuntimeError(f"{outcome}; {failed} failed to close (retried next pass)")
        return outcome


def default_jobs(ctx: StoreContext, cfg: ServerConfig) -> list[Job]:
    """The server's jobs for ``cfg`` (a job whose interval is 0 is left out)."""
    jobs: list[Job] = []
    if cfg.judge_interval > 0:
        jobs.append(Job("judge", cfg.judge_interval, lambda: judge_job(ctx), cfg.judge_interval))
    if cfg.session_idle_seconds > 0:
        closer = IdleSessions(ctx, cfg.session_idle_seconds)
        every = min(60.0, max(0.5, cfg.session_idle_seconds / 4))
        jobs.append(Job("idle_sessions", every, closer.run, every))
    if cfg.retention_interval > 0:
        jobs.append(
            Job(
                "retention",
                cfg.retention_interval,
                lambda: retention_job(ctx),
                _retention_delay(ctx, cfg.retention_interval),
                on_success=lambda at: _record_retention(ctx, at),
            )
        )
    return jobs


def _record_retention(ctx: StoreContext, at: datetime) -> None:
    ctx.records.meta.set(RETENTION_LAST_RUN, at.isoformat())


def _retention_delay(ctx: StoreContext, interval: float) -> float:
    """Seconds until retention is due: a day after its last run (kept in the data dir), and
    not in the server's first minute (nor before ``interval``, when that is shorter)."""
    soonest = min(interval, 60.0)
    raw = ctx.records.meta.get(RETENTION_LAST_RUN)
    if raw is None:
        return soonest
    try:
        last = datetime.fromisoformat(raw)
    except ValueError:
        return soonest
    left = (last + timedelta(seconds=interval) - now_utc()).total_seconds()
    return max(soonest, left)


__all__ = ["IdleSessions", "Job", "JobRunner", "JobStatus", "default_jobs"]
