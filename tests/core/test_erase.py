"""``AgentMemory.erase`` / ``agentmem erase``: no byte of an erased identity stays behind.

Real SQLite, Tantivy, Chroma and the real embedder under ``tmp_path``; the offline LLM extracts
memories and writes summaries. Each identity's data carries a unique canary string (in
messages, a large tool output, a long message, facts, a document, extracted memories, the
reference summary, session chunks and summaries, and the session id, which reaches Chroma's
metadata); after an erasure, a byte scan of every file under the data dir must not find it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _canaries import files_with
from _forgetting_support import (
    columns_of,
    everything_readable,
    gettable,
    keyword_terms_left,
    rows_containing,
)

from agentmem import AgentMemory, BoundMemory, StorageError, ValidationError
from agentmem.cli import main
from agentmem.maintenance.doctor import diagnose
from agentmem.storage.keyword_index import KeywordIndex
from agentmem.storage.records import RecordStore
from agentmem.storage.vector_index import VectorIndex, collection_name
from agentmem.write.indexer import Indexer

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]
U1, U2 = "user-zq81", "user-wk52"
C1, C2 = "zqxcanary7731", "wvkcanary4412"


@pytest.fixture(autouse=True)
def _offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def fill(
    mem: AgentMemory, canary: str, *, tenant: str = "acme", user: str | None, agent: str | None
) -> BoundMemory:
    """Every kind of data of one identity, each carrying ``canary``; indexed."""
    m = mem.bind(tenant, user_id=user, agent_id=agent, session_id=f"sess-{canary}")
    m.add_message("system", "You are a helpful assistant.")
    for i in range(4):
        m.add_message("user", f"My locker code is {canary} and I live in Berlin ({i}).")
        m.add_message("assistant", f"Noted {canary}, entry {i}.")
    m.add_tool_output("call-1", f"lookup {canary} " + "payload row " * 20_000, tool_name="lookup")
    m.add_message("user", f"a long message about {canary} " + "word " * 5_000)  # > 16 KiB
    m.remember(f"The locker code is {canary}", scope="user" if user else "agent")
    if agent is not None and user is not None:
        m.remember(f"Agent note about {canary}", scope="agent")
    if agent is not None and user is None:
        # the agent's own: knowledge and state belong to it, not to a user it serves
        m.knowledge.upsert(f"Knowledge entry about {canary}", key=f"k-{canary}")
        m.state.set("cursor", {"last": canary})
    m.add_document(f"Policy document about {canary}. " * 40, source_ref=f"doc-{canary}")
    m.ingest([{"role": "user", "content": f"I prefer the code {canary} for the locker"}])
    assert m.compact(keep=2).ok
    m.close_session(summary_timeout=10)
    mem.flush()
    return m


#: Columns of ``memories`` an erasure may change on the rows it keeps: the recall counters, and
#: the keyword queue's marks (a kept message that followed an erased one is indexed again,
#: without it as context).
NOT_CONTENT = ("access_count", "last_accessed", "kw_pending", "change_seq", "change_xid")


def owned_rows(mem: AgentMemory, where: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Rows of ``memories`` (every column but :data:`NOT_CONTENT`), in insertion order."""
    cols = columns_of(mem, "memories")
    keep = ", ".join(c for c in cols if c not in NOT_CONTENT)
    return mem.records.read(f"SELECT {keep} FROM memories WHERE {where} ORDER BY seq", params)


def vector_count(mem: AgentMemory, ids: set[str]) -> int:
    return sum(len(mem.vectors.ids(c) & ids) for c in mem.vectors.collections())


def assert_gone(mem: AgentMemory, canary: str, *bound: BoundMemory) -> None:
    """Nothing returns ``canary`` and no store holds it; the byte scan of every file runs
    after the store is closed (Chroma rewrites a collection's files whenever it loads it,
    queries included, and the store scrubs what it wrote when it closes)."""
    assert keyword_terms_left(mem, canary) == {}
    assert rows_containing(mem, canary) == 0
    for m in bound:
        assert not [t for t in everything_readable(m, canary) if canary in t]
    mem.close()
    assert files_with(mem.home, canary) == []


