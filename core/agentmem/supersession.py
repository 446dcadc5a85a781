"""Supersession without a shared topic key: the judge pass (seed 000), and ``history``.

Two mechanisms retire an older memory (``superseded_by`` points to the newer one; the row
stays for history and audit, and leaves default recall):

1. **Same topic key** (seed 002): inside the records insert, a fact, preference or
   instruction with a topic key supersedes live memories of the same tenant and owner
   (partition) with that key.
2. **The judge** (this module), for contradictions without a shared key. For each new fact,
   preference or instruction of scope user, agent or tenant:

   - candidates are *older* live, not superseded memories of those types in the same
     (tenant, scope, owner) bucket, never across tenants, users or agents; they come from the
     bucket's vector collection plus its not yet embedded rows (embedded here), and must lie
     within cosine distance ``threshold`` (default 0.7: distance, not similarity;
     contradictions sit near 0.6), at most ``top_k`` (5) of them;
   - the LLM's :meth:`~agentmem.llm.LLM.judge` says SUPERSEDE or KEEP for each;
   - each SUPERSEDE is applied atomically with an audit-log entry ``memory.supersede``
     holding ids only (``{"by": new_id, "via": "judge"}``);
   - ``judged_at`` is set on every processed row, fail-open paths included, so no row loops.

   **Fail-open**: any judge failure (LLM error, timeout, malformed reply, anything raised)
   retires nothing; it is logged and counted.

**When it runs.** ``ingest`` judges its new memories synchronously (it is already the slow,
LLM-backed path). Memories written by ``remember``/``remember_many`` keep the write path
fast and are judged by :meth:`AgentMemory.judge_pending` (``agentmem judge``), which drains
unjudged rows in batches of ``batch_size`` (20), oldest first, like the seed's dispatcher.

Environment (read by :meth:`JudgeConfig.from_env`): ``AGENTMEM_MEMORY_JUDGE_THRESHOLD``,
``AGENTMEM_MEMORY_JUDGE_TOPK``, ``AGENTMEM_MEMORY_JUDGE_BATCH_SIZE``; the judge is disabled
(rows are only marked judged) by ``AGENTMEM_MEMORY_JUDGE_ENABLED=false`` or, as in the seed,
by setting ``AGENTMEM_MEMORY_JUDGE_MODEL`` to an empty string.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import validation as v
from .errors import NotFoundError
from .indexer import row_text
from .models import IngestError, JudgeResult, MemoryItem
from .records import LIVE, VEC_FAILED, VEC_PENDING, iso, now_utc, retire_sources
from .vector_index import collection_name

if TYPE_CHECKING:
    from .llm.base import LLM
    from .memory import AgentMemory, BoundMemory

log = logging.getLogger("agentmem.supersession")

#: Memory types the judge looks at (new rows and candidates).
JUDGED_TYPES: tuple[str, ...] = ("fact", "preference", "instruction")
#: Scopes with a stable owner bucket; session-scoped rows are not judged.
JUDGED_SCOPES: tuple[str, ...] = ("user", "agent", "tenant")
#: Not yet embedded candidates embedded on the fly per judged row, newest first.
MAX_UNEMBEDDED_CANDIDATES = 200
#: History chains are cut at this many rows.
MAX_HISTORY = 1000

_TYPES_SQL = ",".join(f"'{t}'" for t in JUDGED_TYPES)


@dataclass(frozen=True)
class JudgeConfig:
    """Tunables of the supersession judge (seed 000 defaults).

    Example:
        >>> JudgeConfig.from_env({"AGENTMEM_MEMORY_JUDGE_TOPK": "3"}).top_k
        3
    """

    enabled: bool = True
    """False: rows are marked judged without a judge call (rollback switch)."""
    threshold: float = 0.7
    """Cosine-distance cut-off: candidates have distance < threshold."""
    top_k: int = 5
    """Candidates passed to the judge per new memory."""
    batch_size: int = 20
    """Unjudged rows processed per batch of :func:`judge_pending`."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> JudgeConfig:
        env = os.environ if environ is None else environ
        enabled = env.get("AGENTMEM_MEMORY_JUDGE_ENABLED", "true").strip().lower() not in (
            "0",
            "false",
            "no",
            "off",
        )
        if "AGENTMEM_MEMORY_JUDGE_MODEL" in env and not env["AGENTMEM_MEMORY_JUDGE_MODEL"].strip():
            enabled = False
        threshold = _float(env.get("AGENTMEM_MEMORY_JUDGE_THRESHOLD"), 0.7)
        return cls(
            enabled=enabled,
            threshold=max(0.0, min(1.0, threshold)),
            top_k=_int(env.get("AGENTMEM_MEMORY_JUDGE_TOPK"), 5),
            batch_size=_int(env.get("AGENTMEM_MEMORY_JUDGE_BATCH_SIZE"), 20),
        )


