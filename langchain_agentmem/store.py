"""``AgentMemStore``: a LangGraph ``BaseStore`` backed by agentmem, with hybrid search.

How LangGraph's namespaces map onto agentmem
============================================

* **Tenant** is fixed when the store is built (``tenant_id=``); no namespace can reach
  another tenant.
* **User / agent**: with ``user_position=i`` the namespace label at index ``i`` is a user id
  (LangMem's ``("memories", "{user_id}")`` is ``user_position=1``), and each item in such a
  namespace is a *user-scope* memory of that user: that user's ``recall`` (tool, retriever)
  finds it, no other user's does. ``agent_position`` works the same way for agent ids
  (agent scope). Items in namespaces too short to hold the position, or in a store built
  with neither, name no owner: they stay in the store's own space (agent scope of its
  internal agent, below), found by the store's search and by no user's or agent's recall.
  ``tenant_wide=True`` asks for the wider alternative: such items become *tenant-scope*
  memories, which every user's and agent's ``recall`` of the tenant sees. Namespace labels
  are never used for anything else; the rest of the path is an organising path inside that
  owner's space.
* **Items** are explicit memories (kind ``memory``, type ``memory_type``, default ``note``)
  whose content is a text rendering of the value's indexed fields (``index={"fields":
  [...]}``, JSON paths as in ``InMemoryStore``; default the whole value). The memory's
  metadata holds the store id, namespace and key, so recall can be narrowed to a
  namespace prefix. The memory's ``topic_key`` is derived from (store, namespace, key), so
  a put supersedes the previous version of that key in the core.
* **Values** (any JSON object, up to 64 KiB encoded) and timestamps are kept in the agent
  state of an internal agent id (``langgraph-store:<store_id>``) of the tenant, keyed by a
  short hash of each namespace label (the first 20) followed by a hash of (namespace, key):
  the entries of a namespace prefix are one range of keys, which ``state.list(prefix=...)``
  reads alone, so a search or listing in a namespace costs what that namespace holds, not
  the whole store. That entry is the system of record for ``get``, listing and filtering:
  the core has no lookup by topic key and no listing by metadata. An entry of a namespace
  that names a user or an agent is tagged with them, so erasing that user or agent
  (``AgentMemory.erase(user_id=...)``, ``erase(agent_id=...)``) deletes the value along with
  the memory. Entries an earlier version wrote (keyed by a hash of (namespace, key) alone,
  perhaps untagged) are moved and tagged once per data, at the first operation of a store.
* **Forgetting an item's memory forgets the item.** When the memory behind an item is
  forgotten outside the store (``forget`` of the memory API, the ``delete_memory`` tool,
  ``agentmem forget``, retention anonymizing it after the supersession judge retired it),
  the item is gone: ``get``, ``search`` and ``list_namespaces`` look up the memories of the
  entries they would return (one ``get_many`` per owner, only as far as the page they
  return) and delete each entry whose memory is gone, so the value leaves the records at the
  first read that meets it. A memory merely retired (superseded) keeps its item until
  retention anonymizes it.

Search with ``query`` runs the core's hybrid recall (keyword + vector, calibrated scores in
[0, 1]) per owner in the namespace prefix and merges by score; items that the recall did
not rank (not indexed, ``index=False``, or beyond the core's top 20) follow without a
score, as ``InMemoryStore`` does for items without embeddings. ``filter`` matches value
fields (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, nested objects).

The core indexes in the background: an item is returned by ``get``/``search`` without a
query at once, and by a query search once indexed (``wait_for_index=True`` makes each put
wait for that; ``AgentMemory.flush()`` waits for everything pending).

Time to live
============
LangGraph's TTL contract, as ``PostgresStore`` keeps it: ``put(..., ttl=minutes)`` (default
``ttl={"default_ttl": ...}`` of the store), a read (``get``, ``search``) moves the expiry of
what it returns ``ttl`` minutes ahead again unless ``refresh_ttl=False`` (default
``refresh_on_read``, True), and ``sweep_ttl()`` / ``start_ttl_sweeper()`` (every
``sweep_interval_minutes``, default 5) delete what expired. The expiry time is kept in the
item's entry (in the records store), so it holds across a reopen and over a remote memory
(``agentmem.connect``). An expired item's memory is forgotten as ``forget`` does, so no recall
returns it after the sweep.

One difference, by default: an expired item is never returned or listed, even before a
sweep (``omit_expired``, which LangGraph's stores leave off by default), and a read that meets
one deletes it and forgets its memory at once. ``ttl={"omit_expired": False}`` gives
LangGraph's default: expired items stay visible until swept.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    validate_op_namespace,
)

from agentmem import BoundMemoryProtocol, MemoryProtocol, RecallHit, ValidationError, validation
from agentmem.models import MEMORY_TYPES
from agentmem.tools.memory_shape import check_store, store_tenant

#: Entry keys: ``ns:`` and a short hash of each namespace label (the first
#: ``_KEYED_LABELS``), then ``#`` and a hash of (namespace, key). The entries of a namespace
#: prefix are thus one range of keys, which ``state.list(prefix=...)`` reads alone.
_ENTRY_PREFIX = "ns:"
_LABEL_HASH_CHARS = 8
_KEYED_LABELS = 20  # keeps a key within the core's 256 characters
#: The keys an earlier agentmem wrote (a hash of (namespace, key) only), moved at first use.
_OLD_ENTRY_PREFIX = "item:"
#: The registry entry saying the store's entries are keyed as above (and tagged).
_LAYOUT_KEY = "store-layout"
_LAYOUT = 2
_SEARCH_TEXT_MAX_BYTES = 15 * 1024  # the core caps a memory at 16 KiB
_NO_BUDGET = 1_000_000_000
_RECALL_MAX = 20
_STATE_MAX_BYTES = 64 * 1024  # the core's limit on an agent-state value
#: The sweeper's interval when neither the call nor the TTL config sets one (PostgresStore's).
DEFAULT_SWEEP_MINUTES = 5.0
_TTL_KEYS = frozenset({"refresh_on_read", "default_ttl", "sweep_interval_minutes", "omit_expired"})

log = logging.getLogger("langchain_agentmem.store")


@dataclass(frozen=True)
class _Owner:
    """The agentmem identity an item of a namespace belongs to."""

    user_id: str | None
    agent_id: str | None

    @property
    def scope(self) -> str:
        if self.user_id is not None:
            return "user"
        return "agent" if self.agent_id is not None else "tenant"


@dataclass(frozen=True)
class _Entry:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    memory_id: str | None
    #: Minutes of life after each write or refreshing read (None: the item never expires).
    ttl_minutes: float | None = None
    expires_at: datetime | None = None
    #: The identity the memory was written under, which can see it (None: an entry an
    #: earlier agentmem wrote; its namespace's owner now is taken).
    owner: _Owner | None = None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def item(self) -> Item:
        return Item(
            value=self.value,
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def search_item(self, score: float | None) -> SearchItem:
        return SearchItem(
            namespace=self.namespace,
            key=self.key,
            value=self.value,
            created_at=self.created_at,
            updated_at=self.updated_at,
            score=score,
        )

    def encode(self) -> dict[str, Any]:
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "memory_id": self.memory_id,
            "ttl_minutes": self.ttl_minutes,
            "expires_at": None if self.expires_at is None else self.expires_at.isoformat(),
            "owner": None if self.owner is None else [self.owner.user_id, self.owner.agent_id],
        }

    @classmethod
    def decode(cls, raw: Mapping[str, Any]) -> _Entry:
        expires = raw.get("expires_at")
        owner = raw.get("owner")
        return cls(
            namespace=tuple(raw["namespace"]),
            key=raw["key"],
            value=raw["value"],
            created_at=datetime.fromisoformat(raw["created_at"]),
            updated_at=datetime.fromisoformat(raw["updated_at"]),
            memory_id=raw.get("memory_id"),
            ttl_minutes=raw.get("ttl_minutes"),
            expires_at=None if expires is None else datetime.fromisoformat(expires),
            owner=None if owner is None else _Owner(user_id=owner[0], agent_id=owner[1]),
        )


def _non_string_key(value: Any, path: str) -> str | None:
    """Where ``value`` has a dict key that is not a string, or None."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if not isinstance(key, str):
                return f"{path}[{key!r}]"
            if (found := _non_string_key(inner, f"{path}.{key}")) is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, inner in enumerate(value):
            if (found := _non_string_key(inner, f"{path}[{i}]")) is not None:
                return found
    return None


