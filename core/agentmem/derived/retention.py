"""Retention: anonymize retired rows past their TTLs.

A row is *retired* when it is soft-deleted or superseded. Past its TTL (soft-deleted rows
30 days after ``deleted_at``, superseded rows 90 days after they were superseded, i.e. their
``updated_at``), a row is anonymized, not deleted, so ``superseded_by`` chains stay intact:

- ``content`` becomes ``[REDACTED]``; ``content_hash``, ``metadata``, ``topic_key`` and
  ``importance`` are cleared; its full-text payload (long messages, tool outputs) is deleted;
- identity is cleared (``user_id``, ``agent_id``, ``session_id``; the owner ``partition``
  label too, once the indexer has removed the row's index entries);
- ``source_ref`` gets the suffix ``|anonymized``; ``anonymized_at`` is set;
- both index entries are removed: the row is flagged for the background indexer
  (``kw_pending``/``vec_pending``), which deletes entries of rows that are not live;
- an audit entry ``memory.anonymize`` records the id and the reason only.

Anonymized rows never come back from any read path (``recall`` with
``include_superseded=True`` included): every read filters ``anonymized_at IS NULL``.

Settings (:class:`~agentmem.config.RetentionPolicy`, from the environment):
``AGENTMEM_MEMORY_ANONYMIZE_SOFT_TTL_DAYS`` (30), ``AGENTMEM_MEMORY_ANONYMIZE_SUP_TTL_DAYS``
(90), ``AGENTMEM_MEMORY_ANONYMIZE_BATCH_SIZE`` (100 rows per transaction) and
``AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN`` (false; true only reports what would be anonymized).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta

from ..config import RetentionPolicy
from ..context import StoreContext
from ..models import RetentionResult
from ..storage.retention import ANONYMIZED_PARTITION, ANONYMIZED_SUFFIX, REDACTED
from ..storage.rows import iso, now_utc

__all__ = [
    "ANONYMIZED_PARTITION",
    "ANONYMIZED_SUFFIX",
    "REDACTED",
    "RetentionPolicy",
    "run_retention",
]

log = logging.getLogger("agentmem.derived.retention")


def run_retention(
    ctx: StoreContext,
    policy: RetentionPolicy | None = None,
    *,
    dry_run: bool | None = None,
    now: datetime | None = None,
    tenant_id: str | None = None,
    wait: bool = True,
) -> RetentionResult:
    """Anonymize (or, in a dry run, list) retired rows past their TTLs.

    Args:
        ctx: The store.
        policy: TTLs, batch size and the default dry-run flag (default: the store's).
        dry_run: Overrides ``policy.dry_run``.
        now: The reference time (default: now, UTC).
        tenant_id: Only this tenant's rows.
        wait: After anonymizing, wait for the indexer to drop the index entries and clear
            the rows' partition labels (else that happens on a later run).
    """
    ctx.check_open()
    policy = policy or ctx.settings.retention
    dry = policy.dry_run if dry_run is None else bool(dry_run)
    at = now or now_utc()
    ids: list[str] = []
    counts = {"soft_deleted": 0, "superseded": 0}
    last_seq = 0
    while True:
        rows = ctx.records.retention.retired(
            deleted_before=iso(at - timedelta(days=policy.soft_ttl_days)) or "",
            superseded_before=iso(at - timedelta(days=policy.sup_ttl_days)) or "",
            tenant_id=tenant_id,
            after_seq=last_seq,
            limit=policy.batch_size,
        )
        if not rows:
            break
        last_seq = rows[-1][0]
        batch = [(id_, tenant, reason) for _, id_, tenant, reason in rows]
        if not dry:
            ctx.records.retention.anonymize(batch, iso(at) or "")
        for id_, _, reason in batch:
            ids.append(id_)
            counts[reason] += 1
    scrubbed = 0
    if not dry:
        if ids:
            ctx.indexer.notify()
            if wait:
                ctx.indexer.flush()
        scrubbed = ctx.records.retention.scrub_partitions(tenant_id)
    result = RetentionResult(
        dry_run=dry,
        soft_deleted=counts["soft_deleted"],
        superseded=counts["superseded"],
        ids=tuple(ids),
        scrubbed=scrubbed,
    )
    log.info(
        json.dumps(
            {
                "event": "retention",
                "dry_run": dry,
                "soft_deleted": result.soft_deleted,
                "superseded": result.superseded,
                "scrubbed": scrubbed,
            }
        )
    )
    return result
