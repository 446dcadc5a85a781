"""Helpers for the MCP server tests: spawn ``agentmem ... mcp`` and talk to it over stdio.

The server runs as a real subprocess (``python -m agentmem.cli --home DIR mcp ...``) and is
driven by the official SDK's own client (``stdio_client`` + ``ClientSession``).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

Spawn = Callable[..., Any]


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    """Where the spawned servers' stderr goes (shown when a test fails)."""
    return tmp_path / "mcp-server.log"


@pytest.fixture
def spawn(server_log: Path) -> Spawn:
    """``async with spawn(home, *cli_args, env=None) as session``: an initialised session."""

    @asynccontextmanager
    async def start(
        home: Path, *args: str, env: Mapping[str, str] | None = None
    ) -> AsyncIterator[ClientSession]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "agentmem.cli", "--home", str(home), *args],
            env=dict(env or {}),
        )
        with server_log.open("a") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(60):
                    await session.initialize()
                yield session

    return start