def test_erase_user_leaves_no_byte_and_keeps_the_other_user(
    make_memory: MakeMemory, rows: Callable[..., int]
) -> None:
    mem = make_memory()
    m1 = fill(mem, C1, user=U1, agent="support")
    m2 = fill(mem, C2, user=U2, agent="support")
    assert diagnose(mem.context).ok
    ids1 = [r[0] for r in mem.records.read("SELECT id FROM memories WHERE user_id = ?", (U1,))]
    rows2 = owned_rows(mem, "user_id = ?", (U2,))
    recall2 = {h.id for h in m2.recall(C2, top_k=20, min_score=0.0).items}
    ids2 = [r[0] for r in mem.records.read("SELECT id FROM memories WHERE user_id = ?", (U2,))]
    contents2 = gettable(m2, ids2)
    assert len(contents2) > 20
    assert files_with(mem.home, C1) and files_with(mem.home, C2)
    assert keyword_terms_left(mem, C1)
    indexed = rows(mem, "user_id = ? AND keyword_indexed = 1", (U1,))
    vectors = vector_count(mem, set(ids1))
    assert recall2 and vectors

    receipt = mem.erase(tenant_id="acme", user_id=U1)

    assert gettable(m1, ids1) == {}
    for partition in ("user:" + U1, "conv:u:" + U1, "chunks:conv:u:" + U1):
        assert mem.keywords.stored_entries(partition) == 0
        assert collection_name("acme", partition) not in mem.vectors.collections()
    assert rows_containing(mem, U1) == 1  # the erasure log's entry: ids and counts
    logged = mem.records.read("SELECT user_id, status, removed FROM erasures")
    assert [(u, s) for u, s, _ in logged] == [(U1, "done")] and C1 not in logged[0][2]
    # the other user is untouched and recallable
    assert owned_rows(mem, "user_id = ?", (U2,)) == rows2
    assert gettable(m2, ids2) == contents2
    after = m2.recall(C2, top_k=20, min_score=0.0).items
    assert after and all(mem.records.memories.get(h.id).item.user_id == U2 for h in after)
    assert any(C2 in t for t in everything_readable(m2, C2))
    # the receipt counts what went, per store
    assert receipt.records["memories"] == len(ids1)
    assert receipt.records["payloads"] == 2  # the tool output and the long message
    assert receipt.records["sessions"] == 1 and receipt.records["working_state"] == 1
    assert receipt.records["partitions"] == 3  # user:, conv:u:, chunks:conv:u:
    assert receipt.keyword_entries == indexed
    assert receipt.vectors == vectors
    assert (receipt.collections_dropped, receipt.collections_rebuilt) == (3, 2)  # tenant, agent
    assert receipt.compacted == ("keywords", "vectors", "records")
    assert not receipt.resumed and receipt.completed_at >= receipt.started_at
    report = diagnose(mem.context)
    assert report.ok and report.erasures_checked == 1, report
    # nothing of the user is readable, and no file under the data dir holds its canary; its
    # id is left only in the erasure log of the records store
    assert_gone(mem, C1, m1, mem.bind("acme", user_id=U2), mem.bind("acme", agent_id="support"))
    assert set(files_with(mem.home, U1)) <= {"records.sqlite3", "records.sqlite3-wal"}


def test_erasing_twice_removes_nothing_more(make_memory: MakeMemory) -> None:
    mem = make_memory()
    fill(mem, C1, user=U1, agent=None)
    first = mem.erase(tenant_id="acme", user_id=U1)
    assert first.rows > 0
    again = mem.erase(tenant_id="acme", user_id=U1)
    assert (again.rows, again.keyword_entries, again.vectors, again.compacted) == (0, 0, 0, ())
    assert again.erasure_id != first.erasure_id
    report = diagnose(mem.context)
    assert report.ok and report.erasures_checked == 2