def _float(raw: str | None, default: float) -> float:
    try:
        return float(raw) if raw is not None and raw.strip() else default
    except ValueError:
        log.warning("ignoring judge setting %r: not a number", raw)
        return default


def _int(raw: str | None, default: int) -> int:
    try:
        value = int(raw) if raw is not None and raw.strip() else default
    except ValueError:
        log.warning("ignoring judge setting %r: not an integer", raw)
        return default
    return value if value >= 1 else default


@dataclass
class JudgeRun:
    """What one judge pass did (``errors`` feed :class:`~agentmem.models.IngestResult`)."""

    judged: int = 0
    superseded: list[tuple[str, str]] = field(default_factory=list)
    failed: int = 0
    errors: list[IngestError] = field(default_factory=list)
    #: Vectors of rows embedded during this pass, by id: a batch of new memories are each
    #: other's unembedded candidates, and embedding each of them once per row made an
    #: ingest of N memories embed O(N * MAX_UNEMBEDDED_CANDIDATES) texts.
    vectors: dict[str, Any] = field(default_factory=dict)

    def result(self) -> JudgeResult:
        return JudgeResult(
            judged=self.judged, superseded=tuple(self.superseded), failed=self.failed
        )


@dataclass(frozen=True, slots=True)
class _Pending:
    seq: int
    id: str
    tenant_id: str
    partition: str
    scope: str
    user_id: str | None
    agent_id: str | None
    memory_type: str | None
    kind: str
    live: bool


_PENDING_COLS = (
    "seq, id, tenant_id, partition, scope, user_id, agent_id, memory_type, kind, "
    f"(superseded_by IS NULL AND {LIVE})"
)


def _pending_rows(store: AgentMemory, ids: Sequence[str] | None, limit: int) -> list[_Pending]:
    if ids is None:
        sql = (
            f"SELECT {_PENDING_COLS} FROM memories WHERE judged_at IS NULL AND kind = 'memory' "
            f"ORDER BY seq LIMIT ?"
        )
        rows = store.records.read(sql, (limit,))
    else:
        rows = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows.extend(
                store.records.read(
                    f"SELECT {_PENDING_COLS} FROM memories WHERE judged_at IS NULL AND "
                    f"id IN ({marks}) ORDER BY seq",
                    chunk,
                )
            )
        rows.sort(key=lambda r: r[0])
    return [
        _Pending(
            seq=r[0],
            id=r[1],
            tenant_id=r[2],
            partition=r[3],
            scope=r[4],
            user_id=r[5],
            agent_id=r[6],
            memory_type=r[7],
            kind=r[8],
            live=bool(r[9]),
        )
        for r in rows
    ]


def judge_pending(
    store: AgentMemory,
    *,
    limit: int | None = None,
    llm: LLM | None = None,
    config: JudgeConfig | None = None,
) -> JudgeResult:
    """Judge unjudged memories oldest first, in batches, until none is left (or ``limit``)."""
    limit = v.positive_int(limit, "limit")
    cfg = config or JudgeConfig.from_env()
    run = JudgeRun()
    while limit is None or run.judged < limit:
        size = cfg.batch_size if limit is None else min(cfg.batch_size, limit - run.judged)
        batch = _pending_rows(store, None, size)
        if not batch:
            break
        _judge_batch(store, batch, llm or store.llm, cfg, run)
    return run.result()


def judge_rows(
    store: AgentMemory,
    ids: Sequence[str],
    llm: LLM | None = None,
    config: JudgeConfig | None = None,
) -> JudgeRun:
    """Judge the given (new) memories now, oldest first; used by ``ingest``."""
    cfg = config or JudgeConfig.from_env()
    run = JudgeRun()
    rows = _pending_rows(store, ids, len(ids))
    if cfg.enabled and rows:  # one embedding batch for the new rows, not one call per row
        stored = store.records.get_many(rows[0].tenant_id, [r.id for r in rows])
        if stored:
            vecs = store.embedder.embed_documents([row_text(r) for r in stored])
            run.vectors.update((r.item.id, vec) for r, vec in zip(stored, vecs, strict=True))
    for start in range(0, len(rows), cfg.batch_size):
        _judge_batch(store, rows[start : start + cfg.batch_size], llm or store.llm, cfg, run)
    return run


