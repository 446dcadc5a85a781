"""A real Chroma server (``chroma run``) for tests, shared by the whole session.

The server is the ``chroma`` console script shipped with chromadb, started on 127.0.0.1 on a
free port with its data under a temporary directory, and stopped at the end of the session.
Each test gets its own Chroma database on it (``chroma_url`` / ``chroma_client``), so tests
sharing the server never see each other's collections. Without the ``chroma`` script the
tests that need the server are skipped, saying so.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def chroma_executable() -> str | None:
    """The ``chroma`` script of this interpreter's chromadb, else one on PATH."""
    local = Path(sys.executable).with_name("chroma")
    if local.exists():
        return str(local)
    return shutil.which("chroma")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromaServer:
    """``chroma run --path DIR --host 127.0.0.1 --port PORT`` in a subprocess."""

    def __init__(self, executable: str, base: Path) -> None:
        self.executable = executable
        self.base = base
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log_path = base / "server.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> ChromaServer:
        with self._log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                [
                    self.executable,
                    "run",
                    "--path",
                    str(self.base / "data"),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
            )
        deadline = time.monotonic() + timeout
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"chroma run exited with {self._proc.returncode}: {self.log()[-2000:]}"
                )
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1).is_success:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"chroma run did not answer its heartbeat within {timeout} s")
            time.sleep(0.2)

    def log(self) -> str:
        return self._log_path.read_text(errors="replace")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
