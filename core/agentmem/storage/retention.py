"""Retiring content for good: forgetting (tombstones) and anonymization past a TTL.

Both keep a row's place (its id and times, for audit) and drop what it said; both queue the
row's index entries for removal and write an audit entry in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .audit import audit
from .database import Database
from .rows import VEC_PENDING, VEC_SKIP, iso, now_utc
from .sources import unlink

#: Marks an anonymized row's source_ref; its partition label becomes ANONYMIZED_PARTITION
#: once the indexer has removed its index entries.
ANONYMIZED_SUFFIX = "|anonymized"
ANONYMIZED_PARTITION = "anonymized"
REDACTED = "[REDACTED]"


class RetentionTable:
    """Forget and anonymize rows of ``memories`` (``records.retention``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def tombstone(
        self,
        tenant_id: str,
        ids: Sequence[str],
        *,
        cause: str | None = None,
        conversations: Sequence[tuple[str, str]] = (),
    ) -> list[str]:
        """Forget rows of ``tenant_id`` among ``ids`` in one transaction; the ids done.

        A forgotten row becomes a tombstone: it keeps its ids (row, tenant, owner, session),
        kind, scope, partition, tier and times, for audit; its content, hash, metadata,
        role, type, keys and importance are cleared, its full-text payload and its source
        links are deleted, and both index entries are queued for removal (the caller
        removes them at once with :meth:`~agentmem.write.indexer.Indexer.sync`). Rows
        already forgotten or anonymized are skipped. ``cause`` (the id whose forgetting
        reached these rows) goes into the audit entry. The working-memory state of
        ``conversations`` ((partition, session) pairs) changes version in the same
        transaction, so a compaction that read a forgotten message before cannot save a
        summary of it.
        """
        now = iso(now_utc())
        done: list[str] = []
        with self._db.write() as tx:
            for memory_id in ids:
                cur = tx.execute(
                    "UPDATE memories SET content = '', content_hash = '', metadata = '{}', "
                    "role = NULL, memory_type = NULL, source_ref = NULL, topic_key = NULL, "
                    "dedup_key = NULL, importance = NULL, embed_error = NULL, kw_terms = NULL, "
                    "kw_term_count = NULL, content_tokens = NULL, "
                    "deleted_at = COALESCE(deleted_at, ?), forgotten_at = ?, updated_at = ?, "
                    f"kw_pending = 1, vec_pending = CASE WHEN vec_pending = {VEC_SKIP} "
                    f"THEN {VEC_SKIP} ELSE {VEC_PENDING} END "
                    "WHERE id = ? AND tenant_id = ? AND forgotten_at IS NULL "
                    "AND anonymized_at IS NULL",
                    (now, now, now, memory_id, tenant_id),
                )
                if not cur.rowcount:
                    continue
                tx.execute("DELETE FROM payloads WHERE memory_id = ?", (memory_id,))
                detail = {} if cause is None or cause == memory_id else {"via": cause}
                audit(tx, now, "memory.forget", tenant_id, memory_id, **detail)
                done.append(memory_id)
            unlink(tx, done)
            for partition, session_id in conversations:
                tx.execute(
                    "UPDATE working_state SET version = version + 1 WHERE tenant_id = ? "
                    "AND partition = ? AND session_id = ?",
                    (tenant_id, partition, session_id),
                )
        return done

    def retired(
        self,
        *,
        deleted_before: str,
        superseded_before: str,
        tenant_id: str | None,
        after_seq: int,
        limit: int,
    ) -> list[tuple[int, str, str, str]]:
        """(seq, id, tenant, reason) of retired rows past their TTLs, not anonymized yet.

        ``reason`` is ``soft_deleted`` (deleted before ``deleted_before``) or ``superseded``
        (a memory superseded before ``superseded_before``).
        """
        where = (
            "anonymized_at IS NULL AND forgotten_at IS NULL AND "
            "((deleted_at IS NOT NULL AND deleted_at < ?) OR "
            "(deleted_at IS NULL AND superseded_by IS NOT NULL AND kind = 'memory' "
            "AND updated_at < ?))"
        )
        params: list[Any] = [deleted_before, superseded_before]
        if tenant_id is not None:
            where += " AND tenant_id = ?"
            params.append(tenant_id)
        rows = self._db.read(
            f"SELECT seq, id, tenant_id, deleted_at IS NOT NULL FROM memories "
            f"WHERE seq > ? AND {where} ORDER BY seq LIMIT ?",
            (after_seq, *params, limit),
        )
        return [(int(r[0]), r[1], r[2], "soft_deleted" if r[3] else "superseded") for r in rows]

    def anonymize(self, batch: Sequence[tuple[str, str, str]], now: str) -> None:
        """Anonymize (id, tenant, reason) rows: content redacted, identity, metadata and
        payloads cleared, index entries queued for removal; an audit entry each."""
        with self._db.write() as tx:
            for id_, tenant, reason in batch:
                cur = tx.execute(
                    "UPDATE memories SET content = ?, content_hash = '', user_id = NULL, "
                    "agent_id = NULL, session_id = NULL, metadata = '{}', topic_key = NULL, "
                    "importance = NULL, dedup_key = NULL, kw_terms = NULL, "
                    "kw_term_count = NULL, content_tokens = NULL, "
                    "source_ref = COALESCE(source_ref, '') || ?, anonymized_at = ?, "
                    "updated_at = ?, embedded = 0, embed_error = NULL, kw_pending = 1, "
                    f"vec_pending = CASE WHEN vec_pending = {VEC_SKIP} THEN {VEC_SKIP} "
                    f"ELSE {VEC_PENDING} END WHERE id = ? AND anonymized_at IS NULL",
                    (REDACTED, ANONYMIZED_SUFFIX, now, now, id_),
                )
                if not cur.rowcount:
                    continue
                tx.execute("DELETE FROM payloads WHERE memory_id = ?", (id_,))
                unlink(tx, [id_])
                audit(tx, now, "memory.anonymize", tenant, id_, reason=reason)

    def scrub_partitions(self, tenant_id: str | None) -> int:
        """Clear the owner label of anonymized rows whose index entries are already gone."""
        where = (
            "anonymized_at IS NOT NULL AND partition != ? "
            f"AND kw_pending = 0 AND vec_pending IN (0, {VEC_SKIP})"
        )
        params: list[Any] = [ANONYMIZED_PARTITION, ANONYMIZED_PARTITION]
        if tenant_id is not None:
            where += " AND tenant_id = ?"
            params.append(tenant_id)
        with self._db.write() as tx:
            return tx.execute(f"UPDATE memories SET partition = ? WHERE {where}", params).rowcount
