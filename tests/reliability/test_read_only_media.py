"""A data dir on read-only media (or another user's dir) opens read-only and answers.

The dir is made unwritable for real: as root, a read-only bind mount of it (root ignores
permission bits, not a read-only mount); otherwise its permission bits. On it,
``AgentMemory(path, read_only=True)`` recalls by keyword and by meaning (not degraded),
``stats`` and ``doctor`` work (doctor finds nothing wrong), a write is refused with
``StorageError``, the CLI's ``stats`` and ``doctor`` work, and nothing in the dir is created
or changed (no ``LOCK``, no SQLite ``-shm``, no Tantivy lock file). The private dirs the
indexes are read through are gone after close.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _legacy_schema import downgrade

from agentmem import AgentMemory, StorageError
from agentmem.cli import _common, main
from agentmem.maintenance.doctor import diagnose

IDENT = {"tenant_id": "acme", "user_id": "u1", "session_id": "s1"}
FACTS = [
    "The user is allergic to peanuts",
    "The staging deploy key is KX-93-ZQ-771",
    "Our office moved to Lisbon last spring",
]


def _chmod_tree(root: Path, writable: bool) -> None:
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        if path.is_dir():
            path.chmod(0o755 if writable else 0o555)
        else:
            path.chmod(0o644 if writable else 0o444)


@pytest.fixture
def read_only_view(tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """``read_only_view(dir) -> path``: ``dir`` seen through a path this process cannot
    write to."""
    undo: list[Callable[[], None]] = []

    def make(source: Path) -> Path:
        if os.geteuid() != 0:
            _chmod_tree(source, writable=False)
            undo.append(lambda: _chmod_tree(source, writable=True))
            return source
        mount = tmp_path / "read-only-mount"
        mount.mkdir()
        steps = (
            ["mount", "--bind", str(source), str(mount)],
            ["mount", "-o", "remount,bind,ro", str(mount)],
        )
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                subprocess.run(["umount", "-l", str(mount)], capture_output=True)
                pytest.skip(f"cannot make a read-only bind mount: {done.stderr.strip()}")
        # lazily: the test process may still map files of the dir until it collects them
        undo.append(lambda: subprocess.run(["umount", "-l", str(mount)], check=True))
        return mount

    yield make
    for step in reversed(undo):
        step()


def _listing(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


def test_read_only_media_open_recall_stats_and_doctor(
    make_memory,
    read_only_view,
    shared_embedder: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mem = make_memory(background=False)
    m = mem.bind(**IDENT)
    ids = [r.id for r in m.remember_many(FACTS)]
    m.add_message("user", "Please book the Thursday retrospective in room Orion")
    mem.flush()
    source = mem.home
    mem.close()
    before = _listing(source)
    private = tmp_path / "private-tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))

    media = read_only_view(source)
    with pytest.raises(OSError):
        (media / "probe").write_text("x")
    with AgentMemory(media, embedder=shared_embedder, read_only=True) as ro:
        bound = ro.bind(**IDENT)
        by_meaning = bound.recall("which food could make them ill?")
        assert by_meaning.items[0].id == ids[0] and by_meaning.degraded is False
        by_keyword = bound.recall("KX-93-ZQ-771")
        assert by_keyword.items[0].id == ids[1] and by_keyword.degraded is False
        assert ro.stats().live == len(FACTS) + 1
        report = diagnose(ro.context)
        assert report.ok, report
        assert report.vectors == report.keyword_docs == len(FACTS) + 1
        with pytest.raises(StorageError, match="read-only"):
            bound.remember("A write on read-only media")

    # a relative path too (`agentmem --home ./mem stats`): the private views link to the dir
    monkeypatch.chdir(media.parent)
    with AgentMemory(Path(media.name), embedder=shared_embedder, read_only=True) as ro:
        found = ro.bind(**IDENT).recall("which food could make them ill?")
        assert found.items[0].id == ids[0] and found.degraded is False

    monkeypatch.setattr(_common, "shared_embedder", lambda *_: shared_embedder)
    for command in ("stats", "doctor"):
        for home in (str(media), media.name):
            capsys.readouterr()
            assert main(["--home", home, command]) == 0, capsys.readouterr()
    assert _listing(source) == before
    assert not (source / "LOCK").exists() or "LOCK" in before
    assert not any(private.iterdir())  # the views of the indexes were removed at close
    shutil.rmtree(private)


def _schema_version(home: Path) -> int:
    conn = sqlite3.connect(f"file:{home / 'records.sqlite3'}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0])
    finally:
        conn.close()


def test_a_read_only_open_of_an_older_data_dir_says_how_to_upgrade_it(
    make_memory: Any, shared_embedder: Any
) -> None:
    """Beside an older agentmem's writer, or on read-only media, the dir cannot be migrated:
    the open says so instead of failing on the first table the old schema lacks."""
    mem = make_memory(background=False)
    mem.bind(**IDENT).remember(FACTS[0])
    home = mem.home
    mem.close()
    conn = sqlite3.connect(home / "records.sqlite3")
    try:
        downgrade(conn, 4)  # as an agentmem of schema 4 left it
    finally:
        conn.close()
    with pytest.raises(StorageError, match="older agentmem") as caught:
        AgentMemory(home, embedder=shared_embedder, read_only=True)
    assert "schema version 4" in str(caught.value) and "doctor" in str(caught.value)
    assert _schema_version(home) == 4  # nothing changed
    AgentMemory(home, embedder=shared_embedder, background=False).close()  # migrates it
    with AgentMemory(home, embedder=shared_embedder, read_only=True) as ro:
        assert ro.bind(**IDENT).recall("peanuts").items[0].content == FACTS[0]
