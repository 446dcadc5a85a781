"""The asynchronous client of ``agentmem serve`` (on ``httpx.AsyncClient``, no threads).

Every operation of a bound memory is a coroutine (``await m.recall(...)``);
:func:`agentmem.connect_async` checks the key, after which ``bind`` needs no request.

Example:
    >>> import agentmem
    >>> async with agentmem.connect_async(url, api_key=key) as client:  # doctest: +SKIP
    ...     m = client.bind(user_id="u1", session_id="s1")
    ...     await m.remember("I prefer uv over pip", memory_type="preference")
    ...     (await m.recall("which Python package manager do I prefer?")).items[0].content
    'I prefer uv over pip'
"""

# This file is the clients' one hand-written source: sync.py is generated from it by
# tools/async_to_sync.py (run `make generate` after editing here; a test fails until then),
# and the operations of a bound memory come from the contract (agentmem/protocols.py)
# through the generated _ops_aio.py. A block under `if True:  # ASYNC` is this file's
# alone: the sync twin keeps its `else:` branch instead. Comments do not reach sync.py.
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Unpack

import httpx
import orjson

from ..errors import RemoteError
from ..models import ErasureReceipt, Identity, MemoryItem, RecallResult
from ..recall_options import RecallKwargs, RecallOptions, knowledge_options
from ..results import (
    ApiKey,
    CompactionResult,
    DoctorReport,
    ImportCounts,
    PromptView,
    ReferenceSummary,
    Stats,
    TokenCounts,
)
from ..wire.codec import decode
from ..wire.ops import PREFIX
from . import _wire as shared
from ._ops_aio import AsyncBoundOps, AsyncKnowledgeOps, AsyncStateOps, AsyncWorkingOps
from ._transport import plain_http_transport


