"""``served(store)``: the server's app for an open memory, run by uvicorn on a free loopback
port in a thread of the test process, so a test can read what the app keeps in memory (its
metrics, the spans of an in-process exporter) while real HTTP requests reach it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI

from agentmem import AgentMemory
from agentmem.server.app import create_app
from agentmem.server.state import ServerState


@dataclass
class Served:
    url: str
    app: FastAPI

    @property
    def state(self) -> ServerState:
        state: ServerState = self.app.state.agentmem
        return state


@contextmanager
def served(
    store: AgentMemory, *, run_jobs: bool = False, timeout: float = 60.0
) -> Iterator[Served]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(store, run_jobs=run_jobs)
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the in-process server did not start")
        time.sleep(0.01)
    try:
        yield Served(f"http://127.0.0.1:{port}", app)
    finally:
        server.should_exit = True
        thread.join(30)
