"""Opening and releasing a data dir the way notebooks, forks and admin commands do."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmem import AgentMemory, DataDirLockedError, StorageError
from agentmem.cli import main
from agentmem.embeddings import CachedEmbedder
from agentmem.storage.keyword_index import KeywordIndex

IDENT = {"tenant_id": "acme", "user_id": "u1", "session_id": "s1"}

#: Opens the dir given as argv[1] in another process and prints "locked" or "opened".
PROBE = textwrap.dedent(
    """
    import sys
    from agentmem import AgentMemory, DataDirLockedError
    try:
        AgentMemory(sys.argv[1], background=False).close()
        print("opened")
    except DataDirLockedError as exc:
        print("locked", exc)
    """
)


def probe(home: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(home)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout.strip()


def test_a_collected_memory_releases_the_dir(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    home = tmp_path / "nb"
    mem = AgentMemory(home, embedder=shared_embedder)
    mem.bind(**IDENT).remember("Notebook fact about the ferry schedule")
    assert probe(home).startswith("locked")
    del mem
    gc.collect()
    assert probe(home) == "opened"


def test_rerunning_the_cell_reopens_the_same_store(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    home = tmp_path / "nb"
    mem = AgentMemory(home, embedder=shared_embedder)
    r = mem.bind(**IDENT).remember("The first cell wrote this")
    mem = AgentMemory(home, embedder=shared_embedder)  # the cell again: shares the open store
    gc.collect()  # the first object is gone; the store stays open for the second
    m = mem.bind(**IDENT)
    assert m.get(r.id).content == "The first cell wrote this"
    assert m.recall("what did the first cell write?").items[0].id == r.id
    mem.close()
    assert probe(home) == "opened"


def test_a_closed_memory_leaves_its_dir_alone(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    """``close()`` then removing the dir (a notebook's ``TemporaryDirectory``) must not race
    anything still writing there: Tantivy's reader used to reload after the closing commit,
    half a second later, and recreate its meta lock file in the half-removed dir."""
    home = tmp_path / "tmp-notebook-dir"
    mem = AgentMemory(home, embedder=shared_embedder)
    m = mem.bind(**IDENT)
    m.remember_many([f"Note {n} about the ferry schedule" for n in range(30)])
    mem.flush()
    m.recall("ferry")
    mem.close()
    # rmtree's walk, caught between two files: each index's meta.json is still there
    for path in home.rglob("*"):
        if path.is_file() and path.name != "meta.json":
            path.unlink()
    time.sleep(1.2)  # longer than the reader's 0.5 s poll of meta.json
    assert [p.name for p in home.rglob("*") if p.is_file()] == ["meta.json"]
    shutil.rmtree(home)


def test_a_closed_keyword_index_refuses_writes(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "keywords")
    index.close()
    with pytest.raises(StorageError, match="closed"):
        index.delete(["some-id"])
    index.close()  # idempotent


def test_keyword_index_errors_are_storage_errors(tmp_path: Path) -> None:
    """Tantivy raises ValueError (a writer whose worker died on a deleted file, a value it
    cannot store); the index says StorageError, which the indexer's repair of a deleted
    index looks for."""
    from agentmem.storage.keyword_index import KeywordDoc

    index = KeywordIndex(tmp_path / "keywords")
    unstorable = KeywordDoc("id1", "acme", "p", None, "memory", "fact", "user", "text")  # type: ignore[arg-type]
    with pytest.raises(StorageError, match="keyword index write failed"):
        index.add([unstorable])
    index.close()


def test_locked_error_says_what_works(tmp_path: Path, shared_embedder: CachedEmbedder) -> None:
    home = tmp_path / "held"
    with AgentMemory(home, embedder=shared_embedder, background=False):
        message = probe(home)
    assert message.startswith("locked")
    assert "agentmem --home DIR serve" in message and "agentmem.connect" in message
    assert "Chroma server" not in message


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_use_after_fork_raises_instead_of_hanging(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    mem = AgentMemory(tmp_path / "forked", embedder=shared_embedder)
    m = mem.bind(**IDENT)
    m.remember("Written before the fork")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: every call must fail fast with the fix in the message
        os.close(read)
        results = []
        for call in (lambda: m.recall("before the fork"), mem.flush, lambda: m.remember("x")):
            try:
                call()
                results.append("no error")
            except StorageError as exc:
                results.append(str(exc))
        os.write(write, json.dumps(results).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        results = json.loads(fh.read())
    os.waitpid(pid, 0)
    assert len(results) == 3
    for message in results:
        assert "forked child" in message and "agentmem serve" in message
    assert m.recall("before the fork").items  # the parent is unaffected
    mem.close()


HOLDER = textwrap.dedent(
    """
    import sys
    from agentmem import AgentMemory
    mem = AgentMemory(sys.argv[1])
    m = mem.bind("acme", user_id="u1", session_id="s1")
    m.remember("The holder process wrote this fact about invoices")
    m.add_message("user", "A message the holder stored")
    mem.flush()
    print("ready", flush=True)
    sys.stdin.readline()
    m.remember("written after the readers looked")
    mem.close()
    """
)


@pytest.fixture
def held_dir(tmp_path: Path) -> Iterator[Path]:
    """A data dir held open for writing by another process while the test runs."""
    home = tmp_path / "app"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        yield home
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=120) == 0
    finally:
        holder.kill()


def test_admin_commands_work_beside_a_running_writer(
    held_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--home", str(held_dir), "stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["live"] == 2
    assert main(["--home", str(held_dir), "doctor", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    assert main(["--home", str(held_dir), "export"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {line.get("content") for line in lines} >= {
        "The holder process wrote this fact about invoices",
        "A message the holder stored",
    }


def test_read_only_memory_recalls_and_refuses_writes(
    held_dir: Path, shared_embedder: CachedEmbedder
) -> None:
    with AgentMemory(held_dir, embedder=shared_embedder, read_only=True) as mem:
        m = mem.bind(**IDENT)
        hits = m.recall("what do we know about invoices?").items
        assert hits[0].content == "The holder process wrote this fact about invoices"
        with pytest.raises(StorageError, match="read-only"):
            m.remember("a reader cannot write")
        assert mem.flush() is True
    with pytest.raises(DataDirLockedError):
        AgentMemory(held_dir, embedder=shared_embedder)  # a writer is still refused