def _judge_batch(
    store: AgentMemory, batch: Sequence[_Pending], llm: LLM, cfg: JudgeConfig, run: JudgeRun
) -> None:
    for row in batch:
        eligible = (
            cfg.enabled
            and row.live
            and row.kind == "memory"
            and row.memory_type in JUDGED_TYPES
            and row.scope in JUDGED_SCOPES
        )
        retire: list[str] = []
        if eligible:
            try:
                retire = _decide(store, row, llm, cfg, run.vectors)
            except Exception as exc:  # fail-open (seed 000): nothing retired, row marked
                run.failed += 1
                raw = getattr(exc, "context", {}).get("raw")
                run.errors.append(
                    IngestError(
                        stage="judge",
                        message=f"{type(exc).__name__}: {exc}"[:500],
                        source_ids=(row.id,),
                        raw=raw if isinstance(raw, str) else None,
                    )
                )
                log.warning(
                    json.dumps(
                        {
                            "event": "judge_failed_open",
                            "memory_id": row.id,
                            "judge": llm.name,
                            "error": type(exc).__name__,
                            "detail": str(exc)[:200],
                        }
                    )
                )
        run.superseded.extend((old, row.id) for old in _apply(store, row, retire, llm.name))
        run.judged += 1


def _decide(
    store: AgentMemory, row: _Pending, llm: LLM, cfg: JudgeConfig, vectors: dict[str, Any]
) -> list[str]:
    candidates = _candidates(store, row, cfg, vectors)
    if not candidates:
        return []
    new_row = store.records.get(row.id)
    if new_row is None:
        return []
    verdicts = llm.judge(new_row.item.content, [(cid, content) for cid, content, _ in candidates])
    known = {cid for cid, _, _ in candidates}
    return [
        vd.candidate_id
        for vd in verdicts
        if vd.decision == "SUPERSEDE" and vd.candidate_id in known
    ]


def _candidates(
    store: AgentMemory, row: _Pending, cfg: JudgeConfig, vectors: dict[str, Any]
) -> list[tuple[str, str, float]]:
    """(id, content, cosine distance) of older same-bucket memories, nearest first."""
    stored = store.records.get(row.id)
    if stored is None:
        return []
    if row.id not in vectors:
        vectors[row.id] = store.embedder.embed_documents([row_text(stored)])[0]
    query = vectors[row.id]
    # The not yet embedded rows are read *before* the vector query: the indexer upserts a
    # vector and then marks its row done, so a row that is no longer pending here is
    # already in the collection the query reads (the other order misses a row embedded
    # between the two reads).
    unembedded = store.records.read(
        f"SELECT id FROM memories WHERE tenant_id = ? AND partition = ? AND kind = 'memory' "
        f"AND memory_type IN ({_TYPES_SQL}) AND seq < ? AND superseded_by IS NULL AND {LIVE} "
        f"AND vec_pending IN ({VEC_PENDING}, {VEC_FAILED}) ORDER BY seq DESC LIMIT ?",
        (row.tenant_id, row.partition, row.seq, MAX_UNEMBEDDED_CANDIDATES),
    )
    sims: dict[str, float] = {}
    hits = store.vectors.query(
        collection_name(row.tenant_id, row.partition),
        query,
        cfg.top_k * 4 + 10,
        {"kind": "memory"},
    )
    sims.update(hits)
    fresh = [r[0] for r in unembedded if r[0] not in sims]
    missing = [i for i in fresh if i not in vectors]
    if missing:
        rows = store.records.get_many(row.tenant_id, missing)
        if rows:
            vecs = store.embedder.embed_documents([row_text(r) for r in rows])
            for r, vec in zip(rows, vecs, strict=True):
                vectors[r.item.id] = vec
    for i in fresh:
        if i in vectors:
            sims[i] = float(vectors[i] @ query)
    sims.pop(row.id, None)
    if not sims:
        return []
    ids = list(sims)
    out: list[tuple[str, str, float]] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows_ = store.records.read(
            f"SELECT id, content FROM memories WHERE id IN ({marks}) AND tenant_id = ? AND "
            f"partition = ? AND scope = ? AND user_id IS ? AND agent_id IS ? AND "
            f"kind = 'memory' AND memory_type IN ({_TYPES_SQL}) AND seq < ? AND "
            f"superseded_by IS NULL AND {LIVE}",
            (*chunk, row.tenant_id, row.partition, row.scope, row.user_id, row.agent_id, row.seq),
        )
        for cid, content in rows_:
            distance = 1.0 - sims[cid]
            if distance < cfg.threshold:
                out.append((cid, content, distance))
    out.sort(key=lambda c: (c[2], c[0]))
    return out[: cfg.top_k]