def test_erase_agent_rebuilds_what_it_shared_and_keeps_the_rest(make_memory: MakeMemory) -> None:
    mem = make_memory()
    scout = fill(mem, C1, user=None, agent="scout")
    helper = fill(mem, C2, user=None, agent="helper")
    # one session of a user with both agents, closed by the helper: its chunks and summary
    # hold the scout's messages
    both = {
        a: mem.bind("acme", user_id="u9", agent_id=a, session_id="mixed")
        for a in ("scout", "helper")
    }
    both["scout"].add_message("user", f"Scout, remember the code {C1} for the garage.")
    both["helper"].add_message("user", "Helper, book the dentist for Tuesday afternoon.")
    both["helper"].add_message("assistant", "Booked the dentist for Tuesday.")
    both["helper"].close_session(summary_timeout=10)
    mem.flush()
    helper_rows = owned_rows(mem, "agent_id = ? AND tier IS NULL", ("helper",))

    receipt = mem.erase(tenant_id="acme", agent_id="scout")

    assert receipt.records["agent_state"] == 1 and receipt.sessions_rebuilt == 1
    assert scout.knowledge.list(agent_id="scout") == []
    assert helper.knowledge.get(f"k-{C2}") is not None
    assert helper.state.get("cursor").value == {"last": C2}
    assert owned_rows(mem, "agent_id = ? AND tier IS NULL", ("helper",)) == helper_rows
    detail = both["helper"].session_detail("mixed")
    assert [e.content for e in detail.events] == [
        "Helper, book the dentist for Tuesday afternoon.",
        "Booked the dentist for Tuesday.",
    ]
    assert detail.summary and "dentist" in detail.summary
    hits = both["helper"].recall("dentist Tuesday", tiers=("mid_term",), min_score=0.0).items
    assert hits and all(C1 not in h.content for h in hits)
    assert diagnose(mem.context).ok
    assert_gone(mem, C1, scout, both["helper"])


def test_erase_a_whole_tenant(make_memory: MakeMemory) -> None:
    mem = make_memory()
    fill(mem, C1, tenant="t-gone", user=U1, agent="support")
    fill(mem, C1 + "x", tenant="t-gone", user=None, agent="support")
    other = fill(mem, C2, tenant="t-kept", user=U1, agent="support")
    kept = owned_rows(mem, "tenant_id = ?", ("t-kept",))
    gone_collections = {c for t, _, c in mem.records.partitions.all() if t == "t-gone"}

    receipt = mem.erase(tenant_id="t-gone")

    assert mem.records.erasure.leftovers([mem.records.erasure.all()[0].subject]) == [{}]
    assert not [t for t, _, _ in mem.records.partitions.all() if t == "t-gone"]
    assert gone_collections and not gone_collections & set(mem.vectors.collections())
    assert receipt.records["memories"] > 0 and receipt.records["agent_state"] == 1
    assert owned_rows(mem, "tenant_id = ?", ("t-kept",)) == kept
    assert any(C2 in t for t in everything_readable(other, C2))
    assert diagnose(mem.context).ok
    assert_gone(mem, C1, mem.bind("t-gone", user_id=U1, agent_id="support", session_id="s"))


