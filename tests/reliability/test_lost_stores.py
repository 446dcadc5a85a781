"""A store that lost one of its parts is repaired, or refused; never silently degraded.

- **Vector index lost** (``chroma/chroma.sqlite3`` deleted, the whole ``chroma/`` dir
  deleted, one collection dropped, a Chroma server's database wiped): the next open finds it
  (the index's marker of the records store, and the collections the records need), queues
  the rows whose vectors are gone, says so in ``recovered`` (and so in ``doctor``), and
  recall answers ``degraded=True`` while the backlog is larger than it scores on the spot;
  the background indexer embeds them again and paraphrase recall works as before. Opened
  read-only, nothing is repaired but recall says ``degraded`` and doctor says what to do.
  Deleted under a running process, the embedded store is found gone by the indexer (its
  file, or the marker in it, missing), made anew and marked, and every row embedded again.
  A Chroma database marked by another records store is refused before a vector goes in.
- **Keyword index lost** (``keywords/`` deleted, or its ``meta.json``: Tantivy then starts an
  empty index there), on SQLite and on Postgres: the next open finds it empty while the
  records say rows are in it, queues every row for it again, says so in ``recovered``, and
  recall answers ``degraded=True`` while the backlog is larger than it scores on the spot.
- **Vector index corrupt** (a page of ``chroma/chroma.sqlite3`` zeroed, on which Chroma's Rust
  core panics with pyo3's ``PanicException``, a ``BaseException``): every command still runs;
  the store opens degraded (keyword answers, ``degraded=True``, new rows' vectors queued, a
  ``flush`` that does not wait for them), doctor says the index is corrupt, and ``reindex``
  removes it and builds it anew from the records.
- **Records store missing or new** (a SQLite file, or the Postgres database under a node's
  home) beside indexes that hold entries: the open is refused
  with :class:`~agentmem.RecordsMissingError` naming the file and the way out, nothing is
  created or changed, in read-only opens too; ``agentmem doctor`` and ``agentmem reindex``
  report that error instead of advising or running a rebuild that would delete the indexes.
  A new data dir, and one whose every record was erased, still open.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from agentmem import (
    AgentMemory,
    ConfigError,
    MemoryConfig,
    RecordsMissingError,
    Settings,
    StorageError,
)
from agentmem.cli import _common, main
from agentmem.maintenance.doctor import diagnose
from agentmem.maintenance.health import health
from agentmem.storage.records import RecordStore
from agentmem.storage.vector_index import VectorIndex, collection_name

IDENT = {"tenant_id": "acme", "user_id": "u1", "session_id": "s1"}
ALLERGY = "The user is allergic to peanuts"
FACTS = [ALLERGY] + [
    f"Project note {n}: the build of module M{n} takes {n} minutes" for n in range(11)
]
PARAPHRASE = "which food could make them ill?"
#: Rows recall scores on the spot: pending_scan // 4 (here 2, fewer than FACTS)
SMALL_SCAN = MemoryConfig(pending_scan=8)


def _filled(make_memory: Any, **kw: Any) -> tuple[AgentMemory, list[str]]:
    mem = make_memory(background=False, config=SMALL_SCAN, **kw)
    m = mem.bind(**IDENT)
    ids = [r.id for r in m.remember_many(FACTS)]
    bot = mem.bind(tenant_id="acme", agent_id="bot")
    ids.append(bot.remember("Replies stay short", scope="agent").id)
    mem.flush()
    found = m.recall(PARAPHRASE)
    assert found.items[0].content == ALLERGY and found.degraded is False
    return mem, ids


def _user_collection() -> str:
    return collection_name("acme", "user:u1")


def _delete_chroma_sqlite(home: Path, mem: AgentMemory) -> None:
    (home / "chroma" / "chroma.sqlite3").unlink()


def _delete_chroma_dir(home: Path, mem: AgentMemory) -> None:
    shutil.rmtree(home / "chroma")


BREAKS = {"chroma.sqlite3 deleted": _delete_chroma_sqlite, "chroma dir deleted": _delete_chroma_dir}


@pytest.mark.parametrize("how", list(BREAKS))
def test_lost_vector_index_is_found_at_open_and_embedded_again(make_memory, how: str) -> None:
    mem, ids = _filled(make_memory)
    home = mem.home
    mem.close()
    BREAKS[how](home, mem)

    mem = make_memory(path=home, background=False, config=SMALL_SCAN)
    assert len(mem.recovered) == 1 and "every vector was lost" in mem.recovered[0]
    assert f"{len(ids)} row(s) queued" in mem.recovered[0]
    assert mem.stats().vector_pending == len(ids)
    assert mem.bind(**IDENT).recall(PARAPHRASE).degraded is True  # 12 pending, 2 scored
    report = diagnose(mem.context)
    assert not report.ok
    assert any(p.startswith("recovered at open: vector index") for p in report.problems)
    assert report.missing_vectors == 0 and report.pending_vectors == len(ids)
    assert report.orphan_vector_files == []  # the lost store's segment files are gone too

    mem.flush()
    found = mem.bind(**IDENT).recall(PARAPHRASE)
    assert found.items[0].content == ALLERGY and found.degraded is False
    mem.close()
    again = make_memory(path=home, background=False)
    assert again.recovered == []
    assert diagnose(again.context).ok


def test_a_dropped_collection_is_found_at_open_and_its_rows_embedded_again(make_memory) -> None:
    mem, _ids = _filled(make_memory)
    mem.vectors.drop(_user_collection())
    home = mem.home
    mem.close()

    mem = make_memory(path=home, background=False, config=SMALL_SCAN)
    assert "lost the collections of 1 partition(s)" in mem.recovered[0]
    assert mem.stats().vector_pending == len(FACTS)  # the agent's fact kept its vector
    assert mem.bind(**IDENT).recall(PARAPHRASE).degraded is True
    mem.flush()
    assert mem.bind(**IDENT).recall(PARAPHRASE).items[0].content == ALLERGY
    assert mem.vectors.count(_user_collection()) == len(FACTS)


def test_read_only_open_of_a_lost_vector_index_says_degraded(make_memory) -> None:
    mem, _ids = _filled(make_memory)
    home = mem.home
    mem.close()
    _delete_chroma_sqlite(home, mem)
    with AgentMemory(home, embedder=mem.embedder, read_only=True) as ro:
        result = ro.bind(**IDENT).recall("peanuts")
        assert result.items[0].content == ALLERGY  # the keyword half still answers
        assert result.degraded is True
        report = diagnose(ro.context)
        assert not report.ok
        (problem,) = [p for p in report.problems if "vector index" in p]
        assert "every vector was lost" in problem and "Open the data dir for writing" in problem
        assert ro.stats().vector_pending == 0  # nothing changed by a read-only open


def test_wiped_chroma_server_database_is_found_and_embedded_again(
    make_memory, chroma_url: str, chroma_client: Any
) -> None:
    mem, ids = _filled(make_memory, settings=Settings(chroma_url=chroma_url))
    home = mem.home
    mem.close()
    for col in chroma_client.list_collections():  # the database is wiped
        chroma_client.delete_collection(col.name)

    mem = make_memory(
        path=home, background=False, config=SMALL_SCAN, settings=Settings(chroma_url=chroma_url)
    )
    assert "every vector was lost" in mem.recovered[0]
    assert mem.stats().vector_pending == len(ids)
    mem.flush()
    assert mem.bind(**IDENT).recall(PARAPHRASE).items[0].content == ALLERGY


def test_chroma_database_of_another_store_is_refused(
    make_memory, chroma_url: str, chroma_client: Any
) -> None:
    settings = Settings(chroma_url=chroma_url)
    first, _ = _filled(make_memory, settings=settings)
    other = make_memory(background=False, settings=settings)  # new records, same database
    other.bind(**IDENT).remember("Another store's fact")
    with pytest.raises(ConfigError, match="holds the vectors of another agentmem records store"):
        other.flush()
    assert other.stats().vector_pending == 1  # nothing written into the first store's vectors
    assert first.vectors.count(_user_collection()) == len(FACTS)


KEYWORD_LOSSES = {
    "keywords dir deleted": lambda home: shutil.rmtree(home / "keywords"),
    "meta.json deleted": lambda home: (home / "keywords" / "meta.json").unlink(),
}


@pytest.mark.both_backends
@pytest.mark.parametrize("how", list(KEYWORD_LOSSES))
def test_lost_keyword_index_is_found_at_open_and_rebuilt(make_memory, how: str) -> None:
    mem, ids = _filled(make_memory)
    home = mem.home
    mem.close()
    KEYWORD_LOSSES[how](home)

    mem = make_memory(path=home, background=False, config=SMALL_SCAN)
    (note,) = mem.recovered
    assert "keyword index" in note and "was lost" in note and f"say {len(ids)} row(s)" in note
    assert mem.stats().keyword_pending == len(ids)
    assert mem.bind(**IDENT).recall("peanuts").degraded is True  # 13 pending, 8 scanned
    assert any("keyword index" in p for p in diagnose(mem.context).problems)

    mem.flush()
    assert mem.keywords.num_docs() == len(ids)
    found = mem.bind(**IDENT).recall("peanuts")
    assert found.items[0].content == ALLERGY and found.degraded is False
    mem.close()
    again = make_memory(path=home, background=False)
    assert again.recovered == []
    assert diagnose(again.context).ok


def test_keyword_index_deleted_while_open_is_rebuilt_and_the_store_closes(make_memory) -> None:
    """``keywords/`` removed under a running process (a cleanup job, a user "clearing a
    cache"): every commit into the deleted files failed, so no row was indexed again, flush
    waited to its timeout, and close raised Tantivy's ValueError halfway (a server then hung
    on SIGTERM). The indexer now starts the index anew and queues every row for it."""
    mem = make_memory(config=SMALL_SCAN)
    m = mem.bind(**IDENT)
    ids = [r.id for r in m.remember_many(FACTS)]
    assert mem.flush(timeout=60)
    shutil.rmtree(mem.home / "keywords")

    late = m.remember("The staging database is called zebra-77").id
    assert mem.flush(timeout=60)
    assert mem.keywords.all_ids() == {*ids, late}
    assert m.recall("peanuts").items[0].content == ALLERGY
    assert m.recall("zebra-77").items[0].id == late
    assert diagnose(mem.context).ok
    mem.close()  # no error
    again = make_memory(path=mem.home, background=False)
    assert again.recovered == [] and again.keywords.num_docs() == len(ids) + 1


@pytest.mark.parametrize("how", list(BREAKS))
def test_vector_index_deleted_while_open_is_made_anew_and_embedded_again(
    make_memory, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The embedded Chroma store removed under a running process: every upsert went to a
    file SQLite had unlinked ("attempt to write a readonly database"), so no row was embedded
    again, flush waited to its timeout, and only a restart found the loss. The indexer now
    opens a new store in place, marks it, and queues every row for it."""
    mem = make_memory(config=SMALL_SCAN)
    m = mem.bind(**IDENT)
    ids = [r.id for r in m.remember_many(FACTS)]
    assert mem.flush(timeout=60)
    BREAKS[how](mem.home, mem)

    late = m.remember("The staging server lives in the basement of the Oslo office").id
    assert mem.flush(timeout=60)
    assert mem.vectors.ids(_user_collection()) == {*ids, late}
    lost = [r for r in caplog.records if "deleted while in use" in r.getMessage()]
    assert len(lost) == 1 and lost[0].levelname == "ERROR"
    assert m.recall("where is the staging machine physically?").items[0].id == late
    assert m.recall(PARAPHRASE).items[0].content == ALLERGY

    caplog.clear()
    later = m.remember("The user's favourite colour is teal").id
    assert mem.flush(timeout=60)
    assert m.recall("what colour do they like best?").items[0].id == later
    assert not [r for r in caplog.records if "readonly database" in r.getMessage()]
    assert diagnose(mem.context).ok
    mem.close()  # no error
    again = make_memory(path=mem.home, background=False)
    assert again.recovered == []
    assert again.vectors.count(_user_collection()) == len(ids) + 2


