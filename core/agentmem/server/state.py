"""What the app knows about itself (the store, the rate limiter, the jobs, readiness), and the
request dependency that authenticates a request against it."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .. import __version__
from ..errors import RateLimitError
from ..memory import AgentMemory
from ..storage.rows import now_utc
from ..telemetry import tracing
from .auth import RateLimiter, check_key
from .jobs import JobRunner, default_jobs
from .keys import ApiKey
from .metrics import ServerMetrics

bearer = HTTPBearer(auto_error=False, description="An API key from `agentmem keys create`.")


class ServerState:
    """The store every request binds, the per-key rate limiter, the background jobs, the
    metrics."""

    def __init__(self, store: AgentMemory, *, run_jobs: bool) -> None:
        cfg = store.settings.server
        self.store = store
        self.limiter = RateLimiter(cfg.rate_limit, cfg.rate_burst)
        self.jobs = JobRunner(default_jobs(store.context, cfg), retry_delay=cfg.retry_delay)
        self.run_jobs = run_jobs
        self.ready = False
        self.started_at: datetime = now_utc()
        self.started = time.monotonic()
        self.metrics = ServerMetrics(
            store.context, self.jobs if run_jobs else None, lambda: self.ready
        )
        #: Where the metrics port serves ``/metrics``, once it does (``metrics_port``).
        self.metrics_url: str | None = None

    def principal(self, headers: Mapping[str, str]) -> ApiKey:
        """The key of a request, after its rate check.

        Raises:
            AuthError: missing, invalid or revoked key.
            RateLimitError: the key is over its rate.
        """
        key = check_key(self.store.records, headers)
        if tracing.enabled():
            tenant = tracing.short_hash(key.tenant_id)
            tracing.annotate({"agentmem.tenant_hash": tenant, "agentmem.key_id": key.id})
        try:
            self.limiter.check(key.id)
        except RateLimitError:
            self.metrics.rate_limited.inc()
            raise
        return key

    def info(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "pid": os.getpid(),
            "started_at": self.started_at,
            "uptime_seconds": round(time.monotonic() - self.started, 1),
            "rate_limit": self.limiter.rate,
            "rate_burst": self.limiter.burst,
            "max_body_bytes": self.store.settings.server.max_body_bytes,
        }


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.agentmem
    return state


async def principal(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
) -> ApiKey:
    """FastAPI dependency: the request's API key (the bearer scheme documents it in OpenAPI)."""
    return state_of(request).principal(request.headers)


#: A route parameter annotated with this receives the request's checked API key.
Principal = Annotated[ApiKey, Depends(principal)]

__all__ = ["Principal", "ServerState", "bearer", "principal", "state_of"]
