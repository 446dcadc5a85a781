"""What operations take and return: the result types of every surface, at the bottom layer.

The embedded API, the server and both clients return these same classes, so a client needs
this module, :mod:`agentmem.models` and the wire codec, not the layers that compute them
(tiers, maintenance, the server). The modules that produce each type re-export it from
where it used to live (``agentmem.tiers.sessions.CloseResult`` still works).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .models import MemoryItem

#: The first line of the system message that carries a reference summary into a prompt.
SUMMARY_HEADER = (
    "Summary of earlier messages of this conversation (they were compacted out of the "
    "prompt; call recall to look up details before answering):"
)


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """One message handed to an LLM task.

    Attributes:
        role: ``user``, ``assistant``, ``system`` or ``tool``.
        content: The message text.
        id: The message id; extracted memories name it in ``source_ids``.
        speaker: The person who wrote it, when known (a named participant of a chat);
            memories say this name instead of "I".
        time: When it was written; relative dates ("yesterday", "last week") in a
            memory are resolved against it.
    """

    role: str
    content: str
    id: str | None = None
    speaker: str | None = None
    time: datetime | None = None


@dataclass(frozen=True, slots=True)
class ReferenceFact:
    """One fact of a reference summary, with the message it came from."""

    key: str
    value: str
    source_event: str | None = None


@dataclass(frozen=True, slots=True)
class ReferenceSummary:
    """The structured summary of what rolled off a session's window.

    Example:
        >>> ReferenceSummary(summary="User plans a trip.").to_dict()["summary"]
        'User plans a trip.'
    """

    summary: str = ""
    facts: tuple[ReferenceFact, ...] = ()
    referenced_sessions: tuple[str, ...] = ()
    referenced_events: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.summary or self.facts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "facts": [
                {"key": f.key, "value": f.value, "source_event": f.source_event} for f in self.facts
            ],
            "referenced_sessions": list(self.referenced_sessions),
            "referenced_events": list(self.referenced_events),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReferenceSummary:
        return cls(
            summary=str(data.get("summary", "")),
            facts=tuple(
                ReferenceFact(str(f["key"]), str(f["value"]), f.get("source_event"))
                for f in data.get("facts", ())
            ),
            referenced_sessions=tuple(data.get("referenced_sessions", ())),
            referenced_events=tuple(data.get("referenced_events", ())),
        )

    def render(self) -> str:
        """The text of the system message that carries this summary into a prompt."""
        parts = [SUMMARY_HEADER]
        if self.summary:
            parts.append(self.summary)
        if self.facts:
            parts.append("Known facts:")
            parts.extend(f"- {f.key}: {f.value}" for f in self.facts)
        return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class TokenCounts:
    """Tokens (cl100k_base, plus a per-message overhead) of the parts of a working memory."""

    pinned: int
    summary: int
    window: int

    @property
    def total(self) -> int:
        return self.pinned + self.summary + self.window


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """Outcome of one compaction.

    Attributes:
        ok: False when the LLM failed, its delta was malformed, or another compaction won
            the race; the stored summary and window are unchanged then.
        reason: ``manual``, ``budget`` (the 80% trip) or ``window_full``.
        rolled_off: Ids of the messages folded into the reference summary.
        window: Messages left in the window.
        summary: The reference summary after the compaction (the old one if not ok).
        error: What went wrong, when not ok.
    """

    ok: bool
    reason: str
    rolled_off: tuple[str, ...] = ()
    window: int = 0
    summary: ReferenceSummary = ReferenceSummary()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class PromptView:
    """What a prompt of a session holds (:meth:`WorkingMemory.prompt_view`), in order:
    pinned messages, the reference summary (when not empty) and the shown window.

    Attributes:
        pinned: System and pinned messages.
        summary: The reference summary of what rolled off.
        window: The window messages shown, oldest first (never without the latest user
            message).
        left_out: Window messages left out of this view because the prompt was still over
            budget after compaction (the stored window keeps them).
        compaction: The compaction this call ran, if one tripped.
    """

    pinned: tuple[MemoryItem, ...]
    summary: ReferenceSummary
    window: tuple[MemoryItem, ...]
    left_out: int = 0
    compaction: CompactionResult | None = None


@dataclass(frozen=True, slots=True)
class WorkingSnapshot:
    """A session's working memory at one moment (``m.working.snapshot()``, embedded or
    remote).

    Attributes:
        session_id: The session this is the working memory of.
        pinned: Pinned messages (system role or ``metadata["pinned"] is True``), oldest first.
        window: The other messages still in the window, oldest first.
        summary: The reference summary of what rolled off.
        tokens: Token counts of pinned messages, rendered summary and window.
        compactions: Successful compactions so far.
        trips: Budget trips so far (compressed mode once > 0).
        last_error: The last failed compaction's error, cleared by the next success.
        latest_user_id: The memory id of the session's latest user message (a compaction
            keeps it in the window), not a user's id; None when the window holds none.
    """

    session_id: str
    pinned: tuple[MemoryItem, ...]
    window: tuple[MemoryItem, ...]
    summary: ReferenceSummary
    tokens: TokenCounts
    compactions: int = 0
    trips: int = 0
    last_error: str | None = None
    latest_user_id: str | None = None

    @property
    def compressed(self) -> bool:
        """True once a budget trip happened: older content must be reached through recall."""
        return self.trips > 0


@dataclass(frozen=True, slots=True)
class CloseResult:
    """What :func:`close_session` did.

    Attributes:
        session_id: The closed session.
        tier: Its tier afterwards (``mid_term``, or ``long_term`` if it was promoted).
        already_closed: True when the session was closed before and has no new messages
            (nothing was done).
        messages: Messages and tool outputs in the session.
        chunk_ids: Ids of the session's chunk rows.
        summary_ids: Ids of the session's summary rows (empty when the summary was skipped).
        summary_status: ``ok``, ``timeout``, ``failed``, ``skipped`` (timeout 0) or ``empty``
            (no messages).
        summarizer: Name of the LLM that wrote the summary.
        promoted: Sessions promoted to long-term by this call, oldest first.
        error: Why the summary was skipped, if it was.
        elapsed_ms: Wall time of the pipeline.
    """

    session_id: str
    tier: str
    already_closed: bool
    messages: int
    chunk_ids: tuple[str, ...] = ()
    summary_ids: tuple[str, ...] = ()
    summary_status: str = "ok"
    summarizer: str | None = None
    promoted: tuple[str, ...] = ()
    error: str | None = None
    elapsed_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class SessionDetail:
    """A session's full events (``BoundMemory.session_detail``).

    Attributes:
        session_id: The session.
        tier: ``mid_term`` or ``long_term`` when closed, None when never closed.
        closed_at: When it was (last) closed.
        summary: Its session summary, if one was written.
        summary_ids: Ids of the summary rows.
        events: Its messages and tool outputs, oldest first, each with its full content
            (an oversized message's or tool output's full payload, not the indexed copy).
    """

    session_id: str
    tier: str | None
    closed_at: datetime | None
    summary: str | None
    summary_ids: tuple[str, ...] = ()
    events: list[MemoryItem] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class KnowledgeEntry:
    """One live knowledge entry.

    Attributes:
        id: Row id (changes when an upsert by key replaces the entry).
        key: The dedup key, if the entry has one.
        agent_id: The agent that owns (and alone may change) the entry.
    """

    id: str
    key: str | None
    content: str
    agent_id: str
    memory_type: str | None
    metadata: dict[str, Any]
    importance: float | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class UpsertResult:
    """Outcome of :meth:`Knowledge.upsert`.

    Attributes:
        id: Id of the live entry.
        was_new: False when the same entry (same key and content) existed already.
        replaced: Id of the entry this one superseded (same key, other content), if any.
    """

    id: str
    key: str | None
    was_new: bool
    replaced: str | None = None


@dataclass(frozen=True, slots=True)
class StateEntry:
    """One stored state value, and the user and agent it is about (None: the agent's own)."""

    key: str
    value: Any
    updated_at: datetime
    user_id: str | None = None
    about_agent_id: str | None = None


@dataclass(frozen=True)
class Stats:
    """Counts for ``agentmem stats``."""

    live: int
    deleted: int
    superseded: int
    keyword_pending: int
    vector_pending: int
    vector_failed: int
    by_kind: dict[str, int]
    tenants: int
    disk_bytes: dict[str, int]
    #: The embedder recorded for the vectors (model_name, dimensions, origin); None until
    #: the first vectors are written.
    embedder: dict[str, Any] | None = None
    #: The calibration recall scores with: ``source`` (``store``: fitted for this data dir,
    #: ``bundled``: shipped for its model, ``none``: rank-based fallback), the profile's
    #: ``model_name``, ``fitted_on`` and ``fitted_at``.
    calibration: dict[str, Any] | None = None


@dataclass(frozen=True)
class ErasureCheck:
    """What ``doctor`` found of one logged erasure (see :func:`leftovers`)."""

    erasure_id: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    status: str
    completed_at: datetime | None
    #: Rows of the identity still stored, per records table.
    records: dict[str, int] = field(default_factory=dict)
    #: Keyword entries still in the files under the identity's own partitions (live ones of
    #: its tenant, or deleted ones not yet rewritten out of the files).
    keyword_entries: int = 0
    #: Vector collections of the identity's own partitions that still exist.
    collections: list[str] = field(default_factory=list)
    #: Copies of unreadable indexes in the data dir (unreadable, so they may hold anything
    #: of the identity).
    quarantined: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.status == "done"
            and not self.records
            and not self.keyword_entries
            and not self.collections
            and not self.quarantined
        )


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


