"""The asynchronous client of ``agentmem serve`` (on ``httpx.AsyncClient``, no threads).

Same shape as :mod:`agentmem.client.sync`: every operation of a bound memory is a coroutine
(``await m.recall(...)``); :func:`connect_async` checks the key, after which ``bind`` needs
no request.

Example:
    >>> import agentmem
    >>> async with await agentmem.connect_async(url, api_key=key) as client:  # doctest: +SKIP
    ...     m = client.bind(user_id="u1", session_id="s1")
    ...     await m.remember("I prefer uv over pip", memory_type="preference")
    ...     (await m.recall("which package manager?")).items[0].content
    'I prefer uv over pip'
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Generator, Iterable, Mapping, Sequence
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


class AsyncClient:
    """A connection to an agentmem server for asyncio code: the async twin of
    :class:`~agentmem.client.sync.Client`. Obtain it with :func:`agentmem.connect_async`.

    Args:
        url: The server's root URL (``http://127.0.0.1:8720``).
        api_key: A key from ``agentmem keys create``; it decides the tenant.
        timeout: Seconds a request may take.
        max_retries: Retries of a request that got 429 or could not connect.
        transport: An ``httpx`` async transport to use instead of the network one.

    Example:
        >>> client = await connect_async("http://127.0.0.1:8720", api_key=key)  # doctest: +SKIP
        >>> (await client.bind(user_id="u1").recall("tea")).total  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str,
        timeout: float = w.DEFAULT_TIMEOUT,
        max_retries: int = w.DEFAULT_MAX_RETRIES,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.options = w.options(url, api_key, timeout, max_retries)
        self._http = httpx.AsyncClient(
            base_url=self.options.url,
            headers=self.options.headers(),
            timeout=self.options.timeout,
            transport=transport,
        )
        self._key: ApiKey | None = None

    def __repr__(self) -> str:
        return f"AsyncClient(url={self.options.url!r})"

    # -- lifecycle ---------------------------------------------------------------------------
    async def close(self) -> None:
        """Close the connection pool (idempotent)."""
        await self._http.aclose()

    @property
    def closed(self) -> bool:
        return self._http.is_closed

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- requests ----------------------------------------------------------------------------
    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Send a request, retrying 429s and refused connections; raises RemoteError when
        the server cannot be reached."""
        if self._http.is_closed:
            raise RemoteError("this agentmem client is closed")
        attempt = 0
        while True:
            error: httpx.HTTPError | None = None
            response: httpx.Response | None = None
            try:
                response = await self._http.request(method, path, **kwargs)
            except httpx.HTTPError as exc:
                error = exc
            wait = w.should_retry(error, response, attempt)
            if wait is None or attempt >= self.options.max_retries:
                if error is not None:
                    raise w.transport_error(error, self.options.url) from error
                assert response is not None
                return response
            attempt += 1
            await asyncio.sleep(wait)

    async def call(self, op: str, identity: Identity, args: Mapping[str, Any]) -> Any:
        """Run operation ``op`` (see :data:`agentmem.wire.OPS`) as ``identity``."""
        response = await self.request(
            "POST", "/v1/ops/" + op, content=w.op_body(op, identity, args)
        )
        return w.result_of(op, response)

    # -- the API -----------------------------------------------------------------------------
    async def whoami(self) -> ApiKey:
        """The key this client presents (tenant, pinned user/agent, admin); fetched once."""
        if self._key is None:
            self._key = w.key_of(await self.request("GET", "/v1/whoami"))
        return self._key

    def bind(
        self,
        tenant_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> AsyncRemoteBoundMemory:
        """An async remote bound memory for one identity within the key's tenant (see
        :meth:`agentmem.client.sync.Client.bind`).

        Raises:
            AuthError: another tenant, or another user/agent than the key is pinned to.
            RemoteError: the key was not checked yet (use :func:`agentmem.connect_async`, or
                ``await client.whoami()`` first).
        """
        if self._key is None:
            raise RemoteError(
                "bind() needs the key checked first: use `await agentmem.connect_async(...)` "
                "or `await client.whoami()`"
            )
        identity = w.bind_identity(self._key, tenant_id, user_id, agent_id, session_id)
        return AsyncRemoteBoundMemory(self, identity)

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until the server's indexes caught up with every write (True if they did)."""
        body = w.json_body({"timeout": timeout})
        return bool(w.payload(await self.request("POST", "/v1/flush", content=body))["result"])

    async def health(self) -> bool:
        """True when the server answers ``/health`` with 200 (no key needed)."""
        try:
            return (await self._http.get("/health")).status_code == 200
        except httpx.HTTPError:
            return False

    async def stats(self) -> dict[str, Any]:
        """Stats of the key's tenant (an admin key), or of the whole store with its
        background jobs and server info (an operator key); see :meth:`Client.stats`."""
        data = w.payload(await self.request("GET", "/v1/admin/stats"))
        data["stats"] = decode(Stats, data["stats"])
        return dict(data)

    async def doctor(self) -> DoctorReport:
        """The ``agentmem doctor`` report of the key's tenant (an admin key), or of the whole
        served store (an operator key)."""
        data = w.payload(await self.request("GET", "/v1/admin/doctor"))
        report: DoctorReport = decode(DoctorReport, data["report"])
        return report

    async def erase(
        self, *, tenant_id: str, user_id: str | None = None, agent_id: str | None = None
    ) -> ErasureReceipt:
        """Erase the key's tenant, or a user and/or agent of it (an admin key; see
        :meth:`agentmem.AgentMemory.erase`)."""
        body = w.erase_body(await self.whoami(), tenant_id, user_id, agent_id)
        data = w.payload(await self.request("POST", "/v1/admin/erase", content=body))
        receipt: ErasureReceipt = decode(ErasureReceipt, data["receipt"])
        return receipt

    async def import_lines(
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
        data = w.payload(await self.request("POST", "/v1/admin/import", content=body))
        counts: ImportCounts = decode(ImportCounts, data["counts"])
        return counts

    async def export(self, *, kinds: Iterable[str] | None = None) -> AsyncIterator[dict[str, Any]]:
        """The key's tenant as import-ready records, streamed (an admin key)."""
        params: list[tuple[str, str | int | float | bool | None]] | None = (
            [("kind", k) for k in kinds] if kinds is not None else None
        )
        async with self._http.stream("GET", "/v1/admin/export", params=params) as response:
            if not response.is_success:
                await response.aread()
                raise w.error_of(response)
            async for line in response.aiter_lines():
                if line.strip():
                    yield orjson.loads(line)


class AsyncRemoteKnowledge:
    """``memory.knowledge`` of an async remote bound memory (see
    :class:`agentmem.tiers.knowledge.Knowledge`)."""

    def __init__(self, bound: AsyncRemoteBoundMemory) -> None:
        self._bound = bound

    async def upsert(
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
        result: UpsertResult = await self._bound._call("knowledge.upsert", args)
        return result

    async def delete(self, key_or_id: str) -> bool:
        return bool(await self._bound._call("knowledge.delete", {"key_or_id": key_or_id}))

    async def get(self, key: str, *, agent_id: str | None = None) -> KnowledgeEntry | None:
        entry: KnowledgeEntry | None = await self._bound._call(
            "knowledge.get", {"key": key, "agent_id": agent_id}
        )
        return entry

    async def list(
        self, *, agent_id: str | None = None, all_agents: bool = False
    ) -> builtins.list[KnowledgeEntry]:
        entries: builtins.list[KnowledgeEntry] = await self._bound._call(
            "knowledge.list", {"agent_id": agent_id, "all_agents": all_agents}
        )
        return entries

    async def search(self, query: str, *, top_k: int = 5, **kwargs: Any) -> RecallResult:
        """Recall over knowledge only (``recall(query, scope="knowledge", ...)``)."""
        return await self._bound.recall(query, top_k=top_k, scope="knowledge", **kwargs)


class AsyncRemoteState:
    """``memory.state`` of an async remote bound memory (the bound agent's key-value state)."""

    def __init__(self, bound: AsyncRemoteBoundMemory) -> None:
        self._bound = bound

    async def get(self, key: str) -> StateEntry | None:
        entry: StateEntry | None = await self._bound._call("state.get", {"key": key})
        return entry

    async def set(self, key: str, value: Any) -> StateEntry:
        entry: StateEntry = await self._bound._call("state.set", {"key": key, "value": value})
        return entry

    async def delete(self, key: str) -> bool:
        return bool(await self._bound._call("state.delete", {"key": key}))

    async def list(self) -> builtins.list[StateEntry]:
        entries: builtins.list[StateEntry] = await self._bound._call("state.list", {})
        return entries


class AsyncRemoteBoundMemory:
    """One identity's memory on a server, for asyncio: every operation of
    :class:`~agentmem.BoundMemory` as a coroutine returning the same types. Obtain it with
    :meth:`AsyncClient.bind`.

    Example:
        >>> m = client.bind(user_id="u1", session_id="s1")  # doctest: +SKIP
        >>> await m.add_message("user", "My order 4711 arrived damaged")  # doctest: +SKIP
        >>> (await m.recall("damaged order")).items  # doctest: +SKIP
    """

    def __init__(self, client: AsyncClient, identity: Identity) -> None:
        self._client = client
        self._identity = identity

    @property
    def client(self) -> AsyncClient:
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
            f"AsyncRemoteBoundMemory(tenant_id={i.tenant_id!r}, user_id={i.user_id!r}, "
            f"agent_id={i.agent_id!r}, session_id={i.session_id!r})"
        )

    async def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        return await self._client.call(op, self._identity, args)

    # -- conversation ------------------------------------------------------------------------
    async def add_message(
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
        item: MemoryItem = await self._call("add_message", args)
        return item

    async def add_messages(self, messages: Iterable[Mapping[str, Any]]) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.add_messages`."""
        items: list[MemoryItem] = await self._call("add_messages", {"messages": list(messages)})
        return items

    async def add_tool_output(
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
        item: MemoryItem = await self._call("add_tool_output", args)
        return item

    async def read_tool_output(self, key: str) -> str:
        """See :meth:`agentmem.BoundMemory.read_tool_output`."""
        return str(await self._call("read_tool_output", {"key": key}))

    async def messages(self, *, limit: int | None = None) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.messages`."""
        items: list[MemoryItem] = await self._call("messages", {"limit": limit})
        return items

    async def clear_session(self) -> int:
        """See :meth:`agentmem.BoundMemory.clear_session`."""
        return int(await self._call("clear_session", {}))

    # -- documents and explicit memories -----------------------------------------------------
    async def add_document(
        self,
        text: str,
        *,
        source_ref: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.add_document`."""
        args: dict[str, Any] = {"text": text, "source_ref": source_ref, "metadata": metadata}
        items: list[MemoryItem] = await self._call("add_document", args)
        return items

    async def remember(
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
        result: RememberResult = await self._call("remember", args)
        return result

    async def remember_many(self, items: Iterable[str | Mapping[str, Any]]) -> list[RememberResult]:
        """See :meth:`agentmem.BoundMemory.remember_many`."""
        results: list[RememberResult] = await self._call("remember_many", {"items": list(items)})
        return results

    async def forget(self, memory_id: str) -> bool:
        """See :meth:`agentmem.BoundMemory.forget`."""
        return bool(await self._call("forget", {"memory_id": memory_id}))

    async def get(self, memory_id: str) -> MemoryItem:
        """See :meth:`agentmem.BoundMemory.get`."""
        item: MemoryItem = await self._call("get", {"memory_id": memory_id})
        return item

    # -- recall ------------------------------------------------------------------------------
    async def recall(
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
        result: RecallResult = await self._call("recall", args)
        return result

    # -- derived memories --------------------------------------------------------------------
    async def ingest(self, messages: Iterable[Mapping[str, Any] | ChatTurn]) -> IngestResult:
        """See :meth:`agentmem.BoundMemory.ingest`."""
        result: IngestResult = await self._call("ingest", {"messages": list(messages)})
        return result

    async def history(self, memory_id: str) -> list[MemoryItem]:
        """See :meth:`agentmem.BoundMemory.history`."""
        items: list[MemoryItem] = await self._call("history", {"memory_id": memory_id})
        return items

    async def answer(self, question: str, *, top_k: int = 5) -> AnswerResult:
        """See :meth:`agentmem.BoundMemory.answer`."""
        result: AnswerResult = await self._call("answer", {"question": question, "top_k": top_k})
        return result

    # -- tiers -------------------------------------------------------------------------------
    async def context_messages(
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
        messages: list[dict[str, str]] = await self._call("context_messages", args)
        return messages

    async def prompt_view(
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
        view: PromptView = await self._call("prompt_view", args)
        return view

    async def compact(self, *, keep: int | None = None) -> CompactionResult:
        """See :meth:`agentmem.BoundMemory.compact`."""
        result: CompactionResult = await self._call("compact", {"keep": keep})
        return result

    async def close_session(self, *, summary_timeout: float | None = None) -> CloseResult:
        """See :meth:`agentmem.BoundMemory.close_session`."""
        result: CloseResult = await self._call(
            "close_session", {"summary_timeout": summary_timeout}
        )
        return result

    async def session_detail(
        self, session_id: str, *, target_agent: str | None = None
    ) -> SessionDetail:
        """See :meth:`agentmem.BoundMemory.session_detail`."""
        args = {"session_id": session_id, "target_agent": target_agent}
        detail: SessionDetail = await self._call("session_detail", args)
        return detail

    async def sessions(self) -> list[str]:
        """See :meth:`agentmem.BoundMemory.sessions`."""
        return [str(s) for s in await self._call("sessions", {})]

    @property
    def knowledge(self) -> AsyncRemoteKnowledge:
        """Agent-managed knowledge (see :attr:`agentmem.BoundMemory.knowledge`)."""
        return AsyncRemoteKnowledge(self)

    @property
    def state(self) -> AsyncRemoteState:
        """Key-value state of the bound agent (see :attr:`agentmem.BoundMemory.state`)."""
        return AsyncRemoteState(self)


class AsyncConnection:
    """What :func:`connect_async` returns: await it for the client, or enter it with
    ``async with`` (the client is closed on exit). Either way the key is checked first."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def _open(self) -> AsyncClient:
        try:
            await self._client.whoami()
        except AgentMemError:
            await self._client.close()
            raise
        return self._client

    def __await__(self) -> Generator[Any, None, AsyncClient]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncClient:
        return await self._open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._client.close()


def connect_async(
    url: str,
    *,
    api_key: str,
    timeout: float = w.DEFAULT_TIMEOUT,
    max_retries: int = w.DEFAULT_MAX_RETRIES,
) -> AsyncConnection:
    """Connect to an agentmem server from asyncio code and check the key: ``async with
    connect_async(...) as client`` (closed on exit), or ``client = await connect_async(...)``.

    Raises:
        AuthError: the key is missing, wrong or revoked.
        RemoteError: the server cannot be reached.

    Example:
        >>> async with connect_async("http://127.0.0.1:8720", api_key=key) as client:  # doctest: +SKIP
        ...     m = client.bind(user_id="u1", session_id="s1")
        ...     await m.add_message("user", "hello")
    """
    return AsyncConnection(
        AsyncClient(url, api_key=api_key, timeout=timeout, max_retries=max_retries)
    )


__all__ = [
    "AsyncClient",
    "AsyncConnection",
    "AsyncRemoteBoundMemory",
    "AsyncRemoteKnowledge",
    "AsyncRemoteState",
    "connect_async",
]