def _check_encodable(entry: _Entry) -> None:
    """Raise ValidationError unless agent state can hold ``entry`` (JSON, at most 64 KiB)."""
    if (where := _non_string_key(entry.value, "value")) is not None:
        # JSON would turn the key into a string: the value read back would not be the one put
        raise ValidationError(where, "is a dict key that is not a string")
    try:
        encoded = json.dumps({"value": entry.encode()}, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError("value", f"is not JSON-serialisable: {exc}") from exc
    size = len(encoded.encode("utf-8"))
    if size > _STATE_MAX_BYTES:
        raise ValidationError(
            "value", f"is {size} bytes as stored JSON; the limit is {_STATE_MAX_BYTES}"
        )


def _render(value: Any) -> str:
    """A readable rendering of a whole value (``$``): one ``field: text`` line per field."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        lines = []
        for k, v in value.items():
            text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
            lines.append(f"{k}: {text}")
        return "\n".join(lines)
    return json.dumps(value, ensure_ascii=False)


def _cap_utf8(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")


def _compare(item_value: Any, filter_value: Any) -> bool:
    """LangGraph's filter semantics: exact match, ``$``-operators, nested objects."""
    if isinstance(filter_value, Mapping):
        if any(str(k).startswith("$") for k in filter_value):
            return all(_operator(item_value, op, arg) for op, arg in filter_value.items())
        if not isinstance(item_value, Mapping):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, list | tuple):
        return (
            isinstance(item_value, list | tuple)
            and len(item_value) == len(filter_value)
            and all(_compare(a, b) for a, b in zip(item_value, filter_value, strict=True))
        )
    return bool(item_value == filter_value)


