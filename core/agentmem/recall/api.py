"""``recall``: the operation every surface calls (validation, then the engine, observed)."""

from __future__ import annotations

from typing import Unpack

from ..context import StoreContext
from ..models import Identity, RecallResult
from ..recall_options import RecallKwargs, RecallOptions
from ..telemetry.recalls import observe
from .request import recall_request


def recall(
    ctx: StoreContext,
    identity: Identity,
    query: str,
    options: RecallOptions | None = None,
    **kwargs: Unpack[RecallKwargs],
) -> RecallResult:
    """Hybrid recall for ``identity`` (see :class:`~agentmem.recall_options.RecallOptions`)."""
    ctx.check_open()
    request = recall_request(ctx.settings.memory, identity, query, options, **kwargs)
    return observe(
        ctx.recalls, identity, request.scope, lambda: ctx.engine.recall(identity, request)
    )
