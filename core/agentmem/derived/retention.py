"""Retention: anonymize retired rows past their TTLs (seed 000, "retention anonymization").

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

Environment (read by :meth:`RetentionPolicy.from_env`):
``AGENTMEM_MEMORY_ANONYMIZE_SOFT_TTL_DAYS`` (30), ``AGENTMEM_MEMORY_ANONYMIZE_SUP_TTL_DAYS``
(90), ``AGENTMEM_MEMORY_ANONYMIZE_BATCH_SIZE`` (100 rows per transaction) and
``AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN`` (false; true only reports what would be anonymized).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..models import RetentionResult
from ..storage.records import VEC_PENDING, VEC_SKIP, iso, now_utc

if TYPE_CHECKING:
    from ..memory import AgentMemory

log = logging.getLogger("agentmem.derived.retention")

REDACTED = "[REDACTED]"
ANONYMIZED_SUFFIX = "|anonymized"
#: Partition label of anonymized rows once their index entries are gone.
ANONYMIZED_PARTITION = "anonymized"


@dataclass(frozen=True)
class RetentionPolicy:
    """TTLs and batch size of the retention run (seed 000 defaults).

    Example:
        >>> RetentionPolicy.from_env({"AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN": "true"}).dry_run
        True
    """

    soft_ttl_days: float = 30
    """Days after a soft delete before the row is anonymized."""
    sup_ttl_days: float = 90
    """Days after a supersede before the row is anonymized."""
    batch_size: int = 100
    """Rows per transaction."""
    dry_run: bool = False
    """Report only; change nothing."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RetentionPolicy:
        env = os.environ if environ is None else environ
        return cls(
            soft_ttl_days=_num(env, "AGENTMEM_MEMORY_ANONYMIZE_SOFT_TTL_DAYS", 30.0),
            sup_ttl_days=_num(env, "AGENTMEM_MEMORY_ANONYMIZE_SUP_TTL_DAYS", 90.0),
            batch_size=max(1, int(_num(env, "AGENTMEM_MEMORY_ANONYMIZE_BATCH_SIZE", 100.0))),
            dry_run=env.get("AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN", "false").strip().lower()
            in ("1", "true", "yes", "on"),
        )


def _num(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        log.warning("ignoring %s=%r: not a number", name, raw)
        return default
    if value < 0 or value != value:
        log.warning("ignoring %s=%r: negative", name, raw)
        return default
    return value


def run_retention(
    store: AgentMemory,
    policy: RetentionPolicy,
    *,
    dry_run: bool | None = None,
    now: datetime | None = None,
    tenant_id: str | None = None,
    wait: bool = True,
) -> RetentionResult:
    """Anonymize (or, in a dry run, list) retired rows past their TTLs.

    Args:
        store: The memory store.
        policy: TTLs, batch size and the default dry-run flag.
        dry_run: Overrides ``policy.dry_run``.
        now: The reference time (default: now, UTC).
        tenant_id: Only this tenant's rows.
        wait: After anonymizing, wait for the indexer to drop the index entries and clear
            the rows' partition labels (else that happens on a later run).
    """
    dry = policy.dry_run if dry_run is None else bool(dry_run)
    at = now or now_utc()
    soft_cut = iso(at - timedelta(days=policy.soft_ttl_days))
    sup_cut = iso(at - timedelta(days=policy.sup_ttl_days))
    where = (
        "anonymized_at IS NULL AND ((deleted_at IS NOT NULL AND deleted_at < ?) OR "
        "(deleted_at IS NULL AND superseded_by IS NOT NULL AND kind = 'memory' "
        "AND updated_at < ?))"
    )
    params: list[Any] = [soft_cut, sup_cut]
    if tenant_id is not None:
        where += " AND tenant_id = ?"
        params.append(tenant_id)
    ids: list[str] = []
    counts = {"soft_deleted": 0, "superseded": 0}
    last_seq = 0
    while True:
        rows = store.records.read(
            f"SELECT seq, id, tenant_id, deleted_at IS NOT NULL FROM memories "
            f"WHERE seq > ? AND {where} ORDER BY seq LIMIT ?",
            (last_seq, *params, policy.batch_size),
        )
        if not rows:
            break
        last_seq = rows[-1][0]
        batch = [(r[1], r[2], "soft_deleted" if r[3] else "superseded") for r in rows]
        if not dry:
            _anonymize(store, batch, iso(at) or "")
        for id_, _, reason in batch:
            ids.append(id_)
            counts[reason] += 1
    scrubbed = 0
    if not dry:
        if ids:
            store.indexer.notify()
            if wait:
                store.flush()
        scrubbed = _scrub_partitions(store, tenant_id)
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


def _anonymize(store: AgentMemory, batch: list[tuple[str, str, str]], now: str) -> None:
    with store.records.write() as conn:
        for id_, tenant, reason in batch:
            cur = conn.execute(
                "UPDATE memories SET content = ?, content_hash = '', user_id = NULL, "
                "agent_id = NULL, session_id = NULL, metadata = '{}', topic_key = NULL, "
                "importance = NULL, dedup_key = NULL, "
                "source_ref = COALESCE(source_ref, '') || ?, anonymized_at = ?, updated_at = ?, "
                "embedded = 0, embed_error = NULL, kw_pending = 1, "
                f"vec_pending = CASE WHEN vec_pending = {VEC_SKIP} THEN {VEC_SKIP} "
                f"ELSE {VEC_PENDING} END WHERE id = ? AND anonymized_at IS NULL",
                (REDACTED, ANONYMIZED_SUFFIX, now, now, id_),
            )
            if not cur.rowcount:
                continue
            conn.execute("DELETE FROM payloads WHERE memory_id = ?", (id_,))
            conn.execute(
                "INSERT INTO audit_log (at, event, tenant_id, memory_id, detail) "
                "VALUES (?,?,?,?,?)",
                (now, "memory.anonymize", tenant, id_, json.dumps({"reason": reason})),
            )


def _scrub_partitions(store: AgentMemory, tenant_id: str | None) -> int:
    """Clear the owner label of anonymized rows whose index entries are already gone."""
    where = (
        f"anonymized_at IS NOT NULL AND partition != '{ANONYMIZED_PARTITION}' "
        f"AND kw_pending = 0 AND vec_pending IN (0, {VEC_SKIP})"
    )
    params: list[Any] = [ANONYMIZED_PARTITION]
    if tenant_id is not None:
        where += " AND tenant_id = ?"
        params.append(tenant_id)
    with store.records.write() as conn:
        cur = conn.execute(f"UPDATE memories SET partition = ? WHERE {where}", params)
        return cur.rowcount
