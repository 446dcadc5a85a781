"""Knowledge (the fourth memory tier): explicit, agent-managed entries with an optional dedup key.

Knowledge is not tied to a session: persistent facts, preferences, domain notes, reference
material an agent (or its operator) curates. Access:

=================  =============================================
write (upsert,     the owning agent only (needs ``agent_id`` bound)
delete)
read (get, list,   every identity of the tenant, any agent's entries
recall)
=================  =============================================

Entries are ``kind="memory"`` rows of scope ``knowledge`` in the tenant's ``knowledge``
partition; each carries its agent. They are embedded and keyword-indexed like every row, and
recall finds them (``scope="knowledge"``, ``tiers=("knowledge",)`` or the default ``any``).
Because every identity of the tenant can read them, keep user-private facts out of knowledge
(``remember(scope="user")`` is for those).

**Update by key**: an ``upsert`` with a ``key`` the agent already used supersedes the earlier
entry (it stays in history, ``superseded_by`` set, and leaves recall). Upserting the same
content again is a no-op that returns the existing id. The key is also in
``metadata["knowledge_key"]`` of the stored row (and so of recall hits).

Example:
    >>> kb = mem.bind("acme", agent_id="support").knowledge  # doctest: +SKIP
    >>> kb.upsert("Refunds are processed within 5 business days", key="refund-sla")  # doctest: +SKIP
    >>> kb.get("refund-sla").content  # doctest: +SKIP
    'Refunds are processed within 5 business days'
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, Unpack

from .. import scopes as scope_rules
from .. import validation
from ..config import CHAT_COPY_MAX_BYTES
from ..context import StoreContext
from ..errors import ScopeError
from ..models import MEMORY_TYPES, Identity, MemoryItem, RecallResult
from ..recall.api import recall
from ..recall_options import RecallKwargs, RecallOptions, knowledge_options
from ..results import KnowledgeEntry as KnowledgeEntry  # re-exported: they lived here
from ..results import UpsertResult as UpsertResult
from ..storage.rows import Row
from ..write.commit import commit, retire
from ..write.records import new_record, sha

SCOPE = "knowledge"
KEY_METADATA = "knowledge_key"


def _topic(agent_id: str, key: str) -> str:
    """The topic key of an agent's entry. The agent id's "/" (and "%") are escaped: agent
    "team" with key "support/x" and agent "team/support" with key "x" must not meet."""
    agent = agent_id.replace("%", "%25").replace("/", "%2F")
    return f"knowledge/{agent}/{key}"


class Knowledge:
    """The knowledge base of a bound identity (``m.knowledge``).

    Args:
        memory: The bound memory; writes need its ``agent_id``.

    Example:
        >>> kb = m.knowledge  # doctest: +SKIP
        >>> kb.upsert("Our office is in Porto", key="office").was_new  # doctest: +SKIP
        True
        >>> [e.key for e in kb.list()]  # doctest: +SKIP
        ['office']
    """

    def __init__(self, ctx: StoreContext, identity: Identity) -> None:
        self._ctx = ctx
        self._identity = identity

    def _own_agent(self) -> str:
        scope_rules.home_partition(self._identity, SCOPE)  # raises ScopeError without agent
        assert self._identity.agent_id is not None
        return self._identity.agent_id

    # -- writes --------------------------------------------------------------------------------
    def upsert(
        self,
        content: str,
        key: str | None = None,
        *,
        memory_type: str = "note",
        importance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> UpsertResult:
        """Insert an entry, or replace this agent's entry under ``key``.

        Args:
            content: The knowledge text (up to 16 KiB).
            key: Optional dedup key: a later upsert with the same key supersedes this entry.
            memory_type: fact, preference, decision, note (default), event, instruction, task.
            importance: Optional weight in [0, 1].
            metadata: The caller's metadata (``knowledge_key`` is set by agentmem).
        """
        self._ctx.check_open()
        agent = self._own_agent()
        text = validation.text(content, "content", max_bytes=CHAT_COPY_MAX_BYTES)
        k = validation.identity(key, "key")
        mtype = validation.choice(memory_type, "memory_type", MEMORY_TYPES)
        imp = validation.unit_float(importance, "importance")
        meta = validation.metadata(metadata)
        meta.pop(KEY_METADATA, None)
        if k is not None:
            meta[KEY_METADATA] = k
        i = self._identity
        rec = new_record(
            i,
            kind="memory",
            scope=SCOPE,
            content=text,
            memory_type=mtype,
            metadata=meta,
            importance=imp,
            dedup_key=sha("knowledge", i.tenant_id, agent, k or "", mtype, text.strip()),
            topic_key=_topic(agent, k) if k is not None else None,
            owner=(None, None, agent),
        )
        ((id_, new),) = commit(self._ctx, [rec], "knowledge_upsert")
        replaced = None
        if new and k is not None:
            older = self._ctx.records.supersession.superseded_by(id_)
            replaced = older[0] if older else None
        return UpsertResult(id=id_, key=k, was_new=new, replaced=replaced)

    def delete(self, key_or_id: str) -> bool:
        """Delete this agent's entry with that key (or id); False if there is none.

        Raises:
            ScopeError: the id names another agent's entry (knowledge is written only by its
                own agent).
        """
        self._ctx.check_open()
        agent = self._own_agent()
        ref = validation.identity(key_or_id, "key_or_id", required=True)
        assert ref is not None
        ids = self._ids(agent, ref)
        if not ids:
            row = self._ctx.records.memories.get(ref)
            if row is None or not self._readable(row) or row.item.deleted_at is not None:
                return False
            if row.item.agent_id != agent:
                raise ScopeError(
                    "key_or_id",
                    "knowledge entries can be changed only by their own agent "
                    f"(this one belongs to agent {row.item.agent_id!r})",
                )
            ids = [ref]
        return retire(self._ctx, self._identity.tenant_id, ids) > 0

    # -- reads ---------------------------------------------------------------------------------
    def get(self, key: str, *, agent_id: str | None = None) -> KnowledgeEntry | None:
        """The live entry under ``key`` of ``agent_id`` (default: the bound agent), or None."""
        k = validation.identity(key, "key", required=True)
        assert k is not None
        agent = validation.identity(agent_id, "agent_id") or self._identity.agent_id
        if agent is None:
            raise ScopeError(
                "agent_id", "this memory is bound without an agent: pass agent_id= to read one"
            )
        entries = self._entries(self._ids(agent, k))
        return entries[-1] if entries else None

    def list(
        self, *, agent_id: str | None = None, all_agents: bool = False
    ) -> list[KnowledgeEntry]:
        """Live entries, oldest first: the bound agent's, ``agent_id``'s, or with
        ``all_agents=True`` every agent's of the tenant (an identity without an agent sees
        every agent's by default)."""
        self._ctx.check_open()
        agent = validation.identity(agent_id, "agent_id")
        if agent is None and not all_agents:
            agent = self._identity.agent_id
        ids = self._ctx.records.supersession.current_ids(
            self._identity.tenant_id, scope_rules.KNOWLEDGE_PARTITION, SCOPE, agent_id=agent
        )
        return self._entries(ids)

    def search(
        self, query: str, options: RecallOptions | None = None, **kwargs: Unpack[RecallKwargs]
    ) -> RecallResult:
        """Recall over knowledge only (``m.recall(query, scope="knowledge", ...)``)."""
        return recall(self._ctx, self._identity, query, knowledge_options(options, **kwargs))

    # -- helpers -------------------------------------------------------------------------------
    def _ids(self, agent: str, key: str) -> builtins.list[str]:
        return self._ctx.records.supersession.topic_ids(
            self._identity.tenant_id, scope_rules.KNOWLEDGE_PARTITION, _topic(agent, key), SCOPE
        )

    def _readable(self, row: Row) -> bool:
        return row.item.scope == SCOPE and scope_rules.visible_row(self._identity, row) == SCOPE

    def _entries(self, ids: builtins.list[str]) -> builtins.list[KnowledgeEntry]:
        rows = {
            r.item.id: r for r in self._ctx.records.memories.get_many(self._identity.tenant_id, ids)
        }
        out = []
        for id_ in ids:
            row = rows.get(id_)
            if row is None or not self._readable(row):
                continue
            out.append(_entry(row.item))
        return out


def _entry(item: MemoryItem) -> KnowledgeEntry:
    key = item.metadata.get(KEY_METADATA)
    assert item.agent_id is not None
    return KnowledgeEntry(
        id=item.id,
        key=key if isinstance(key, str) else None,
        content=item.content,
        agent_id=item.agent_id,
        memory_type=item.memory_type,
        metadata=dict(item.metadata),
        importance=item.importance,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )
