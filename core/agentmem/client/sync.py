# GENERATED from aio.py by tools/async_to_sync.py: do not edit, run `make generate`
"""The synchronous client of ``agentmem serve`` (on ``httpx.Client``, safe to share between threads).

Every operation of a bound memory is a method call (``m.recall(...)``);
:func:`agentmem.connect` checks the key, after which ``bind`` needs no request.

Example:
    >>> import agentmem
    >>> with agentmem.connect(url, api_key=key) as client:  # doctest: +SKIP
    ...     m = client.bind(user_id="u1", session_id="s1")
    ...     m.remember("I prefer uv over pip", memory_type="preference")
    ...     (m.recall("which Python package manager do I prefer?")).items[0].content
    'I prefer uv over pip'
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
from ._ops_sync import BoundOps, KnowledgeOps, StateOps, WorkingOps
from ._transport import plain_http_transport


class Client:
    """A connection to an agentmem server: the remote twin of :class:`~agentmem.AgentMemory`.

    Obtain it with :func:`agentmem.connect`. It holds one connection pool (share it
    rather than opening one per call); close it with :meth:`close` or use it as a context
    manager.

    Args:
        url: The server's root URL (``http://127.0.0.1:8720``).
        api_key: A key from ``agentmem keys create``; it decides the tenant.
        timeout: Seconds a request may take.
        max_retries: Retries of a request that got 429 or could not connect.
        transport: An ``httpx`` transport to use instead of the network one.

    Example:
        >>> client = connect("http://127.0.0.1:8720", api_key=key)  # doctest: +SKIP
        >>> (client.bind(user_id="u1").recall("tea")).total  # doctest: +SKIP
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str,
        timeout: float = shared.DEFAULT_TIMEOUT,
        max_retries: int = shared.DEFAULT_MAX_RETRIES,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.options = shared.options(url, api_key, timeout, max_retries)
        wire = transport or plain_http_transport(self.options.url)
        self._http = httpx.Client(
            base_url=self.options.url,
            headers=self.options.headers(),
            timeout=self.options.timeout,
            transport=wire,
        )
        self._key: ApiKey | None = None
        self._op_urls: dict[str, httpx.URL] = {}

    def __repr__(self) -> str:
        return f"Client(url={self.options.url!r})"

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

    def request(self, method: str, path: str | httpx.URL, **kwargs: Any) -> httpx.Response:
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
            wait = shared.should_retry(error, response, attempt)
            if wait is None or attempt >= self.options.max_retries:
                if error is not None:
                    raise shared.transport_error(error, self.options) from error
                assert response is not None
                return response
            attempt += 1
            time.sleep(wait)

    def call(self, op: str, identity: Identity, args: Mapping[str, Any]) -> Any:
        """Run operation ``op`` (see :data:`agentmem.wire.OPS`) as ``identity``."""
        body = shared.op_body(op, identity, args)
        url = self._op_urls.get(op)
        if url is None:
            url = self._op_urls[op] = httpx.URL(self.options.url + PREFIX + op)
        response = self.request("POST", url, content=body)
        return shared.result_of(op, response)

    def whoami(self) -> ApiKey:
        """The key this client presents (tenant, pinned user/agent, admin); fetched once."""
        if self._key is None:
            self._key = shared.key_of(self.request("GET", "/v1/whoami"))
        return self._key

    def bind(
        self,
        tenant_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
    ) -> RemoteBoundMemory:
        """A remote bound memory for one identity within the key's tenant.

        ``tenant_id`` may be omitted (the key's); a pinned user or agent is used when none is
        given.

        Raises:
            AuthError: another tenant, or another user/agent than the key is pinned to.
            RemoteError: the key could not be checked``).
        """
        key = self.whoami()
        identity = shared.bind_identity(key, tenant_id, user_id, agent_id, session_id)
        return RemoteBoundMemory(self, identity)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the server's indexes caught up with every write of the key's tenant
        (with an operator key: of every tenant); True if they did."""
        body = shared.json_body({"timeout": timeout})
        return bool(shared.payload(self.request("POST", "/v1/flush", content=body))["result"])

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
        data = shared.payload(self.request("GET", "/v1/admin/stats"))
        data["stats"] = decode(Stats, data["stats"])
        return dict(data)

    def doctor(self) -> DoctorReport:
        """The ``agentmem doctor`` report of the key's tenant (an admin key), or of the whole
        served store (an operator key)."""
        data = shared.payload(self.request("GET", "/v1/admin/doctor"))
        report: DoctorReport = decode(DoctorReport, data["report"])
        return report

    def erase(
        self, *, tenant_id: str, user_id: str | None = None, agent_id: str | None = None
    ) -> ErasureReceipt:
        """Erase the key's tenant, or a user and/or agent of it, from every store of the
        served data dir (an admin key; see :meth:`agentmem.AgentMemory.erase`)."""
        body = shared.erase_body(self.whoami(), tenant_id, user_id, agent_id)
        data = shared.payload(self.request("POST", "/v1/admin/erase", content=body))
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
        Returns the counts (:class:`~agentmem.results.ImportCounts`)."""
        body = shared.import_body(lines, first_line, user_id, agent_id, session_id, batch_size)
        data = shared.payload(self.request("POST", "/v1/admin/import", content=body))
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
                raise shared.error_of(response)
            for line in response.iter_lines():
                if line.strip():
                    yield orjson.loads(line)