class AsyncClient:
    """A connection to an agentmem server: the remote twin of :class:`~agentmem.AgentMemory`.

    Obtain it with :func:`agentmem.connect_async`. It holds one connection pool (share it
    rather than opening one per call); close it with :meth:`close` or use it as a context
    manager.

    Args:
        url: The server's root URL (``http://127.0.0.1:8720``).
        api_key: A key from ``agentmem keys create``; it decides the tenant.
        timeout: Seconds a request may take.
        max_retries: Retries of a request that got 429 or could not connect.
        transport: An ``httpx`` transport to use instead of the network one.

    Example:
        >>> client = await connect_async("http://127.0.0.1:8720", api_key=key)  # doctest: +SKIP
        >>> (await client.bind(user_id="u1").recall("tea")).total  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str,
        timeout: float = shared.DEFAULT_TIMEOUT,
        max_retries: int = shared.DEFAULT_MAX_RETRIES,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.options = shared.options(url, api_key, timeout, max_retries)
        if True:  # ASYNC: httpx's transport (no stdlib asyncio client)  # noqa: SIM108
            wire = transport
        else:
            wire = transport or plain_http_transport(self.options.url)
        self._http = httpx.AsyncClient(
            base_url=self.options.url,
            headers=self.options.headers(),
            timeout=self.options.timeout,
            transport=wire,
        )
        self._key: ApiKey | None = None
        self._op_urls: dict[str, httpx.URL] = {}

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
    async def request(self, method: str, path: str | httpx.URL, **kwargs: Any) -> httpx.Response:
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
            wait = shared.should_retry(error, response, attempt)
            if wait is None or attempt >= self.options.max_retries:
                if error is not None:
                    raise shared.transport_error(error, self.options) from error
                assert response is not None
                return response
            attempt += 1
            await asyncio.sleep(wait)

    async def call(self, op: str, identity: Identity, args: Mapping[str, Any]) -> Any:
        """Run operation ``op`` (see :data:`agentmem.wire.OPS`) as ``identity``."""
        body = shared.op_body(op, identity, args)
        url = self._op_urls.get(op)
        if url is None:  # parsed once: httpx parses a path and joins it to the base each call
            url = self._op_urls[op] = httpx.URL(self.options.url + PREFIX + op)
        response = await self.request("POST", url, content=body)
        return shared.result_of(op, response)

    # -- the API -----------------------------------------------------------------------------
    async def whoami(self) -> ApiKey:
        """The key this client presents (tenant, pinned user/agent, admin); fetched once."""
        if self._key is None:
            self._key = shared.key_of(await self.request("GET", "/v1/whoami"))
        return self._key

    def bind(
        self,
        tenant_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> AsyncRemoteBoundMemory:
        """A remote bound memory for one identity within the key's tenant.

        ``tenant_id`` may be omitted (the key's); a pinned user or agent is used when none is
        given.

        Raises:
            AuthError: another tenant, or another user/agent than the key is pinned to.
            RemoteError: the key could not be checked (asyncio: ``bind`` makes no request,
                so check the key first with :func:`agentmem.connect_async` or
                ``await client.whoami()``).
        """
        if True:  # ASYNC: bind makes no request, so the key must be known already
            if self._key is None:
                raise RemoteError(
                    "bind() needs the key checked first: use "
                    "`await agentmem.connect_async(...)` or `await client.whoami()`"
                )
            key = self._key
        else:
            key = self.whoami()
        identity = shared.bind_identity(key, tenant_id, user_id, agent_id, session_id)
        return AsyncRemoteBoundMemory(self, identity)

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until the server's indexes caught up with every write of the key's tenant
        (with an operator key: of every tenant); True if they did."""
        body = shared.json_body({"timeout": timeout})
        return bool(shared.payload(await self.request("POST", "/v1/flush", content=body))["result"])

    async def health(self) -> bool:
        """True when the server answers ``/health`` with 200 (no key needed)."""
        try:
            return (await self._http.get("/health")).status_code == 200
        except httpx.HTTPError:
            return False

    async def stats(self) -> dict[str, Any]:
        """Stats of the key's tenant (an admin key: ``{"tenant_id", "stats": Stats}``), or
        of the whole store with its background jobs and server info (an operator key:
        ``{"home", "stats": Stats, "jobs": [...], "server": {...}}``)."""
        data = shared.payload(await self.request("GET", "/v1/admin/stats"))
        data["stats"] = decode(Stats, data["stats"])
        return dict(data)

    async def doctor(self) -> DoctorReport:
        """The ``agentmem doctor`` report of the key's tenant (an admin key), or of the whole
        served store (an operator key)."""
        data = shared.payload(await self.request("GET", "/v1/admin/doctor"))
        report: DoctorReport = decode(DoctorReport, data["report"])
        return report

    async def erase(
        self, *, tenant_id: str, user_id: str | None = None, agent_id: str | None = None
    ) -> ErasureReceipt:
        """Erase the key's tenant, or a user and/or agent of it, from every store of the
        served data dir (an admin key; see :meth:`agentmem.AgentMemory.erase`)."""
        body = shared.erase_body(await self.whoami(), tenant_id, user_id, agent_id)
        data = shared.payload(await self.request("POST", "/v1/admin/erase", content=body))
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
        Returns the counts (:class:`~agentmem.results.ImportCounts`)."""
        body = shared.import_body(lines, first_line, user_id, agent_id, session_id, batch_size)
        data = shared.payload(await self.request("POST", "/v1/admin/import", content=body))
        counts: ImportCounts = decode(ImportCounts, data["counts"])
        return counts

    async def export(self, *, kinds: Iterable[str] | None = None) -> AsyncIterator[dict[str, Any]]:
        """The key's tenant as import-ready records (the lines of ``agentmem export``; an
        admin key), streamed."""
        params: list[tuple[str, str | int | float | bool | None]] | None = (
            [("kind", k) for k in kinds] if kinds is not None else None
        )
        async with self._http.stream("GET", "/v1/admin/export", params=params) as response:
            if not response.is_success:
                await response.aread()
                raise shared.error_of(response)
            async for line in response.aiter_lines():
                if line.strip():
                    yield orjson.loads(line)


class AsyncRemoteKnowledge(AsyncKnowledgeOps):
    """``memory.knowledge`` of a remote bound memory (see
    :class:`agentmem.tiers.knowledge.Knowledge`)."""

    def __init__(self, bound: AsyncRemoteBoundMemory) -> None:
        self._bound = bound

    async def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        return await self._bound._call(op, args)

    async def search(
        self, query: str, options: RecallOptions | None = None, **kwargs: Unpack[RecallKwargs]
    ) -> RecallResult:
        """Recall over knowledge only (``recall(query, scope="knowledge", ...)``)."""
        return await self._bound.recall(query, knowledge_options(options, **kwargs))


class AsyncRemoteState(AsyncStateOps):
    """``memory.state`` of a remote bound memory (the bound agent's key-value state)."""

    def __init__(self, bound: AsyncRemoteBoundMemory) -> None:
        self._bound = bound

    async def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        return await self._bound._call(op, args)


class AsyncRemoteWorking(AsyncWorkingOps):
    """``memory.working`` of a remote bound memory: the session's working memory on the
    server (see :class:`agentmem.tiers.working.WorkingMemory`); ``await working.snapshot()``
    reads the window, summary and token counts together. (asyncio: a property cannot await, so
    ``window``, ``pinned``, ``summary`` and ``tokens`` are the snapshot's fields here.)"""

    def __init__(self, bound: AsyncRemoteBoundMemory) -> None:
        self._bound = bound

    async def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        return await self._bound._call(op, args)

    if True:  # ASYNC: a property cannot await
        pass
    else:

        @property
        def window(self) -> list[MemoryItem]:
            """Messages in the window (not pinned, not rolled off), oldest first."""
            return list(self.snapshot().window)

        @property
        def pinned(self) -> list[MemoryItem]:
            """Pinned messages (system role or ``metadata["pinned"]``), oldest first."""
            return list(self.snapshot().pinned)

        @property
        def summary(self) -> ReferenceSummary:
            """The reference summary of what rolled off."""
            return self.snapshot().summary

        @property
        def tokens(self) -> TokenCounts:
            """Token counts of pinned messages, summary and window."""
            return self.snapshot().tokens

    async def compact(self, *, keep: int | None = None) -> CompactionResult:
        """Fold the window into the reference summary (the bound memory's ``compact``)."""
        return await self._bound.compact(keep=keep)

    async def context_messages(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> list[dict[str, Any]]:
        """The messages to send to a model (the bound memory's ``context_messages``)."""
        return await self._bound.context_messages(
            model_window=model_window, budget_ratio=budget_ratio, max_messages=max_messages
        )

    async def prompt_view(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> PromptView:
        """What a prompt of the session holds, as stored rows (the bound memory's
        ``prompt_view``)."""
        return await self._bound.prompt_view(
            model_window=model_window, budget_ratio=budget_ratio, max_messages=max_messages
        )


class AsyncRemoteBoundMemory(AsyncBoundOps):
    """One identity's memory on a server: every operation of :class:`~agentmem.BoundMemory`
    (awaited), returning the same types. Obtain it with :meth:`AsyncClient.bind`.

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

    @property
    def working(self) -> AsyncRemoteWorking:
        """This session's working memory on the server (see
        :attr:`agentmem.BoundMemory.working`)."""
        return AsyncRemoteWorking(self)

    @property
    def knowledge(self) -> AsyncRemoteKnowledge:
        """Agent-managed knowledge (see :attr:`agentmem.BoundMemory.knowledge`)."""
        return AsyncRemoteKnowledge(self)

    @property
    def state(self) -> AsyncRemoteState:
        """Key-value state of the bound agent (see :attr:`agentmem.BoundMemory.state`)."""
        return AsyncRemoteState(self)


__all__ = [
    "AsyncClient",
    "AsyncRemoteBoundMemory",
    "AsyncRemoteKnowledge",
    "AsyncRemoteState",
    "AsyncRemoteWorking",
]
