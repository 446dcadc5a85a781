"""``recall``: the operation every surface calls (validation, then the engine, observed)."""

from __future__ import annotations

from typing import Any

from ..context import StoreContext
from ..models import Identity, RecallResult
from ..telemetry.recalls import observe
from .request import recall_request


def recall(ctx: StoreContext, identity: Identity, query: str, **options: Any) -> RecallResult:
    """Hybrid recall for ``identity`` (see ``BoundMemory.recall`` for the options)."""
    ctx.check_open()
    request = recall_request(ctx.settings.memory, identity, query, **options)
    return observe(
        ctx.recalls, identity, request.scope, lambda: ctx.engine.recall(identity, request)
    )