def test_indexes_deleted_while_open_are_mended_without_a_background_indexer(
    make_memory,
) -> None:
    """With ``background=False`` the caller's flush() runs the passes (``run_once``): it
    mends both indexes deleted under it as the background workers do."""
    mem = make_memory(config=SMALL_SCAN, background=False)
    m = mem.bind(**IDENT)
    ids = [r.id for r in m.remember_many(FACTS)]
    assert mem.flush()
    shutil.rmtree(mem.home / "keywords")
    _delete_chroma_dir(mem.home, mem)

    late = m.remember("The staging server lives in the basement of the Oslo office").id
    assert mem.flush()
    assert mem.keywords.all_ids() == {*ids, late}
    assert mem.vectors.ids(_user_collection()) == {*ids, late}
    assert m.recall("where is the staging machine physically?").items[0].id == late
    assert diagnose(mem.context).ok
    mem.close()


def _zero_page(db: Path, page: int) -> None:
    """Overwrite page ``page`` (from 0) of an SQLite file with zeros, as a bad sector or a
    torn write leaves it."""
    size = int.from_bytes(db.read_bytes()[16:18], "big")  # the page size, in the header
    with open(db, "r+b") as f:
        f.seek(page * (65536 if size == 1 else size))
        f.write(bytes(size))


