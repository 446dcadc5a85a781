"""``recall``: the operation every surface calls (validation, then the engine)."""

from __future__ import annotations

from typing import Any

from ..context import StoreContext
from ..models import Identity, RecallResult
from .request import recall_request


def recall(ctx: StoreContext, identity: Identity, query: str, **options: Any) -> RecallResult:
    """Hybrid recall for ``identity`` (see ``BoundMemory.recall`` for the options)."""
    ctx.check_open()
    request = recall_request(ctx.settings.memory, identity, query, **options)
    return ctx.engine.recall(identity, request)
