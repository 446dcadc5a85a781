"""``agentmem doctor``: compare the records with both derived indexes and report drift.

SQLite is the system of record; the Tantivy keyword index and the Chroma collections are
derived from it. :func:`diagnose` reads all three and reports, per tenant and partition:

- **missing**: a live row that is not queued for indexing (``kw_pending``/``vec_pending``
  clear) but is absent from the index;
- **stale**: the subset of missing rows whose flags claim they are indexed
  (``keyword_indexed``/``embedded`` = 1), e.g. after an index directory was deleted;
- **extra**: an indexed id that is not a live row of that partition (deleted, anonymized,
  unknown, or in a collection no partition maps to);
- **unreadable**: an index that cannot be opened or read (the problem is reported, not raised),
  and indexes the store had to rebuild when it was opened (``AgentMemory.recovered``);
- **erasures**: every identity in the erasure log is checked (:func:`~agentmem.maintenance.
  erase.leftovers`): no row of it in the records, no keyword entry under its own partitions
  (live, or deleted but still in the files), no vector collection of them; an erasure a crash
  interrupted is reported until it is finished (at the next open, or by erasing again);
- **leftover files**: segment directories of the embedded Chroma store that no collection
  uses (Chroma leaves them behind when a collection is dropped; ``reindex`` and ``erase``
  delete them), payloads or source links of rows that no longer exist, and copies of
  unreadable indexes an earlier version kept (``keywords.broken-<time>``: they may hold
  content that was forgotten or erased since; a writing open or ``erase`` deletes them);
- **lost vectors**: a vector index that lost vectors the records say it holds (see
  :mod:`agentmem.storage.vector_check`): a writing open queues those rows again and says so
  in ``recovered``; a read-only open reports it here.

The report also checks the default embedder's model files (``model_files``: presence, size
and sha256; a problem names the ``pip`` command that fixes it and makes the report not ``ok``)
and names the embedder recorded for the vectors (``embedder``; see
:mod:`agentmem.storage.fingerprint`). A data dir older than that record holds vectors whose model
was assumed when it was first opened: ``notes`` says so, without making the report not
``ok`` (``reindex`` re-embeds with a known embedder).

Rows still queued (pending) are not drift: the indexer will process them; rows whose embedding
failed permanently (``VEC_FAILED``) are reported and make the report not ``ok``, since
``reindex`` retries them. ``agentmem reindex`` heals every kind of drift.

Example:
    >>> from agentmem.maintenance.doctor import diagnose
    >>> report = diagnose(mem.context)  # doctest: +SKIP
    >>> report.ok, report.missing_keyword, report.samples.get("extra_vectors")  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..calibration.profile import EmbedderIdentity
from ..context import StoreContext
from ..embeddings import model_files_status
from ..errors import StorageError
from ..storage.datadir import quarantined
from ..storage.fingerprint import read as read_fingerprint
from ..storage.fingerprint import read_switch
from ..storage.rows import VEC_FAILED, VEC_PENDING, VEC_SKIP
from ..storage.vector_index import collection_name
from .erase import ErasureCheck, leftovers

#: Ids listed per kind of drift in a report.
SAMPLE_SIZE = 10


@dataclass(frozen=True)
class PartitionDrift:
    """Drift of one (tenant, partition): counts of ids per kind of drift."""

    tenant_id: str
    partition: str
    collection: str
    live: int
    missing_keyword: int = 0
    missing_vectors: int = 0
    extra_vectors: int = 0


@dataclass(frozen=True)
class DoctorReport:
    """What :func:`diagnose` found. ``ok`` is False when anything needs ``reindex``."""

    ok: bool
    live_rows: int
    keyword_docs: int
    vectors: int
    missing_keyword: int
    extra_keyword: int
    stale_keyword: int
    missing_vectors: int
    extra_vectors: int
    stale_vectors: int
    pending_keyword: int
    pending_vectors: int
    failed_vectors: int
    orphan_collections: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    partitions: list[PartitionDrift] = field(default_factory=list)
    samples: dict[str, list[str]] = field(default_factory=dict)
    #: The recorded embedder of the vectors (model_name, dimensions, origin), or None.
    embedder: dict[str, Any] | None = None
    #: Remarks that need no repair (e.g. an embedder that was assumed, not recorded).
    notes: list[str] = field(default_factory=list)
    #: The embedder's model files (role, path, ok, size, sha256_verified, problem, fix), or
    #: None for an embedder without files agentmem knows of (a custom one).
    model_files: list[dict[str, Any]] | None = None
    #: Logged erasures checked.
    erasures_checked: int = 0
    #: Erasures with something of their identity left, or not finished.
    erasures: list[ErasureCheck] = field(default_factory=list)
    #: Segment directories of the embedded Chroma store no collection uses.
    orphan_vector_files: list[str] = field(default_factory=list)
    #: Entries about rows that no longer exist, per table (payloads, source links).
    orphan_rows: dict[str, int] = field(default_factory=dict)
    #: Copies of unreadable indexes an earlier version kept in the data dir.
    quarantined: list[str] = field(default_factory=list)


def _sample(ids: set[str] | list[str]) -> list[str]:
    return sorted(ids)[:SAMPLE_SIZE]


def diagnose(ctx: StoreContext, *, tenant_id: str | None = None) -> DoctorReport:
    """Compare a store's records with its keyword index and vector collections.

    Never raises for a broken index: an index that cannot be read is listed in ``problems``
    (and its rows counted as missing).

    With ``tenant_id``, the report is that tenant's alone (its admin's view on a server):
    its rows, index entries, collections, samples and erasures; nothing of another tenant
    and no path. What belongs to the store as a whole (orphan collections and files, kept
    copies of indexes, model files) is left out, and its problems are counted, not shown,
    so that the report is not ok while the store has one.
    """
    ctx.check_open()
    records = ctx.records
    problems = [f"recovered at open: {note}" for note in ctx.recovered]
    if ctx.vector_loss is not None:
        problems.append(ctx.vector_loss.describe())
    whole = tenant_id is None
    # (id, tenant, partition, kw_pending, keyword_indexed, vec_pending, embedded, vector_live)
    rows = records.index.state(tenant_id)
    live_ids = {r[0] for r in rows}
    where: dict[str, tuple[str, str]] = {r[0]: (r[1], r[2]) for r in rows}

    # -- keyword index -----------------------------------------------------------------------
    keyword_ids: set[str] = set()
    try:
        keyword_ids = ctx.keywords.all_ids(tenant_id)
    except Exception as exc:  # an unreadable index is a finding, not a crash
        problems.append(f"keyword index unreadable: {exc}")
    missing_kw = {r[0] for r in rows if r[3] == 0 and r[0] not in keyword_ids}
    stale_kw = {r[0] for r in rows if r[3] == 0 and r[4] == 1 and r[0] not in keyword_ids}
    # ids whose deletion is still queued are not extra (the indexer removes them next)
    queued = records.index.queued_keyword_removals()
    extra_kw = keyword_ids - live_ids - queued

    # -- vector index ------------------------------------------------------------------------
    expected: dict[str, set[str]] = defaultdict(set)  # collection -> ids that belong in it
    stale_vec_candidates: set[str] = set()
    for id_, tenant, partition, _kp, _ki, vec_pending, embedded, vector_live in rows:
        if vector_live and vec_pending not in (VEC_PENDING, VEC_FAILED, VEC_SKIP):
            expected[collection_name(tenant, partition)].add(id_)
            if embedded:
                stale_vec_candidates.add(id_)
    # not extra: deletions still queued, and live rows whose (re-)embedding is queued or failed
    queued_vec = records.index.queued_vector_ids()
    partitions = [p for p in records.partitions() if whole or p[0] == tenant_id]
    known = {c for _, _, c in partitions}
    collections: list[str] = []
    vectors_readable = True
    try:
        collections = ctx.vectors.collections()
    except Exception as exc:
        vectors_readable = False
        problems.append(f"vector index unreadable: {exc}")
    if not whole:  # the tenant's collections only
        collections = [c for c in collections if c in known or c in expected]
    orphans = sorted(set(collections) - known)
    present: dict[str, set[str]] = {}
    for name in sorted(set(expected) | known | set(collections)):
        present[name] = set()
        if vectors_readable and name in collections:
            try:
                present[name] = ctx.vectors.ids(name)
            except Exception as exc:
                problems.append(f"vector collection {name} unreadable: {exc}")
    missing_vec: set[str] = set()
    extra_vec: set[str] = set()
    per_coll_missing: dict[str, set[str]] = {}
    per_coll_extra: dict[str, set[str]] = {}
    for name, ids in present.items():
        per_coll_missing[name] = expected.get(name, set()) - ids
        per_coll_extra[name] = ids - expected.get(name, set()) - queued_vec
        missing_vec |= per_coll_missing[name]
        extra_vec |= per_coll_extra[name]
    stale_vec = missing_vec & stale_vec_candidates

    # -- per partition -----------------------------------------------------------------------
    drift: list[PartitionDrift] = []
    live_per: dict[tuple[str, str], int] = defaultdict(int)
    for tenant, partition in where.values():
        live_per[(tenant, partition)] += 1
    keys = set(live_per) | {(t, p) for t, p, _ in partitions}
    for tenant, partition in sorted(keys):
        name = collection_name(tenant, partition)
        d = PartitionDrift(
            tenant_id=tenant,
            partition=partition,
            collection=name,
            live=live_per.get((tenant, partition), 0),
            missing_keyword=sum(1 for i in missing_kw if where[i] == (tenant, partition)),
            missing_vectors=len(per_coll_missing.get(name, set())),
            extra_vectors=len(per_coll_extra.get(name, set())),
        )
        if d.missing_keyword or d.missing_vectors or d.extra_vectors:
            drift.append(d)

    # -- the embedder's model files -----------------------------------------------------------
    files = model_files_status(ctx.embedder, verify_checksums=True)
    for status in files or []:
        if not status.ok:
            problems.append(f"{status.problem}; fix: {status.fix}")

    kw_pending, vec_pending, failed = records.index.pending_counts(tenant_id)
    recorded = read_fingerprint(records)
    notes: list[str] = []
    if recorded is not None and recorded.origin == "assumed":
        notes.append(
            f"the embedder of the vectors was not recorded when they were written (the data "
            f"dir predates embedder fingerprints); {recorded.describe()} was assumed when it "
            f"was first opened. If vector recall looks wrong, run `agentmem reindex` to "
            f"re-embed every record with a known embedder"
        )
    notes.extend(_calibration_notes(ctx))
    switch = read_switch(records)
    if switch is not None:
        notes.append(
            f"a re-embedding with {switch.target.describe()} is under way ({vec_pending} of "
            f"{switch.total} records left): run `agentmem reindex --embeddings` to finish it"
        )
    samples = {
        name: _sample(ids)
        for name, ids in (
            ("missing_keyword", missing_kw),
            ("extra_keyword", extra_kw),
            ("stale_keyword", stale_kw),
            ("missing_vectors", missing_vec),
            ("extra_vectors", extra_vec),
            ("stale_vectors", stale_vec),
        )
        if ids
    }
    if failed:
        samples["failed_vectors"] = records.index.failed_vector_ids(SAMPLE_SIZE, tenant_id)
    checks = leftovers(ctx, set(collections), tenant_id=tenant_id)
    erasures = [c for c in checks if not c.ok]
    orphan_files: list[str] = []
    try:
        orphan_files = [p.name for p in ctx.vectors.orphan_segment_dirs()] if whole else []
    except StorageError as exc:
        problems.append(f"vector index files unreadable: {exc}")
    orphan_rows = records.erasure.orphans() if whole else {}
    copies = [p.name for p in quarantined(ctx.home)] if whole else []
    if not whole and problems:  # they name paths, and other tenants' rows may be in them
        problems = [
            f"the store has {len(problems)} problem(s) of its own (an index recovered or "
            "unreadable, model files): its operator sees them (`agentmem doctor` on the data "
            "dir, or `GET /v1/admin/doctor` with an operator key)"
        ]
    ok = not (
        problems
        or copies
        or missing_kw
        or extra_kw
        or missing_vec
        or extra_vec
        or orphans
        or failed
        or erasures
        or orphan_files
        or orphan_rows
    )
    return DoctorReport(
        ok=ok,
        live_rows=len(live_ids),
        keyword_docs=len(keyword_ids),
        vectors=sum(len(ids) for ids in present.values()),
        missing_keyword=len(missing_kw),
        extra_keyword=len(extra_kw),
        stale_keyword=len(stale_kw),
        missing_vectors=len(missing_vec),
        extra_vectors=len(extra_vec),
        stale_vectors=len(stale_vec),
        pending_keyword=kw_pending,
        pending_vectors=vec_pending,
        failed_vectors=failed,
        orphan_collections=orphans,
        problems=problems,
        partitions=drift,
        samples=samples,
        embedder=None if recorded is None else recorded.to_dict(),
        notes=notes,
        model_files=None if files is None or not whole else [dataclasses.asdict(s) for s in files],
        erasures_checked=len(checks),
        erasures=erasures,
        orphan_vector_files=orphan_files,
        orphan_rows=orphan_rows,
        quarantined=copies,
    )


__all__ = ["DoctorReport", "PartitionDrift", "diagnose"]


def _calibration_notes(ctx: StoreContext) -> list[str]:
    """Why recall is uncalibrated, or that the profile's model answers differently from the
    embedder of the same name (its probe sentences embed otherwise: refit it)."""
    if ctx.calibration.warning is not None:
        return [ctx.calibration.warning]
    profile = ctx.calibration.profile
    if profile is None or profile.embedder.probe is None:
        return []
    try:
        current = EmbedderIdentity.of(ctx.embedder)
    except Exception as exc:  # a remote embedder that is down: nothing to compare with
        return [f"could not check the calibration profile against the embedder: {exc}"]
    if profile.embedder.same_vectors(current) is False:
        return [
            f"the calibration profile of {profile.embedder.describe()} was fitted on vectors "
            f"that differ from what this embedder of that name makes (another model or "
            f"build under the same name): run `agentmem calibrate`"
        ]
    return []
