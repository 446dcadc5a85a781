"""A data dir remembers which embedder filled its vector index and refuses another one.

Vectors of different models do not mix: a 256-d index queried with a 384-d embedder fails at
the first recall, and two models of the same width silently return nonsense. The records
store keeps the embedder's fingerprint (model name and dimensions), written with the first
vectors; opening the dir with another embedder raises :class:`EmbedderMismatchError` before
anything on disk is touched, and only an explicit ``allow_embedder_change=True`` (what
``agentmem reindex`` uses) re-embeds every record with the new one and records it.

Everything here is real: SQLite, Tantivy and an embedded Chroma. ``HashEmbedder`` (256-d) is
the embedder a dir is built with; ``SaltedHashEmbedder`` has the same width but another
model, and the default all-MiniLM-L6-v2 another width.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _legacy_schema import downgrade
from _reliability_support import DIM, HashEmbedder

from agentmem import AgentMemory
from agentmem.cli import _common, main
from agentmem.errors import ConfigError, EmbedderMismatchError
from agentmem.maintenance.doctor import diagnose
from agentmem.storage.fingerprint import EmbedderFingerprint
from agentmem.write.index_text import vector_text

IDENT = {"tenant_id": "acme", "user_id": "u1", "session_id": "s1"}
FACTS = [
    "The staging deploy key is KX-93-ZQ-771",
    "My daughter is learning to play the cello",
    "Our office moved to Lisbon last spring",
    "The quarterly review is scheduled for the ninth of October",
]
QUERY = "which instrument is my daughter learning"


class SaltedHashEmbedder(HashEmbedder):
    """Same width as :class:`HashEmbedder`, another model: its vectors are unrelated."""

    @property
    def model_name(self) -> str:
        return "test-hash-256-salted"

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(DIM, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.blake2b(b"salt:" + word.encode(), digest_size=4).digest()
            h = int.from_bytes(digest, "little")
            vec[h % DIM] += 1.0 if (h >> 16) & 1 else -1.0
        norm = float(np.linalg.norm(vec)) or 1.0
        return vec / norm


def _build(home: Path, embedder: Any | None = None) -> list[str]:
    """A fully indexed dir made with ``embedder`` (default HashEmbedder); returns the fact ids."""
    with AgentMemory(home, embedder=embedder or HashEmbedder(), background=False) as mem:
        m = mem.bind(**IDENT)
        ids = [r.id for r in m.remember_many(FACTS)]
        m.add_message("user", "Please remind me about the cello recital on Friday")
        assert mem.flush()
    return ids


def _recall_ids(mem: AgentMemory, query: str = QUERY) -> list[str]:
    result = mem.bind(**IDENT).recall(query, top_k=5)
    assert not result.degraded
    return [hit.id for hit in result.items]


def _files_digest(path: Path) -> str:
    """sha256 over the names and bytes of every file under ``path``."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def _records(home: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the records store (meta and schema_version included)."""
    conn = sqlite3.connect(f"file:{home / 'records.sqlite3'}?mode=ro", uri=True)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}
    finally:
        conn.close()


def _disk_state(home: Path) -> tuple[Any, ...]:
    """The records, the vector index files and the keyword index files."""
    return _records(home), _files_digest(home / "chroma"), _files_digest(home / "keywords")


def _stored_vectors(mem: AgentMemory) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for _, _, name in mem.records.partitions.all():
        col = mem.vectors._collection(name, create=False)
        if col is None:
            continue
        got = col.get(include=["embeddings"])
        out.update(zip(got["ids"], np.asarray(got["embeddings"]), strict=True))
    return out


def _assert_vectors_made_by(mem: AgentMemory, embedder: Any) -> None:
    """Every live row's stored vector is ``embedder``'s vector of its text."""
    stored = _stored_vectors(mem)
    rows = list(mem.records.archive.iter_rows())
    assert rows and set(stored) == {row.item.id for row in rows}
    texts = [vector_text(row) for row in rows]
    expected = np.asarray(embedder.embed_documents(texts))
    for row, want in zip(rows, expected, strict=True):
        got = stored[row.item.id]
        assert got.shape == want.shape
        assert float(np.dot(got, want)) == pytest.approx(1.0, abs=1e-4)


