"""The client of ``agentmem serve``: the same API as the embedded memory, over HTTP.

- :func:`connect` returns a :class:`Client` (shaped like :class:`~agentmem.AgentMemory`);
  ``client.bind(user_id=..., agent_id=..., session_id=...)`` returns a
  :class:`RemoteBoundMemory` with every operation of :class:`~agentmem.BoundMemory`,
  returning the same types and raising the same errors.
- :func:`connect_async` is the asyncio twin (``httpx.AsyncClient``): ``async with
  connect_async(...) as client`` (or ``await connect_async(...)``) gives an
  :class:`AsyncClient` whose bound memory's operations are coroutines.

Both need only ``httpx`` and ``orjson`` (``pip install agentmem-layer[client]``): importing
this package loads the models, the contract, the wire codec and the errors, never the engine
(``tests/core/test_thin_client.py``). ``sync.py`` is generated from ``aio.py``
(``make generate``).
"""

from __future__ import annotations

from .aio import (
    AsyncClient,
    AsyncRemoteBoundMemory,
    AsyncRemoteKnowledge,
    AsyncRemoteState,
    AsyncRemoteWorking,
)
from .connect import AsyncConnection, connect, connect_async
from .sync import Client, RemoteBoundMemory, RemoteKnowledge, RemoteState, RemoteWorking

__all__ = [
    "AsyncClient",
    "AsyncConnection",
    "AsyncRemoteBoundMemory",
    "AsyncRemoteKnowledge",
    "AsyncRemoteState",
    "AsyncRemoteWorking",
    "Client",
    "RemoteBoundMemory",
    "RemoteKnowledge",
    "RemoteState",
    "RemoteWorking",
    "connect",
    "connect_async",
]
