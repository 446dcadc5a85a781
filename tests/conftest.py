"""Fixtures shared by every test package.

- ``shared_embedder``: one loaded default embedder (int8 all-MiniLM-L6-v2 behind the query
  cache) for the whole session, so the model is read from disk once.
- ``make_memory(**kw)``: builder that opens an :class:`~agentmem.AgentMemory` on a fresh
  directory under ``tmp_path`` (or on ``path=`` to reopen one), with the shared embedder
  unless ``embedder=`` is given, and closes every memory it opened after the test.
- ``chroma_server`` (session): a real ``chroma run`` on loopback; ``chroma_url`` and
  ``chroma_client`` give each test a Chroma database of its own on it.
- ``postgres_server``: one real PostgreSQL server for the session (skipped, with the reason,
  where the binaries are missing); ``records_url``: None (SQLite in the data dir) or, in
  modules marked ``both_backends``, also a fresh Postgres schema, so ``make_memory`` opens
  every memory of those tests on each backend in turn.
- Temporary dirs (``tmp_path`` and every other) on a RAM disk when the machine has one with
  room and no ``TMPDIR`` or ``--basetemp`` says otherwise (see :func:`pytest_configure`).
- An autouse fixture that removes ``AGENTMEM_*`` and ``OTEL_*`` variables from the
  environment, points ``AGENTMEM_HOME`` at a temporary directory and fixes the console width
  rich renders to (``COLUMNS``, also for subprocesses), so no test depends on (or writes to)
  the developer's real configuration or data dir, nor on the width of the terminal it runs in.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _chroma_server import ChromaServer, chroma_executable
from _postgres_server import PostgresServer, missing_reason

from agentmem import AgentMemory
from agentmem.config import ChromaAddress
from agentmem.embeddings import CachedEmbedder, default_embedder
from agentmem.storage.chroma_server import http_client

#: A RAM disk, and the room it must have free to hold the suite's temporary dirs (a passed test's
#: ``tmp_path`` is removed when it ends: ``tmp_path_retention_policy`` in pyproject.toml).
RAM_DISK = Path("/dev/shm")
RAM_DISK_ROOM = 4 * 2**30


def pytest_configure(config: pytest.Config) -> None:
    """Put the temporary dirs on :data:`RAM_DISK` when it has room.

    Every store under test commits, and syncs to disk, on every write: on the 2-core machine
    this was measured on, Chroma's upsert took 24 ms on disk and 2.4 ms in RAM, and
    store-heavy test files ran 40% faster. No test checks what reaches a disk: the crash
    tests kill processes, and a killed process's writes are in the page cache either way.
    """
    if "TMPDIR" in os.environ or config.option.basetemp:
        return  # the caller chose
    try:
        roomy = os.access(RAM_DISK, os.W_OK) and shutil.disk_usage(RAM_DISK).free >= RAM_DISK_ROOM
    except OSError:
        return
    if roomy:
        tempfile.tempdir = str(RAM_DISK)


@pytest.fixture(scope="session")
def shared_embedder() -> CachedEmbedder:
    """The default embedder, loaded once per test session."""
    embedder = default_embedder()
    embedder.embed_query("warm up the model")  # load the ONNX session and tokenizer now
    return embedder


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A running PostgreSQL 15 on 127.0.0.1 for the whole session."""
    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
    server = PostgresServer()
    yield server
    server.stop()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "records_url" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "both_backends"
    ):
        metafunc.parametrize("records_url", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def records_url(request: pytest.FixtureRequest) -> Callable[[], str] | None:
    """Where ``make_memory`` puts the records: None (SQLite in each data dir) or a maker of
    new Postgres schemas (one per new data dir)."""
    if getattr(request, "param", "sqlite") == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.new_schema


#: The width of every console the CLI renders to in tests (a terminal's, or rich's default
#: of 80 for a pipe, would decide what a table cuts).
CONSOLE_WIDTH = 120


@pytest.fixture(scope="session")
def _session_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("agentmem-home")


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch, _session_home: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("AGENTMEM_", "OTEL_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AGENTMEM_HOME", str(_session_home))
    monkeypatch.setenv("COLUMNS", str(CONSOLE_WIDTH))


MakeMemory = Callable[..., AgentMemory]


@pytest.fixture
def make_memory(
    tmp_path: Path, shared_embedder: CachedEmbedder, records_url: Callable[[], str] | None
) -> Iterator[MakeMemory]:
    """Builder: ``make_memory(path=None, **AgentMemory kwargs) -> AgentMemory``.

    The records go where ``records_url`` says (each backend in turn in modules marked
    ``both_backends``): on Postgres each new dir gets its own schema, and reopening a dir
    opens its schema again.

    Each call without ``path`` gets its own new directory; pass the ``home`` of an earlier
    (closed) memory as ``path`` to reopen it. Every memory opened here is closed afterwards.
    """
    opened: list[AgentMemory] = []
    counter = 0
    schemas: dict[Path, str] = {}

    def build(path: str | os.PathLike[str] | None = None, **kw: Any) -> AgentMemory:
        nonlocal counter
        if path is None:
            counter += 1
            path = tmp_path / f"mem{counter}"
        kw.setdefault("embedder", shared_embedder)
        if records_url is not None and "records_url" not in kw:
            home = Path(path).expanduser().resolve()
            if home not in schemas:
                schemas[home] = records_url()
            kw["records_url"] = schemas[home]
        mem = AgentMemory(path, **kw)
        opened.append(mem)
        return mem

    yield build
    for mem in reversed(opened):
        mem.close()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A running ``chroma run`` for the session (skipped when chromadb has no ``chroma``)."""
    executable = chroma_executable()
    if executable is None:
        pytest.skip("the `chroma` console script (shipped with chromadb) is not installed")
    server = ChromaServer(executable, tmp_path_factory.mktemp("chroma-server")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def chroma_url(chroma_server: ChromaServer) -> str:
    """The session's Chroma server with a database of this test's own (``?database=``)."""
    return f"{chroma_server.url}?database=t{uuid.uuid4().hex}"


@pytest.fixture
def chroma_client(chroma_url: str) -> Any:
    """An ``HttpClient`` on this test's database of the session's Chroma server."""
    return http_client(ChromaAddress.parse(chroma_url))
