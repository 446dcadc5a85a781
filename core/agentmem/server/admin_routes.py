"""The server's own routes beside the operations: readiness, metrics, the key, flush, and the
tenant administration (``/v1/admin/...``: stats, doctor, export, erase; import is in
:mod:`.transfer_routes`). A tenant's admin key sees its tenant only; the store-wide views
need an operator key (see :mod:`.auth`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from .. import __version__, validation
from ..maintenance.doctor import diagnose
from ..maintenance.stats import stats as stats_op
from ..maintenance.transfer import export_lines
from ..memory import AgentMemory
from ..models import KINDS
from .auth import require_admin, require_operator
from .metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .responses import dumps, json_response
from .state import Principal, ServerState

#: Longest ``POST /v1/flush`` wait a client may ask for, in seconds.
MAX_FLUSH_SECONDS = 300.0

FlushTimeout = Annotated[float | None, Body(embed=True, ge=0, le=MAX_FLUSH_SECONDS)]
ExportKinds = Annotated[list[str] | None, Query(description="Only these kinds (repeat).")]


class EraseRequest(BaseModel):
    """What ``POST /v1/admin/erase`` erases: a user and/or agent of the key's tenant, or (an
    empty object, or no body) all of it. Any other field is refused: a misspelt one must not
    widen an erasure to the whole tenant."""

    model_config = ConfigDict(extra="forbid")

    user_id: str | None = Field(None, description="Erase this user of the tenant.")
    agent_id: str | None = Field(None, description="Erase this agent of the tenant.")


def server_router(state: ServerState) -> APIRouter:
    """``/health``, ``/metrics``, ``/v1/whoami`` and ``/v1/flush``."""
    router = APIRouter(tags=["server"])
    store = state.store

    @router.get("/health", summary="Readiness (no key needed)")
    async def health() -> Response:
        if not state.ready:
            return json_response({"status": "starting"}, 503)
        return json_response({"status": "ok", "version": __version__})

    @router.get("/metrics", summary="Prometheus metrics (operator key)")
    async def metrics(key: Principal) -> Response:
        require_operator(key)
        body = await run_in_threadpool(state.metrics.render)
        return Response(body, media_type=METRICS_CONTENT_TYPE)

    @router.get("/v1/whoami", summary="The presented key (never its secret)")
    async def whoami(key: Principal) -> Response:
        return json_response(key)

    @router.post("/v1/flush", summary="Wait until both indexes caught up with the key's tenant")
    async def flush(key: Principal, timeout: FlushTimeout = None) -> Response:
        # a tenant's key waits for its tenant's rows only: nothing of another tenant's writes
        # (their number, or that there are any) shows in how long it waits or what it gets
        tenant = None if key.operator else key.tenant_id
        done = await run_in_threadpool(store.flush, timeout, tenant_id=tenant)
        return json_response({"result": done})

    return router


def admin_router(state: ServerState) -> APIRouter:
    """``/v1/admin/stats``, ``doctor``, ``export`` and ``erase``."""
    router = APIRouter(prefix="/v1/admin", tags=["admin"])
    store = state.store

    @router.get("/stats", summary="Stats of the tenant, or of the store")
    async def stats(key: Principal) -> Response:
        if not key.operator:  # a tenant's admin: its own rows, nothing of the others
            require_admin(key)
            counts = await run_in_threadpool(stats_op, store.context, tenant_id=key.tenant_id)
            return json_response({"tenant_id": key.tenant_id, "stats": counts})
        counts = await run_in_threadpool(store.stats)
        return json_response(
            {
                "home": str(store.home),
                "stats": counts,
                "jobs": state.jobs.status() if state.run_jobs else [],
                "server": state.info(),
            }
        )

    @router.get("/doctor", summary="The doctor report of the tenant/store")
    async def doctor(key: Principal) -> Response:
        if not key.operator:
            require_admin(key)
            report = await run_in_threadpool(diagnose, store.context, tenant_id=key.tenant_id)
            return json_response({"tenant_id": key.tenant_id, "report": report})
        report = await run_in_threadpool(diagnose, store.context)
        return json_response({"home": str(store.home), "report": report})

    @router.get("/export", summary="The key's tenant as JSON Lines")
    async def export(key: Principal, kind: ExportKinds = None) -> Response:
        require_admin(key)
        kinds = validation.choices(kind, "kind", KINDS) if kind else None
        return StreamingResponse(
            _jsonl(store, key.tenant_id, kinds), media_type="application/x-ndjson"
        )

    @router.post("/erase", summary="Erase the tenant, or a user/agent of it")
    async def erase(key: Principal, target: EraseRequest | None = None) -> Response:
        require_admin(key)
        target = target or EraseRequest(user_id=None, agent_id=None)
        receipt = await run_in_threadpool(
            store.erase, tenant_id=key.tenant_id, user_id=target.user_id, agent_id=target.agent_id
        )
        return json_response({"receipt": receipt})

    return router


def _jsonl(store: AgentMemory, tenant_id: str, kinds: Any) -> Iterator[bytes]:
    for line in export_lines(store.context, tenant_id=tenant_id, kinds=kinds):
        yield dumps(line) + b"\n"