def test_doctor_reports_what_came_back_after_an_erasure(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = fill(mem, C1, user=U1, agent=None)
    mem.erase(tenant_id="acme", user_id=U1)
    m.remember("written again after the erasure")
    mem.flush()
    report = diagnose(mem.context)
    assert not report.ok
    (check,) = report.erasures
    assert check.user_id == U1 and check.records["memories"] == 1
    assert check.keyword_entries == 1 and check.collections == [
        collection_name("acme", f"user:{U1}")
    ]
    mem.erase(tenant_id="acme", user_id=U1)
    assert diagnose(mem.context).ok


def _facts(mem: AgentMemory, canary: str, user: str) -> BoundMemory:
    m = mem.bind("acme", user_id=user, session_id=f"s-{user}")
    m.remember_many([f"The locker code is {canary}", f"My {canary} password is hunter2"])
    m.add_message("user", f"Remember {canary} for the locker")
    mem.flush()
    return m


def test_an_unreadable_keyword_index_is_not_kept_where_erasure_cannot_reach(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    _facts(mem, C1, U1)
    home = mem.home
    mem.close()
    (home / "keywords" / "meta.json").write_text('{"segments": [truncated')

    mem = make_memory(path=home)  # the index is unreadable: removed and rebuilt
    assert "removed, rebuilt from the records" in mem.recovered[0]
    assert not [p.name for p in home.iterdir() if ".broken-" in p.name]
    mem.flush()
    receipt = mem.erase(tenant_id="acme", user_id=U1)
    assert receipt.rows > 0 and "quarantine" not in receipt.compacted
    report = diagnose(mem.context)  # not ok only for the recovery at open it reports
    assert report.problems == [f"recovered at open: {mem.recovered[0]}"]
    assert report.erasures_checked == 1 and report.erasures == [] and report.quarantined == []
    assert_gone(mem, C1)


def test_erase_removes_a_kept_copy_of_an_index_and_doctor_reports_it(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory()
    m1 = _facts(mem, C1, U1)
    _facts(mem, C2, U2)

    def set_aside(name: str) -> Path:
        """A copy of the keyword index as an earlier version kept one (readable here)."""
        copy = mem.home / f"keywords.broken-{name}"
        shutil.copytree(mem.home / "keywords", copy, ignore=shutil.ignore_patterns("*.lock"))
        return copy

    copy = set_aside("20250101000000")
    kept = KeywordIndex(copy, read_only=True)
    assert kept.doc_freq("content", kept.analyze(C2)[0]) > 0  # U2's entries are in it
    kept.close()
    report = diagnose(mem.context)
    assert not report.ok and report.quarantined == [copy.name]

    receipt = mem.erase(tenant_id="acme", user_id=U2)
    assert receipt.compacted[-1] == "quarantine" and not copy.exists()
    assert diagnose(mem.context).ok

    later = set_aside("20250202000000")  # the check of U2's erasure cannot see into it
    report = diagnose(mem.context)
    (check,) = report.erasures
    assert check.user_id == U2 and check.quarantined == [later.name] and not report.ok

    receipt = mem.erase(tenant_id="acme", user_id=U1)
    assert receipt.compacted[-1] == "quarantine" and not later.exists()
    report = diagnose(mem.context)
    assert report.ok and report.erasures_checked == 2, report
    home = mem.home
    assert_gone(mem, C1, m1)
    assert files_with(home, C2) == []


FAILURES = {
    "plan": (KeywordIndex, "entries"),
    "keywords": (Indexer, "rewrite_keywords"),
    "vectors": (VectorIndex, "rebuild"),
    "files": (RecordStore, "reclaim"),
}


@pytest.mark.parametrize("stage", list(FAILURES))
def test_an_interrupted_erasure_is_finished_at_the_next_open(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    mem = make_memory()
    fill(mem, C1, user=U1, agent="support")
    fill(mem, C2, user=U2, agent="support")
    kept = owned_rows(mem, "user_id = ?", (U2,))
    cls, name = FAILURES[stage]

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"simulated crash in {name}")

    with monkeypatch.context() as patch:
        patch.setattr(cls, name, crash)
        with pytest.raises(RuntimeError, match="simulated crash"):
            mem.erase(tenant_id="acme", user_id=U1)
    report = diagnose(mem.context)
    assert not report.ok and report.erasures[0].status != "done"
    home = mem.home
    mem.close()

    again = make_memory(path=home)  # finishes the erasure before anything else
    assert [r.status for r in again.records.erasure.all()] == ["done"]
    assert owned_rows(again, "user_id = ?", (U2,)) == kept
    report = diagnose(again.context)
    assert report.ok, report
    assert_gone(again, C1)


def test_erase_needs_a_writer_and_valid_ids(make_memory: MakeMemory) -> None:
    mem = make_memory()
    fill(mem, C1, user=U1, agent=None)
    with pytest.raises(ValidationError):
        mem.erase(tenant_id="")
    with pytest.raises(ValidationError):
        mem.erase(tenant_id="acme", user_id=7)  # type: ignore[arg-type]
    reader = AgentMemory(mem.home, read_only=True, embedder=mem.embedder, settings=mem.settings)
    try:
        with pytest.raises(StorageError, match="read-only"):
            reader.erase(tenant_id="acme", user_id=U1)
    finally:
        reader.close()
    assert files_with(mem.home, C1)


def test_cli_erase_prints_the_receipt_and_doctor_checks_it(
    make_memory: MakeMemory, capsys: pytest.CaptureFixture[str]
) -> None:
    mem = make_memory()
    fill(mem, C1, user=U1, agent=None)
    home: Path = mem.home
    url = mem.settings.records_url
    mem.close()

    def run(*argv: str) -> tuple[int, Any]:
        capsys.readouterr()
        status = main(["--home", str(home), *(["--records-url", url] if url else []), *argv])
        out = capsys.readouterr().out
        return status, json.loads(out) if out.strip().startswith("{") else out

    status, receipt = run("erase", "--tenant", "acme", "--user", U1, "--json")
    assert status == 0
    assert receipt["user_id"] == U1 and receipt["records"]["memories"] > 0
    assert receipt["vectors"] > 0 and receipt["compacted"] == ["keywords", "vectors", "records"]
    assert files_with(home, C1) == []
    status, report = run("doctor", "--json")
    assert status == 0 and report["ok"] and report["erasures_checked"] == 1
    status, text = run("erase", "--tenant", "acme", "--user", U1)
    assert status == 0 and "0 row(s) removed" in text
    assert run("erase", "--user", U1)[0] == 2  # no --tenant: refused
    assert run("erase", "--tenant", " ")[0] == 2


def test_the_keyword_rewrite_indexes_rows_as_the_indexer_does(make_memory: MakeMemory) -> None:
    """The rewrite builds each chat message's keyword context in one pass over the rows; the
    indexer reads it with a query per message: the index must answer the same either way."""
    from agentmem.storage.keyword_index import KeywordFilter

    mem = make_memory(background=False)
    tokens = [f"zqtok{i}" for i in range(12)]
    for s in range(3):
        m = mem.bind("acme", user_id="u1", agent_id="a1", session_id=f"s{s}")
        for i, token in enumerate(tokens):
            m.add_message("user", f"When did parcel {token} of session {s} arrive?")
            m.add_message("assistant", "Yes, last Tuesday!" if i % 2 else f"Checking {i}.")
            if i % 4 == 0:
                m.add_tool_output(f"call-{i}", f"tracking {token} delivered")
        m.close_session(summary_timeout=0)
    mem.bind("acme", user_id="u2", session_id="x").add_message("user", "zqtok3 elsewhere")
    mem.flush()
    flt = KeywordFilter(tenant="acme", partitions=("conv:u:u1", "chunks:conv:u:u1", "conv:u:u2"))

    def answers() -> list[set[str]]:
        # the rows each query matches (the scores differ: the index the indexer wrote still
        # counts the entries it replaced, a rewritten one does not)
        return [{i for i, _ in mem.keywords.search([t, "tuesday"], flt, 50)} for t in tokens]

    before = answers()
    assert any(len(a) > 3 for a in before)
    assert mem.indexer.rewrite_keywords() == mem.stats().live
    assert answers() == before
