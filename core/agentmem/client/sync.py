"""The synchronous client of ``agentmem serve`` (on ``httpx.Client``).

Example:
    >>> import agentmem
    >>> with agentmem.connect("http://127.0.0.1:8720", api_key=key) as client:  # doctest: +SKIP
    ...     m = client.bind(user_id="u1", session_id="s1")
    ...     m.remember("I prefer uv over pip", memory_type="preference")
    ...     m.recall("which package manager?").items[0].content
    'I prefer uv over pip'
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import httpx
import orjson

from ..errors import AgentMemError, RemoteError
from ..llm.base import ChatTurn
from ..maintenance.doctor import DoctorReport
from ..maintenance.stats import Stats
from ..maintenance.transfer import ImportCounts
from ..models import (
    AnswerResult,
    ErasureReceipt,
    Identity,
    IngestResult,
    MemoryItem,
    RecallResult,
    RememberResult,
)
from ..server.keys import ApiKey
from ..tiers.agent_state import StateEntry
from ..tiers.knowledge import KnowledgeEntry, UpsertResult
from ..tiers.sessions import CloseResult, SessionDetail
from ..tiers.working import CompactionResult, PromptView
from ..wire.codec import decode
from . import _wire as w


class Client:
    """A connection to an agentmem server: the remote twin of :class:`~agentmem.AgentMemory`.

    Obtain it with :func:`agentmem.connect`. It is safe to share between threads (one
    connection pool). Close it with :meth:`close` or use it as a context manager.

    Args:
        url: The server's root URL (``http://127.0.0.1:8720``).
        api_key: A key from ``agentmem keys create``; it decides the tenant.
        timeout: Seconds a request may take.
        max_retries: Retries of a request that got 429 or could not connect.
        transport: An ``httpx`` transport to use instead of the network one.

    Example:
        >>> client = Client("http://127.0.0.1:8720", api_key=key)  # doctest: +SKIP
        >>> client.whoami().tenant_id  # doctest: +SKIP
        'acme'
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str,
        timeout: float = w.DEFAULT_TIMEOUT,
        max_retries: int = w.DEFAULT_MAX_RETRIES,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.options = w.options(url, api_key, timeout, max_retries)
        self._http = httpx.Client(
            base_url=self.options.url,
            headers=self.options.headers(),
            timeout=self.options.timeout,
            transport=transport,
        )
        self._key: ApiKey | None = None

    def __repr__(self) -> str:
        return f"Client(url={self.options.url!r})"

    # -- lifecycle ---------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection pool (idempotent)."""
        self._http.close()

    @property
    def closed(self) -> bool:
        return self._http.is_closed

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- requests ----------------------------------------------------------------------------
    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request, retrying 429s and refused connections; raises RemoteError when
        the server cannot be reached."""
        if self._http.is_closed:
            raise RemoteError("this agentmem client is closed")
        attempt = 0
        while True:
            error: httpx.HTTPError | None = None
            response: httpx.Response | None = None
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.HTTPError as exc:
                error = exc
            wait = w.should_retry(error, response, attempt)
            if wait is None or attempt >= self.options.max_retries:
                if error is not None:
                    raise w.transport_error(error, self.options.url) from error
                assert response is not None
                return response
            attempt += 1
            time.sleep(wait)

    def call(self, op: str, identity: Identity, args: Mapping[str, Any]) -> Any:
        """Run operation ``op`` (see :data:`agentmem.wire.OPS`) as ``identity``."""
        response = self.request("POST", "/v1/ops/" + op, content=w.op_body(op, identity, args))
        return w.result_of(op, response)

    # -- the API -----------------------------------------------------------------------------
    def whoami(self) -> ApiKey:
        """The key this client presents (tenant, pinned user/agent, admin); fetched once."""
        if self._key is None:
            self._key = w.key_of(self.request("GET", "/v1/whoami"))
        return self._key

    def bind(
        self,
        tenant_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> RemoteBoundMemory:
        """A remote bound memory for one identity within the key's tenant.

        ``tenant_id`` may be omitted (the key's); another tenant, or another user or agent
        than the key is pinned to, raises :class:`~agentmem.errors.AuthError`. A pinned user
        or agent is used when none is given.
        """
        identity = w.bind_identity(self.whoami(), tenant_id, user_id, agent_id, session_id)
        return RemoteBoundMemory(self, identity)

    def flush(self, timeout: float | None = None) -> bool:
        """Block until the server's indexes caught up with every write (True if they did)."""
        response = self.request("POST", "/v1/flush", content=w.json_body({"timeout": timeout}))
        return bool(w.payload(response)["result"])

    def health(self) -> bool:
        """True when the server answers ``/health`` with 200 (no key needed)."""
        try:
            return self._http.get("/health").status_code == 200
        except httpx.HTTPError:
            return False

    def stats(self) -> dict[str, Any]:
        """Stats of the key's tenant (an admin key: ``{"tenant_id", "stats": Stats}``), or
        of the whole store with its background jobs and server info (an operator key:
        ``{"home", "stats": Stats, "jobs": [...], "server": {...}}``)."""
        data = w.payload(self.request("GET", "/v1/admin/stats"))
        data["stats"] = decode(Stats, data["stats"])
        return dict(data)

    def doctor(self) -> DoctorReport:
        """The ``agentmem doctor`` report of the key's tenant (an admin key), or of the whole
        served store (an operator key)."""
        data = w.payload(self.request("GET", "/v1/admin/doctor"))
        report: DoctorReport = decode(DoctorReport, data["report"])
        return report

    def erase(
        self, *, tenant_id: str, user_id: str | None = None, agent_id: str | None = None
    ) -> ErasureReceipt:
        """Erase the key's tenant, or a user and/or agent of it, from every store of the
        served data dir (an admin key; see :meth:`agentmem.AgentMemory.erase`)."""
        body = w.erase_body(self.whoami(), tenant_id, user_id, agent_id)
        data = w.payload(self.request("POST", "/v1/admin/erase", content=body))
        receipt: ErasureReceipt = decode(ErasureReceipt, data["receipt"])
        return receipt

    def import_lines(
        self,
        lines: Sequence[str],
        *,
        first_line: int = 1,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        batch_size: int = 500,
    ) -> ImportCounts:
        """Import lines of ``agentmem export`` output or hand-written JSON Lines into the
        key's tenant (an admin key), as ``agentmem import`` does on a data dir: every line
        is validated before anything is written, and running the same lines again stores
        nothing twice. ``first_line`` numbers the first line, so a large file sent in parts
        keeps its numbers; identity arguments are what lines without their own write as.
        Returns the counts (:class:`~agentmem.maintenance.transfer.ImportCounts`)."""
        body = w.import_body(lines, first_line, user_id, agent_id, session_id, batch_size)
        data = w.payload(self.request("POST", "/v1/admin/import", content=body))
        counts: ImportCounts = decode(ImportCounts, data["counts"])
        return counts

    def export(self, *, kinds: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """The key's tenant as import-ready records (the lines of ``agentmem export``; an
        admin key), streamed."""
        params: list[tuple[str, str | int | float | bool | None]] | None = (
            [("kind", k) for k in kinds] if kinds is not None else None
        )
        with self._http.stream("GET", "/v1/admin/export", params=params) as response:
            if not response.is_success:
                response.read()
                raise w.error_of(response)
            for line in response.iter_lines():
                if line.strip():
                    yield orjson.loads(line)


class RemoteKnowledge:
    """``memory.knowledge`` of a remote bound memory (see
    :class:`agentmem.tiers.knowledge.Knowledge`)."""

    def __init__(self, bound: RemoteBoundMemory) -> None:
        self._bound = bound

    def upsert(
        self,
        content: str,
        key: str | None = None,
        *,
        memory_type: str = "note",
        importance: float | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> UpsertResult:
        args: dict[str, Any] = {
            "content": content,
            "key": key,
            "memory_type": memory_type,
            "importance": importance,
            "metadata": metadata,
        }
        result: UpsertResult = self._bound._call("knowledge.upsert", args)
        return result

    def delete(self, key_or_id: str) -> bool:
        return bool(self._bound._call("knowledge.delete", {"key_or_id": key_or_id}))

    def get(self, key: str, *, agent_id: str | None = None) -> KnowledgeEntry | None:
        entry: KnowledgeEntry | None = self._bound._call(
            "knowledge.get", {"key": key, "agent_id": agent_id}
        )
        return entry

    def list(
        self, *, agent_id: str | None = None, all_agents: bool = False
    ) -> builtins.list[KnowledgeEntry]:
        entries: builtins.list[KnowledgeEntry] = self._bound._call(
            "knowledge.list", {"agent_id": agent_id, "all_agents": all_agents}
        )
        return entries

    def search(self, query: str, *, top_k: int = 5, **kwargs: Any) -> RecallResult:
        """Recall over knowledge only (``recall(query, scope="knowledge", ...)``)."""
        return self._bound.recall(query, top_k=top_k, scope="knowledge", **kwargs)


class RemoteState:
    """``memory.state`` of a remote bound memory (the bound agent's key-value state)."""

    def __init__(self, bound: RemoteBoundMemory) -> None:
        self._bound = bound

    def get(self, key: str) -> StateEntry | None:
        entry: StateEntry | None = self._bound._call("state.get", {"key": key})
        return entry

    def set(self, key: str, value: Any) -> StateEntry:
        entry: StateEntry = self._bound._call("state.set", {"key": key, "value": value})
        return entry

    def delete(self, key: str) -> bool:
        return bool(self._bound._call("state.delete", {"key": key}))

    def list(self) -> builtins.list[StateEntry]:
        entries: builtins.list[StateEntry] = self._bound._call("state.list", {})
        return entries


class RemoteBoundMemory:
    """One identity's memory on a server: every operation of :class:`~agentmem.BoundMemory`,
    returning the same types. Obtain it with :meth:`Client.bind`.

    Example:
        >>> m = client.bind(user_id="u1", session_id="s1")  # doctest: +SKIP
        >>> m.add_message("user", "My order 4711 arrived damaged")  # doctest: +SKIP
        >>> m.recall("damaged order").items  # doctest: +SKIP
    """

    def __init__(self, client: Client, identity: Identity) -> None:
        self._client = client
        self._identity = identity

    @property
    def client(self) -> Client:
        return self._client

    @property
    def identity(self) -> Identity:
        return self._identity

    @property
    def tenant_id(self) -> str:
        return self._identity.tenant_id

    @property
    def user_id(self) -> str | None:
        return self._identity.user_id

    @property
    def agent_id(self) -> str | None:
        return self._identity.agent_id

    @property
    def session_id(self) -> str | None:
        return self._identity.session_id

    def __repr__(self) -> str:
        i = self._identity
        return (
            f"RemoteBoundMemory(tenant_id={i.tenant_id!r}, user_id={i.user_id!r}, "
            f"agent_id={i.agent_id!r}, session_id={i.session_id!r})"
        )

    def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        return self._client.call(op, self._identity, args)

    # -- conversation ------------------------------------------------------------------------
    def add_message(
        self,
        role: str,
        content: str,
        *,
        metadata: Mapping[str, Any] | None = None,
        event_time: datetime | str | None = None,
    ) -> MemoryItem:
        """See :meth:`agentmem.BoundMemory.add_message`."""
        args: dict[str, Any] = {
            "role": role,
            "content": content,
            "metadata": metadata,
            "event_time": event_time,
        }
        item: MemoryItem = self._call("add_message", args)
        return item

    def add_messages(self, messages: Iterable[Mapping[str, Any]]) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.add_messages`."""
        items: list[MemoryItem] = self._call("add_messages", {"messages": list(messages)})
        return items

    def add_tool_output(
        self,
        tool_call_id: str,
        content: str,
        *,
        tool_name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryItem:
        """See :meth:`agentmem.BoundMemory.add_tool_output`."""
        args: dict[str, Any] = {
            "tool_call_id": tool_call_id,
            "content": content,
            "tool_name": tool_name,
            "metadata": metadata,
        }
        item: MemoryItem = self._call("add_tool_output", args)
        return item

    def read_tool_output(self, key: str) -> str:
        """See :meth:`agentmem.BoundMemory.read_tool_output`."""
        return str(self._call("read_tool_output", {"key": key}))

    def messages(self, *, limit: int | None = None) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.messages`."""
        items: list[MemoryItem] = self._call("messages", {"limit": limit})
        return items

    def clear_session(self) -> int:
        """See :meth:`agentmem.BoundMemory.clear_session`."""
        return int(self._call("clear_session", {}))

    # -- documents and explicit memories -----------------------------------------------------
    def add_document(
        self,
        text: str,
        *,
        source_ref: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.add_document`."""
        args: dict[str, Any] = {"text": text, "source_ref": source_ref, "metadata": metadata}
        items: list[MemoryItem] = self._call("add_document", args)
        return items

    def remember(
        self,
        content: str,
        *,
        memory_type: str = "fact",
        scope: str = "user",
        importance: float | None = None,
        topic_key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RememberResult:
        """See :meth:`agentmem.BoundMemory.remember`."""
        args: dict[str, Any] = {
            "content": content,
            "memory_type": memory_type,
            "scope": scope,
            "importance": importance,
            "topic_key": topic_key,
            "metadata": metadata,
        }
        result: RememberResult = self._call("remember", args)
        return result

    def remember_many(self, items: Iterable[str | Mapping[str, Any]]) -> list[RememberResult]:
        """See :meth:`agentmem.BoundMemory.remember_many`."""
        results: list[RememberResult] = self._call("remember_many", {"items": list(items)})
        return results

    def forget(self, memory_id: str) -> bool:
        """See :meth:`agentmem.BoundMemory.forget`."""
        return bool(self._call("forget", {"memory_id": memory_id}))

    def get(self, memory_id: str) -> MemoryItem:
        """See :meth:`agentmem.BoundMemory.get`."""
        item: MemoryItem = self._call("get", {"memory_id": memory_id})
        return item

    # -- recall ------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        top_k: int = 5,
        kinds: Iterable[str] | str | None = None,
        memory_types: Iterable[str] | str | None = None,
        scope: str = "any",
        rerank: bool = True,
        min_score: float | None = None,
        token_budget: int | None = None,
        filters: Mapping[str, Any] | None = None,
        include_superseded: bool = False,
        tiers: Iterable[str] | str | None = None,
        target_agent: str | None = None,
    ) -> RecallResult:
        """See :meth:`agentmem.BoundMemory.recall`."""
        args: dict[str, Any] = {
            "query": query,
            "top_k": top_k,
            "kinds": kinds,
            "memory_types": memory_types,
            "scope": scope,
            "rerank": rerank,
            "min_score": min_score,
            "token_budget": token_budget,
            "filters": filters,
            "include_superseded": include_superseded,
            "tiers": tiers,
            "target_agent": target_agent,
        }
        result: RecallResult = self._call("recall", args)
        return result

    # -- derived memories --------------------------------------------------------------------
    def ingest(self, messages: Iterable[Mapping[str, Any] | ChatTurn]) -> IngestResult:
        """See :meth:`agentmem.BoundMemory.ingest`."""
        result: IngestResult = self._call("ingest", {"messages": list(messages)})
        return result

    def history(self, memory_id: str) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.history`."""
        items: list[MemoryItem] = self._call("history", {"memory_id": memory_id})
        return items

    def answer(self, question: str, *, top_k: int = 5) -> AnswerResult:
        """See :meth:`agentmem.BoundMemory.answer`."""
        result: AnswerResult = self._call("answer", {"question": question, "top_k": top_k})
        return result

    # -- tiers -------------------------------------------------------------------------------
    def context_messages(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> list[dict[str, str]]:
        """See :meth:`agentmem.BoundMemory.context_messages`."""
        args: dict[str, Any] = {
            "model_window": model_window,
            "budget_ratio": budget_ratio,
            "max_messages": max_messages,
        }
        messages: list[dict[str, str]] = self._call("context_messages", args)
        return messages

    def prompt_view(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> PromptView:
        """See :meth:`agentmem.BoundMemory.prompt_view`."""
        args: dict[str, Any] = {
            "model_window": model_window,
            "budget_ratio": budget_ratio,
            "max_messages": max_messages,
        }
        view: PromptView = self._call("prompt_view", args)
        return view

    def compact(self, *, keep: int | None = None) -> CompactionResult:
        """See :meth:`agentmem.BoundMemory.compact`."""
        result: CompactionResult = self._call("compact", {"keep": keep})
        return result

    def close_session(self, *, summary_timeout: float | None = None) -> CloseResult:
        """See :meth:`agentmem.BoundMemory.close_session`."""
        result: CloseResult = self._call("close_session", {"summary_timeout": summary_timeout})
        return result

    def session_detail(self, session_id: str, *, target_agent: str | None = None) -> SessionDetail:
        """See :meth:`agentmem.BoundMemory.session_detail`."""
        args = {"session_id": session_id, "target_agent": target_agent}
        detail: SessionDetail = self._call("session_detail", args)
        return detail

    def sessions(self) -> list[str]:
        """See :meth:`agentmem.BoundMemory.sessions`."""
        return [str(s) for s in self._call("sessions", {})]

    @property
    def knowledge(self) -> RemoteKnowledge:
        """Agent-managed knowledge (see :attr:`agentmem.BoundMemory.knowledge`)."""
        return RemoteKnowledge(self)

    @property
    def state(self) -> RemoteState:
        """Key-value state of the bound agent (see :attr:`agentmem.BoundMemory.state`)."""
        return RemoteState(self)


def connect(
    url: str,
    *,
    api_key: str,
    timeout: float = w.DEFAULT_TIMEOUT,
    max_retries: int = w.DEFAULT_MAX_RETRIES,
) -> Client:
    """Connect to an agentmem server (``agentmem serve``) and check the key.

    Args:
        url: The server's root URL, e.g. ``http://127.0.0.1:8720``.
        api_key: A key from ``agentmem keys create``; its tenant is the client's.
        timeout: Seconds a request may take.
        max_retries: Retries of a request answered 429 or whose connection was refused.

    Raises:
        AuthError: the key is missing, wrong or revoked.
        RemoteError: the server cannot be reached.

    Example:
        >>> client = connect("http://127.0.0.1:8720", api_key=key)  # doctest: +SKIP
        >>> m = client.bind(user_id="u1", session_id="s1")  # doctest: +SKIP
    """
    client = Client(url, api_key=api_key, timeout=timeout, max_retries=max_retries)
    try:
        client.whoami()
    except AgentMemError:
        client.close()
        raise
    return client


__all__ = ["Client", "RemoteBoundMemory", "RemoteKnowledge", "RemoteState", "connect"]