def _make_legacy(home: Path) -> None:
    """Turn a dir into one written before fingerprints existed (schema 4: no meta table, and
    none of what later migrations added)."""
    conn = sqlite3.connect(home / "records.sqlite3")
    try:
        downgrade(conn, 4)
    finally:
        conn.close()


def _fingerprint(home: Path) -> dict[str, Any] | None:
    conn = sqlite3.connect(f"file:{home / 'records.sqlite3'}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    finally:
        conn.close()
    return None if row is None else dict(json.loads(row[0]))


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, shared_embedder: Any, capsys: pytest.CaptureFixture[str]):
    """``cli(home, *argv) -> (status, --json output, stderr)`` with the default embedder."""
    monkeypatch.setattr(_common, "shared_embedder", lambda *_: shared_embedder)

    def run(home: Path, *argv: str) -> tuple[int, dict[str, Any], str]:
        capsys.readouterr()
        status = main(["--home", str(home), "--json", *argv])
        captured = capsys.readouterr()
        out = captured.out.strip().splitlines()
        return status, json.loads(out[-1]) if out else {}, captured.err

    return run


# -- the fingerprint is recorded with the first vectors -----------------------------------------
def test_fingerprint_is_recorded_with_the_first_vectors(tmp_path: Path) -> None:
    home = tmp_path / "mem"
    with AgentMemory(home, embedder=HashEmbedder(), background=False) as mem:
        mem.bind(**IDENT).remember(FACTS[0])
        assert _fingerprint(home) is None  # nothing embedded yet: no embedder to remember
        assert mem.recorded_embedder is None
        mem.flush()
        recorded = mem.recorded_embedder
    assert recorded is not None
    assert (recorded.model_name, recorded.dimensions) == ("test-hash-256", DIM)
    assert recorded.origin == "first_write"
    assert _fingerprint(home) == {**recorded.to_dict()}


def test_dir_without_vectors_opens_with_any_embedder(tmp_path: Path, shared_embedder) -> None:
    home = tmp_path / "mem"
    with AgentMemory(home, embedder=HashEmbedder(), background=False) as mem:
        mem.bind(**IDENT).remember(FACTS[0])  # records only, never embedded
    with AgentMemory(home, embedder=SaltedHashEmbedder(), background=False) as mem:
        mem.flush()
        assert mem.recorded_embedder is not None
        assert mem.recorded_embedder.model_name == "test-hash-256-salted"


# -- a different embedder is refused, and nothing changes on disk ------------------------------
@pytest.mark.parametrize("other", ["default-384", "salted-256"])
def test_other_embedder_is_refused_and_changes_nothing(
    tmp_path: Path, shared_embedder: Any, other: str
) -> None:
    home = tmp_path / "mem"
    _build(home)
    with AgentMemory(home, embedder=HashEmbedder(), background=False) as mem:
        before_ids = _recall_ids(mem)
    assert before_ids and before_ids[0] != ""
    before = _disk_state(home)
    embedder = shared_embedder if other == "default-384" else SaltedHashEmbedder()
    name, dims = embedder.model_name, embedder.dimensions

    with pytest.raises(EmbedderMismatchError) as caught:
        AgentMemory(home, embedder=embedder)
    err = caught.value
    assert isinstance(err, ConfigError)
    message = str(err)
    assert f"'test-hash-256' ({DIM}-d)" in message  # the recorded embedder
    assert f"{name!r} ({dims}-d)" in message  # the one it was opened with
    assert "allow_embedder_change=True" in message and "reindex" in message
    assert f"agentmem --home {home} --embedder SPEC reindex --embeddings" in message
    assert err.recorded.model_name == "test-hash-256" and err.current.model_name == name
    assert _disk_state(home) == before  # records, meta, vectors and keywords untouched

    # the refused open released the data dir; the right embedder still works, unchanged
    with AgentMemory(home, embedder=HashEmbedder(), background=False) as mem:
        assert _recall_ids(mem) == before_ids
        assert mem.recorded_embedder is not None
        assert mem.recorded_embedder.model_name == "test-hash-256"
        _assert_vectors_made_by(mem, HashEmbedder())


