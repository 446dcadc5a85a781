"""An exception a route did not expect: a 500 naming its type (the traceback goes to the
server log, not to the client), and the connection stays usable for the client's next call."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from agentmem import AgentMemory, BoundMemory
from agentmem.server.app import create_app
from agentmem.server.keys import create_key


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    def broken(self: Any) -> list[str]:
        raise RuntimeError("a bug the route did not expect")

    monkeypatch.setattr(BoundMemory, "sessions", broken)
    with AgentMemory(tmp_path / "home", background=False) as store:
        key = create_key(store.records, tenant_id="acme").key
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        config = uvicorn.Config(create_app(store, run_jobs=False), port=port, log_level="error")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}", key
        finally:
            server.should_exit = True
            thread.join(10)


def test_a_500_keeps_the_connection_for_the_next_call(served: tuple[str, str]) -> None:
    url, key = served
    ops = {"identity": {"user_id": "u1", "session_id": "s1"}, "args": {}}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as client:
        for _ in range(5):
            failed = client.post("/v1/ops/sessions", json=ops)
            assert failed.status_code == 500
            assert "internal server error (RuntimeError)" in failed.text
            assert "did not expect" not in failed.text  # the message stays in the log
            assert client.get("/v1/whoami").status_code == 200  # same connection, still open
