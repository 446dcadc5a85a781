"""MCP over streamable HTTP at ``/mcp``: the memory tools, with identity from the API key.

Each request is authenticated and rate-limited like every other. The identity is the key's
tenant (and pinned user/agent); a key that is not pinned may name a user, agent and session
with the query parameters ``user_id``, ``agent_id`` and ``session_id`` of the MCP URL
(``http://host:8720/mcp?user_id=u1&session_id=chat-42``), within its tenant only (a
``tenant_id`` parameter other than the key's tenant is refused).

Every distinct (key, identity) gets its own MCP server (the tool set of
:mod:`agentmem.tools.mcp` bound to that identity, without the agent-state tools for a key
pinned to a user: see :mod:`.pins`) behind the SDK's
``StreamableHTTPSessionManager``, started on first use and kept while the server runs (the
least recently used are stopped past :data:`MAX_IDENTITIES`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from ..errors import AgentMemError, ValidationError
from ..models import Identity
from ..tools.mcp import build_server
from .keys import ApiKey, resolve_identity
from .pins import mcp_tools
from .state import ServerState

log = logging.getLogger("agentmem.server.mcp")

#: MCP servers (one per key and identity) kept running at most.
MAX_IDENTITIES = 256
#: Added to a tool call that failed for want of an identity: over HTTP, none of the
#: in-process ways (``AgentMemory.bind``, ``agentmem mcp --user``) applies.
IDENTITY_HINT = (
    "Over HTTP the identity comes from the MCP URL: connect to /mcp?user_id=USER (with "
    "&agent_id=AGENT and &session_id=SESSION as needed), or use an API key pinned to the user."
)

ErrorResponder = Callable[[AgentMemError, Scope, Receive, Send], Awaitable[None]]


class McpGateway:
    """The ASGI app behind ``/mcp`` (started and stopped by the server's lifespan)."""

    def __init__(self, state: ServerState, respond_error: ErrorResponder) -> None:
        self.state = state
        self.store = state.store
        self.respond_error = respond_error
        self._tg: TaskGroup | None = None
        self._managers: OrderedDict[
            tuple[str, Identity], tuple[StreamableHTTPSessionManager, anyio.Event]
        ] = OrderedDict()
        self._lock = anyio.Lock()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled (the lifespan runs this in its task group)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await anyio.sleep_forever()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            key = self.state.principal(headers)
            identity = resolve_identity(key, **_identity_params(scope))
        except AgentMemError as exc:
            await self.respond_error(exc, scope, receive, send)
            return
        manager = await self._manager(key, identity)
        await manager.handle_request(scope, receive, send)

    async def _manager(self, key: ApiKey, identity: Identity) -> StreamableHTTPSessionManager:
        slot = (key.id, identity)
        async with self._lock:
            found = self._managers.get(slot)
            if found is not None:
                self._managers.move_to_end(slot)
                return found[0]
            if self._tg is None:
                raise RuntimeError("the MCP gateway is not running")
            bound = self.store.bind(
                identity.tenant_id, identity.user_id, identity.agent_id, identity.session_id
            )
            server = build_server(bound, mcp_tools(key), identity_hint=IDENTITY_HINT)
            manager = StreamableHTTPSessionManager(server)
            stop = anyio.Event()
            await self._tg.start(_run_manager, manager, stop)
            self._managers[slot] = (manager, stop)
            while len(self._managers) > MAX_IDENTITIES:
                _, (_, old_stop) = self._managers.popitem(last=False)
                old_stop.set()
            return manager


async def _run_manager(
    manager: StreamableHTTPSessionManager,
    stop: anyio.Event,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    async with manager.run():
        task_status.started()
        await stop.wait()


_PARAMS = ("tenant_id", "user_id", "agent_id", "session_id")


def _identity_params(scope: Scope) -> dict[str, str | None]:
    query = parse_qs(scope.get("query_string", b"").decode("utf-8", "replace"))
    out: dict[str, str | None] = {}
    for name, values in query.items():
        if name not in _PARAMS:
            continue
        if len(values) != 1:
            raise ValidationError(name, "give it at most once")
        out[name] = values[0]
    return out


__all__ = ["IDENTITY_HINT", "MAX_IDENTITIES", "McpGateway"]
