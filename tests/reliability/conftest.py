"""Fixtures of the reliability tests (crash safety, doctor, failures, concurrency, hostile input).

- ``hash_embedder``: a fresh :class:`HashEmbedder` (deterministic, fast; see
  ``_reliability_support``).
- ``snapshot(mem)``: every row of the records tables plus a content hash, read through a
  separate read-only SQLite connection, for "a rejected call changes nothing" checks.
- ``spawn(*args)``: start ``_reliability_support.py`` in a subprocess with the project's
  interpreter; a reader thread collects its stdout lines (``proc.lines``), so a test can wait
  for a line and SIGKILL it at that point. Every process is killed at teardown.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _reliability_support import HashEmbedder

from agentmem import AgentMemory

SUPPORT = Path(__file__).with_name("_reliability_support.py")
TABLES = ("memories", "payloads", "partitions", "audit_log", "agent_state")


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


def read_snapshot(home: Path) -> tuple[int, str]:
    """(row count of ``memories``, sha256 over every row of every records table)."""
    conn = sqlite3.connect(f"file:{home / 'records.sqlite3'}?mode=ro", uri=True)
    try:
        digest = hashlib.sha256()
        for table in TABLES:
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY rowid"):
                digest.update(repr(row).encode("utf-8", "surrogatepass"))
        n = int(conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
        return n, digest.hexdigest()
    finally:
        conn.close()


@pytest.fixture
def snapshot() -> Callable[[AgentMemory], tuple[int, str]]:
    return lambda mem: read_snapshot(mem.home)


class Proc:
    """A subprocess whose stdout lines are collected by a thread."""

    def __init__(self, args: list[str]) -> None:
        self._err = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed by the OS
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
        self.popen = subprocess.Popen(
            [sys.executable, str(SUPPORT), *args],
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pred: Callable[[str], bool], timeout: float = 90.0) -> str:
        """The first line matching ``pred`` (fails the test after ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            lines = self.lines
            for line in lines[seen:]:
                if pred(line):
                    return line
            seen = len(lines)
            if self.popen.poll() is not None and len(self.lines) == seen:
                self._err.seek(0)
                err = self._err.read()
                pytest.fail(f"subprocess exited ({self.popen.returncode}): {err[-2000:]}")
            time.sleep(0.01)
        pytest.fail(f"no matching line within {timeout}s; last lines: {self.lines[-5:]}")

    def kill(self) -> list[str]:
        """SIGKILL, wait, and return every line it printed."""
        self.popen.kill()
        self.popen.wait(30)
        self._reader.join(30)
        return list(self.lines)


@pytest.fixture
def spawn() -> Iterator[Callable[..., Proc]]:
    procs: list[Proc] = []

    def start(*args: Any) -> Proc:
        p = Proc([str(a) for a in args])
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.popen.poll() is None:
            p.popen.kill()
            p.popen.wait(30)
