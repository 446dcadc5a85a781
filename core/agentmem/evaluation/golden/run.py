"""Running a golden dataset: write each case into one fresh store, recall, judge each hit."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ...embeddings import Embedder, default_embedder
from ...errors import ValidationError
from ...memory import AgentMemory, BoundMemory
from ...models import RecallResult
from ...tokens import count_tokens
from .dataset import (
    DEFAULT_AGENT,
    DEFAULT_SESSION,
    PRIVATE_SCOPES,
    GoldenCase,
    GoldenDataset,
    SetupMemory,
)
from .results import TOP_K, CaseResult, GoldenReport, ReturnedItem, Thresholds, summarize

if TYPE_CHECKING:
    from ...config import MemoryConfig

ProgressCallback = Callable[[str, int, int], None]


def relation(case: GoldenCase, m: SetupMemory) -> str:
    """How ``case``'s querying identity relates to the owner of ``m``.

    ``cross_tenant`` for another tenant's row, ``cross_user`` for another user's row in a
    private scope (user facts, conversations), else ``own`` (including another user's
    tenant-wide documents or facts, and agent facts, which the tenant shares).
    """
    tenant, user, _agent, _session = case.owner(m)
    if tenant != case.tenant_id:
        return "cross_tenant"
    if user != case.user_id and m.home_scope in PRIVATE_SCOPES:
        return "cross_user"
    return "own"


def case_prefix(n: int) -> str:
    """The prefix of case ``n``'s tenant and user ids: every case is isolated in one store."""
    return f"g{n:04d}"


def write_case(
    mem: AgentMemory,
    n: int,
    case: GoldenCase,
    distractors: Sequence[SetupMemory] = (),
    *,
    prefix: str | None = None,
    first_call: int = 0,
) -> dict[str, SetupMemory]:
    """Write the ``distractors`` (a dataset's, see :attr:`GoldenDataset.distractors`), then
    case ``n``'s setup memories, in order; returns record id -> the memory that wrote it (a
    document maps each of its chunks).

    ``prefix`` replaces :func:`case_prefix` (cases written with one prefix share one store);
    the ``i``-th memory written without a ``tool_call_id`` gets ``call-<first_call + i>``.
    """
    prefix = case_prefix(n) if prefix is None else prefix
    owners: dict[str, SetupMemory] = {}
    for i, m in enumerate((*distractors, *case.setup)):
        tenant, user, agent, session = case.owner(m)
        bound = mem.bind(f"{prefix}.{tenant}", f"{prefix}.{user}", agent, session)
        for id_ in _write_memory(bound, m, first_call + i):
            owners.setdefault(id_, m)
    return owners


def _write_memory(bound: BoundMemory, m: SetupMemory, n: int) -> list[str]:
    if m.kind == "memory":
        result = bound.remember(
            m.content,
            memory_type=m.memory_type or "fact",
            scope=m.scope or "user",
            importance=m.importance,
            topic_key=m.topic_key,
            metadata=m.metadata,
        )
        return [result.id]
    if m.kind == "chat_message":
        item = bound.add_message(
            m.role or "user", m.content, metadata=m.metadata, event_time=m.event_time
        )
        return [item.id]
    if m.kind == "tool_output":
        item = bound.add_tool_output(
            m.tool_call_id or f"call-{n}",
            m.content,
            tool_name=m.tool_name,
            metadata=m.metadata,
        )
        return [item.id]
    chunks = bound.add_document(m.content, source_ref=m.source_ref, metadata=m.metadata)
    return [c.id for c in chunks]


def score_case(
    case: GoldenCase,
    owners: Mapping[str, SetupMemory],
    result: RecallResult,
    *,
    latency_ms: float = 0.0,
    token_budget: int = 1000,
) -> CaseResult:
    """Judge one recall result against its case.

    Args:
        case: The case that was queried.
        owners: Record id -> the setup memory that wrote it (a document maps every chunk).
        result: What recall returned.
        latency_ms: How long the recall took.
        token_budget: The budget the recall ran with.

    Each hit gets a verdict: ``cross_tenant``/``cross_user`` (see :func:`relation`) before
    anything else, then ``expected``, ``forbidden`` or ``unexpected`` by the content of the
    setup memory that wrote it, or ``unknown`` for a row no setup memory wrote.
    """
    expected = set(case.expected)
    forbidden = set(case.forbidden)
    returned: list[ReturnedItem] = []
    found: set[str] = set()
    for hit in result.items:
        owner = owners.get(hit.id)
        passages = passages_in(case, owner, hit.content)
        if owner is None:
            verdict = "unknown"
        elif (rel := relation(case, owner)) != "own":
            verdict = rel
        elif owner.content in expected or passages:
            verdict = "expected"
            if owner.content in expected:
                found.add(owner.content)
            found.update(passages)
        elif owner.content in forbidden:
            verdict = "forbidden"
        else:
            verdict = "unexpected"
        returned.append(ReturnedItem(hit.content, hit.kind, hit.score, verdict))
    wanted = (*case.expected, *case.expected_passages)
    relevant = sum(1 for r in returned if r.verdict == "expected")
    recall = len(found) / len(wanted) if wanted else None
    precision = relevant / len(returned) if returned else None
    return CaseResult(
        id=case.id,
        tags=case.tags,
        query=case.query,
        rubric=case.rubric,
        expected=wanted,
        expect_empty=case.expect_empty,
        returned=tuple(returned),
        found=tuple(c for c in wanted if c in found),
        missing=tuple(c for c in wanted if c not in found),
        recall=recall,
        precision=precision,
        latency_ms=latency_ms,
        token_count=result.token_count,
        counted_tokens=sum(count_tokens(h.content) for h in result.items),
        token_budget=token_budget,
        degraded=result.degraded,
        expected_kinds=(
            *(
                next((m.kind for m in case.setup if m.content == c), "memory")
                for c in case.expected
            ),
            *("document_chunk" for _ in case.expected_passages),
        ),
    )