@dataclass
class ImportCounts:
    """What an import did (``applied`` of the plan's ``planned`` writes; fewer when it was
    interrupted)."""

    lines: int = 0
    planned: int = 0
    applied: int = 0
    interrupted: bool = False
    restored: int = 0
    already_present: int = 0
    messages: int = 0
    messages_new: int = 0
    tool_outputs: int = 0
    documents: int = 0
    document_chunks: int = 0
    memories: int = 0
    memories_new: int = 0
    sessions: int = 0
    agent_state: int = 0
    superseded_skipped: int = 0


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key as the server knows it (never its secret).

    Attributes:
        id: Public key id (shown by ``agentmem keys list``, used by ``keys revoke``).
        tenant_id: The only tenant the key reaches.
        user_id: When set, the key acts for this user only.
        agent_id: When set, the key acts for this agent only.
        admin: The key may also read its tenant's stats and doctor report, export the tenant
            and erase in it.
        revoked_at: When the key was revoked (None while it is live).
        operator: The key may also read the server-wide views (the whole store's stats and
            doctor report, the metrics).
    """

    id: str
    tenant_id: str
    user_id: str | None
    agent_id: str | None
    name: str | None
    admin: bool
    created_at: datetime
    revoked_at: datetime | None = None
    operator: bool = False


__all__ = [
    "SUMMARY_HEADER",
    "ApiKey",
    "ChatTurn",
    "CloseResult",
    "CompactionResult",
    "DoctorReport",
    "ErasureCheck",
    "ImportCounts",
    "KnowledgeEntry",
    "PartitionDrift",
    "PromptView",
    "ReferenceFact",
    "ReferenceSummary",
    "SessionDetail",
    "StateEntry",
    "Stats",
    "TokenCounts",
    "UpsertResult",
    "WorkingSnapshot",
]
