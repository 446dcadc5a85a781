"""``agentmem doctor`` detects drift between the records and both indexes; ``reindex`` heals it.

Each case builds a small, fully indexed data dir (memories, chat messages, a document, one
forgotten row), breaks one index on purpose, and then runs the real CLI in-process:

1. ``agentmem --json doctor`` exits 1 and its report names the drift (counts and sample ids);
2. ``agentmem reindex`` exits 0;
3. ``agentmem --json doctor`` exits 0 with every drift count at zero;
4. reopened, every live row is found again by keyword and by vector search, and the forgotten
   row by neither.

The healthy dir reports ok (exit 0), so the doctor has no false alarm.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentmem import AgentMemory
from agentmem.cli import _common, main
from agentmem.maintenance.doctor import diagnose
from agentmem.storage.keyword_index import KeywordDoc, KeywordFilter
from agentmem.storage.vector_index import collection_name

IDENT = {"tenant_id": "acme", "user_id": "u1", "session_id": "s1"}
FACTS = [
    "The staging deploy key is KX-93-ZQ-771",
    "My daughter is learning to play the cello",
    "Our office moved to Lisbon last spring",
]
MESSAGES = [
    ("user", "Can you book the Thursday retrospective in room Orion?"),
    ("assistant", "Booked room Orion for Thursday at 3pm."),
]
DOC = "The emergency generator is tested on the first Monday of every month."


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, shared_embedder: Any, capsys: pytest.CaptureFixture[str]):
    """``cli(home, *argv) -> (status, parsed --json output)`` with the shared embedder."""
    monkeypatch.setattr(_common, "shared_embedder", lambda *_: shared_embedder)

    def run(home: Path, *argv: str) -> tuple[int, dict[str, Any]]:
        capsys.readouterr()
        status = main(["--home", str(home), "--json", *argv])
        out = capsys.readouterr().out.strip().splitlines()
        return status, json.loads(out[-1]) if out else {}

    return run


def _populate(mem: AgentMemory) -> tuple[list[str], str]:
    m = mem.bind(**IDENT)
    ids = [r.id for r in m.remember_many(FACTS)]
    ids += [m.add_message(role, text).id for role, text in MESSAGES]
    ids += [c.id for c in m.add_document(DOC, source_ref="generator.md")]
    gone = m.remember("Temporary note about the zebra crossing").id
    mem.flush()
    m.forget(gone)
    mem.flush()
    return ids, gone


def _assert_healed(home: Path, ids: list[str], gone: str, embedder: Any) -> None:
    with AgentMemory(home, embedder=embedder, background=False) as mem:
        report = diagnose(mem.context)
        assert report.ok, report
        assert report.live_rows == len(ids)
        assert mem.keywords.all_ids() == set(ids)
        vectors = set().union(*(mem.vectors.ids(c) for _, _, c in mem.records.partitions.all()))
        assert vectors == set(ids)
        m = mem.bind(**IDENT)
        assert m.recall("KX-93-ZQ-771").items[0].content == FACTS[0]
        assert m.recall("which musical instrument does my child play").items[0].content == FACTS[1]
        assert not m.recall("zebra crossing").items
        assert gone not in mem.keywords.all_ids()


def _partition_of(mem: AgentMemory, id_: str) -> str:
    row = mem.records.memories.get(id_)
    assert row is not None
    return row.partition


# -- ways to break the indexes: (name, break while open, break on disk while closed, check) --
def _delete_keyword_docs(mem: AgentMemory, ids: list[str]) -> list[str]:
    victims = ids[:2]
    mem.keywords.delete(victims)
    mem.keywords.commit()
    return victims


def _check_missing_keyword(report: dict[str, Any], ids: list[str], victims: list[str]) -> None:
    assert report["missing_keyword"] == len(victims) == report["stale_keyword"]
    assert set(report["samples"]["missing_keyword"]) == set(victims)
    assert report["missing_vectors"] == report["extra_vectors"] == 0


def _extra_entries(mem: AgentMemory, ids: list[str]) -> list[str]:
    part = _partition_of(mem, ids[0])
    mem.keywords.add(
        [KeywordDoc("ghost-kw", "acme", part, "", "memory", "fact", "user", "ghost words")]
    )
    mem.keywords.commit()
    coll = collection_name("acme", part)
    vec = np.asarray(mem.embedder.embed_documents(["ghost words"]))
    meta = {"session_id": "", "kind": "memory", "memory_type": "fact", "scope": "user"}
    mem.vectors.upsert(coll, ["ghost-vec"], vec, [meta])
    mem.vectors.upsert("am_" + "0" * 40, ["orphan"], vec, [meta])
    return ["ghost-kw", "ghost-vec"]


def _check_extra(report: dict[str, Any], ids: list[str], victims: list[str]) -> None:
    assert report["extra_keyword"] == 1 and report["samples"]["extra_keyword"] == ["ghost-kw"]
    assert report["extra_vectors"] == 2  # the ghost, and the orphan collection's vector
    assert "ghost-vec" in report["samples"]["extra_vectors"]
    assert report["orphan_collections"] == ["am_" + "0" * 40]
    assert report["missing_keyword"] == report["missing_vectors"] == 0


def _deleted_row_still_indexed(mem: AgentMemory, ids: list[str]) -> list[str]:
    """A row retired behind the indexer's back (flags say done): stale index entries."""
    with mem.records.write() as conn:
        conn.execute("UPDATE memories SET deleted_at = created_at WHERE id = ?", (ids[2],))
    return [ids[2]]