class RemoteKnowledge(KnowledgeOps):
    """``memory.knowledge`` of a remote bound memory (see
    :class:`agentmem.tiers.knowledge.Knowledge`)."""

    def __init__(self, bound: RemoteBoundMemory) -> None:
        self._bound = bound

    def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        return self._bound._call(op, args)

    def search(
        self, query: str, options: RecallOptions | None = None, **kwargs: Unpack[RecallKwargs]
    ) -> RecallResult:
        """Recall over knowledge only (``recall(query, scope="knowledge", ...)``)."""
        return self._bound.recall(query, knowledge_options(options, **kwargs))


class RemoteState(StateOps):
    """``memory.state`` of a remote bound memory (the bound agent's key-value state)."""

    def __init__(self, bound: RemoteBoundMemory) -> None:
        self._bound = bound

    def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        return self._bound._call(op, args)


class RemoteWorking(WorkingOps):
    """``memory.working`` of a remote bound memory: the session's working memory on the
    server (see :class:`agentmem.tiers.working.WorkingMemory`); ``working.snapshot()``
    reads the window, summary and token counts together."""

    def __init__(self, bound: RemoteBoundMemory) -> None:
        self._bound = bound

    def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        return self._bound._call(op, args)

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

    def compact(self, *, keep: int | None = None) -> CompactionResult:
        """Fold the window into the reference summary (the bound memory's ``compact``)."""
        return self._bound.compact(keep=keep)

    def context_messages(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> list[dict[str, Any]]:
        """The messages to send to a model (the bound memory's ``context_messages``)."""
        return self._bound.context_messages(
            model_window=model_window, budget_ratio=budget_ratio, max_messages=max_messages
        )

    def prompt_view(
        self,
        *,
        model_window: int | None = None,
        budget_ratio: float = 0.8,
        max_messages: int | None = None,
    ) -> PromptView:
        """What a prompt of the session holds, as stored rows (the bound memory's
        ``prompt_view``)."""
        return self._bound.prompt_view(
            model_window=model_window, budget_ratio=budget_ratio, max_messages=max_messages
        )


class RemoteBoundMemory(BoundOps):
    """One identity's memory on a server: every operation of :class:`~agentmem.BoundMemory`
    , returning the same types. Obtain it with :meth:`Client.bind`.

    Example:
        >>> m = client.bind(user_id="u1", session_id="s1")  # doctest: +SKIP
        >>> m.add_message("user", "My order 4711 arrived damaged")  # doctest: +SKIP
        >>> (m.recall("damaged order")).items  # doctest: +SKIP
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
        return f"RemoteBoundMemory(tenant_id={i.tenant_id!r}, user_id={i.user_id!r}, agent_id={i.agent_id!r}, session_id={i.session_id!r})"

    def _call(self, op: str, args: Mapping[str, Any]) -> Any:
        return self._client.call(op, self._identity, args)

    @property
    def working(self) -> RemoteWorking:
        """This session's working memory on the server (see
        :attr:`agentmem.BoundMemory.working`)."""
        return RemoteWorking(self)

    @property
    def knowledge(self) -> RemoteKnowledge:
        """Agent-managed knowledge (see :attr:`agentmem.BoundMemory.knowledge`)."""
        return RemoteKnowledge(self)

    @property
    def state(self) -> RemoteState:
        """Key-value state of the bound agent (see :attr:`agentmem.BoundMemory.state`)."""
        return RemoteState(self)


__all__ = ["Client", "RemoteBoundMemory", "RemoteKnowledge", "RemoteState", "RemoteWorking"]