def test_corrupt_vector_index_opens_degraded_and_reindex_rebuilds_it(make_memory, cli) -> None:
    mem, ids = _filled(make_memory)
    home = mem.home
    mem.close()
    _zero_page(home / "chroma" / "chroma.sqlite3", 1)
    index = VectorIndex(home / "chroma")
    try:
        with pytest.raises(StorageError, match="is corrupt") as err:
            index.collections()
        causes = []
        cause: BaseException | None = err.value
        while cause is not None:
            causes.append(type(cause).__name__)
            cause = cause.__cause__
        assert "PanicException" in causes  # what Chroma does with such a file
    finally:
        index.close()

    status, out = cli(home, "doctor")
    assert status != 0 and "is corrupt" in out and "agentmem reindex" in out
    status, out = cli(home, "--tenant", "acme", "--user", "u1", "recall", "peanuts")
    assert status == 0 and "allergic to peanuts" in out and "degraded=True" in out
    status, out = cli(home, "--tenant", "acme", "--user", "u1", "remember", "Cat: Miso")
    assert status == 0, out  # stored; its vector waits for reindex (the indexer running)

    mem = make_memory(path=home, background=False, config=SMALL_SCAN)
    m = mem.bind(**IDENT)
    found = m.recall("peanuts")
    assert found.items[0].content == ALLERGY and found.degraded is True
    m.remember("The user's dog is called Biscuit")
    assert mem.flush() is False  # not waiting for an index only reindex makes writable
    assert mem.stats().vector_pending == 2
    report = diagnose(mem.context)
    assert not report.ok and any("is corrupt" in p for p in report.problems)
    assert any("is corrupt" in p for p in health(mem.context).problems)
    mem.close()

    status, out = cli(home, "reindex")
    assert status == 0, out
    mem = make_memory(path=home, background=False)
    found = mem.bind(**IDENT).recall(PARAPHRASE)
    assert found.items[0].content == ALLERGY and found.degraded is False
    assert mem.stats().live == len(ids) + 2 and mem.stats().vector_pending == 0
    assert diagnose(mem.context).ok


