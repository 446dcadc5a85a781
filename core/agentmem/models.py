"""Value objects returned by the public API.

All are frozen dataclasses. Timestamps are timezone-aware UTC ``datetime`` objects.
Scores are floats in [0, 1]; higher is better.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Literal

Kind = Literal["chat_message", "tool_output", "document_chunk", "memory", "summary"]
MemoryType = Literal["fact", "preference", "decision", "note", "event", "instruction", "task"]
Scope = Literal["session", "history", "user", "agent", "tenant", "knowledge"]
RecallScope = Literal["session", "history", "user", "agent", "tenant", "knowledge", "any"]
Tier = Literal["working", "mid_term", "long_term", "knowledge"]

KINDS: tuple[str, ...] = ("chat_message", "tool_output", "document_chunk", "memory", "summary")
MEMORY_TYPES: tuple[str, ...] = (
    "fact",
    "preference",
    "decision",
    "note",
    "event",
    "instruction",
    "task",
)
SCOPES: tuple[str, ...] = ("session", "history", "user", "agent", "tenant", "knowledge")
RECALL_SCOPES: tuple[str, ...] = (*SCOPES, "any")
#: Memory tiers that ``recall(tiers=...)`` can target; see :mod:`agentmem.tiers.sessions`.
TIERS: tuple[str, ...] = ("working", "mid_term", "long_term", "knowledge")
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
#: Kinds of a session's transcript rows (messages and tool results).
MESSAGE_KINDS: tuple[str, ...] = ("chat_message", "tool_output")
#: Scopes an explicit memory can be written to.
REMEMBER_SCOPES: tuple[str, ...] = ("user", "agent", "tenant", "session")
#: Memory types of which a newer memory with the same topic key retires the older one; the
#: others (events, tasks) accumulate.
SUPERSEDING_TYPES: tuple[str, ...] = ("fact", "preference", "decision", "instruction", "note")
#: Values of the stored ``tier`` column of session-derived rows: mid-term chunks and summaries,
#: a long-term session's summary (embedded) and its detail chunks (keyword-only).
TIER_MID = "mid_term"
TIER_LONG = "long_term"
TIER_LONG_SUMMARY = "long_term_summary"
TIER_LONG_DETAIL = "long_term_detail"


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a bound memory acts for. Only ``tenant_id`` is required.

    Example:
        >>> Identity(tenant_id="acme", user_id="u1").user_id
        'u1'
    """

    tenant_id: str
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One stored record, as the records store holds it.

    Example:
        >>> item = m.add_message("user", "I prefer tea")  # doctest: +SKIP
        >>> item.kind
        'chat_message'

    Attributes:
        user_id: The user it belongs to, or who wrote it; None to a key pinned to another
            user (:func:`agentmem.scopes.as_seen_by`), and ``agent_id`` likewise.
        access_count: Recalls that returned it (flushed in batches); 0, with
            ``last_accessed`` None, when a key pinned to a user or agent reads a row others
            recall too (:func:`agentmem.scopes.recalled_only_by`): their recalls move it.
    """

    id: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    kind: str
    memory_type: str | None
    scope: str
    content: str
    content_hash: str
    source_ref: str | None
    metadata: dict[str, Any]
    importance: float | None
    event_time: datetime
    created_at: datetime
    updated_at: datetime
    role: str | None = None
    access_count: int = 0
    last_accessed: datetime | None = None
    superseded_by: str | None = None
    deleted_at: datetime | None = None
    anonymized_at: datetime | None = None
    keyword_indexed: bool = False
    embedded: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the item (timestamps as ISO strings)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.isoformat() if isinstance(value, datetime) else value
        return out


@dataclass(frozen=True, slots=True)
class RememberResult:
    """Outcome of ``remember``: the memory id, and whether this call created it.

    Example:
        >>> r = m.remember("I prefer tea")  # doctest: +SKIP
        >>> r.was_new
        True
    """

    id: str
    was_new: bool


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One recalled memory.

    Attributes:
        score: Calibrated relevance in [0, 1] (higher is better); comparable across queries,
            so a fixed ``min_score`` separates related from unrelated memories.
        metadata: The caller's metadata as stored.
    """

    id: str
    kind: str
    memory_type: str | None
    scope: str
    content: str
    score: float
    source_ref: str | None
    event_time: datetime
    session_id: str | None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What ``recall`` returns.

    Attributes:
        items: Hits, best first, at most ``top_k``, within the token budget.
        total: ``len(items)``.
        degraded: True while some rows of the searched scopes are not yet embedded (the
            vector half may be incomplete; the keyword half is complete once indexed).
        rerank_used: True when a reranker ordered the items.
        truncated: True when the token budget dropped items or cut the last one.
        token_count: Tokens (cl100k_base) in the returned contents.
        best_score: When nothing was returned, the score of the best candidate found (on
            ``min_score``'s scale: calibrated, or the reranker's when it ordered them), to
            tell "nothing near" from "something just below the threshold". It may be at or
            above ``min_score`` when another rule cut that candidate (a code the query names
            that no candidate holds, a per-kind floor). None when items were returned, when
            nothing was found, or without a calibration profile (scores are then fused ranks,
            not on that scale).
    """

    items: list[RecallHit]
    total: int
    degraded: bool = False
    rerank_used: bool = False
    truncated: bool = False
    token_count: int = 0
    best_score: float | None = None

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


# -- derived memories -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class IngestError:
    """One problem met by ``ingest``; nothing is silently dropped.

    Example:
        >>> for err in m.ingest(messages).errors:  # doctest: +SKIP
        ...     print(err.stage, err.message, err.raw)

    Attributes:
        stage: ``extract`` (the LLM failed or replied malformed), ``validate`` (an extracted
            item was unusable) or ``judge`` (the supersession judge failed; fail-open).
        message: What went wrong (no content beyond the model's own reply in ``raw``).
        source_ids: Ids of the messages (or memory) concerned.
        raw: The model's raw reply, kept for inspection, when there was one.
    """

    stage: str
    message: str
    source_ids: tuple[str, ...] = ()
    raw: str | None = None


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What ``ingest`` did.

    Example:
        >>> r = m.ingest([{"role": "user", "content": "I live in Berlin"}])  # doctest: +SKIP
        >>> r.memories_created, r.ok
        (1, True)

    Attributes:
        session_id: The session the messages were stored in (derived when none was bound).
        messages_stored: Messages in the batch, each stored or already present.
        messages_new: Messages that were not stored before.
        memories_created: New derived memories.
        memories_duplicate: Extracted memories already stored (batch or store).
        memories_superseded: Older memories retired by the new ones (topic key or judge).
        message_ids: The content-addressed ids of the batch's messages, in order.
        memory_ids: Ids of the created memories.
        errors: Extraction, validation and judge problems (see :class:`IngestError`).
        extractor: Name of the LLM (or heuristic) that extracted the memories.
    """

    session_id: str
    messages_stored: int
    messages_new: int
    memories_created: int
    memories_duplicate: int
    memories_superseded: int
    message_ids: tuple[str, ...] = ()
    memory_ids: tuple[str, ...] = ()
    errors: tuple[IngestError, ...] = ()
    extractor: str = ""

    @property
    def ok(self) -> bool:
        """True when extraction, validation and the judge met no problem."""
        return not self.errors


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """A grounded answer.

    Example:
        >>> m.answer("where do I live?").text  # doctest: +SKIP
        'I live in Lisbon (I moved to Lisbon last month)'

    Attributes:
        text: The answer; empty when nothing relevant was recalled.
        used_ids: Ids of the memories the answer is grounded in.
        sources: The recalled hits that were offered to the answerer.
        answered_by: Name of the LLM (or heuristic) that wrote the answer.
    """

    text: str
    used_ids: tuple[str, ...] = ()
    sources: tuple[RecallHit, ...] = ()
    answered_by: str = ""


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """Outcome of a supersession judge pass.

    Example:
        >>> mem.judge_pending().superseded  # doctest: +SKIP
        (('old-id', 'new-id'),)

    Attributes:
        judged: Memories processed (``judged_at`` set, including fail-open ones).
        superseded: (old id, new id) pairs retired by the judge.
        failed: Memories whose judge call failed (nothing retired for them).
    """

    judged: int = 0
    superseded: tuple[tuple[str, str], ...] = ()
    failed: int = 0


@dataclass(frozen=True, slots=True)
class RetentionResult:
    """Outcome of a retention (anonymization) run.

    Example:
        >>> mem.retention(dry_run=True).ids  # doctest: +SKIP
        ('id-of-a-row-deleted-40-days-ago',)

    Attributes:
        dry_run: True when nothing was changed.
        soft_deleted: Rows soft-deleted longer than the soft TTL (anonymized, or would be).
        superseded: Rows superseded longer than the supersession TTL (anonymized, or would be).
        ids: Ids of those rows.
        scrubbed: Anonymized rows whose partition (owner) label was cleared after the indexer
            removed their index entries.
    """

    dry_run: bool
    soft_deleted: int = 0
    superseded: int = 0
    ids: tuple[str, ...] = ()
    scrubbed: int = 0

    @property
    def anonymized(self) -> int:
        """Rows anonymized by this run (0 in a dry run)."""
        return 0 if self.dry_run else self.soft_deleted + self.superseded


@dataclass(frozen=True, slots=True)
class ErasureReceipt:
    """What ``AgentMemory.erase`` removed, per store.

    Example:
        >>> receipt = mem.erase(tenant_id="acme", user_id="u1")  # doctest: +SKIP
        >>> receipt.records["memories"], receipt.keyword_entries, receipt.vectors  # doctest: +SKIP
        (42, 40, 31)

    Attributes:
        erasure_id: The id of the erasure in the data dir's erasure log.
        tenant_id: The erased tenant (or the tenant of the erased user/agent).
        user_id: The erased user, if one was named.
        agent_id: The erased agent, if one was named.
        records: Rows deleted from each table of the records store (``memories``,
            ``payloads``, ``memory_sources``, ``ingest_log``, ``audit_log``, ``sessions``,
            ``working_state``, ``agent_state``, ``partitions``, and any other table that
            holds rows per identity); tables with nothing to delete are left out.
        keyword_entries: Entries of the erased rows removed from the keyword index files
            (an entry deleted earlier but still in the files counts too).
        vectors: Vectors removed from the vector index.
        collections_dropped: Vector collections dropped (partitions left without rows).
        collections_rebuilt: Vector collections written anew without the erased vectors
            (partitions the identity shared with others).
        sessions_rebuilt: Closed sessions of others whose chunks and summary were written
            again without the erased messages.
        compacted: The stores whose files were rewritten so that no deleted byte stays:
            ``records`` (SQLite rewritten, WAL emptied), ``keywords`` (every segment
            rewritten), ``vectors`` (the embedded Chroma store's SQLite rewritten and files of
            dropped collections deleted; not with a Chroma server), ``quarantine`` (copies of
            unreadable indexes an earlier version kept in the data dir, deleted).
        resumed: True when this completed an erasure interrupted earlier.
    """

    erasure_id: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    records: dict[str, int]
    keyword_entries: int
    vectors: int
    collections_dropped: int
    collections_rebuilt: int
    sessions_rebuilt: int
    compacted: tuple[str, ...]
    resumed: bool
    started_at: datetime
    completed_at: datetime

    @property
    def rows(self) -> int:
        """Rows deleted from the records store, all tables together."""
        return sum(self.records.values())


# -- why recall returned what it did ----------------------------------------------------------
#: Why a candidate was not returned (:attr:`ExplainedCandidate.cut`), in the order recall cuts.
CUT_REASONS: dict[str, str] = {
    "rerank_depth": "below the head the reranker reorders (only that head is returned)",
    "unknown_code": "the query gives a code (a ticket, an order, a commit: OPS-4478) that no "
    "candidate says: nothing stored is that thing",
    "min_score": "its score is below min_score and its kind's floor (a share of the best "
    "score), or the best candidate's is below min_score (uncalibrated: no candidate covers "
    "min_score of the query's keywords)",
    "score_gap": "a self-contained item scoring more than the score gap below the best one",
    "top_k": "past top_k",
    "token_budget": "no room left in the token budget",
}


@dataclass(frozen=True, slots=True)
class FeatureTerm:
    """One feature of a candidate in a linear model of the ranking: its value, its weight in
    the model, and what it adds to the model's sum (``weight * value``).

    Example:
        >>> FeatureTerm("cos", 0.5, 4.0).contribution
        2.0
    """

    name: str
    value: float
    weight: float

    @property
    def contribution(self) -> float:
        return self.weight * self.value


@dataclass(frozen=True, slots=True)
class ExplainedCandidate:
    """One candidate of an explained recall: where each retriever ranked it, how it was
    scored, and whether (or why not) it was returned.

    Example:
        >>> c = explanation.candidates[0]  # doctest: +SKIP
        >>> c.keyword_rank, c.vector_rank, c.calibrated_score, c.cut  # doctest: +SKIP
        (1, 2, 0.91, None)

    Attributes:
        keyword_rank: Its rank in its scope's keyword (BM25) list; None when the keyword
            search did not find it.
        bm25: Its BM25 score there.
        vector_rank: Its rank in its scope's vector list; None when the vector search did not
            find it.
        cosine: Its cosine similarity to the query there, as the vector index returned it
            (the ``cos`` feature may differ: 0 for a row naming another identifier).
        fused: Its weighted reciprocal-rank-fusion value.
        fused_rank: Its rank by ``fused`` among the candidates (1 is best).
        position: Its place in the order recall considered the candidates (the ordering
            model's, or the reranker's when one was used).
        calibration: Each feature of the calibration model with its weight and contribution;
            ``calibrated_score`` is the logistic of ``calibration_bias`` plus their sum
            (empty when uncalibrated: the score is then the normalised fused rank).
        ordering: Each feature of the ordering model (only the order it gives matters);
            ``ordering_key`` is the sum of their contributions (empty when uncalibrated:
            the fused rank orders).
        rerank_score: The reranker's score, when a reranker ordered the candidates.
        score: The score recall returned it with (made non-increasing down the list); None
            when it was cut.
        cut: Why it was not returned (a key of :data:`CUT_REASONS`); None when it was.
        truncated: Its content was cut to fit the token budget.
    """

    id: str
    kind: str
    memory_type: str | None
    scope: str
    content: str
    session_id: str | None
    event_time: datetime
    keyword_rank: int | None
    bm25: float | None
    vector_rank: int | None
    cosine: float | None
    fused: float
    fused_rank: int
    position: int
    calibration: tuple[FeatureTerm, ...]
    calibration_bias: float
    calibrated_score: float
    ordering: tuple[FeatureTerm, ...]
    ordering_key: float
    rerank_score: float | None = None
    score: float | None = None
    cut: str | None = None
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class RecallExplanation:
    """Why a recall returned what it did (``recall_explain``): the same recall, with every
    candidate's evidence and what cut the others, and what each retriever alone returns.

    Example:
        >>> why = recall_explain(ctx, identity, "where does Alice live?")  # doctest: +SKIP
        >>> {c.id for c in why.candidates if c.cut is None} == {h.id for h in why.result}  # doctest: +SKIP
        True

    Attributes:
        result: What ``recall`` returns for the same query and options.
        calibrated: Whether the embedder has a calibration profile (the scores are
            calibrated probabilities); without one they are normalised fused ranks.
        candidates: Every candidate the isolation gate admitted, in the order recall
            considered them (``result`` may move the first one to reach ``min_score``
            ahead of those a floor kept).
        gate_refused: Rows the indexes offered that the isolation gate refused (another
            owner's, superseded, outside the asked scopes, tiers or filters).
        min_score: The ``min_score`` applied.
        score_gap: The score gap applied (None: no gap cut, e.g. after a reranker).
        chat_floor: A chat message scoring at least this share of the best score was kept
            below ``min_score`` (None: no such floor).
        item_floor: The same for a self-contained item.
        named_ordering: The candidates were ordered by the ordering model of queries that
            name a speaker or a name a candidate carries (``ordering`` holds its weights).
        top_k: The ``top_k`` applied.
        token_budget: The token budget applied.
        keyword_only: What recall returns with the keyword retriever alone.
        vector_only: What recall returns with the vector retriever alone.
    """

    query: str
    result: RecallResult
    calibrated: bool
    candidates: tuple[ExplainedCandidate, ...]
    gate_refused: int
    min_score: float
    score_gap: float | None
    chat_floor: float | None
    item_floor: float | None
    named_ordering: bool
    top_k: int
    token_budget: int
    keyword_only: RecallResult
    vector_only: RecallResult

    @property
    def cut_counts(self) -> dict[str, int]:
        """How many candidates each reason of :data:`CUT_REASONS` cut (reasons that cut
        none are left out)."""
        out: dict[str, int] = {}
        for c in self.candidates:
            if c.cut is not None:
                out[c.cut] = out.get(c.cut, 0) + 1
        return out
