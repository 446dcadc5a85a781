"""Explicit memories: ``remember``, ``remember_many``, ``get``, ``get_many`` (``forget`` is in
:mod:`agentmem.derived.forget`: it reaches what was derived from a row).

A memory is a ``kind="memory"`` row of scope user, agent, tenant or session. Writes are
idempotent (the same identity, scope, type and content return the same id), and a topic key
retires the older memory with that key (:func:`~agentmem.write.records.memory_record`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .. import scopes as scope_rules
from .. import validation
from ..context import StoreContext
from ..errors import NotFoundError, ValidationError
from ..models import Identity, MemoryItem, RememberResult
from ..storage.rows import NewRecord
from .commit import commit
from .records import memory_record

_REMEMBER_KEYS = frozenset(
    {"content", "memory_type", "scope", "importance", "topic_key", "metadata"}
)


def remember(
    ctx: StoreContext,
    identity: Identity,
    content: str,
    *,
    memory_type: str = "fact",
    scope: str = "user",
    importance: float | None = None,
    topic_key: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> RememberResult:
    """Store an explicit memory (see ``BoundMemory.remember``)."""
    rec = memory_record(identity, content, memory_type, scope, importance, topic_key, metadata)
    ((id_, new),) = commit(ctx, [rec], "remember")
    return RememberResult(id=id_, was_new=new)


def remember_many(
    ctx: StoreContext, identity: Identity, entries: Iterable[str | Mapping[str, Any]]
) -> list[RememberResult]:
    """Store many memories (strings, or dicts of remember's arguments); every entry is
    validated before anything is written."""
    if isinstance(entries, str | bytes | Mapping):
        raise ValidationError("items", "must be an iterable of strings or dicts")
    records: list[NewRecord] = []
    for n, entry in enumerate(entries):
        try:
            if isinstance(entry, str):
                records.append(memory_record(identity, entry))
            elif isinstance(entry, Mapping):
                unknown = set(entry) - _REMEMBER_KEYS
                if unknown:
                    raise ValidationError("item", f"unknown keys {sorted(unknown)}")
                if "content" not in entry:
                    raise ValidationError("content", "is required")
                records.append(memory_record(identity, **entry))
            else:
                raise ValidationError("item", f"must be a str or dict, got {type(entry).__name__}")
        except ValidationError as exc:
            raise exc.nested(f"items[{n}]") from exc
    return [RememberResult(id=i, was_new=new) for i, new in commit(ctx, records, "remember_many")]


def get(ctx: StoreContext, identity: Identity, memory_id: str) -> MemoryItem:
    """A live record visible to ``identity``, by id."""
    id_ = validation.identity(memory_id, "memory_id", required=True)
    assert id_ is not None
    ctx.check_open()
    row = ctx.records.memories.get(id_)
    if row is None or not scope_rules.readable(identity, row):
        raise NotFoundError(f"no memory {id_!r} is visible here", memory_id=id_)
    return row.item


def get_many(ctx: StoreContext, identity: Identity, memory_ids: Sequence[str]) -> list[MemoryItem]:
    """The live records visible to ``identity`` among ``memory_ids``, in their order; ids of
    none (forgotten, deleted, anonymized, another owner's, never stored) are left out. One
    lookup for many ids: a caller that keeps ids of memories (a LangGraph store's entries)
    learns which are gone without a request per id."""
    if isinstance(memory_ids, str | bytes) or not isinstance(memory_ids, Sequence):
        raise ValidationError("memory_ids", "must be a list of memory ids")
    ids: list[str] = []
    for n, memory_id in enumerate(memory_ids):
        id_ = validation.identity(memory_id, f"memory_ids[{n}]", required=True)
        assert id_ is not None
        ids.append(id_)
    ctx.check_open()
    found = {
        row.item.id: row.item
        for row in ctx.records.memories.get_many(identity.tenant_id, list(dict.fromkeys(ids)))
        if scope_rules.readable(identity, row)
    }
    return [found[i] for i in ids if i in found]
