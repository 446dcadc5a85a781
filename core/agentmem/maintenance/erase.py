"""``erase``: remove every byte of one identity from every store of a data dir.

``AgentMemory.erase(tenant_id=..., user_id=..., agent_id=...)`` (``agentmem erase``) removes a
whole tenant, or the rows of a tenant owned by a user, an agent, or one user with one agent
(what *owned* means: :mod:`agentmem.storage.erasure`), and what was derived from them:

1. **Plan** (the indexer paused): the identity's rows, the rows derived from them by others
   (chunks and summaries of sessions it shared, memories extracted from its messages; see
   :func:`agentmem.derived.forget.plan`), and the vector collections they live in are listed;
   the collections are logged with the erasure.
2. **Records**: those rows, their payloads, source links, extraction-log and audit entries,
   and the identity's sessions, agent state, working-memory state and partitions are
   deleted in one transaction (also every other table listed in
   :data:`~agentmem.storage.erasure.IDENTITY_TABLES`). Sessions the identity shared get their
   chunks, summary and reference summary written again from the messages they keep.
3. **Keyword index**: written anew from the live records in one commit (a deleted entry
   would stay in its segment's files until a merge rewrote it).
4. **Vector index**: a collection left without rows is dropped; a shared one is written anew
   with only the other rows' vectors. The embedded Chroma store is then compacted: its SQLite
   file rewritten, and the files of dropped collections (which Chroma leaves on disk)
   deleted.
5. **Records files**: the SQLite file is rewritten (``VACUUM``) and its WAL emptied. (Deleted
   content is zeroed at delete time too, ``secure_delete``.)
6. **Quarantined copies**: a copy of an unreadable index that an earlier version kept in the
   data dir (``keywords.broken-<time>``) is deleted whole: nothing can be erased from inside
   an index nobody can read, and the index was rebuilt from the records. (Unreadable indexes
   are no longer kept; see :mod:`agentmem.storage.datadir`.)

The erasure is logged (ids and counts, no content) before step 1 and marked done after step
5: an erasure interrupted by a crash is finished when the data dir is next opened
(:func:`resume_unfinished`), and ``agentmem doctor`` checks every logged identity for
leftovers (:func:`leftovers`). Erasing an identity again finds nothing and removes nothing.

Rows the identity writes while its erasure runs are erased too if they are committed before
step 2; stop its traffic first for a clean cut.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import validation
from ..context import StoreContext
from ..derived.forget import followers, plan
from ..errors import StorageError
from ..models import ErasureReceipt
from ..results import ErasureCheck as ErasureCheck  # re-exported: it lived here
from ..storage.datadir import quarantined, remove_quarantined
from ..storage.erasure import ErasureRecord, ErasureSubject
from ..storage.rows import now_utc
from ..storage.vector_index import collection_name
from ..tiers.sessions import refresh_session, session_lock
from ..tiers.working import rebuild_reference

log = logging.getLogger("agentmem.maintenance.erase")


def erase(
    ctx: StoreContext,
    *,
    tenant_id: str,
    user_id: str | None = None,
    agent_id: str | None = None,
) -> ErasureReceipt:
    """Erase a tenant, or its user and/or agent (see the module docstring).

    Raises:
        ValidationError: an identity argument is not a valid id.
        StorageError: the store is open read-only, or a store failed (the erasure is
            finished at the next open, or by erasing again).
    """
    tenant = validation.identity(tenant_id, "tenant_id", required=True)
    assert tenant is not None
    subject = ErasureSubject(
        tenant, validation.identity(user_id, "user_id"), validation.identity(agent_id, "agent_id")
    )
    ctx.check_open()
    if ctx.read_only:
        raise StorageError(
            "erase needs the data dir open for writing (it is open read-only here)",
            path=str(ctx.home),
        )
    with ctx.locks("erase"):
        record, resumed = ctx.records.erasure.begin(subject)
        return _run(ctx, record, resumed)


def resume_unfinished(ctx: StoreContext) -> list[ErasureReceipt]:
    """Finish every erasure a crash interrupted (called when a data dir is opened)."""
    out: list[ErasureReceipt] = []
    with ctx.locks("erase"):
        for record in ctx.records.erasure.unfinished():
            out.append(_run(ctx, record, True))
    return out


@dataclass
class _Progress:
    keyword_entries: int = 0
    vectors: int = 0
    dropped: int = 0
    rebuilt: int = 0
    sessions: int = 0
    compacted: list[str] = field(default_factory=list)


def _run(ctx: StoreContext, record: ErasureRecord, resumed: bool) -> ErasureReceipt:
    subject = record.subject
    tenant = subject.tenant_id
    done = _Progress()
    with ctx.indexer.paused():
        # 1. plan
        reach = _reach(ctx, subject)
        ids, after, partitions = reach.ids, reach.followers, reach.partitions
        record = ctx.records.erasure.plan(
            record.id, [(p, collection_name(tenant, p)) for p in partitions]
        )
        done.keyword_entries = ctx.keywords.entries(ids)

        # 2. records
        counts = ctx.records.erasure.delete(
            record.id, subject, ids, [p for p, _ in record.collections]
        )
        if after:  # every node writes their entries again, without the erased context
            ctx.records.index.requeue(after, vectors=ctx.settings.memory.vector_context > 0)
        _repair_shared(ctx, tenant, reach, done)

        # 3. keyword index, 4. vector index (an erasure that found nothing skips the work)
        if done.keyword_entries or after or resumed:
            ctx.indexer.rewrite_keywords()
            done.compacted.append("keywords")
        requeued = set(after) if ctx.settings.memory.vector_context > 0 else set()
        _clear_vectors(ctx, tenant, record.collections, requeued, done)
        if (done.dropped or done.rebuilt or resumed) and ctx.vectors.compact_files():
            done.compacted.append("vectors")

    # 5. records files
    if any(counts.values()) or resumed:
        ctx.records.reclaim()
        done.compacted.append("records")
    # 6. copies of unreadable indexes an earlier version kept (no erasure reaches into them)
    if remove_quarantined(ctx.home):
        done.compacted.append("quarantine")
    return _finish(ctx, record, counts, done, resumed)


@dataclass(frozen=True)
class _Reach:
    """What an erasure deletes beyond the subject's own rows, and what it must repair."""

    ids: list[str]  # every row to delete: the subject's and those derived from them
    partitions: list[str]  # the partitions those rows lived in
    followers: list[str]  # other rows whose index entries carry an erased row as context
    shared_sessions: list[tuple[str, str]] = field(default_factory=list)
    shared_conversations: list[tuple[str, str]] = field(default_factory=list)


def _reach(ctx: StoreContext, subject: ErasureSubject) -> _Reach:
    tenant = subject.tenant_id
    refs = ctx.records.erasure.rows(subject)
    if subject.whole_tenant:
        return _Reach([r.id for r in refs], ctx.records.erasure.partitions(tenant), [])
    cascade = plan(ctx, tenant, refs)
    owned = set(subject.owned_partitions())
    touched = {r.partition for r in refs} | _partitions_of(ctx, tenant, cascade.ids) | owned
    return _Reach(
        ids=cascade.ids,
        partitions=sorted(touched),
        followers=followers(ctx, tenant, cascade.messages),
        shared_sessions=sorted(p for p in cascade.sessions if p[0] not in owned),
        shared_conversations=sorted(p for p in cascade.conversations if p[0] not in owned),
    )


def _repair_shared(ctx: StoreContext, tenant: str, reach: _Reach, done: _Progress) -> None:
    """Rebuild what conversations shared with others derived from the erased rows."""
    for partition, session_id in reach.shared_sessions:
        with session_lock(ctx, tenant, partition, session_id):
            done.sessions += refresh_session(ctx, tenant, partition, session_id)
    for partition, session_id in reach.shared_conversations:
        if ctx.records.conversations.session_items(tenant, partition, session_id, limit=1):
            rebuild_reference(ctx, tenant, partition, session_id)
        else:
            ctx.records.working.delete(tenant, partition, session_id)