def test_cached_wrapper_of_the_same_model_is_the_same_embedder(tmp_path: Path) -> None:
    from agentmem.embeddings import CachedEmbedder

    home = tmp_path / "mem"
    _build(home)
    with AgentMemory(home, embedder=CachedEmbedder(HashEmbedder()), background=False) as mem:
        assert _recall_ids(mem)


# -- an explicit change re-embeds everything and records the new embedder ----------------------
@pytest.mark.parametrize("other", ["default-384", "salted-256"])
def test_allow_embedder_change_reindex_reembeds_and_records_the_new_embedder(
    tmp_path: Path, shared_embedder: Any, other: str
) -> None:
    home = tmp_path / "mem"
    ids = _build(home)
    embedder = shared_embedder if other == "default-384" else SaltedHashEmbedder()

    with AgentMemory(home, embedder=embedder, background=False, allow_embedder_change=True) as mem:
        # the old vectors are gone at once (never queried with the new model), the new
        # fingerprint is recorded, and every row waits to be embedded again
        assert _stored_vectors(mem) == {}
        assert mem.recorded_embedder is not None
        assert mem.recorded_embedder.model_name == embedder.model_name
        assert mem.recorded_embedder.origin == "reindex"
        assert mem.replaced_embedder is not None
        assert mem.replaced_embedder.model_name == "test-hash-256"
        assert mem.reindex() == len(FACTS) + 1
        mem.flush()
        _assert_vectors_made_by(mem, embedder)
        top = _recall_ids(mem)
        assert top[0] == ids[1]  # the cello fact, now found with the new embedder
        row = mem.records.memories.get(ids[1])
        assert row is not None
        col = mem.records.partitions.collection_for("acme", row.partition)
        assert col is not None
        assert mem.vectors.query(col, embedder.embed_query(FACTS[1]), 1)[0][0] == ids[1]

    fp = _fingerprint(home)
    assert fp is not None
    assert (fp["model_name"], fp["dimensions"]) == (embedder.model_name, embedder.dimensions)
    # the new embedder opens without the flag; the old one is refused now
    with AgentMemory(home, embedder=embedder, background=False) as mem:
        assert _recall_ids(mem)[0] == ids[1]
    with pytest.raises(EmbedderMismatchError):
        AgentMemory(home, embedder=HashEmbedder())


def test_allow_embedder_change_with_the_same_embedder_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "mem"
    _build(home)
    before = _disk_state(home)
    with AgentMemory(home, embedder=HashEmbedder(), background=False, allow_embedder_change=True):
        pass
    assert _disk_state(home)[0] == before[0]  # records and fingerprint unchanged


# -- data dirs from before fingerprints --------------------------------------------------------
def test_legacy_dir_without_vectors_adopts_the_embedder(tmp_path: Path) -> None:
    home = tmp_path / "mem"
    with AgentMemory(home, embedder=HashEmbedder(), background=False) as mem:
        mem.bind(**IDENT).remember_many(FACTS)  # never embedded
    _make_legacy(home)
    with AgentMemory(home, embedder=SaltedHashEmbedder(), background=False) as mem:
        assert mem.records.schema_version() >= 5
        assert mem.recorded_embedder is None
        mem.flush()
        assert mem.recorded_embedder is not None
        assert mem.recorded_embedder.model_name == "test-hash-256-salted"
        assert mem.recorded_embedder.origin == "first_write"
        assert not [n for n in diagnose(mem.context).notes if "not recorded" in n]


def test_legacy_dir_with_vectors_records_the_embedder_as_assumed(tmp_path: Path, cli: Any) -> None:
    home = tmp_path / "mem"
    ids = _build(home)
    _make_legacy(home)
    with AgentMemory(home, embedder=HashEmbedder(), background=False) as mem:
        assert _recall_ids(mem)[0] == ids[1]  # opening does not error
        recorded = mem.recorded_embedder
        assert recorded is not None and recorded.origin == "assumed"
        assert (recorded.model_name, recorded.dimensions) == ("test-hash-256", DIM)
        report = diagnose(mem.context)
        assert report.ok  # a note, not drift
        assert report.embedder is not None and report.embedder["origin"] == "assumed"
        assert any("not recorded" in note and "reindex" in note for note in report.notes)
    # the next open with a same-width model is refused now that a fingerprint is recorded
    with pytest.raises(EmbedderMismatchError):
        AgentMemory(home, embedder=SaltedHashEmbedder())
    # reindex re-embeds with a known embedder: the note goes away
    with AgentMemory(home, embedder=HashEmbedder(), background=False) as mem:
        mem.reindex()
        assert mem.recorded_embedder is not None
        assert mem.recorded_embedder.origin == "reindex"
        assert not [n for n in diagnose(mem.context).notes if "not recorded" in n]