def _check_stale_entries(report: dict[str, Any], ids: list[str], victims: list[str]) -> None:
    assert report["extra_keyword"] == 1 and report["samples"]["extra_keyword"] == victims
    assert report["extra_vectors"] == 1 and report["samples"]["extra_vectors"] == victims
    assert not [p for p in report["problems"] if "no trace" in p]  # its row is still there


def _records_lost_rows(mem: AgentMemory, ids: list[str]) -> list[str]:
    """Acknowledged rows gone from the records without a trace, as when a -wal file holding
    them was deleted: only the index entries are left."""
    victims = ids[len(FACTS) : len(FACTS) + 2]  # the chat messages
    with mem.records.write() as conn:
        conn.execute("DELETE FROM memories WHERE id IN (?, ?)", victims)
    return victims


def _check_lost_rows(report: dict[str, Any], ids: list[str], victims: list[str]) -> None:
    assert report["extra_keyword"] == report["extra_vectors"] == len(victims)
    (problem,) = [p for p in report["problems"] if "no trace" in p]
    assert problem.startswith(f"{len(victims)} index entries name rows")
    assert "records lost acknowledged writes" in problem and "backup" in problem


def _drop_collection(mem: AgentMemory, ids: list[str]) -> list[str]:
    part = _partition_of(mem, ids[0])
    mem.vectors.drop(collection_name("acme", part))
    rows = mem.records.read(
        "SELECT id FROM memories WHERE partition = ? AND deleted_at IS NULL", (part,)
    )
    return [r[0] for r in rows]


def _check_collection_requeued(report: dict[str, Any], ids: list[str], victims: list[str]) -> None:
    # the open found the collection gone and queued its rows to be embedded again
    (problem,) = report["problems"]
    assert problem.startswith("recovered at open: vector index")
    assert "lost the collections of 1 partition(s)" in problem
    assert report["pending_vectors"] == len(victims)
    assert report["missing_vectors"] == report["missing_keyword"] == 0


def _rm_keywords_dir(home: Path) -> None:
    shutil.rmtree(home / "keywords")


def _check_keywords_lost(report: dict[str, Any], ids: list[str], victims: list[str]) -> None:
    # the open found the new index empty while the records say rows are in it, and queued
    # every row for re-indexing
    assert any("keyword index" in p and "was lost" in p for p in report["problems"])
    assert report["keyword_docs"] == 0 and report["pending_keyword"] >= len(ids)


def _corrupt_tantivy_meta(home: Path) -> None:
    (home / "keywords" / "meta.json").write_text('{"segments": [garbage')


def _check_recovered_keywords(report: dict[str, Any], ids: list[str], victims: list[str]) -> None:
    # the open path removed the broken index and queued every row for re-indexing
    assert any("keyword index" in p and "unreadable" in p for p in report["problems"])
    assert report["keyword_docs"] == 0 and report["pending_keyword"] >= len(ids)


def _rm_chroma_dir(home: Path) -> None:
    shutil.rmtree(home / "chroma")


def _check_all_vectors_requeued(report: dict[str, Any], ids: list[str], victims: list[str]) -> None:
    # the open found the vector index new (no marker) and queued every row again
    (problem,) = report["problems"]
    assert problem.startswith("recovered at open: vector index")
    assert "every vector was lost" in problem
    assert report["vectors"] == 0 and report["pending_vectors"] == len(ids)
    assert report["missing_vectors"] == 0


