"""Supersession without a shared topic key: the judge pass, and ``history``.

Two mechanisms retire an older memory (``superseded_by`` points to the newer one; the row
stays for history and audit, and leaves default recall):

1. **Same topic key**: inside the records insert, a fact, preference or
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
unjudged rows in batches of ``batch_size`` (20), oldest first.

Settings (:class:`~agentmem.config.JudgeConfig`, from the environment): ``AGENTMEM_MEMORY_JUDGE_THRESHOLD``,
``AGENTMEM_MEMORY_JUDGE_TOPK``, ``AGENTMEM_MEMORY_JUDGE_BATCH_SIZE``; the judge is disabled
(rows are only marked judged) by ``AGENTMEM_MEMORY_JUDGE_ENABLED=false`` or
by setting ``AGENTMEM_MEMORY_JUDGE_MODEL`` to an empty string.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import scopes as scope_rules
from .. import validation
from ..config import JudgeConfig
from ..context import StoreContext
from ..errors import NotFoundError
from ..llm.base import LLM
from ..models import Identity, IngestError, JudgeResult, MemoryItem
from ..storage.rows import Row
from ..storage.supersession import JudgeRow
from ..storage.vector_index import collection_name
from ..write.index_text import row_text

log = logging.getLogger("agentmem.derived.supersession")

#: Memory types the judge looks at (new rows and candidates).
JUDGED_TYPES: tuple[str, ...] = ("fact", "preference", "instruction")
#: Scopes with a stable owner bucket; session-scoped rows are not judged.
JUDGED_SCOPES: tuple[str, ...] = ("user", "agent", "tenant")
#: Not yet embedded candidates embedded on the fly per judged row, newest first.
MAX_UNEMBEDDED_CANDIDATES = 200
#: History chains are cut at this many rows.
MAX_HISTORY = 1000


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


def judge_pending(
    ctx: StoreContext,
    *,
    limit: int | None = None,
    llm: LLM | None = None,
    config: JudgeConfig | None = None,
) -> JudgeResult:
    """Judge unjudged memories oldest first, in batches, until none is left (or ``limit``)."""
    limit = validation.positive_int(limit, "limit")
    ctx.check_open()
    cfg = config or ctx.settings.judge
    run = JudgeRun()
    while limit is None or run.judged < limit:
        size = cfg.batch_size if limit is None else min(cfg.batch_size, limit - run.judged)
        batch = ctx.records.supersession.unjudged(limit=size)
        if not batch:
            break
        _judge_batch(ctx, batch, llm or ctx.llm, cfg, run)
    return run.result()


def judge_rows(
    ctx: StoreContext,
    ids: Sequence[str],
    llm: LLM | None = None,
    config: JudgeConfig | None = None,
) -> JudgeRun:
    """Judge the given (new) memories now, oldest first; used by ``ingest``."""
    cfg = config or ctx.settings.judge
    run = JudgeRun()
    rows = ctx.records.supersession.unjudged(ids=ids, limit=len(ids))
    if cfg.enabled and rows:  # one embedding batch for the new rows, not one call per row
        stored = ctx.records.memories.get_many(rows[0].tenant_id, [r.id for r in rows])
        if stored:
            vecs = ctx.embedder.embed_documents([row_text(r) for r in stored])
            run.vectors.update((r.item.id, vec) for r, vec in zip(stored, vecs, strict=True))
    for start in range(0, len(rows), cfg.batch_size):
        _judge_batch(ctx, rows[start : start + cfg.batch_size], llm or ctx.llm, cfg, run)
    return run


def _judge_batch(
    ctx: StoreContext, batch: Sequence[JudgeRow], llm: LLM, cfg: JudgeConfig, run: JudgeRun
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
                retire = _decide(ctx, row, llm, cfg, run.vectors)
            except (
                Exception
            ) as exc:  # fail-open: nothing retired, the row marked judged so it does not loop
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
        retired = ctx.records.supersession.apply_judgement(row, retire, llm.name)
        run.superseded.extend((old, row.id) for old in retired)
        run.judged += 1


def _decide(
    ctx: StoreContext, row: JudgeRow, llm: LLM, cfg: JudgeConfig, vectors: dict[str, Any]
) -> list[str]:
    candidates = _candidates(ctx, row, cfg, vectors)
    if not candidates:
        return []
    new_row = ctx.records.memories.get(row.id)
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
    ctx: StoreContext, row: JudgeRow, cfg: JudgeConfig, vectors: dict[str, Any]
) -> list[tuple[str, str, float]]:
    """(id, content, cosine distance) of older same-bucket memories, nearest first."""
    stored = ctx.records.memories.get(row.id)
    if stored is None:
        return []
    if row.id not in vectors:
        vectors[row.id] = ctx.embedder.embed_documents([row_text(stored)])[0]
    query = vectors[row.id]
    # The not yet embedded rows are read *before* the vector query: the indexer upserts a
    # vector and then marks its row done, so a row that is no longer pending here is
    # already in the collection the query reads (the other order misses a row embedded
    # between the two reads).
    unembedded = ctx.records.supersession.unembedded_older(
        row, JUDGED_TYPES, MAX_UNEMBEDDED_CANDIDATES
    )
    sims: dict[str, float] = {}
    hits = ctx.vectors.query(
        collection_name(row.tenant_id, row.partition),
        query,
        cfg.top_k * 4 + 10,
        {"kind": "memory"},
    )
    sims.update(hits)
    fresh = [i for i in unembedded if i not in sims]
    missing = [i for i in fresh if i not in vectors]
    if missing:
        rows = ctx.records.memories.get_many(row.tenant_id, missing)
        if rows:
            vecs = ctx.embedder.embed_documents([row_text(r) for r in rows])
            for r, vec in zip(rows, vecs, strict=True):
                vectors[r.item.id] = vec
    for i in fresh:
        if i in vectors:
            sims[i] = float(vectors[i] @ query)
    sims.pop(row.id, None)
    if not sims:
        return []
    out = [
        (cid, content, 1.0 - sims[cid])
        for cid, content in ctx.records.supersession.older_in_bucket(row, list(sims), JUDGED_TYPES)
        if 1.0 - sims[cid] < cfg.threshold
    ]
    out.sort(key=lambda c: (c[2], c[0]))
    return out[: cfg.top_k]


# -- history -----------------------------------------------------------------------------------
def history(ctx: StoreContext, identity: Identity, memory_id: str) -> list[MemoryItem]:
    """Every visible memory of ``memory_id``'s supersession chain, oldest first.

    Follows ``superseded_by`` in both directions (a memory may have superseded several
    older ones). Rows that are soft-deleted, anonymized or not visible to this identity are
    left out (the chain is still followed through them).
    """
    id_ = validation.identity(memory_id, "memory_id", required=True)
    assert id_ is not None
    ctx.check_open()
    records = ctx.records
    start = records.memories.get(id_)
    if not scope_rules.readable(identity, start):
        raise NotFoundError(f"no memory {id_!r} is visible here", memory_id=id_)
    assert start is not None
    seen: dict[str, Row] = {id_: start}
    todo = [id_]
    while todo and len(seen) < MAX_HISTORY:
        row = seen[todo.pop()]
        neighbours = records.supersession.memory_neighbours(identity.tenant_id, row.item.id)
        if row.item.superseded_by:
            neighbours.append(row.item.superseded_by)
        for nid in neighbours:
            if nid not in seen:
                nrow = records.memories.get(nid)
                if nrow is None or nrow.item.tenant_id != identity.tenant_id:
                    continue
                seen[nid] = nrow
                todo.append(nid)
    order = records.memories.seqs(list(seen))
    out = [row.item for row in seen.values() if scope_rules.readable(identity, row)]
    out.sort(key=lambda item: order.get(item.id, 0))
    return out