def test_legacy_dir_with_vectors_of_another_width_is_refused(
    tmp_path: Path, shared_embedder: Any
) -> None:
    home = tmp_path / "mem"
    _build(home)
    _make_legacy(home)
    with pytest.raises(EmbedderMismatchError) as caught:
        AgentMemory(home, embedder=shared_embedder)
    message = str(caught.value)
    assert f"({DIM}-d)" in message and "(384-d)" in message and "reindex" in message
    assert _fingerprint(home) is None  # nothing recorded: the next open checks again
    with AgentMemory(home, embedder=HashEmbedder(), background=False) as mem:
        assert mem.recorded_embedder is not None
        assert mem.recorded_embedder.origin == "assumed"


# -- the CLI ------------------------------------------------------------------------------------
def test_cli_refuses_a_dir_of_another_embedder_and_reindex_switches_it(
    tmp_path: Path, cli: Any, shared_embedder: Any
) -> None:
    home = tmp_path / "mem"
    ids = _build(home)
    before = _disk_state(home)

    for argv in (("--tenant", "acme", "--user", "u1", "recall", QUERY), ("stats",), ("doctor",)):
        status, payload, stderr = cli(home, *argv)
        assert status == 1, argv
        assert "test-hash-256" in stderr and "all-MiniLM-L6-v2-int8" in stderr
        assert "reindex --embeddings" in stderr
        assert payload["error"]["type"] == "EmbedderMismatchError"
    assert _disk_state(home) == before

    status, payload, stderr = cli(home, "reindex")
    assert status == 0 and payload["reindexed"] == len(FACTS) + 1
    assert payload["replaced_embedder"]["model_name"] == "test-hash-256"
    assert "test-hash-256" in stderr  # says which vectors it replaced
    status, payload, _ = cli(home, "reindex")  # a plain rebuild replaces no embedder
    assert status == 0 and payload["replaced_embedder"] is None
    status, stats, _ = cli(home, "stats")
    assert status == 0
    assert stats["embedder"]["model_name"] == shared_embedder.model_name
    assert stats["embedder"]["dimensions"] == shared_embedder.dimensions
    status, report, _ = cli(home, "doctor")
    assert status == 0 and report["embedder"]["model_name"] == shared_embedder.model_name
    with AgentMemory(home, embedder=shared_embedder, background=False) as mem:
        assert _recall_ids(mem)[0] == ids[1]
        _assert_vectors_made_by(mem, shared_embedder)


def test_cli_doctor_and_stats_report_the_recorded_embedder(
    tmp_path: Path, cli: Any, shared_embedder: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "mem"
    _build(home, shared_embedder)
    status, report, _ = cli(home, "doctor")
    assert status == 0
    assert report["embedder"] == {
        **report["embedder"],
        "model_name": shared_embedder.model_name,
        "dimensions": shared_embedder.dimensions,
        "origin": "first_write",
    }
    capsys.readouterr()
    assert main(["--home", str(home), "doctor"]) == 0
    assert f"embedder: '{shared_embedder.model_name}' (384-d)" in capsys.readouterr().out
    assert main(["--home", str(home), "stats"]) == 0
    assert shared_embedder.model_name in capsys.readouterr().out


def test_fingerprint_round_trip() -> None:
    fp = EmbedderFingerprint.of(HashEmbedder(), origin="first_write")
    assert EmbedderFingerprint.from_json(fp.to_json()) == fp
    assert fp.describe() == f"'test-hash-256' ({DIM}-d)"
    assert fp.matches(EmbedderFingerprint.of(HashEmbedder(), origin="reindex"))
    assert not fp.matches(EmbedderFingerprint.of(SaltedHashEmbedder(), origin="first_write"))
