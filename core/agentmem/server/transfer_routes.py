"""``POST /v1/admin/import``: ``agentmem import`` against a running server (an admin key).

The body carries lines of an import file (the format of
:mod:`agentmem.maintenance.transfer`), the number of the first, and the identity the lines
default to (within the key's tenant). The server plans them exactly as a local import does:
every line is validated, and every line's tenant must be the key's, before anything is
written; then they are applied in batches, idempotently, and the counts come back. A client
sends a large file in parts, numbered as in the file, so a second run of the same file stores
nothing twice (messages are keyed by their line number).
"""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from ..errors import AuthError
from ..maintenance.transfer import apply_plan, parse_lines, tenant_of
from ..memory import AgentMemory
from .auth import require_admin
from .keys import resolve_identity
from .responses import json_response
from .routes import IdentityIn
from .state import Principal


class ImportRequest(BaseModel):
    """Lines of an import file and how to read them."""

    model_config = ConfigDict(extra="forbid")

    lines: list[str] = Field(description="The lines (JSON text each), in file order.")
    first_line: int = Field(1, ge=1, description="The number of the first line in its file.")
    identity: IdentityIn = Field(
        default_factory=lambda: IdentityIn.model_validate({}),
        description="What a line without its own identity keys writes as (the key's tenant).",
    )
    batch_size: int = Field(500, ge=1, le=10_000, description="Records per write.")


def import_router(store: AgentMemory) -> APIRouter:
    router = APIRouter(tags=["admin"])

    @router.post("/v1/admin/import", summary="Import lines of an export or hand-written JSONL")
    async def import_lines(key: Principal, body: ImportRequest) -> Response:
        require_admin(key)
        i = body.identity
        base = resolve_identity(
            key,
            tenant_id=i.tenant_id,
            user_id=i.user_id,
            agent_id=i.agent_id,
            session_id=i.session_id,
        )
        plan = parse_lines(body.lines, base, first_line=body.first_line)
        for op in plan.ops:
            if tenant_of(op) != key.tenant_id:
                raise AuthError(
                    f"line {op.line} belongs to tenant {tenant_of(op)!r}; this key's tenant "
                    f"is {key.tenant_id!r} (nothing was imported)",
                    reason="forbidden",
                    line=op.line,
                )
        counts = await run_in_threadpool(
            apply_plan, store.context, plan, batch_size=body.batch_size
        )
        return json_response({"counts": asdict(counts)})

    return router


__all__ = ["ImportRequest", "import_router"]