def _finish(
    ctx: StoreContext,
    record: ErasureRecord,
    counts: dict[str, int],
    done: _Progress,
    resumed: bool,
) -> ErasureReceipt:
    """Log the erasure done, and the receipt that says what went."""
    subject = record.subject
    removed = {f"records.{t}": n for t, n in counts.items() if n}
    removed.update(
        keyword_entries=done.keyword_entries,
        vectors=done.vectors,
        collections_dropped=done.dropped,
        collections_rebuilt=done.rebuilt,
        sessions_rebuilt=done.sessions,
    )
    ctx.records.erasure.finish(record.id, removed)
    ctx.indexer.notify()
    receipt = ErasureReceipt(
        erasure_id=record.id,
        tenant_id=subject.tenant_id,
        user_id=subject.user_id,
        agent_id=subject.agent_id,
        records={t: n for t, n in sorted(counts.items()) if n},
        keyword_entries=done.keyword_entries,
        vectors=done.vectors,
        collections_dropped=done.dropped,
        collections_rebuilt=done.rebuilt,
        sessions_rebuilt=done.sessions,
        compacted=tuple(done.compacted),
        resumed=resumed,
        started_at=record.started_at,
        completed_at=now_utc(),
    )
    log.info(
        json.dumps(
            {
                "event": "erase",
                "erasure_id": record.id,
                "rows": receipt.rows,
                "keyword_entries": receipt.keyword_entries,
                "vectors": receipt.vectors,
                "resumed": resumed,
            }
        )
    )
    return receipt


def _partitions_of(ctx: StoreContext, tenant: str, ids: Sequence[str]) -> set[str]:
    return {r.partition for r in ctx.records.memories.get_many(tenant, ids, live_only=False)}


def _clear_vectors(
    ctx: StoreContext,
    tenant: str,
    collections: Sequence[tuple[str, str]],
    requeued: set[str],
    done: _Progress,
) -> None:
    """Drop the collections of partitions left without rows; write the others anew with the
    vectors of the rows they keep (not the ones about to be embedded again)."""
    remaining = ctx.records.erasure.remaining(tenant, [p for p, _ in collections])
    existing = set(ctx.vectors.collections())
    for partition, name in collections:
        if name not in existing:
            continue
        if partition not in remaining:
            done.vectors += ctx.vectors.count(name)
            ctx.vectors.drop(name)
            done.dropped += 1
        else:
            keep = ctx.records.index.vector_ids(tenant, partition) - requeued
            done.vectors += ctx.vectors.rebuild(name, keep)
            done.rebuilt += 1


def leftovers(
    ctx: StoreContext, collections: set[str], *, tenant_id: str | None = None
) -> list[ErasureCheck]:
    """Check every logged erasure: nothing of the identity in the records, the keyword index
    or the vector collections of its own partitions, and no copy of an unreadable index in
    the data dir (``agentmem doctor``, which passes the names of the vector collections it
    found); with ``tenant_id``, the erasures of that tenant only."""
    out: list[ErasureCheck] = []
    copies = [p.name for p in quarantined(ctx.home)]
    records = [
        rec
        for rec in ctx.records.erasure.all()
        if tenant_id is None or rec.subject.tenant_id == tenant_id
    ]
    found = ctx.records.erasure.leftovers([rec.subject for rec in records])
    for rec, rows in zip(records, found, strict=True):
        subject = rec.subject
        owned = subject.owned_partitions()
        if subject.whole_tenant:
            owned = tuple(p for p, _ in rec.collections)
        kw = 0
        for partition in owned:
            kw += ctx.keywords.live_entries(partition, subject.tenant_id)
            if not subject.whole_tenant:
                # deleted entries still in the files (of any tenant: the partition is named
                # after this identity, so they are almost surely its own)
                kw += ctx.keywords.stored_entries(partition) - ctx.keywords.live_entries(partition)
        out.append(
            ErasureCheck(
                erasure_id=rec.id,
                tenant_id=subject.tenant_id,
                user_id=subject.user_id,
                agent_id=subject.agent_id,
                status=rec.status,
                completed_at=rec.completed_at,
                records=rows,
                keyword_entries=kw,
                collections=sorted(
                    c for p in owned if (c := collection_name(subject.tenant_id, p)) in collections
                ),
                quarantined=copies,
            )
        )
    return out


__all__ = ["ErasureCheck", "erase", "leftovers", "resume_unfinished"]
