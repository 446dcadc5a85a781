"""``forget``: remove a record's content from every store at once, and what was made from it.

Forgetting a row (``BoundMemory.forget``, the ``delete_memory`` tool):

1. **The row becomes a tombstone** (ids, kind, scope, tier and times only; see
   :meth:`~agentmem.storage.retention.RetentionTable.tombstone`): content, metadata and keys are
   cleared and its full-text payload (a tool output, a long message) is deleted, in one
   transaction. Its keyword entry and vector are removed before ``forget`` returns.
2. **What was derived from it goes too** (the source links of
   :mod:`agentmem.storage.sources`): every extracted memory that names it among its source
   messages is forgotten (its text may carry the forgotten message's words, and a memory
   cannot be split); the session chunks that hold it and every summary of its session are
   forgotten, then the closed session's chunks and summary are written again from the
   messages it still has.
3. **The messages after it** carry it as keyword (and vector) context: their index entries
   are written again without it, also before ``forget`` returns.
4. **Working memory**: if it had rolled off into its session's reference summary, the
   summary is folded again from the remaining rolled-off messages (left empty if the LLM
   fails).

Nothing of it is returned afterwards by ``recall``, ``get``, ``messages``, ``session_detail``,
``read_tool_output`` or the working-memory context. The tombstone stays for audit (and
keeps a re-ingested copy of the same message from being stored again); erasing its owner
(:mod:`agentmem.maintenance.erase`) removes it too. Soft deletion (``clear_session``,
``Knowledge.delete``, supersession) keeps content until retention anonymizes it;
``forget`` is the irreversible delete.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from .. import scopes as scope_rules
from .. import validation
from ..context import StoreContext
from ..models import MESSAGE_KINDS, Identity
from ..storage.sources import RowRef
from ..telemetry import tracing
from ..telemetry.tracing import short_hash
from ..tiers.sessions import refresh_session, session_lock
from ..tiers.working import rebuild_reference

log = logging.getLogger("agentmem.derived.forget")


@dataclass
class Cascade:
    """What forgetting some rows reaches (see the module docstring)."""

    #: Rows to make tombstones, the roots first.
    ids: list[str] = field(default_factory=list)
    #: Closed sessions (conversation partition, session) whose chunks and summary are
    #: written again.
    sessions: set[tuple[str, str]] = field(default_factory=set)
    #: Conversations (partition, session) of forgotten messages: their working memory, and
    #: the session lock held meanwhile.
    conversations: set[tuple[str, str]] = field(default_factory=set)
    #: (partition, session, seq) of each forgotten message.
    messages: list[tuple[str, str, int]] = field(default_factory=list)


def forget(ctx: StoreContext, identity: Identity, memory_id: str) -> bool:
    """Forget a record visible to ``identity`` and what was derived from it; False if
    there is none (or it was forgotten already)."""
    id_ = validation.identity(memory_id, "memory_id", required=True)
    assert id_ is not None
    ctx.check_open()
    row = ctx.records.memories.get(id_)
    if row is None or row.item.tenant_id != identity.tenant_id:
        return False
    if scope_rules.visible_row(identity, row) is None or row.item.anonymized_at is not None:
        return False
    ref = RowRef(id_, row.item.kind, row.tier, row.partition, row.item.session_id)
    done = forget_rows(ctx, identity.tenant_id, [ref], cause=id_)
    return id_ in done


def plan(ctx: StoreContext, tenant_id: str, roots: Sequence[RowRef]) -> Cascade:
    """What forgetting ``roots`` (rows of ``tenant_id``) reaches."""
    out = Cascade()
    seen: set[str] = set()
    seqs = ctx.records.memories.seqs([r.id for r in roots])

    def add(id_: str) -> bool:
        if id_ in seen:
            return False
        seen.add(id_)
        out.ids.append(id_)
        return True

    sources: list[str] = []
    for row in roots:
        add(row.id)
        sources.append(row.id)
        if row.kind in MESSAGE_KINDS and row.tier is None and row.session_id is not None:
            out.conversations.add((row.partition, row.session_id))
            out.messages.append((row.partition, row.session_id, seqs.get(row.id, 0)))
    while sources:
        derived = ctx.records.sources.derived_from(tenant_id, sources)
        sources = []
        for d in derived:
            if not add(d.id):
                continue
            sources.append(d.id)
            if d.tier is None or d.session_id is None:
                continue  # an extracted memory
            # a chunk or summary: every summary of its session goes (a summary's text may
            # carry any of its messages, whatever its links say), and the session is rebuilt
            conversation = d.partition.removeprefix(scope_rules.CHUNK_PREFIX)
            out.sessions.add((conversation, d.session_id))
            for summary in ctx.records.conversations.derived_ids(
                tenant_id, conversation, d.session_id, kind="summary", live=False
            ):
                add(summary)
    return out


def forget_rows(
    ctx: StoreContext, tenant_id: str, roots: Sequence[RowRef], *, cause: str | None = None
) -> list[str]:
    """Forget ``roots`` and what they reach (:func:`plan`); returns the ids forgotten."""
    attributes: tracing.Attributes = {
        "agentmem.tenant_hash": short_hash(tenant_id),
        "agentmem.forget.roots": len(roots),
    }
    with tracing.span("agentmem.forget", attributes) as span:
        done = _forget_rows(ctx, tenant_id, roots, cause)
        if span is not None:
            span.set_attribute("agentmem.forget.rows", len(done))
    return done


def _forget_rows(
    ctx: StoreContext, tenant_id: str, roots: Sequence[RowRef], cause: str | None
) -> list[str]:
    cascade = plan(ctx, tenant_id, roots)
    # the indexer paused: a keyword pass that read a follower's context before the tombstone
    # would write the forgotten text into its entry and then clear the requeue below
    with ctx.indexer.paused(), _locked(ctx, tenant_id, cascade.conversations | cascade.sessions):
        done = ctx.records.retention.tombstone(
            tenant_id, cascade.ids, cause=cause, conversations=sorted(cascade.conversations)
        )
        after = followers(ctx, tenant_id, cascade.messages)
        if after:
            ctx.records.index.requeue(after, vectors=ctx.settings.memory.vector_context > 0)
        ctx.indexer.sync([*done, *after])
        for partition, session_id in sorted(cascade.sessions):
            refresh_session(ctx, tenant_id, partition, session_id)
    for partition, session_id in sorted(rolled_off(ctx, tenant_id, cascade.messages)):
        rebuild_reference(ctx, tenant_id, partition, session_id)
    if done:
        ctx.indexer.notify()  # the rebuilt chunks and summaries wait for their vectors
        log.info(json.dumps({"event": "forget", "rows": len(done)}))
    return done


@contextmanager
def _locked(ctx: StoreContext, tenant_id: str, sessions: set[tuple[str, str]]) -> Iterator[None]:
    """Hold the close-pipeline lock of each session (in one order: no deadlock between
    two forgets), so no close of them runs on messages read before they were forgotten."""
    with ExitStack() as stack:
        for partition, session_id in sorted(sessions):
            stack.enter_context(session_lock(ctx, tenant_id, partition, session_id))
        yield


def followers(
    ctx: StoreContext, tenant_id: str, messages: Sequence[tuple[str, str, int]]
) -> list[str]:
    """Live messages whose index text carries a forgotten one as context."""
    cfg = ctx.settings.memory
    n = max(cfg.keyword_context, cfg.vector_context)
    if n <= 0:
        return []
    out: dict[str, None] = {}
    for partition, session_id, seq in messages:
        for id_ in ctx.records.conversations.following_messages(
            tenant_id, partition, session_id, seq, n
        ):
            out.setdefault(id_, None)
    return list(out)


def rolled_off(
    ctx: StoreContext, tenant_id: str, messages: Sequence[tuple[str, str, int]]
) -> set[tuple[str, str]]:
    """Conversations whose reference summary may quote a forgotten message (it had rolled
    off the window)."""
    out: set[tuple[str, str]] = set()
    for partition, session_id, seq in messages:
        state = ctx.records.working.load(tenant_id, partition, session_id)
        if state is not None and seq <= state.boundary:
            out.add((partition, session_id))
    return out
