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
from dataclasses import dataclass

from ..calibration.profile import EmbedderIdentity
from ..context import StoreContext
from ..embeddings import model_files_status
from ..errors import StorageError
from ..results import DoctorReport, PartitionDrift
from ..storage.datadir import quarantined
from ..storage.fingerprint import EmbedderFingerprint, read_switch
from ..storage.fingerprint import read as read_fingerprint
from ..storage.rows import VEC_FAILED, VEC_PENDING, VEC_SKIP
from ..storage.vector_index import collection_name
from .erase import leftovers

#: Ids listed per kind of drift in a report.
SAMPLE_SIZE = 10


def _sample(ids: set[str] | list[str]) -> list[str]:
    return sorted(ids)[:SAMPLE_SIZE]


#: A row's index state, as :meth:`~agentmem.storage.index_queue.IndexQueue.state` reads it:
#: (id, tenant, partition, kw_pending, keyword_indexed, vec_pending, embedded, vector_live).
StateRow = tuple[str, str, str, int, int, int, int, int]


@dataclass(frozen=True)
class _KeywordDrift:
    ids: set[str]
    missing: set[str]
    stale: set[str]
    extra: set[str]


@dataclass(frozen=True)
class _VectorDrift:
    collections: list[str]
    orphans: list[str]
    present: dict[str, set[str]]  # collection -> the ids in it
    missing: dict[str, set[str]]  # collection -> ids that belong in it and are not
    extra: dict[str, set[str]]  # collection -> ids in it that do not belong
    stale: set[str]

    @property
    def all_missing(self) -> set[str]:
        return set().union(*self.missing.values())

    @property
    def all_extra(self) -> set[str]:
        return set().union(*self.extra.values())


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
    problems = _store_problems(ctx)
    whole = tenant_id is None
    rows: list[StateRow] = records.index.state(tenant_id)
    live_ids = {r[0] for r in rows}
    kw = _keyword_drift(ctx, rows, live_ids, tenant_id, problems)
    partitions = [p for p in records.partitions.all() if whole or p[0] == tenant_id]
    vec = _vector_drift(ctx, rows, partitions, whole, problems)
    missing_vec, extra_vec = vec.all_missing, vec.all_extra
    problems += _untraced(ctx, kw.extra | extra_vec)
    drift = _partition_drift(rows, partitions, kw.missing, vec)

    files = model_files_status(ctx.embedder, verify_checksums=True)
    for status in files or []:
        if not status.ok:
            problems.append(f"{status.problem}; fix: {status.fix}")

    kw_pending, vec_pending, failed = records.index.pending_counts(tenant_id)
    recorded = read_fingerprint(records)
    notes = _embedder_notes(ctx, recorded, vec_pending)
    samples = _samples(kw, vec)
    if failed:
        samples["failed_vectors"] = records.index.failed_vector_ids(SAMPLE_SIZE, tenant_id)
    checks = leftovers(ctx, set(vec.collections), tenant_id=tenant_id)
    erasures = [c for c in checks if not c.ok]
    orphan_files, orphan_rows, copies = _store_leftovers(ctx, problems) if whole else ([], {}, [])
    if not whole and problems:  # they name paths, and other tenants' rows may be in them
        problems = [
            f"the store has {len(problems)} problem(s) of its own (an index recovered or "
            "unreadable, model files): its operator sees them (`agentmem doctor` on the data "
            "dir, or `GET /v1/admin/doctor` with an operator key)"
        ]
    report = DoctorReport(
        ok=False,
        live_rows=len(live_ids),
        keyword_docs=len(kw.ids),
        vectors=sum(len(ids) for ids in vec.present.values()),
        missing_keyword=len(kw.missing),
        extra_keyword=len(kw.extra),
        stale_keyword=len(kw.stale),
        missing_vectors=len(missing_vec),
        extra_vectors=len(extra_vec),
        stale_vectors=len(vec.stale),
        pending_keyword=kw_pending,
        pending_vectors=vec_pending,
        failed_vectors=failed,
        orphan_collections=vec.orphans,
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
    return dataclasses.replace(report, ok=not _needs_repair(report))


def _needs_repair(report: DoctorReport) -> bool:
    """Anything found that ``reindex`` (or ``erase``, or the operator) must deal with."""
    return bool(
        report.problems
        or report.quarantined
        or report.missing_keyword
        or report.extra_keyword
        or report.missing_vectors
        or report.extra_vectors
        or report.orphan_collections
        or report.failed_vectors
        or report.erasures
        or report.orphan_vector_files
        or report.orphan_rows
    )


def _keyword_drift(
    ctx: StoreContext,
    rows: list[StateRow],
    live_ids: set[str],
    tenant_id: str | None,
    problems: list[str],
) -> _KeywordDrift:
    """Live rows the keyword index should hold and does not, and entries it should not."""
    keyword_ids: set[str] = set()
    try:
        keyword_ids = ctx.keywords.all_ids(tenant_id)
    except Exception as exc:  # an unreadable index is a finding, not a crash
        problems.append(f"keyword index unreadable: {exc}")
    missing = {r[0] for r in rows if r[3] == 0 and r[0] not in keyword_ids}
    stale = {r[0] for r in rows if r[3] == 0 and r[4] == 1 and r[0] not in keyword_ids}
    # ids whose deletion is still queued are not extra (the indexer removes them next)
    queued = ctx.records.index.queued_keyword_removals()
    return _KeywordDrift(keyword_ids, missing, stale, keyword_ids - live_ids - queued)


def _store_problems(ctx: StoreContext) -> list[str]:
    """What the open repaired, and what is wrong with the store beyond index drift."""
    problems = [f"recovered at open: {note}" for note in ctx.recovered]
    found = (
        ctx.records.db.damage(),
        ctx.calibration.problem,
        None if ctx.vector_loss is None else ctx.vector_loss.describe(),
    )
    return problems + [p for p in found if p is not None]


def _untraced(ctx: StoreContext, extra: set[str]) -> list[str]:
    """Index entries of rows the records store has no trace of. A forgotten or retired row
    keeps its tombstone and an erasure its log, so an id with no row at all is one the
    records lost (a deleted ``-wal`` file, an older copy put back): said, since ``reindex``
    then drops the last sign that those writes were ever acknowledged."""
    if not extra:
        return []
    held = {r[1].item.id for r in ctx.records.index.state_of(sorted(extra))}
    lost = extra - held
    if not lost:
        return []
    return [
        f"{len(lost)} index entr{'y names a row' if len(lost) == 1 else 'ies name rows'} the "
        "records store has no trace of (no row, no tombstone): unless an erasure reported "
        "here was interrupted, the records lost acknowledged writes (a deleted or damaged "
        "-wal file, an older copy put back). Restore the records from a backup if you have "
        "one; the indexes hold no content to recover them from, and `agentmem reindex` "
        "drops these entries"
    ]


def _vector_drift(
    ctx: StoreContext,
    rows: list[StateRow],
    partitions: list[tuple[str, str, str]],
    whole: bool,
    problems: list[str],
) -> _VectorDrift:
    """Per collection: the vectors that should be there and are not, and those that should
    not; collections no partition maps to."""
    expected: dict[str, set[str]] = defaultdict(set)  # collection -> ids that belong in it
    stale_candidates: set[str] = set()
    for id_, tenant, partition, _kp, _ki, vec_pending, embedded, vector_live in rows:
        if vector_live and vec_pending not in (VEC_PENDING, VEC_FAILED, VEC_SKIP):
            expected[collection_name(tenant, partition)].add(id_)
            if embedded:
                stale_candidates.add(id_)
    # not extra: deletions still queued, and live rows whose (re-)embedding is queued or failed
    queued = ctx.records.index.queued_vector_ids()
    known = {c for _, _, c in partitions}
    collections: list[str] = []
    readable = True
    try:
        collections = ctx.vectors.collections()
    except Exception as exc:
        readable = False
        problems.append(f"vector index unreadable: {exc}")
    if not whole:  # the tenant's collections only
        collections = [c for c in collections if c in known or c in expected]
    present: dict[str, set[str]] = {}
    for name in sorted(set(expected) | known | set(collections)):
        present[name] = set()
        if readable and name in collections:
            try:
                present[name] = ctx.vectors.ids(name)
            except Exception as exc:
                problems.append(f"vector collection {name} unreadable: {exc}")
    missing = {name: expected.get(name, set()) - ids for name, ids in present.items()}
    extra = {name: ids - expected.get(name, set()) - queued for name, ids in present.items()}
    stale = set().union(*missing.values()) & stale_candidates
    orphans = sorted(set(collections) - known)
    return _VectorDrift(collections, orphans, present, missing, extra, stale)


def _partition_drift(
    rows: list[StateRow],
    partitions: list[tuple[str, str, str]],
    missing_kw: set[str],
    vec: _VectorDrift,
) -> list[PartitionDrift]:
    """The (tenant, partition)s with any drift, each with its counts."""
    where: dict[str, tuple[str, str]] = {r[0]: (r[1], r[2]) for r in rows}
    live_per: dict[tuple[str, str], int] = defaultdict(int)
    for tenant, partition in where.values():
        live_per[(tenant, partition)] += 1
    drift: list[PartitionDrift] = []
    for tenant, partition in sorted(set(live_per) | {(t, p) for t, p, _ in partitions}):
        name = collection_name(tenant, partition)
        d = PartitionDrift(
            tenant_id=tenant,
            partition=partition,
            collection=name,
            live=live_per.get((tenant, partition), 0),
            missing_keyword=sum(1 for i in missing_kw if where[i] == (tenant, partition)),
            missing_vectors=len(vec.missing.get(name, set())),
            extra_vectors=len(vec.extra.get(name, set())),
        )
        if d.missing_keyword or d.missing_vectors or d.extra_vectors:
            drift.append(d)
    return drift


def _samples(kw: _KeywordDrift, vec: _VectorDrift) -> dict[str, list[str]]:
    """A few ids of each kind of drift found."""
    return {
        name: _sample(ids)
        for name, ids in (
            ("missing_keyword", kw.missing),
            ("extra_keyword", kw.extra),
            ("stale_keyword", kw.stale),
            ("missing_vectors", vec.all_missing),
            ("extra_vectors", vec.all_extra),
            ("stale_vectors", vec.stale),
        )
        if ids
    }


def _store_leftovers(
    ctx: StoreContext, problems: list[str]
) -> tuple[list[str], dict[str, int], list[str]]:
    """What the store as a whole left behind: Chroma segment directories no collection uses,
    entries about rows that no longer exist, and kept copies of unreadable indexes."""
    orphan_files: list[str] = []
    try:
        orphan_files = [p.name for p in ctx.vectors.orphan_segment_dirs()]
    except StorageError as exc:
        problems.append(f"vector index files unreadable: {exc}")
    return orphan_files, ctx.records.erasure.orphans(), [p.name for p in quarantined(ctx.home)]


def _embedder_notes(
    ctx: StoreContext, recorded: EmbedderFingerprint | None, vec_pending: int
) -> list[str]:
    """Remarks on the embedder that need no repair: assumed, miscalibrated, being switched."""
    notes: list[str] = []
    if recorded is not None and recorded.origin == "assumed":
        notes.append(
            f"the embedder of the vectors was not recorded when they were written (the data "
            f"dir predates embedder fingerprints); {recorded.describe()} was assumed when it "
            f"was first opened. If vector recall looks wrong, run `agentmem reindex` to "
            f"re-embed every record with a known embedder"
        )
    notes.extend(_calibration_notes(ctx))
    switch = read_switch(ctx.records)
    if switch is not None:
        notes.append(
            f"a re-embedding with {switch.target.describe()} is under way ({vec_pending} of "
            f"{switch.total} records left): run `agentmem reindex --embeddings` to finish it"
        )
    return notes


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