def passages_in(case: GoldenCase, owner: SetupMemory | None, content: str) -> tuple[str, ...]:
    """The case's expected passages a hit's ``content`` holds (a chunk of a document)."""
    if owner is None or owner.kind != "document_chunk":
        return ()
    return tuple(p for p in case.expected_passages if p in content)


def run_golden(
    dataset: GoldenDataset,
    *,
    embedder: Embedder | None = None,
    config: MemoryConfig | None = None,
    thresholds: Thresholds | None = None,
    top_k: int = TOP_K,
    workdir: str | Path | None = None,
    progress: ProgressCallback | None = None,
) -> GoldenReport:
    """Run every case of ``dataset`` in one fresh store and score it.

    Args:
        dataset: From :func:`load_dataset` or :func:`parse_dataset`.
        embedder: Shared by the whole run; default: the packaged MiniLM, loaded once.
        config: Store configuration; default ``MemoryConfig.from_env()`` (as a user gets it).
        thresholds: Blocking thresholds; default :class:`Thresholds`.
        top_k: Hits per query (the format's metrics are at 5).
        workdir: Keep the store in this (new or empty) directory instead of a temporary one,
            e.g. to inspect a failing case afterwards; case ``n`` uses tenant ``gNNNN.<tenant>``.
        progress: ``progress(phase, done, total)`` with phase ``write`` then ``recall``.
    """
    thresholds = thresholds or Thresholds()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    shared = embedder or default_embedder()
    with tempfile.TemporaryDirectory(prefix="agentmem-eval-") as tmp:
        home = Path(workdir) if workdir is not None else Path(tmp)
        if workdir is not None and home.exists() and any(home.iterdir()):
            raise ValidationError(
                "workdir", f"{home} is not empty; the evaluation needs a fresh store"
            )
        with AgentMemory(home, embedder=shared, config=config) as mem:
            total = len(dataset.cases)
            written: list[dict[str, SetupMemory]] = []
            for n, case in enumerate(dataset.cases):
                written.append(write_case(mem, n, case, dataset.distractors))
                if progress is not None:
                    progress("write", n + 1, total)
            # A throwaway tenant warms the embedder, tokenizer and both indexes, so the timed
            # recalls measure a warm process (the p95 threshold is a steady-state figure).
            warm = mem.bind("golden-warmup", "warmup", DEFAULT_AGENT, DEFAULT_SESSION)
            warm.remember("warm-up memory for the evaluation")
            mem.flush()
            warm.recall("warm-up query")
            results: list[CaseResult] = []
            for n, case in enumerate(dataset.cases):
                bound = bind_case(mem, n, case)
                budget = case.token_budget or mem.config.token_budget
                t0 = time.perf_counter()
                result = bound.recall(
                    case.query,
                    top_k=top_k,
                    kinds=case.kinds,
                    memory_types=case.types,
                    scope=case.scope,
                    token_budget=case.token_budget,
                )
                latency = (time.perf_counter() - t0) * 1000.0
                results.append(
                    score_case(case, written[n], result, latency_ms=latency, token_budget=budget)
                )
                if progress is not None:
                    progress("recall", n + 1, total)
    return summarize(
        results,
        dataset=dataset,
        thresholds=thresholds,
        top_k=top_k,
        embedder=getattr(shared, "model_name", type(shared).__name__),
        duration_s=time.perf_counter() - started,
        started_at=started_at,
    )


def bind_case(
    mem: AgentMemory, n: int, case: GoldenCase, *, prefix: str | None = None
) -> BoundMemory:
    """Case ``n``'s querying identity, bound (see :func:`write_case`)."""
    prefix = case_prefix(n) if prefix is None else prefix
    return mem.bind(
        f"{prefix}.{case.tenant_id}", f"{prefix}.{case.user_id}", case.agent_id, case.session_id
    )
