"""A real ``agentmem serve`` in a subprocess on a free loopback port, for tests.

``ServerProcess(home, env={...}).start()`` runs ``python -m agentmem.cli --home HOME serve
--port 0`` and waits for its ``ready on http://127.0.0.1:PORT`` line (printed once uvicorn
accepts connections, after the store is open and the embedder loaded). Its stdout and stderr
are kept (``output()``) so a test can check what the server logged. ``create_key`` writes a key
straight into the data dir's records store, as ``agentmem keys create`` does beside a running
server.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmem.client import Client

from agentmem.server.keys import create_key, revoke_key
from agentmem.storage.datadir import RECORDS_FILE
from agentmem.storage.records import RecordStore

_READY = re.compile(r"ready on (http://[0-9.]+:\d+)")


class ServerProcess:
    """One server subprocess (see the module docstring)."""

    def __init__(
        self,
        home: Path,
        *,
        env: dict[str, str] | None = None,
        global_args: list[str] | None = None,
        serve_args: list[str] | None = None,
        command: str = "serve",
    ) -> None:
        self.home = Path(home)
        #: Global flags put before ``serve`` (e.g. ``["--chroma-url", URL]``).
        self.global_args = list(global_args or [])
        #: Flags of ``serve`` itself (e.g. ``["--metrics-port", "0"]``).
        self.serve_args = list(serve_args or [])
        #: The command run: ``serve``, or another that announces ``ready on URL`` (``ui``).
        self.command = command
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
        self.env.update(env or {})
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._ready = threading.Event()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 90.0) -> ServerProcess:
        self._ready.clear()
        self.url = ""
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentmem.cli",
                "--home",
                str(self.home),
                *self.global_args,
                self.command,
                "--port",
                "0",
                *self.serve_args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        if not self._ready.wait(timeout) or not self.url:
            self.kill()
            raise RuntimeError(f"server did not become ready:\n{self.output()}")
        return self

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._lock:
                self._lines.append(line)
            found = _READY.search(line)
            if found:
                self.url = found.group(1)
                self._ready.set()
        self._ready.set()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        """Send ``sig`` and wait for the exit status."""
        proc = self.proc
        if proc is None:
            return 0
        if proc.poll() is None:
            proc.send_signal(sig)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait(10)

    def kill(self) -> int:
        """SIGKILL: no drain, no flush, no clean close."""
        return self.stop(signal.SIGKILL)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def output(self) -> str:
        with self._lock:
            return "".join(self._lines)

    def wait_for(self, pattern: str, timeout: float = 30.0) -> str:
        """The first output line matching ``pattern`` (waits for it)."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern)
        while time.monotonic() < deadline:
            with self._lock:
                for line in self._lines:
                    if rx.search(line):
                        return line
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r} in:\n{self.output()}")

    # -- keys (written beside the running server, as `agentmem keys` does) -------------------
    def create_key(
        self,
        tenant: str,
        *,
        user: str | None = None,
        agent: str | None = None,
        admin: bool = False,
        operator: bool = False,
    ) -> str:
        records = RecordStore(self.home / RECORDS_FILE)
        try:
            created = create_key(
                records,
                tenant_id=tenant,
                user_id=user,
                agent_id=agent,
                admin=admin,
                operator=operator,
            )
        finally:
            records.close()
        return created.key

    def revoke_key(self, key: str) -> None:
        records = RecordStore(self.home / RECORDS_FILE)
        try:
            revoke_key(records, key.split("_")[1])
        finally:
            records.close()


#: The ``connect_as`` fixture of tests/server: ``connect_as(tenant, user_id=..., agent_id=...)``
#: gives a connected client with a new key of those pins.
ConnectAs = Callable[..., "Client"]
