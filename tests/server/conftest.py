"""Fixtures of the server tests: a real ``agentmem serve`` subprocess.

- ``server``: one server for the package's tests (a module that needs other settings defines
  its own), on a fresh data dir, on a free loopback port.
- ``tenant``: a fresh tenant id per test, so tests sharing a server never see each other.
- ``connect_as(tenant, user=None, agent=None, admin=False)``: a new key and a connected
  :class:`agentmem.client.Client`, closed after the test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from _agentmem_server import ConnectAs, ServerProcess

import agentmem
from agentmem.client import Client


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("served"), env={"AGENTMEM_RATE_LIMIT": "0"})
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def connect_as(server: ServerProcess) -> Iterator[ConnectAs]:
    opened: list[Client] = []

    def connect(tenant: str, **pins: Any) -> Client:
        client = agentmem.connect(server.url, api_key=server.create_key(tenant, **pins))
        opened.append(client)
        return client

    yield connect
    for client in opened:
        client.close()
