"""The client of ``agentmem serve``: the same API as the embedded memory, over HTTP.

- :func:`connect` returns a :class:`Client` (shaped like :class:`~agentmem.AgentMemory`);
  ``client.bind(user_id=..., agent_id=..., session_id=...)`` returns a
  :class:`RemoteBoundMemory` with every operation of :class:`~agentmem.BoundMemory`,
  returning the same types and raising the same errors.
- :func:`connect_async` is the asyncio twin (``httpx.AsyncClient``): ``async with
  connect_async(...) as client`` (or ``await connect_async(...)``) gives an
  :class:`AsyncClient` whose bound memory's operations are coroutines.

Both need only ``httpx`` (a core dependency), not the server extra.
"""

from __future__ import annotations

from .aio import (
    AsyncClient,
    AsyncConnection,
    AsyncRemoteBoundMemory,
    AsyncRemoteKnowledge,
    AsyncRemoteState,
    connect_async,
)
from .sync import Client, RemoteBoundMemory, RemoteKnowledge, RemoteState, connect

__all__ = [
    "AsyncClient",
    "AsyncConnection",
    "AsyncRemoteBoundMemory",
    "AsyncRemoteKnowledge",
    "AsyncRemoteState",
    "Client",
    "RemoteBoundMemory",
    "RemoteKnowledge",
    "RemoteState",
    "connect",
    "connect_async",
]