def _apply(store: AgentMemory, row: _Pending, retire: Sequence[str], judge: str) -> list[str]:
    """Retire ``retire`` in favour of ``row`` (if both still live) and mark ``row`` judged."""
    now = iso(now_utc())
    done: list[str] = []
    with store.records.write() as conn:
        alive = conn.execute(
            f"SELECT 1 FROM memories WHERE id = ? AND superseded_by IS NULL AND {LIVE}",
            (row.id,),
        ).fetchone()
        for old in retire if alive else ():
            cur = conn.execute(
                f"UPDATE memories SET superseded_by = ?, updated_at = ?, dedup_key = NULL "
                f"WHERE id = ? AND tenant_id = ? AND partition = ? AND superseded_by IS NULL "
                f"AND {LIVE}",
                (row.id, now, old, row.tenant_id, row.partition),
            )
            if cur.rowcount:
                retire_sources(conn, row.tenant_id, old, row.id)
                conn.execute(
                    "INSERT INTO audit_log (at, event, tenant_id, memory_id, detail) "
                    "VALUES (?,?,?,?,?)",
                    (
                        now,
                        "memory.supersede",
                        row.tenant_id,
                        old,
                        json.dumps({"by": row.id, "via": "judge", "judge": judge}),
                    ),
                )
                done.append(old)
        conn.execute("UPDATE memories SET judged_at = ? WHERE id = ?", (now, row.id))
    return done


# -- history -----------------------------------------------------------------------------------
def history(m: BoundMemory, memory_id: str) -> list[MemoryItem]:
    """Every visible memory of ``memory_id``'s supersession chain, oldest first.

    Follows ``superseded_by`` in both directions (a memory may have superseded several
    older ones). Rows that are soft-deleted, anonymized or not visible to this identity are
    left out (the chain is still followed through them).
    """
    memory_id = v.identity(memory_id, "memory_id", required=True)  # type: ignore[assignment]
    records = m.store.records
    start = records.get(memory_id)
    if (
        start is None
        or start.item.deleted_at is not None
        or start.item.anonymized_at is not None
        or m._visible(start) is None
    ):
        raise NotFoundError(f"no memory {memory_id!r} is visible here", memory_id=memory_id)
    seen: dict[str, Any] = {memory_id: start}
    todo = [memory_id]
    while todo and len(seen) < MAX_HISTORY:
        current = todo.pop()
        row = seen[current]
        neighbours: list[str] = []
        if row is not None and row.item.superseded_by:
            neighbours.append(row.item.superseded_by)
        neighbours.extend(
            r[0]
            for r in records.read(
                "SELECT id FROM memories WHERE tenant_id = ? AND superseded_by = ? "
                "AND kind = 'memory'",
                (m.tenant_id, current),
            )
        )
        for nid in neighbours:
            if nid not in seen:
                nrow = records.get(nid)
                if nrow is None or nrow.item.tenant_id != m.tenant_id:
                    continue
                seen[nid] = nrow
                todo.append(nid)
    ids = list(seen)
    order: dict[str, int] = {}
    for begin in range(0, len(ids), 500):
        chunk = ids[begin : begin + 500]
        marks = ",".join("?" * len(chunk))
        for id_, seq in records.read(f"SELECT id, seq FROM memories WHERE id IN ({marks})", chunk):
            order[id_] = seq
    out = [
        row.item
        for row in seen.values()
        if row is not None
        and row.item.deleted_at is None
        and row.item.anonymized_at is None
        and m._visible(row) is not None
    ]
    out.sort(key=lambda item: order.get(item.id, 0))
    return out
