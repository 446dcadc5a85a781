"""``agentmem.connect`` and ``agentmem.connect_async``: a client whose key is checked.

The one place the two clients differ in how they start: the sync client checks the key when
connecting and may look it up again later; the async one has no later (``bind`` makes no
request), so :func:`connect_async` returns an :class:`AsyncConnection` to await or enter.
"""

from __future__ import annotations

from collections.abc import Generator
from types import TracebackType
from typing import Any

from ..errors import AgentMemError
from . import _wire as shared
from .aio import AsyncClient
from .sync import Client


def connect(
    url: str,
    *,
    api_key: str,
    timeout: float = shared.DEFAULT_TIMEOUT,
    max_retries: int = shared.DEFAULT_MAX_RETRIES,
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
    timeout: float = shared.DEFAULT_TIMEOUT,
    max_retries: int = shared.DEFAULT_MAX_RETRIES,
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


__all__ = ["AsyncConnection", "connect", "connect_async"]