def _corrupt_chroma(home: Path) -> None:
    (home / "chroma" / "chroma.sqlite3").write_bytes(b"not a database " * 1000)


def _check_chroma_unreadable(report: dict[str, Any], ids: list[str], victims: list[str]) -> None:
    assert any("vector index unreadable" in p for p in report["problems"])
    assert report["missing_vectors"] == len(ids)


Breaker = Callable[[AgentMemory, list[str]], list[str]]
CASES: dict[str, tuple[Breaker | None, Callable[[Path], None] | None, Callable[..., None]]] = {
    "keyword-docs-deleted": (_delete_keyword_docs, None, _check_missing_keyword),
    "extra-docs-vectors-and-collection": (_extra_entries, None, _check_extra),
    "retired-row-still-indexed": (_deleted_row_still_indexed, None, _check_stale_entries),
    "records-lost-rows": (_records_lost_rows, None, _check_lost_rows),
    "chroma-collection-dropped": (_drop_collection, None, _check_collection_requeued),
    "keywords-dir-deleted": (None, _rm_keywords_dir, _check_keywords_lost),
    "tantivy-meta-corrupted": (None, _corrupt_tantivy_meta, _check_recovered_keywords),
    "chroma-dir-deleted": (None, _rm_chroma_dir, _check_all_vectors_requeued),
    "chroma-sqlite-corrupted": (None, _corrupt_chroma, _check_chroma_unreadable),
}


def test_doctor_healthy_dir_is_ok(make_memory, cli, shared_embedder) -> None:
    mem = make_memory(background=False)
    ids, _ = _populate(mem)
    report = diagnose(mem.context)
    assert report.ok and report.live_rows == len(ids) == report.keyword_docs == report.vectors
    mem.close()
    status, out = cli(mem.home, "doctor")
    assert status == 0 and out["ok"] is True and out["problems"] == []


@pytest.mark.parametrize("case", list(CASES))
def test_doctor_detects_and_reindex_heals(make_memory, cli, shared_embedder, case: str) -> None:
    break_open, break_closed, check = CASES[case]
    mem = make_memory(background=False)
    ids, gone = _populate(mem)
    victims: list[str] = []
    if break_open is not None:
        victims = break_open(mem, ids)
        if case in ("retired-row-still-indexed", "records-lost-rows"):
            ids = [i for i in ids if i not in victims]
    mem.close()
    if break_closed is not None:
        break_closed(mem.home)

    status, report = cli(mem.home, "doctor")
    assert status == 1, report
    assert report["ok"] is False
    check(report, ids, victims)

    status, out = cli(mem.home, "reindex")
    assert status == 0 and out["reindexed"] == len(ids)
    status, report = cli(mem.home, "doctor")
    assert status == 0, report
    for key in ("missing_keyword", "extra_keyword", "missing_vectors", "extra_vectors"):
        assert report[key] == 0
    _assert_healed(mem.home, ids, gone, shared_embedder)


def test_keyword_search_still_finds_rows_after_corrupt_index_is_rebuilt_at_open(
    make_memory, shared_embedder
) -> None:
    """Opening a dir with a corrupted Tantivy index no longer fails: the background indexer
    rebuilds the keyword index from the records, without an explicit reindex."""
    mem = make_memory(background=False)
    ids, _gone = _populate(mem)
    mem.close()
    _corrupt_tantivy_meta(mem.home)
    reopened = make_memory(path=mem.home)
    assert reopened.recovered and "keyword index" in reopened.recovered[0]
    assert reopened.flush(timeout=60)
    assert reopened.keywords.all_ids() == set(ids)
    flt = KeywordFilter(tenant="acme", partitions=(_partition_of(reopened, ids[0]),))
    hits = reopened.keywords.search(reopened.keywords.query_terms("KX-93-ZQ-771"), flt, 3)
    assert hits[0][0] == ids[0]
    report = diagnose(reopened.context)  # no drift left; the recovery itself is still reported
    assert report.missing_keyword == report.extra_keyword == report.missing_vectors == 0
    assert [p.startswith("recovered at open: keyword index") for p in report.problems] == [True]
    # the unreadable index is not kept: no erasure or forget could reach into it
    assert not any(".broken-" in p.name for p in mem.home.iterdir())