def _operator(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(value), float(arg)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise ValidationError("filter", f"unsupported operator {op!r}")


def _matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    if not path:
        return True
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


def _minutes(value: Any, field: str) -> float | None:
    """A TTL in minutes (a positive finite number), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(field, f"must be a number of minutes or None; got {value!r}")
    if value <= 0:
        raise ValidationError(field, f"must be more than 0 minutes; got {value!r}")
    return float(value)


def _ttl_config(ttl: Mapping[str, Any] | None) -> TTLConfig | None:
    """LangGraph's ``TTLConfig``, checked: known keys, positive minutes, bool flags."""
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise ValidationError("ttl", f"must be a TTLConfig dict; got {type(ttl).__name__}")
    unknown = sorted(set(ttl) - _TTL_KEYS)
    if unknown:
        raise ValidationError("ttl", f"unknown keys {unknown}; known: {sorted(_TTL_KEYS)}")
    for flag in ("refresh_on_read", "omit_expired"):
        if flag in ttl and not isinstance(ttl[flag], bool):
            raise ValidationError(f"ttl.{flag}", f"must be a bool; got {ttl[flag]!r}")
    for field in ("default_ttl", "sweep_interval_minutes"):
        _minutes(ttl.get(field), f"ttl.{field}")
    return cast(TTLConfig, dict(ttl))


def _prefix_key(namespace: Sequence[str]) -> str:
    """The start every entry key of ``namespace`` and of the namespaces under it shares."""
    return _ENTRY_PREFIX + "".join(
        hashlib.sha256(label.encode("utf-8")).hexdigest()[:_LABEL_HASH_CHARS] + "/"
        for label in namespace[:_KEYED_LABELS]
    )


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _check_path(path: Any, field: str) -> None:
    """A namespace (or prefix, or match path) is a tuple or list of strings. A string would
    pass LangGraph's own checks as the tuple of its characters: ``put("memories", ...)``
    would store under ``("m", "e", ...)``, owned by user ``"e"`` with ``user_position=1``."""
    if not isinstance(path, tuple | list):
        raise ValidationError(
            field, f"must be a tuple of strings, e.g. ('memories', 'u1'); got {path!r}"
        )
    for i, label in enumerate(path):
        if not isinstance(label, str):
            raise ValidationError(f"{field}[{i}]", f"must be a str; got {label!r}")


def _check_fields(fields: Any, field: str) -> list[str]:
    """JSON paths to index: a list of non-empty strings (a bare string would be read as the
    list of its characters, paths no value has, so nothing would be searchable)."""
    if not isinstance(fields, list | tuple) or not all(isinstance(f, str) and f for f in fields):
        raise ValidationError(
            field, f"must be a list of JSON paths such as ['text'] or ['$']; got {fields!r}"
        )
    return list(fields)


def _check_page(limit: Any, offset: Any) -> None:
    """A slice with a negative bound would quietly drop items from the end."""
    for field, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValidationError(field, f"must be a non-negative int; got {value!r}")


def _check_op(op: Op) -> None:
    """What LangGraph's types say but its ``validate_op_namespace`` leaves unchecked."""
    if isinstance(op, GetOp | PutOp):
        _check_path(op.namespace, "namespace")
        if isinstance(op, PutOp) and op.index is not None and op.index is not False:
            _check_fields(op.index, "index")
    elif isinstance(op, SearchOp):
        _check_path(op.namespace_prefix, "namespace_prefix")
        _check_page(op.limit, op.offset)
        if op.filter is not None and not isinstance(op.filter, Mapping):
            raise ValidationError("filter", f"must be a dict of value fields; got {op.filter!r}")
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            _check_path(condition.path, condition.match_type)
        _check_page(op.limit, op.offset)
        depth = op.max_depth
        if depth is not None and (
            isinstance(depth, bool) or not isinstance(depth, int) or depth < 1
        ):
            raise ValidationError("max_depth", f"must be a positive int or None; got {depth!r}")


class AgentMemStore(BaseStore):
    """A LangGraph store whose items are agentmem memories (hybrid keyword + vector search).

    Args:
        memory: The :class:`agentmem.AgentMemory` to store items in.
        tenant_id: The tenant every item belongs to (with the client of
            :func:`agentmem.connect`, by default its API key's).
        user_position: Index of the namespace label that names the user (see the module
            docstring); ``None``: no user mapping.
        agent_position: Index of the namespace label that names the agent.
        index: ``{"fields": [json paths]}``: what of a value is indexed for query search
            (default ``["$"]``, the whole value). Embedding settings (``dims``,
            ``embed``) are not used: the memory's own embedder is.
        store_id: Separates several stores in one tenant.
        tenant_wide: Items of namespaces that name no user or agent are tenant-scope
            memories, recalled for every user and agent of the tenant. Default False: they
            are the store's own, searchable through the store only.
        memory_type: The memory type items are stored with.
        wait_for_index: Make every put wait until its item is searchable by query.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl``, ``refresh_on_read``,
            ``sweep_interval_minutes``, ``omit_expired``; see "Time to live" in the module
            docstring). Without it items live until deleted, unless a put gives ``ttl``.
        clock: The current time (aware, UTC), for tests and simulations; default the system
            clock.

    Example:
        >>> from agentmem import AgentMemory
        >>> mem = AgentMemory(tmp_path)  # doctest: +SKIP
        >>> store = AgentMemStore(mem, tenant_id="acme", user_position=1)  # doctest: +SKIP
        >>> store.put(("memories", "u1"), "pref", {"content": "Prefers dark mode"})  # doctest: +SKIP
        >>> mem.flush()  # doctest: +SKIP
        >>> store.search(("memories", "u1"), query="UI theme")[0].key  # doctest: +SKIP
        'pref'
        >>> graph = builder.compile(store=store)  # doctest: +SKIP
    """

    supports_ttl: bool = True

    def __init__(
        self,
        memory: MemoryProtocol,
        *,
        tenant_id: str | None = None,
        user_position: int | None = None,
        agent_position: int | None = None,
        index: Mapping[str, Any] | None = None,
        store_id: str = "langgraph",
        memory_type: str = "note",
        wait_for_index: bool = False,
        ttl: TTLConfig | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
        tenant_wide: bool = False,
    ) -> None:
        memory = check_store(memory, "AgentMemStore", why="it binds per namespace")
        tenant_id = store_tenant(memory, tenant_id, "AgentMemStore")
        for name, pos in (("user_position", user_position), ("agent_position", agent_position)):
            if pos is not None and (isinstance(pos, bool) or not isinstance(pos, int) or pos < 0):
                raise ValidationError(name, f"must be a non-negative int or None; got {pos!r}")
        for name, flag in (("wait_for_index", wait_for_index), ("tenant_wide", tenant_wide)):
            if not isinstance(flag, bool):  # tenant_wide="no" would share every such item
                raise ValidationError(name, f"must be a bool; got {flag!r}")
        validation.identity(store_id, "store_id", required=True)
        if memory_type not in MEMORY_TYPES:
            raise ValidationError(
                "memory_type", f"must be one of {', '.join(MEMORY_TYPES)}; got {memory_type!r}"
            )
        if index is not None and not isinstance(index, Mapping):
            raise ValidationError(
                "index", f"must be a dict such as {{'fields': ['text']}}; got {index!r}"
            )
        fields = _check_fields((index or {}).get("fields") or ["$"], "index.fields")
        self.memory = memory
        self.tenant_id = tenant_id
        self.user_position = user_position
        self.agent_position = agent_position
        self.index_fields = fields
        self.store_id = store_id
        self.memory_type = memory_type
        self.wait_for_index = wait_for_index
        self.ttl_config = _ttl_config(ttl)
        self._now = clock or _utc_now
        self._sweeper: threading.Thread | None = None
        self._sweeper_lock = threading.Lock()
        self._sweeper_stop = threading.Event()
        self._sweeper_done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.tenant_wide = tenant_wide
        #: Puts read the key's entry, write its memory and then the entry: one at a time, so
        #: concurrent puts to a key leave its value and its memory the same version.
        self._writing = threading.Lock()
        self._migrated = False  # see _migrate
        # Binding checks tenant_id and this agent id (printable, at most 256 characters).
        self._agent = f"langgraph-store:{store_id}"
        self._registry: BoundMemoryProtocol = memory.bind(tenant_id=tenant_id, agent_id=self._agent)

    # -- mapping helpers ---------------------------------------------------------------------
    def _owner(self, namespace: tuple[str, ...]) -> _Owner:
        def label(field: str, pos: int | None) -> str | None:
            if pos is None or pos >= len(namespace):
                return None
            try:
                return validation.identity(namespace[pos], field)
            except ValidationError as exc:  # named as the caller wrote it: a namespace label
                raise ValidationError(
                    f"namespace[{pos}]",
                    f"names the {field} ({field[:-3]}_position={pos}), which {exc.reason}",
                ) from exc

        owner = _Owner(
            user_id=label("user_id", self.user_position),
            agent_id=label("agent_id", self.agent_position),
        )
        if owner.scope == "tenant" and not self.tenant_wide:
            # nobody is named: the narrowest home is the store's own agent, which no user's
            # or agent's recall reaches
            return _Owner(user_id=None, agent_id=self._agent)
        return owner

    def _bind(self, owner: _Owner) -> BoundMemoryProtocol:
        return self.memory.bind(
            tenant_id=self.tenant_id, user_id=owner.user_id, agent_id=owner.agent_id
        )

    def _entry_key(self, namespace: tuple[str, ...], key: str) -> str:
        digest = hashlib.sha256(json.dumps([list(namespace), key]).encode("utf-8")).hexdigest()
        return f"{_prefix_key(namespace)}#{digest[:48]}"

    def _topic(self, namespace: tuple[str, ...], key: str) -> str:
        raw = json.dumps([self.store_id, list(namespace), key]).encode("utf-8")
        return "lgstore:" + hashlib.sha256(raw).hexdigest()[:40]

    def _memory_metadata(self, namespace: tuple[str, ...], key: str) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "lg_store": self.store_id,
            "lg_namespace": list(namespace),
            "lg_key": key,
        }
        meta.update({f"lg_ns_{i}": label for i, label in enumerate(namespace)})
        return meta

    def _search_text(self, value: Mapping[str, Any], index: Sequence[str] | None) -> str | None:
        texts: list[str] = []
        for path in index if index is not None else self.index_fields:
            if path == "$":
                texts.append(_render(value))
            else:
                texts.extend(get_text_at_path(dict(value), path))
        text = "\n".join(t for t in texts if t and t.strip())
        return _cap_utf8(text, _SEARCH_TEXT_MAX_BYTES) if text.strip() else None

    def _entries(self, prefix: tuple[str, ...] = ()) -> list[_Entry]:
        """The entries of the namespaces starting with ``prefix``: only those are read."""
        found = self._registry.state.list(prefix=_prefix_key(prefix))
        entries = (_Entry.decode(e.value) for e in found)
        return [e for e in entries if e.namespace[: len(prefix)] == prefix]

    def _get_entry(self, namespace: tuple[str, ...], key: str) -> _Entry | None:
        found = self._registry.state.get(self._entry_key(namespace, key))
        return None if found is None else _Entry.decode(found.value)

    # -- time to live ------------------------------------------------------------------------
    @property
    def _omit_expired(self) -> bool:
        return bool((self.ttl_config or {}).get("omit_expired", True))

    def _live(self, entries: Iterable[_Entry]) -> list[_Entry]:
        """``entries`` without the expired ones, which are deleted (with their memories) on
        the way; all of them when expired items stay visible until a sweep."""
        if not self._omit_expired:
            return list(entries)
        now = self._now()
        live = []
        for entry in entries:
            if entry.expired(now):
                self._expire(entry)
            else:
                live.append(entry)
        return live

    def _expire(self, seen: _Entry) -> bool:
        """Delete the entry of ``seen`` and forget its memory if it is (still) expired; a put
        or a refreshing read may have given it a new life meanwhile."""
        with self._writing:
            entry = self._get_entry(seen.namespace, seen.key)
            if entry is None or not entry.expired(self._now()):
                return False
            self._drop(entry)
            return True

    def _refresh(self, entries: Iterable[_Entry]) -> None:
        """Move the expiry of ``entries`` (just read) their TTL ahead again."""
        for seen in entries:
            if seen.ttl_minutes is None:
                continue
            with self._writing:
                entry = self._get_entry(seen.namespace, seen.key)
                now = self._now()
                if entry is None or entry.ttl_minutes is None:
                    continue
                if self._omit_expired and entry.expired(now):
                    continue  # an expired item is not brought back by reading it
                self._save(replace(entry, expires_at=now + timedelta(minutes=entry.ttl_minutes)))

    def sweep_ttl(self) -> int:
        """Delete the expired items, forgetting their memories; returns how many."""
        now = self._now()
        return sum(1 for e in self._entries() if e.expired(now) and self._expire(e))

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep now and then every ``sweep_interval_minutes`` (default the TTL config's
        ``sweep_interval_minutes``, else 5) on a daemon thread, until
        :meth:`stop_ttl_sweeper` (or the future is cancelled, or the memory closed).

        Returns:
            A future that is done when the sweeper has stopped; calling this while one runs
            returns that one's future.
        """
        interval = _minutes(sweep_interval_minutes, "sweep_interval_minutes") or float(
            (self.ttl_config or {}).get("sweep_interval_minutes") or DEFAULT_SWEEP_MINUTES
        )
        with self._sweeper_lock:
            if self._sweeper is not None and self._sweeper.is_alive():
                return self._sweeper_done
            self._sweeper_stop.clear()
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.add_done_callback(lambda f: self._sweeper_stop.set() if f.cancelled() else None)
            self._sweeper_done = done
            self._sweeper = threading.Thread(
                target=self._sweep_loop,
                args=(interval, done),
                name="agentmem-ttl-sweeper",
                daemon=True,
            )
            self._sweeper.start()
            return done

    def _sweep_loop(self, interval: float, done: concurrent.futures.Future[None]) -> None:
        while not getattr(self.memory, "closed", False):
            try:
                swept = self.sweep_ttl()
                if swept:
                    log.info("TTL sweep deleted %d expired item(s)", swept)
            except Exception as exc:  # the next pass tries again
                log.error("TTL sweep failed: %s: %s", type(exc).__name__, exc)
            if self._sweeper_stop.wait(interval * 60):
                break
        if not done.done():
            done.set_result(None)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; True once it has stopped (or none ran), False if it was still
        sweeping after ``timeout`` seconds."""
        thread = self._sweeper
        if thread is None or not thread.is_alive():
            return True
        self._sweeper_stop.set()
        thread.join(timeout)
        if thread.is_alive():
            return False
        self._sweeper = None
        return True

    # -- operations --------------------------------------------------------------------------
    def _remember(self, owner: _Owner, namespace: tuple[str, ...], key: str, text: str) -> str:
        bound = self._bind(owner)
        meta = self._memory_metadata(namespace, key)
        topic = self._topic(namespace, key)
        result = bound.remember(
            text, memory_type=self.memory_type, scope=owner.scope, topic_key=topic, metadata=meta
        )
        if result.was_new:
            return result.id
        existing = bound.get(result.id)
        if all(existing.metadata.get(k) == v for k, v in meta.items()):
            return result.id  # the same text put again under the same key
        # Another key holds the same text (the core dedups on content): make ours distinct.
        tagged = f"{text}\n[{'/'.join(namespace)}/{key}]"
        return bound.remember(
            tagged, memory_type=self.memory_type, scope=owner.scope, topic_key=topic, metadata=meta
        ).id

    def _put(self, op: PutOp) -> None:
        with self._writing:
            memory_id = self._write(op)
        if self.wait_for_index and memory_id is not None:
            self.memory.flush()

    def _write(self, op: PutOp) -> str | None:
        """Write a put's memory and entry; returns the memory's id (None: none indexed)."""
        namespace, key = tuple(op.namespace), str(op.key)
        ttl = _minutes(op.ttl, "ttl")
        if op.value is not None:  # a delete needs no owner: older items stay deletable
            self._owner(namespace)  # its labels are checked even when no memory is written
        old = self._get_entry(namespace, key)
        now = self._now()
        if old is not None and old.expired(now) and self._omit_expired:
            self._drop(old)  # gone already for every reader: the put makes a new item
            old = None
        if op.value is None:
            if old is not None:
                self._drop(old)
            return None
        if not isinstance(op.value, Mapping):
            raise ValidationError("value", f"must be a dict, got {type(op.value).__name__}")
        entry = _Entry(
            namespace=namespace,
            key=key,
            value=dict(op.value),
            created_at=old.created_at if old is not None else now,
            updated_at=now,
            memory_id="0" * 32,  # the size of the id it will get
            ttl_minutes=ttl,
            owner=_Owner(user_id="u" * 256, agent_id="a" * 256),  # the largest it can be
            expires_at=None if ttl is None else now + timedelta(minutes=ttl),
        )
        _check_encodable(entry)  # before anything is written
        text = None if op.index is False else self._search_text(entry.value, op.index)
        owner = self._owner(namespace)
        memory_id = self._remember(owner, namespace, key, text) if text is not None else None
        if old is not None and old.memory_id is not None and old.memory_id != memory_id:
            self._forget(old)  # superseded by topic already when re-indexed; gone if not
        self._save(replace(entry, memory_id=memory_id, owner=owner))
        return memory_id

    def _named(self, namespace: tuple[str, ...]) -> _Owner:
        """The user and agent ``namespace`` names (None: it names none; the store's own agent
        keeps every entry anyway)."""
        try:
            owner = self._owner(namespace)
        except ValidationError:  # an older item whose label no id can be: none to erase
            return _Owner(user_id=None, agent_id=None)
        return owner if owner.agent_id != self._agent else replace(owner, agent_id=None)

    def _save(self, entry: _Entry) -> None:
        """Write ``entry``, tagged with the user and agent its namespace names: erasing either
        (``AgentMemory.erase(user_id=...)``, ``erase(agent_id=...)``) deletes it with their
        memories."""
        key = self._entry_key(entry.namespace, entry.key)
        named = self._named(entry.namespace)
        self._registry.state.set(
            key, entry.encode(), user_id=named.user_id, about_agent_id=named.agent_id
        )

    def _migrate(self) -> None:
        """Bring the entries an earlier agentmem wrote to this layout, once per data: keyed
        under their namespace (``item:<hash>`` before, which a prefix could not select) and
        tagged with the user and agent their namespace names (which erasure needs). A
        registry entry records that it is done, so later a store object's first operation
        costs one lookup."""
        with self._writing:
            if self._migrated:
                return
            marker = self._registry.state.get(_LAYOUT_KEY)
            if marker is None or marker.value != _LAYOUT:
                for found in self._registry.state.list(prefix=_OLD_ENTRY_PREFIX):
                    entry = _Entry.decode(found.value)
                    if self._get_entry(entry.namespace, entry.key) is None:
                        self._save(entry)  # a put since the upgrade wins over this copy
                    self._registry.state.delete(found.key)
                self._registry.state.set(_LAYOUT_KEY, _LAYOUT)
            self._migrated = True

    def _memory_owner(self, entry: _Entry) -> _Owner:
        return entry.owner if entry.owner is not None else self._owner(entry.namespace)

    def _forget(self, entry: _Entry) -> None:
        if entry.memory_id is not None:
            self._bind(self._memory_owner(entry)).forget(entry.memory_id)

    def _gone(self, entries: Iterable[_Entry]) -> set[str]:
        """The memory ids of ``entries`` whose memory was forgotten outside the store
        (``forget``, the memory tools, the CLI, retention anonymizing it): one lookup per
        owner. Their entries are deleted on the way, so the value goes as the memory did."""
        entries = list(entries)
        by_owner: dict[_Owner, list[str]] = {}
        for entry in entries:
            if entry.memory_id is not None:
                by_owner.setdefault(self._memory_owner(entry), []).append(entry.memory_id)
        gone: set[str] = set()
        for owner, ids in by_owner.items():
            there = {m.id for m in self._bind(owner).get_many(ids)}
            gone.update(i for i in ids if i not in there)
        if gone:
            with self._writing:
                for entry in entries:
                    if entry.memory_id in gone:
                        # a put may have written the key again meanwhile: that entry stays
                        again = self._get_entry(entry.namespace, entry.key)
                        if again is not None and again.memory_id == entry.memory_id:
                            self._registry.state.delete(self._entry_key(entry.namespace, entry.key))
        return gone

    def _present(
        self, ordered: Sequence[tuple[_Entry, float | None]], offset: int, limit: int
    ) -> list[tuple[_Entry, float | None]]:
        """The page ``[offset, offset + limit)`` of ``ordered`` counting only entries whose
        memory is still there, checked a window at a time (not the whole store)."""
        kept: list[tuple[_Entry, float | None]] = []
        start, want = 0, offset + limit
        while len(kept) < want and start < len(ordered):
            window = ordered[start : start + want - len(kept)]
            start += len(window)
            gone = self._gone(e for e, _ in window)
            kept.extend((e, score) for e, score in window if e.memory_id not in gone)
        return kept[offset:want]

    def _drop(self, entry: _Entry) -> None:
        """Delete an item: forget its memory, then remove its entry."""
        self._forget(entry)
        self._registry.state.delete(self._entry_key(entry.namespace, entry.key))

    def _get(self, op: GetOp) -> Item | None:
        entry = self._get_entry(tuple(op.namespace), str(op.key))
        found = self._live([entry]) if entry is not None else []
        if not found or found[0].memory_id in self._gone(found):
            return None
        if op.refresh_ttl:
            self._refresh(found)
        return found[0].item()

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        entries = [
            e
            for e in self._live(self._entries(prefix))
            if all(_compare(e.value.get(k), v) for k, v in (op.filter or {}).items())
        ]
        entries.sort(key=lambda e: (e.updated_at, e.namespace, e.key), reverse=True)
        ordered: list[tuple[_Entry, float | None]] = []
        if op.query:
            by_memory = {e.memory_id: e for e in entries if e.memory_id is not None}
            hits: list[RecallHit] = []
            owners = {self._owner(e.namespace) for e in by_memory.values()}
            for owner in sorted(owners, key=lambda o: (o.user_id or "", o.agent_id or "")):
                hits.extend(self._recall(owner, prefix, op.query))
            hits.sort(key=lambda h: h.score, reverse=True)
            for hit in hits:
                entry = by_memory.pop(hit.id, None)
                if entry is not None:  # a live, current version inside prefix and filter
                    ordered.append((entry, hit.score))
            seen = {(e.namespace, e.key) for e, _ in ordered}
            ordered.extend((e, None) for e in entries if (e.namespace, e.key) not in seen)
        else:
            ordered = [(e, None) for e in entries]
        page = self._present(ordered, op.offset, op.limit)
        if op.refresh_ttl:
            self._refresh(e for e, _ in page)
        return [e.search_item(score) for e, score in page]

    def _recall(self, owner: _Owner, prefix: tuple[str, ...], query: str) -> list[RecallHit]:
        filters: dict[str, Any] = {"lg_store": self.store_id}
        filters.update({f"lg_ns_{i}": label for i, label in enumerate(prefix)})
        return (
            self._bind(owner)
            .recall(
                query,
                top_k=_RECALL_MAX,
                kinds=["memory"],
                scope=owner.scope,
                min_score=0.0,
                token_budget=_NO_BUDGET,
                filters=filters,
            )
            .items
        )

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        by_namespace: dict[tuple[str, ...], list[_Entry]] = {}
        for entry in self._live(self._entries()):
            if all(_matches(entry.namespace, c) for c in op.match_conditions or ()):
                by_namespace.setdefault(entry.namespace, []).append(entry)
        # a namespace is listed when one of its entries is still there: check one entry of
        # each (those with no memory first: nothing to check), the next where it was gone
        namespaces: set[tuple[str, ...]] = set()
        queues = {
            ns: sorted(es, key=lambda e: e.memory_id is not None) for ns, es in by_namespace.items()
        }
        while queues:
            gone = self._gone(es[0] for es in queues.values())
            for ns, es in list(queues.items()):
                if es[0].memory_id not in gone:
                    namespaces.add(ns)
                    del queues[ns]
                elif len(es) > 1:
                    queues[ns] = es[1:]
                else:
                    del queues[ns]
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    # -- BaseStore ---------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order (a get after a put in the same batch sees the put)."""
        ops = list(ops)
        for op in ops:  # all of them first: a bad op in a batch runs none of it
            _check_op(op)
            validate_op_namespace(op)
        if not self._migrated:
            self._migrate()
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the core is synchronous)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def __repr__(self) -> str:
        return (
            f"AgentMemStore(tenant_id={self.tenant_id!r}, store_id={self.store_id!r}, "
            f"user_position={self.user_position!r}, agent_position={self.agent_position!r}, "
            f"tenant_wide={self.tenant_wide!r})"
        )
