"""Committing rows: the records transaction, then a nudge to the indexer, and a log line.

A write is acknowledged when :func:`commit` returns: its rows are in the records store (the
durability point). Indexing follows in the background; until it has caught up, recall reads
the new rows from the records store itself (:mod:`agentmem.recall.pending`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Sequence

from ..context import StoreContext
from ..storage.rows import NewRecord
from ..telemetry import tracing
from ..telemetry.tracing import short_hash

log = logging.getLogger("agentmem")

#: Rows per records transaction for batch writes.
BATCH = 1000


def commit(ctx: StoreContext, records: Sequence[NewRecord], event: str) -> list[tuple[str, bool]]:
    """Insert ``records`` (in transactions of :data:`BATCH` rows) and wake the indexer.

    Returns (id, was_new) per record, in order. The log line carries counts and a tenant
    hash, never content.
    """
    ctx.check_open()
    started = time.perf_counter()
    tenants = {r.tenant_id for r in records}
    tenant = short_hash(next(iter(tenants))) if len(tenants) == 1 else None
    attributes: tracing.Attributes = {
        "agentmem.write.event": event,
        "agentmem.write.count": len(records),
        "agentmem.tenant_hash": tenant,
    }
    with tracing.span("agentmem.write", attributes) as span:
        out: list[tuple[str, bool]] = []
        for start in range(0, len(records), BATCH):
            out.extend(ctx.records.memories.insert(records[start : start + BATCH]))
        if out:
            ctx.indexer.notify()
        new = sum(1 for _, is_new in out if is_new)
        if span is not None:
            span.set_attribute("agentmem.write.new", new)
    log.info(
        json.dumps(
            {
                "event": event,
                "correlation_id": uuid.uuid4().hex,
                "tenant_hash": tenant,
                "count": len(records),
                "new": new,
                "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            }
        )
    )
    return out


def retire(ctx: StoreContext, tenant_id: str, ids: Sequence[str]) -> int:
    """Soft-delete live rows of ``tenant_id`` (their index entries go next); how many."""
    ctx.check_open()
    attributes: tracing.Attributes = {
        "agentmem.tenant_hash": short_hash(tenant_id),
        "agentmem.write.count": len(ids),
    }
    with tracing.span("agentmem.retire", attributes) as span:
        done = ctx.records.memories.soft_delete_many(tenant_id, ids) if ids else 0
        if done:
            ctx.indexer.notify()
        if span is not None:
            span.set_attribute("agentmem.write.retired", done)
    return done