# -- the records store ---------------------------------------------------------------------
@pytest.mark.parametrize("page", ["header", "middle"])
def test_damaged_records_store_is_named_with_the_way_out(make_memory, cli, page: str) -> None:
    """A bad sector in records.sqlite3: the open said SQLite's own words under "cannot
    migrate", and doctor reported "ok" while no query it made touched the page. Doctor now
    finds it (SQLite's quick_check), and every command that meets it says the file is
    damaged, that the indexes cannot restore it, and how to restore or salvage it."""
    mem, _ = _filled(make_memory)
    home = mem.home
    mem.close()
    db = home / "records.sqlite3"
    pages = db.stat().st_size // int.from_bytes(db.read_bytes()[16:18], "big")
    _zero_page(db, 0 if page == "header" else pages // 2)

    def says_damaged(out: str) -> bool:
        return f"records store {db} is damaged" in out and "from a backup" in out

    # JSON: rich wraps text output at the terminal's width, long paths included
    status, out = cli(home, "--json", "doctor")
    assert status == 1 and says_damaged(out), out
    for argv in (["export"], ["--tenant", "acme", "--user", "u1", "--json", "recall", "peanuts"]):
        status, out = cli(home, *argv)
        assert status == 0 or (status == 1 and says_damaged(out)), (argv, out)


def _fresh_records(home: Path) -> None:
    """What an open (or `agentmem keys`) made of a deleted records file: a new, empty one."""
    (home / "records.sqlite3").unlink()
    RecordStore(home / "records.sqlite3").close()


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, shared_embedder: Any, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setattr(_common, "shared_embedder", lambda *_: shared_embedder)

    def run(home: Path, *argv: str) -> tuple[int, str]:
        capsys.readouterr()
        status = main(["--home", str(home), *argv])
        captured = capsys.readouterr()
        return status, captured.out + captured.err

    return run


def _files(home: Path) -> dict[Path, tuple[int, int]]:
    """(mtime, size) of every file under ``home`` but the lock."""
    return {
        p.relative_to(home): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in home.rglob("*")
        if p.is_file() and p.name != "LOCK"
    }


@pytest.mark.parametrize("state", ["missing", "empty", "new"])
def test_lost_records_store_is_refused_and_nothing_changes(
    make_memory, cli, shared_embedder, state: str
) -> None:
    mem, _ids = _filled(make_memory)
    home = mem.home
    mem.close()
    if state == "missing":
        (home / "records.sqlite3").unlink()
    elif state == "empty":  # truncated to 0 bytes: SQLite would make a new store of it
        (home / "records.sqlite3").write_bytes(b"")
    else:
        _fresh_records(home)
    before = _files(home)

    for read_only in (False, True):
        with pytest.raises(RecordsMissingError) as err:
            AgentMemory(home, embedder=shared_embedder, read_only=read_only)
        message = str(err.value)
        assert str(home / "records.sqlite3") in message or "holds no record" in message
        assert {"missing": "is missing", "empty": "is empty", "new": "holds no record"}[
            state
        ] in message
        assert "keyword index" in message and "vector index" in message
        assert "from a backup" in message and "move keywords/ and chroma/ out of" in message
        assert err.value.context["path"] == str(home)
    for command in ("doctor", "reindex"):
        status, out = cli(home, command)
        assert status != 0 and "from a backup" in out and "run `agentmem reindex`" not in out
    assert _files(home) == before  # nothing created (no -wal, no -shm), grown or touched
    assert (home / "records.sqlite3").exists() is (state != "missing")


def test_new_and_fully_erased_stores_still_open(make_memory, shared_embedder) -> None:
    mem, _ids = _filled(make_memory)
    mem.erase(tenant_id="acme")
    home = mem.home
    mem.close()
    with AgentMemory(home, embedder=shared_embedder) as reopened:  # the erasure is history
        assert reopened.stats().live == 0
    assert make_memory().stats().live == 0


def test_a_node_home_over_an_empty_postgres_store_is_refused(
    postgres_server: Any, shared_embedder: Any, tmp_path: Path
) -> None:
    """A node's keyword index beside a records database that is new (recreated, or the wrong
    URL): refused, as for SQLite."""
    home = tmp_path / "node"
    with AgentMemory(
        home, embedder=shared_embedder, records_url=postgres_server.new_schema()
    ) as mem:
        mem.bind(**IDENT).remember(ALLERGY)
        mem.flush()
    with pytest.raises(RecordsMissingError) as err:
        AgentMemory(home, embedder=shared_embedder, records_url=postgres_server.new_schema())
    message = str(err.value)
    assert "holds no record" in message and "the keyword index" in message
    assert "Restore the records database from a backup" in message


def test_no_embedding_for_a_vector_index_known_corrupt(make_memory, shared_embedder) -> None:
    """A keyword pass embeds a chat message's context first, but not while the vector index
    is known corrupt: the vectors could not be stored, and each pass would embed them again."""
    mem, _ = _filled(make_memory)
    home = mem.home
    mem.close()
    _zero_page(home / "chroma" / "chroma.sqlite3", 1)
    calls: list[int] = []

    class Counting:
        model_name = shared_embedder.model_name
        dimensions = shared_embedder.dimensions

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            calls.append(len(texts))
            return shared_embedder.embed_documents(texts)

        def embed_query(self, text: str) -> list[float]:
            return shared_embedder.embed_query(text)

    mem = make_memory(path=home, background=False, config=SMALL_SCAN, embedder=Counting())
    m = mem.bind(**IDENT)
    m.recall("peanuts")  # the vector index is found corrupt
    for text in ("I booked the dentist for Tuesday", "Remind me what time it is", "At 9am"):
        m.add_message("user", text)
    mem.flush()
    assert calls == []
    assert len(m.recall("dentist Tuesday").items) >= 1  # keyword-searchable all the same
