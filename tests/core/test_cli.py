"""Tests for the ``agentmem`` command line (``agentmem.cli``).

Commands run in-process through ``agentmem.cli.main`` (output captured with capsys) on real
stores under ``tmp_path``; one test runs the installed console script in a subprocess.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentmem import AgentMemory, StorageError, ValidationError
from agentmem.chunking import chunk_text
from agentmem.cli import _common as cli_common
from agentmem.cli import build_parser, demo, main
from agentmem.cli.memory_cmd import NEAR_MISS
from agentmem.config import CHAT_COPY_MAX_BYTES
from agentmem.embeddings import CachedEmbedder


@dataclass
class Run:
    status: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def jsonl(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.split("\n") if line.strip()]


CLI = Callable[..., Run]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], home: Path) -> CLI:
    """``cli(*argv, home=...)``: run ``agentmem --home HOME *argv`` in-process."""

    def run(*argv: str, home_dir: Path | None = None) -> Run:
        capsys.readouterr()
        status = main(["--home", str(home_dir or home), *argv])
        captured = capsys.readouterr()
        return Run(status, captured.out, captured.err)

    return run


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").split("\n") if line.strip()]


def _write_jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), "utf-8"
    )
    return path


# -- remember / recall / add-message ----------------------------------------------------------
def test_remember_then_recall_json(cli: CLI) -> None:
    who = ["--tenant", "acme", "--user", "maya"]
    first = cli(
        *who, "--json", "remember", "I always fly with a window seat", "--type", "preference"
    )
    assert first.status == 0, first.err
    created = first.json()
    assert created["was_new"] is True
    assert created["scope"] == "user"  # the default when a user is bound
    again = cli(
        *who, "--json", "remember", "I always fly with a window seat", "--type", "preference"
    )
    assert again.json() == {**created, "was_new": False}

    found = cli(*who, "--json", "recall", "where does she like to sit on planes?")
    assert found.status == 0, found.err
    body = found.json()
    assert body["items"][0]["id"] == created["id"]
    assert body["items"][0]["kind"] == "memory"
    assert body["items"][0]["memory_type"] == "preference"
    assert 0.3 <= body["items"][0]["score"] <= 1.0
    assert body["degraded"] is False
    assert isinstance(body["latency_ms"], float)

    # another tenant sees nothing; another user of the same tenant neither
    for other in (["--tenant", "other", "--user", "maya"], ["--tenant", "acme", "--user", "tom"]):
        assert cli(*other, "--json", "recall", "window seat on planes").json()["items"] == []


def test_recall_text_output_shows_table(cli: CLI) -> None:
    assert cli("--user", "u1", "remember", "The staging database runs PostgreSQL 16").status == 0
    run = cli("--user", "u1", "recall", "which postgres version is on staging?")
    assert run.status == 0, run.err
    assert "PostgreSQL 16" in run.out
    assert "degraded=False" in run.out
    assert "memory" in run.out and "user" in run.out
    nothing = cli("--user", "u1", "recall", "best hiking trails in Patagonia")
    assert nothing.status == 0
    assert "no memories above the score threshold" in nothing.out
    assert "no --user" not in nothing.err  # a user was bound: a plain miss


def test_get_shows_a_record_the_identity_may_see(cli: CLI) -> None:
    """`agentmem get ID`: what `m.get(id)` is in Python, for the ids recall prints."""
    who = ["--tenant", "acme", "--user", "u1"]
    made = cli(*who, "--json", "remember", "I prefer uv over pip", "--type", "preference",
               "--metadata", '{"source": "cli"}')  # fmt: skip
    fact = made.json()["id"]
    shown = cli(*who, "get", fact)
    assert shown.status == 0, shown.err
    assert "I prefer uv over pip" in shown.out and "preference" in shown.out
    assert '"source": "cli"' in shown.out
    item = cli(*who, "--json", "get", fact).json()
    assert (item["id"], item["content"], item["scope"]) == (fact, "I prefer uv over pip", "user")
    hidden = cli("--tenant", "acme", "--user", "u2", "get", fact)
    assert hidden.status == 1 and fact in hidden.err and hidden.out == ""


def test_recall_with_no_identity_says_what_it_searched(cli: CLI) -> None:
    """Remembering with --user and recalling without it found nothing and said "no memories
    above the score threshold", as if the memory were there but scored low."""
    assert cli("--user", "u1", "remember", "The staging database runs PostgreSQL 16").status == 0
    run = cli("recall", "which postgres version is on staging?")
    assert run.status == 0, run.err
    assert "nothing found" in run.out and "score threshold" not in run.out
    assert "no --user, --agent or --session is bound" in run.err
    assert "tenant 'default'" in run.err


def test_identity_comes_from_environment(cli: CLI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMEM_TENANT", "envco")
    monkeypatch.setenv("AGENTMEM_USER", "ana")
    monkeypatch.setenv("AGENTMEM_SESSION", "s1")
    stored = cli("--json", "add-message", "user", "My flight to Lisbon leaves on Friday")
    assert stored.status == 0, stored.err
    assert stored.json()["session_id"] == "s1"
    # a flag overrides the variable: a later session of the same user sees it as history
    hit = cli("--session", "s2", "--json", "recall", "when is the trip to Portugal?").json()
    assert hit["items"][0]["id"] == stored.json()["id"]
    assert hit["items"][0]["scope"] == "history"
    exported = cli("export").jsonl()
    assert [(r["tenant_id"], r["user_id"], r["session_id"]) for r in exported] == [
        ("envco", "ana", "s1")
    ]
    monkeypatch.delenv("AGENTMEM_TENANT")
    assert cli("export").jsonl()[0]["tenant_id"] == "envco"  # export covers every tenant
    assert cli("export", "--tenant-only").jsonl() == []  # tenant 'default' has nothing


def test_tenant_defaults_to_default(cli: CLI) -> None:
    # no owner bound: the whole tenant would see it, so only when asked for by name
    refused = cli("remember", "Deploys happen on Tuesdays")
    assert refused.status == 2 and "--scope tenant" in refused.err
    assert cli("remember", "Deploys happen on Tuesdays", "--scope", "tenant").status == 0
    (row,) = cli("export").jsonl()
    assert row["tenant_id"] == "default"
    assert row["scope"] == "tenant"


def test_long_message_is_kept_in_full(cli: CLI, monkeypatch: pytest.MonkeyPatch) -> None:
    body = "log line with details\n" * 2000  # ~44 KB, above the 16 KiB chat copy cap
    monkeypatch.setattr(sys, "stdin", io.StringIO(body))
    run = cli("--user", "u", "--session", "s", "--json", "add-message", "tool", "-")
    assert run.status == 0, run.err
    ref = run.json()["source_ref"]
    assert ref
    full = cli("--user", "u", "--session", "s", "read-tool-output", ref)
    assert full.status == 0
    assert full.out == body


# -- errors -------------------------------------------------------------------------------
def test_empty_query_is_a_usage_error(cli: CLI) -> None:
    run = cli("recall", "   ")
    assert run.status == 2
    assert "query: must not be empty" in run.err
    as_json = cli("--json", "recall", "")
    assert as_json.status == 2
    error = as_json.json()["error"]
    assert error["status"] == 2
    assert error["field"] == "query"


def test_unknown_kind_is_rejected_by_the_parser(
    cli: CLI, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli("recall", "anything", "--kind", "bogus")
    assert exc.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli("export", "--kind", "notes")


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["remember", "x", "--scope", "user"], 2, "needs --user (or AGENTMEM_USER)"),
        (["remember", "x", "--scope", "session"], 2, "needs --session"),
        (["remember", "x", "--metadata", "{nope"], 2, "--metadata: not valid JSON"),
        (["remember", "x"], 2, "pass --scope tenant to mean that"),
        (["add-message", "user", "hello"], 2, "add-message needs --session"),
        (["--session", "s", "add-message", "user", " "], 2, "content: must not be empty"),
        (["recall", "x", "--scope", "user"], 2, "scope 'user' needs user_id"),
        (["recall", "x", "--filter", "user_id=u1"], 2, "cannot filter on identity keys"),
        (["forget", "0123456789abcdef"], 1, "not found"),
        (["read-tool-output", "tout_missing"], 1, "no tool output with key"),
        (["import", "no-such-file.jsonl"], 2, "no-such-file.jsonl: cannot read: No such file"),
    ],
)
def test_error_statuses_and_messages(
    cli: CLI, home: Path, argv: list[str], status: int, message: str
) -> None:
    home.mkdir()  # a data dir to read (a reading command on none is its own error)
    run = cli(*argv)
    assert run.status == status, (run.out, run.err)
    assert message in run.err
    assert run.err.startswith("agentmem: error: ")


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    for name in ("remember", "recall", "add-message", "import", "export", "stats", "demo"):
        assert name in out


# -- import ---------------------------------------------------------------------------------
def test_import_all_types_with_line_identity(cli: CLI, tmp_path: Path) -> None:
    payload = json.dumps({"invoice": "INV-2231", "lines": [{"n": i} for i in range(600)]})
    src = _write_jsonl(
        tmp_path / "in.jsonl",
        [
            {
                "type": "message",
                "role": "user",
                "content": "My invoice INV-2231 is wrong",
                "event_time": "2024-05-01T10:00:00Z",
            },
            {"type": "message", "role": "assistant", "content": "Let me fetch the invoice."},
            {
                "type": "tool_output",
                "tool_call_id": "c1",
                "tool_name": "get_invoice",
                "content": payload,
            },
            "",
            {
                "type": "memory",
                "content": "Customer is on the annual plan",
                "memory_type": "fact",
                "importance": 0.8,
                "metadata": {"source": "crm"},
            },
            {"type": "memory", "content": "Support team answers in German", "scope": "tenant"},
            {
                "type": "document",
                "content": "Invoices are corrected within 3 business days.",
                "source_ref": "kb/invoices.md",
            },
            {"type": "memory", "content": "Other user's secret", "user_id": "someone-else"},
        ],
    )
    run = cli("--tenant", "t1", "--user", "u1", "--session", "s1", "--json", "import", str(src))
    assert run.status == 0, run.err
    counts = run.json()
    assert counts["lines"] == 7
    assert (counts["messages"], counts["tool_outputs"], counts["documents"]) == (2, 1, 1)
    assert (counts["memories"], counts["memories_new"]) == (3, 3)

    rows = cli("export").jsonl()
    assert Counter(r["kind"] for r in rows) == {
        "chat_message": 2,
        "tool_output": 1,
        "memory": 3,
        "document_chunk": 1,
    }
    first = rows[0]
    assert first["event_time"].startswith("2024-05-01T10:00:00")
    assert first["session_id"] == "s1" and first["tenant_id"] == "t1"
    other = next(r for r in rows if r["content"] == "Other user's secret")
    assert other["user_id"] == "someone-else"  # the line's identity won over --user
    annual = next(r for r in rows if r["content"] == "Customer is on the annual plan")
    assert (annual["importance"], annual["metadata"]) == (0.8, {"source": "crm"})
    tool = next(r for r in rows if r["kind"] == "tool_output")
    assert tool["full_content"] == payload  # the stored content is an elided preview
    full = cli(
        "--tenant", "t1", "--user", "u1", "--session", "s2", "read-tool-output", tool["source_ref"]
    )
    assert full.out.rstrip("\n") == payload

    hit = cli(
        "--tenant",
        "t1",
        "--user",
        "u1",
        "--session",
        "s2",
        "--json",
        "recall",
        "how long does fixing a bill take?",
    ).json()
    assert hit["items"][0]["kind"] == "document_chunk"


def test_import_validates_every_line_before_writing(cli: CLI, tmp_path: Path) -> None:
    src = _write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"type": "memory", "content": "fine"},
            {"type": "message", "role": "user", "content": "fine too", "session_id": "s"},
            '{"type": "memory", "content": ',
            {"type": "memory", "content": "x", "memory_type": "opinion"},
            {"type": "message", "role": "robot", "content": "hi", "session_id": "s"},
            {"type": "message", "role": "user", "content": "no session"},
            {"type": "memory", "content": "x", "colour": "red"},
            ["not", "an", "object"],
            {"content": "no type"},
            {"type": "memory", "content": "   "},
        ],
    )
    run = cli("--user", "u1", "import", str(src))
    assert run.status == 2
    err = run.err
    assert "8 bad line(s); nothing was imported" in err
    assert "line 3: not valid JSON" in err
    assert "line 4: memory_type: must be one of" in err
    assert "line 5: role: must be one of" in err
    assert "line 6: a message needs a session" in err
    assert "line 7: unknown keys ['colour']" in err
    assert "line 8: must be a JSON object, got list" in err
    assert "line 9: needs a 'type'" in err
    assert "line 10: content: must not be empty" in err
    assert "line 1:" not in err and "line 2:" not in err
    assert _nothing_stored(cli)  # the two good lines were not written either


def test_import_from_stdin_in_batches(cli: CLI, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [
        json.dumps(
            {
                "type": "message",
                "role": "user" if n % 2 else "assistant",
                "content": f"message number {n} about topic {n % 7}",
            }
        )
        for n in range(25)
    ]
    lines += [json.dumps({"type": "memory", "content": f"fact {n}"}) for n in range(7)]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines)))
    run = cli("--user", "u", "--session", "s", "--json", "import", "-", "--batch-size", "4")
    assert run.status == 0, run.err
    assert run.json()["messages"] == 25 and run.json()["memories"] == 7
    rows = cli("export", "--kind", "chat_message").jsonl()
    assert [r["content"] for r in rows] == [
        f"message number {n} about topic {n % 7}" for n in range(25)
    ]  # order kept across batches
    stats = cli("--json", "stats").json()
    assert stats["keyword_pending"] == 0 and stats["vector_pending"] == 0  # flushed


def test_import_never_revives_a_superseded_memory(cli: CLI, tmp_path: Path) -> None:
    src = _write_jsonl(
        tmp_path / "sup.jsonl",
        [
            # retired by the judge in the source store: no topic key can replay that
            {"type": "memory", "content": "Lives in Paris", "superseded_by": "m9"},
            # retired through a topic key that a later line supersedes again
            {"type": "memory", "content": "Uses vim", "topic_key": "editor", "superseded_by": "m7"},
            {
                "type": "memory",
                "content": "Old plan: move in May",
                "topic_key": "plan",
                "superseded_by": "m8",
            },
            {"type": "memory", "content": "Uses emacs", "topic_key": "Editor"},
            {"type": "memory", "content": "Lives in Lyon"},
        ],
    )
    run = cli("--user", "u1", "--json", "import", str(src))
    assert run.status == 0, run.err
    assert (run.json()["memories"], run.json()["superseded_skipped"]) == (3, 2)
    rows = {r["content"]: r for r in cli("export").jsonl()}
    assert set(rows) == {"Uses vim", "Uses emacs", "Lives in Lyon"}
    assert rows["Uses vim"]["superseded_by"] == rows["Uses emacs"]["id"]
    assert rows["Uses emacs"]["superseded_by"] is None


# -- export / round trip --------------------------------------------------------------------
POLICY = " ".join(
    f"Rule {n}: refunds for category {n} are paid within {n + 2} business days of the "
    f"return arriving, and exchanges of category {n} items ship the same day."
    for n in range(1, 16)
)


def _populate(mem: AgentMemory) -> None:
    a = mem.bind("acme", user_id="maya", agent_id="bot", session_id="s1")
    a.add_messages(
        [
            {
                "role": "user",
                "content": "Order A-1 arrived broken",
                "event_time": "2024-03-01T09:00:00Z",
            },
            {
                "role": "assistant",
                "content": "Sorry!\u2028A line separator inside",
                "metadata": {"lang": "en"},
            },
            {"role": "tool", "content": "x" * (CHAT_COPY_MAX_BYTES + 500)},
        ]
    )
    a.add_tool_output("call-9", json.dumps({"rows": list(range(3000))}), tool_name="sql")
    a.remember("Prefers email", memory_type="preference", topic_key="contact")
    a.remember("Prefers phone after all", memory_type="preference", topic_key="contact")
    a.remember("Working on the returns flow today", scope="session", importance=0.4)
    a.remember("Bot persona: concise", scope="agent", memory_type="instruction")
    a.add_document(POLICY, source_ref="kb/policy.md", metadata={"version": 3})
    b = mem.bind("globex", agent_id="ops", session_id="night")
    b.add_message("user", "Disk on db-2 is at 91%")
    b.remember("On-call rotation changes on Mondays", scope="tenant")
    gone = b.remember("temporary note", scope="tenant")
    b.forget(gone.id)
    mem.flush()


def _without_index_state(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in ("keyword_indexed", "embedded")} for r in rows]


def test_export_import_round_trip(
    cli: CLI, tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    src_home = tmp_path / "src"
    with AgentMemory(src_home, embedder=shared_embedder) as mem:
        _populate(mem)
        closed = mem.bind("acme", user_id="maya", agent_id="bot", session_id="s1").close_session()
        assert closed.chunk_ids and closed.summary_ids
        mem.bind("acme", agent_id="bot").state.set("plan", {"step": 2})
        mem.flush()
        chunks = chunk_text(POLICY)
        assert len(chunks) >= 3  # the document really is split (and overlapped)

    exported = tmp_path / "export.jsonl"
    run = cli("--json", "export", "-o", str(exported), home_dir=src_home)
    assert run.status == 0, run.err
    rows = _jsonl(exported)
    assert run.json() == {"exported": len(rows), "path": str(exported)}
    assert not any(r.get("content") == "temporary note" for r in rows)  # deleted: not exported
    assert cli("export", home_dir=src_home).jsonl() == rows  # stdout gives the same lines
    assert {r["tenant_id"] for r in rows} == {"acme", "globex"}
    assert sum(r.get("superseded_by") is not None for r in rows) == 1
    types = Counter(r["type"] for r in rows)
    assert types["session_chunk"] == len(closed.chunk_ids)
    assert types["summary"] == len(closed.summary_ids)
    assert (types["session"], types["agent_state"]) == (1, 1)

    dst_home = tmp_path / "dst"
    imported = cli("--json", "import", str(exported), home_dir=dst_home)
    assert imported.status == 0, imported.err
    records = sum(1 for r in rows if "id" in r)
    assert (imported.json()["restored"], imported.json()["already_present"]) == (records, 0)
    rows2 = cli("export", home_dir=dst_home).jsonl()
    # every record comes back as itself: same ids, kinds, tiers, timestamps, supersession
    assert _without_index_state(rows2) == _without_index_state(rows)
    assert [r["content"] for r in rows2 if r.get("kind") == "document_chunk"] == chunks

    # importing again, or into the store it came from, changes nothing
    for home in (dst_home, src_home):
        again = cli("--json", "import", str(exported), home_dir=home)
        assert again.status == 0, again.err
        assert (again.json()["restored"], again.json()["already_present"]) == (0, records)
        assert _without_index_state(cli("export", home_dir=home).jsonl()) == _without_index_state(
            rows
        )

    # the imported store answers like the original, tiers and agent state included
    with AgentMemory(dst_home, embedder=shared_embedder) as mem:
        m = mem.bind("acme", user_id="maya", agent_id="bot", session_id="s2")
        hit = m.recall("does she want phone calls or emails?").items[0]
        assert hit.content == "Prefers phone after all"  # supersession survived
        chunk_hit = m.recall("order arrived broken", tiers="mid_term").items[0]
        assert chunk_hit.id in closed.chunk_ids
        assert m.session_detail("s1").tier == "mid_term"
        assert m.session_detail("s1").summary_ids == closed.summary_ids
        assert mem.bind("acme", agent_id="bot").state.get("plan").value == {"step": 2}


def test_import_plain_chat_lines_and_json_after_the_command(cli: CLI, tmp_path: Path) -> None:
    src = _write_jsonl(
        tmp_path / "chat.jsonl",
        [
            {"role": "user", "content": "Plain chat line without a type"},
            {"role": "assistant", "content": "Understood, plain lines work"},
        ],
    )
    run = cli("--user", "u1", "--session", "s1", "import", str(src), "--json")
    assert run.status == 0, run.err
    assert run.json()["messages"] == 2
    stats = cli("stats", "--json").json()  # --json after the command, too
    assert stats["by_kind"]["chat_message"] == 2
    no_session = cli("--user", "u1", "import", str(src))
    assert no_session.status == 2 and "a message needs a session" in no_session.err


@pytest.mark.parametrize("flag", ["--tenant", "--user", "--agent", "--session"])
def test_empty_identity_flags_are_rejected(cli: CLI, flag: str) -> None:
    run = cli(flag, "", "remember", "some fact")
    assert run.status == 2
    assert f"{flag}: must not be empty" in run.err
    assert _nothing_stored(cli)


def _nothing_stored(cli: CLI) -> bool:
    """The data dir holds no record, or was never created (stats refuses a missing one)."""
    stats = cli("--json", "stats")
    if stats.status == 2:
        return "no data dir" in stats.err
    return bool(stats.json()["live"] == 0)


def test_recall_says_when_results_are_below_min_score(cli: CLI) -> None:
    assert cli("--user", "u1", "remember", "The staging database runs on port 5433").status == 0
    run = cli("--user", "u1", "--json", "recall", "staging database port", "--min-score", "0.99")
    assert run.status == 0, run.err
    data = run.json()
    assert data["items"] == []
    best = data["best_score"]
    assert 0.99 - NEAR_MISS <= best < 0.99  # a near miss: the --min-score that returns it
    assert data["below_threshold"] == (
        f"best match {best:.2f} is below min_score 0.99; try --min-score {int(best * 100) / 100:.2f}"
    )
    suggested = data["below_threshold"].rsplit(" ", 1)[1]
    again = cli(
        "--user", "u1", "--json", "recall", "staging database port", "--min-score", suggested
    )
    assert [h["content"] for h in again.json()["items"]] == [
        "The staging database runs on port 5433"
    ]
    text = cli("--user", "u1", "recall", "staging database port", "--min-score", "0.99")
    assert "is below min_score 0.99" in text.err
    empty = cli("--user", "u2", "--json", "recall", "staging database port")  # sees nothing
    assert empty.json()["items"] == [] and empty.json()["below_threshold"] is None
    assert empty.json()["best_score"] is None


def test_recall_suggests_no_lower_threshold_for_an_unrelated_query(cli: CLI) -> None:
    assert (
        cli("--user", "u1", "remember", "My warm-up routine is ten minutes of stretching").status
        == 0
    )
    run = cli("--user", "u1", "--json", "recall", "favourite colour")
    data = run.json()
    assert data["items"] == [] and data["best_score"] < 0.3 - NEAR_MISS
    assert data["below_threshold"] == (
        f"best match {data['best_score']:.2f} is below min_score 0.30: nothing stored is close "
        "to this query"
    )
    assert "--min-score" not in cli("--user", "u1", "recall", "favourite colour").err


def test_one_recall_per_command_and_counts_only_what_it_returned(cli: CLI) -> None:
    assert (
        cli("--user", "u1", "remember", "My warm-up routine is ten minutes of stretching").status
        == 0
    )
    for _ in range(3):
        assert cli("--user", "u1", "--json", "recall", "favourite colour").json()["items"] == []
    assert [line["access_count"] for line in cli("export").jsonl()] == [0]
    shown = cli("--user", "u1", "--json", "recall", "how long is my warm-up?").json()["items"]
    assert len(shown) == 1
    assert [line["access_count"] for line in cli("export").jsonl()] == [1]


def test_export_filters(cli: CLI, tmp_path: Path, shared_embedder: CachedEmbedder) -> None:
    with AgentMemory(tmp_path / "src", embedder=shared_embedder) as mem:
        _populate(mem)
    src = tmp_path / "src"
    only = cli("--tenant", "globex", "export", "--tenant-only", home_dir=src).jsonl()
    assert only and {r["tenant_id"] for r in only} == {"globex"}
    kinds = cli("export", "--kind", "memory", "--kind", "document_chunk", home_dir=src).jsonl()
    assert {r["kind"] for r in kinds} == {"memory", "document_chunk"}
    assert cli("--tenant", "nobody", "export", "--tenant-only", home_dir=src).out == ""


def test_import_refuses_a_tenant_an_export_would_not_go_to(cli: CLI, tmp_path: Path) -> None:
    """`--tenant staging import export.jsonl` restored the rows into their own tenant (acme),
    silently: an operator meaning to keep a copy apart mixed it into the live tenant."""
    cli("--tenant", "acme", "--user", "u1", "remember", "acme fact")
    exported = tmp_path / "acme.jsonl"
    assert cli("export", "-o", str(exported)).status == 0
    target = tmp_path / "copy"
    refused = cli("--tenant", "staging", "import", str(exported), home_dir=target)
    assert refused.status == 2
    assert "line 1 restores a row of tenant 'acme'" in refused.err and "--tenant" in refused.err
    assert cli("export", home_dir=target).jsonl() == []  # nothing was imported
    same = cli("--tenant", "acme", "import", str(exported), home_dir=target)
    assert same.status == 0, same.err  # the tenant it restores into: no surprise
    hand = _write_jsonl(tmp_path / "hand.jsonl", [{"type": "memory", "content": "hand fact"}])
    assert (
        cli("--tenant", "staging", "--user", "u9", "import", str(hand), home_dir=target).status == 0
    )
    tenants = {row["content"]: row["tenant_id"] for row in cli("export", home_dir=target).jsonl()}
    assert tenants == {"acme fact": "acme", "hand fact": "staging"}


def test_export_refuses_identity_flags_it_would_ignore(cli: CLI) -> None:
    """`--tenant acme export` wrote every tenant and `--user u1 export` every user: a flag that
    looks like a filter is refused rather than ignored (only --tenant-only narrows)."""
    cli("--tenant", "acme", "--user", "u1", "remember", "acme fact")
    cli("--tenant", "globex", "--user", "g1", "remember", "globex fact")
    wide = cli("--tenant", "acme", "export")
    assert wide.status == 2 and wide.out == ""
    assert "--tenant acme" in wide.err and "--tenant-only" in wide.err
    for flags in (["--user", "u1"], ["--agent", "a1"], ["--session", "s1"]):
        refused = cli(*flags, "export", "--tenant-only", "--tenant", "acme")
        assert refused.status == 2 and refused.out == ""
        assert " ".join(flags) in refused.err
    only = cli("--tenant", "acme", "export", "--tenant-only").jsonl()
    assert [row["content"] for row in only] == ["acme fact"]
    assert len(cli("export").jsonl()) == 2  # no flag: the whole store, as documented


def test_erase_of_a_whole_tenant_is_refused_while_an_identity_variable_is_set(
    cli: CLI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every other command binds AGENTMEM_USER; erase reads flags only, so with the variable
    set, `erase --tenant T` would silently widen to the whole tenant. It is refused."""
    for user in ("u1", "u2"):
        assert cli("--tenant", "acme", "--user", user, "remember", f"fact of {user}").status == 0
    monkeypatch.setenv("AGENTMEM_USER", "u1")
    refused = cli("erase", "--tenant", "acme")
    assert refused.status == 2
    assert "AGENTMEM_USER='u1'" in refused.err and "--user" in refused.err
    assert cli("--json", "stats").json()["live"] == 2  # nothing erased
    assert cli("erase", "--tenant", "acme", "--user", "u1", "--json").json()["user_id"] == "u1"
    assert cli("--json", "stats").json()["live"] == 1
    monkeypatch.delenv("AGENTMEM_USER")
    assert cli("erase", "--tenant", "acme").status == 0
    assert cli("--json", "stats").json()["live"] == 0


# -- stats / forget / reindex -------------------------------------------------------------------
def test_stats_forget_and_reindex(cli: CLI) -> None:
    who = ["--tenant", "acme", "--user", "u1"]
    ids = [
        cli(*who, "--json", "remember", text).json()["id"]
        for text in ("The VPN gateway is vpn.acme.test", "Lunch is at noon", "Builds use Bazel")
    ]
    stats = cli("--json", "stats").json()
    assert stats["live"] == 3 and stats["by_kind"]["memory"] == 3
    assert stats["tenants"] == 1 and stats["deleted"] == 0
    assert stats["vector_pending"] == 0
    assert set(stats["disk_bytes"]) == {"records", "keywords", "vectors"}
    table = cli("stats")
    assert "live records" in table.out and "3" in table.out

    # forgetting needs an identity that can see the record
    assert cli("--tenant", "acme", "--user", "u2", "forget", ids[0]).status == 1
    gone = cli(*who, "--json", "forget", ids[0])
    assert gone.status == 0
    assert gone.json() == {"forgotten": [ids[0]], "not_found": []}
    assert cli(*who, "forget", ids[0]).status == 1  # already gone
    stats = cli("--json", "stats").json()
    assert (stats["live"], stats["deleted"]) == (2, 1)
    hits = cli(*who, "--json", "recall", "what is the address of the vpn gateway?").json()
    assert ids[0] not in [h["id"] for h in hits["items"]]

    re = cli("--json", "reindex")
    assert re.status == 0, re.err
    assert re.json()["reindexed"] == 2
    hits = cli(*who, "--json", "recall", "which build tool do we use?").json()
    assert hits["items"][0]["id"] == ids[2]
    assert "reindexed 2 live record(s)" in cli("reindex").out
    kw = cli("--json", "reindex", "--keywords-only")
    assert kw.status == 0, kw.err
    assert kw.json()["reindexed"] == 2 and kw.json()["keywords_only"] is True
    hits = cli(*who, "--json", "recall", "Bazel").json()
    assert hits["items"][0]["id"] == ids[2]
    assert "rewrote the keyword index of 2 live record(s)" in cli("reindex", "--keywords-only").out


# -- demo -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_demo_passes_its_checks(cli: CLI, home: Path) -> None:
    run = cli("--json", "demo")
    assert run.status == 0, run.err
    report = run.json()
    assert report["ok"] is True
    assert report["home"] == str(home)  # --home is used (and kept)
    assert home.joinpath("records.sqlite3").exists()
    assert all(c["ok"] for c in report["checks"])
    assert len(report["checks"]) == len(demo.QUESTIONS) + 3
    answered = report["questions"][:-1]
    for q, spec in zip(answered, demo.QUESTIONS, strict=True):
        top = q["hits"][0]
        assert (top["kind"], spec.contains in top["content"]) == (spec.kind, True)
        assert q["degraded"] is False
    assert report["questions"][-1]["hits"] == []
    assert report["summary"].startswith("demo passed")

    again = cli("demo")  # --home now holds data: refuse rather than mix runs
    assert again.status == 2
    assert "fresh data dir" in again.err


@pytest.mark.slow
def test_demo_text_output_on_a_temporary_dir(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for text in (
        "1. Writing the conversation",
        "3. Tool output expanded",
        "degraded=False",
        "document_chunk",
        "tool_output",
        "history",
        "demo passed",
    ):
        assert text in out
    line = next(x for x in out.splitlines() if "data dir:" in x)
    path = line.split("data dir:")[1].split("(")[0].strip(" │")
    assert "agentmem-demo-" in path
    assert not Path(path).exists()  # removed at exit without --keep


@pytest.mark.slow
def test_demo_fails_when_an_expectation_is_wrong(cli: CLI, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = demo.Question(
        "How does this customer want us to get in touch with her?",
        "document_chunk",
        "phone",
        "a deliberately wrong expectation",
    )
    monkeypatch.setattr(demo, "QUESTIONS", (wrong, *demo.QUESTIONS[1:]))
    monkeypatch.setattr(
        demo, "UNRELATED", "What did she end up doing about the jacket that didn't fit?"
    )
    run = cli("--json", "demo")
    assert run.status == 1
    report = run.json()
    assert report["ok"] is False
    failed = [c["name"] for c in report["checks"] if not c["ok"]]
    assert any("deliberately wrong" in name for name in failed)
    assert "an unrelated question returns nothing" in failed
    assert report["summary"].startswith("demo FAILED")


# -- the installed console script ---------------------------------------------------------------
def test_console_script_subprocess(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("agentmem")
    exe = str(script) if script.exists() else shutil.which("agentmem")
    assert exe, "the agentmem console script is not installed"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env["AGENTMEM_HOME"] = str(tmp_path / "home")
    env["AGENTMEM_USER"] = "dev"

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [exe, *argv], env=env, capture_output=True, text=True, timeout=300, check=False
        )

    stored = run("--json", "remember", "The CI runners use Ubuntu 24.04", "--type", "fact")
    assert stored.returncode == 0, stored.stderr
    memory_id = json.loads(stored.stdout)["id"]
    found = run("--json", "recall", "which Ubuntu release do the CI runners have?")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["items"][0]["id"] == memory_id
    bad = run("recall", "")
    assert bad.returncode == 2
    assert "query: must not be empty" in bad.stderr


@pytest.mark.parametrize(("call", "frozen"), [("main()", True), ("main([])", False)])
def test_the_program_leaves_its_objects_to_the_os_at_exit(call: str, frozen: bool) -> None:
    """Run as the program (arguments from ``sys.argv``), the CLI freezes the heap at exit,
    so the interpreter does not collect every imported object first; called with arguments
    by Python code, it leaves the caller's interpreter as it was."""
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen' if gc.get_freeze_count() else 'not frozen'))\n"
        "from agentmem.cli import main\n"
        "sys.argv = ['agentmem']\n"
        f"status = {call}\n"
        "print('ran', status, gc.get_freeze_count())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    # the command ran first (it printed its help: no command given), and nothing was frozen
    # while it ran
    assert done.stdout.splitlines()[-2:] == ["ran 2 0", "frozen" if frozen else "not frozen"]
    assert "usage: agentmem" in done.stdout


def test_an_imported_closed_session_covers_what_its_close_covered(tmp_path: Path) -> None:
    """A message added after the close is working memory: after export and import, another
    agent reading the closed session still does not see it."""
    from agentmem.maintenance import transfer
    from agentmem.models import Identity

    with AgentMemory(tmp_path / "src", background=False) as source:
        planner = source.bind("acme", agent_id="planner", session_id="p1")
        planner.add_message("user", "Plan the harbour inspection for Friday.")
        planner.add_message("assistant", "The harbour inspection is set for Friday.")
        planner.close_session(summary_timeout=10)
        planner.add_message("user", "Working note after the close: budget zqbudget999.")
        lines = [json.dumps(line) for line in transfer.export_lines(source.context)]
    with AgentMemory(tmp_path / "dst", background=False) as target:
        transfer.apply_plan(target.context, transfer.parse_lines(lines, Identity("default")))
        reader = target.bind("acme", agent_id="reader")
        events = reader.session_detail("p1", target_agent="planner").events
        assert [e.content for e in events] == [
            "Plan the harbour inspection for Friday.",
            "The harbour inspection is set for Friday.",
        ]
        closed = target.bind("acme", agent_id="planner", session_id="p1").close_session()
        assert not closed.already_closed  # the note is closed by the next close, as before


def test_import_takes_an_empty_tool_output_and_never_rolls_state_back(tmp_path: Path) -> None:
    from agentmem.maintenance import transfer
    from agentmem.models import Identity

    with AgentMemory(tmp_path / "home", background=False) as mem:
        m = mem.bind("acme", agent_id="a1", session_id="s1")
        m.add_tool_output("c1", "")  # a tool that returned nothing
        m.state.set("plan", {"step": 1})
        lines = [json.dumps(line) for line in transfer.export_lines(mem.context)]
        m.state.set("plan", {"step": 5})
        counts = transfer.apply_plan(mem.context, transfer.parse_lines(lines, Identity("x")))
        assert counts.agent_state == 0  # the store's entry is newer
        assert m.state.get("plan").value == {"step": 5}
    with AgentMemory(tmp_path / "copy", background=False) as copy:
        transfer.apply_plan(copy.context, transfer.parse_lines(lines, Identity("x")))
        restored = copy.bind("acme", agent_id="a1", session_id="s1").messages()
        assert [(i.kind, i.content) for i in restored] == [("tool_output", "")]


def test_an_imported_state_entry_about_a_user_is_erased_with_that_user(tmp_path: Path) -> None:
    from agentmem.maintenance import transfer
    from agentmem.models import Identity

    with AgentMemory(tmp_path / "home", background=False) as mem:
        state = mem.bind("acme", agent_id="a1").state
        state.set("about-u1", {"note": "zqstate4471"}, user_id="u1")
        state.set("own", {"note": "the agent's own"})
        with pytest.raises(ValidationError, match="user_id"):
            state.set("bad", 1, user_id=" ")
        lines = [json.dumps(line) for line in transfer.export_lines(mem.context)]
    assert [json.loads(s).get("user_id") for s in lines] == ["u1", None]
    with AgentMemory(tmp_path / "copy", background=False) as copy:
        transfer.apply_plan(copy.context, transfer.parse_lines(lines, Identity("x")))
        receipt = copy.erase(tenant_id="acme", user_id="u1")
        assert receipt.records["agent_state"] == 1
        restored = copy.bind("acme", agent_id="a1").state
        assert [e.key for e in restored.list()] == ["own"]


def test_an_imported_state_entry_about_an_agent_is_erased_with_that_agent(
    cli: CLI, home: Path, tmp_path: Path
) -> None:
    with AgentMemory(home, background=False) as mem:
        state = mem.bind("acme", agent_id="store").state
        state.set("about-a2", {"note": "zqagent5124"}, user_id="u1", about_agent_id="a2")
        state.set("about-a3", {"note": "kept"}, about_agent_id="a3")
        state.set("own", {"note": "the agent's own"})
        with pytest.raises(ValidationError, match="about_agent_id"):
            state.set("bad", 1, about_agent_id=" ")
    exported = tmp_path / "export.jsonl"
    assert cli("export", "-o", str(exported)).status == 0
    assert [(r["key"], r.get("about_agent_id")) for r in _jsonl(exported)] == [
        ("about-a2", "a2"),
        ("about-a3", "a3"),
        ("own", None),
    ]
    copy = tmp_path / "copy"
    imported = cli("import", str(exported), home_dir=copy)
    assert imported.status == 0, imported.err

    erased = cli("erase", "--tenant", "acme", "--agent", "a2", "--json", home_dir=copy)

    assert erased.status == 0, erased.err
    assert erased.json()["records"]["agent_state"] == 1
    with AgentMemory(copy, background=False) as restored:
        entries = restored.bind("acme", agent_id="store").state.list()
        assert [(e.key, e.about_agent_id) for e in entries] == [("about-a3", "a3"), ("own", None)]


def test_export_into_a_reader_that_stops_early_is_no_traceback(tmp_path: Path) -> None:
    # agentmem --home H export | head -c 10
    home = tmp_path / "home"
    with AgentMemory(home, background=False) as mem:
        mem.bind("acme", user_id="u1").remember_many(
            [f"Fact number {n}: " + "words " * 60 for n in range(600)]
        )
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmem.cli", "--home", str(home), "export"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert len(proc.stdout.read(10)) == 10
    proc.stdout.close()  # the reader goes away with most of the export unread
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err


@pytest.mark.parametrize(
    "command",
    [
        ["stats"], ["doctor"], ["export"], ["recall", "x"], ["read-tool-output", "tout_x"],
        ["forget", "m1"], ["get", "m1"], ["history", "m1"], ["answer", "x"],
        ["session-detail", "s"], ["working"], ["close-session"], ["knowledge", "get", "k"], ["knowledge", "list"],
        ["knowledge", "search", "x"], ["knowledge", "delete", "k"], ["reindex"], ["judge"],
        ["retention"], ["erase", "--tenant", "t", "--user", "u"], ["calibrate"],
        ["keys", "list"], ["keys", "revoke", "abc123"],
    ],
)  # fmt: skip
def test_a_command_that_stores_nothing_never_creates_a_data_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    missing = tmp_path / "no-such-home"
    # export refuses identity flags (test_export_refuses_identity_flags_it_would_ignore)
    who = [] if command == ["export"] else ["--user", "u", "--agent", "a", "--session", "s"]
    assert main(["--home", str(missing), *who, *command]) == 2
    assert "no data dir" in capsys.readouterr().err
    assert not missing.exists()  # nothing created


def test_an_import_leaves_one_current_entry_per_key(tmp_path: Path) -> None:
    """The store and the export each have a version of a knowledge key and of a topic: the
    newer is current, the other superseded by it (both were live before)."""
    from agentmem.maintenance import transfer
    from agentmem.models import Identity

    with AgentMemory(tmp_path / "b", background=False) as b:
        b.bind("acme", agent_id="desk").knowledge.upsert("The shop opens at 8", key="hours")
        b.bind("acme", user_id="u1").remember("Call Ana on 555-0100", topic_key="contact")
        with AgentMemory(tmp_path / "a", background=False) as a:  # written later: newer
            a.bind("acme", agent_id="desk").knowledge.upsert("The shop opens at 9", key="hours")
            a.bind("acme", user_id="u1").remember("Call Ana on 555-0199", topic_key="contact")
            lines = [json.dumps(line) for line in transfer.export_lines(a.context)]
        transfer.apply_plan(b.context, transfer.parse_lines(lines, Identity("x")))
        entries = b.bind("acme", agent_id="desk").knowledge.list()
        assert [(e.key, e.content) for e in entries] == [("hours", "The shop opens at 9")]
        u1 = b.bind("acme", user_id="u1")
        hits = u1.recall("call Ana", min_score=0.0).items
        assert [h.content for h in hits if "Ana" in h.content] == ["Call Ana on 555-0199"]


def test_an_explicit_home_wins_over_agentmem_url(cli: CLI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMEM_URL", "http://127.0.0.1:9")  # no server: it must not be asked
    assert cli("--user", "u1", "remember", "The VPN endpoint is vpn.example.org").status == 0
    found = cli("--user", "u1", "--json", "recall", "VPN endpoint")
    assert found.status == 0, found.err
    assert found.json()["items"][0]["content"] == "The VPN endpoint is vpn.example.org"
    stats = cli("--json", "stats")
    assert stats.status == 0 and stats.json()["live"] == 1
    both = cli("--url", "http://127.0.0.1:9", "stats")
    assert both.status == 2 and "name two stores" in both.err


def test_forget_help_says_it_is_irreversible(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["forget", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "irreversibly" in shown and "soft-delete" not in shown.lower()
    assert "Forget records visible to the bound identity, irreversibly" in shown


def test_progress_lines_say_how_long_is_left(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a long import to a log (not a terminal): each line says the time left at the rate so far
    clock = iter([100.0, 103.0, 106.0, 190.0])
    monkeypatch.setattr(cli_common.time, "monotonic", lambda: next(clock))
    with cli_common.Output().progress("indexing", 1000, unit="rows") as update:
        update(0, 1000)
        update(100, 1000)  # 100 rows in 3 s: 900 more take 27 s
        update(200, 1000)  # 200 in 6 s: 800 more take 24 s
        update(1000, 1000)
    assert capsys.readouterr().err.splitlines() == [
        "indexing: 0/1000 rows",
        "indexing: 100/1000 rows, about 27s left",
        "indexing: 200/1000 rows, about 24s left",
        "indexing: 1000/1000 rows",
    ]


# -- numeric flags ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["calibrate", "--folds", "0"], "argument --folds: must be at least 2, got 0"),
        (["calibrate", "--folds", "1"], "argument --folds: must be at least 2, got 1"),
        (["calibrate", "--folds", "two"], "argument --folds: must be a whole number, got 'two'"),
        (["recall", "q", "-k", "0"], "argument -k/--top-k: must be at least 1, got 0"),
        (["recall", "q", "-k", "21"], "argument -k/--top-k: must be at most 20, got 21"),
        (["recall", "q", "--min-score", "1.5"], "argument --min-score: must be at most 1, got 1.5"),
        (
            ["recall", "q", "--min-score", "nan"],
            "argument --min-score: must be a number, got 'nan'",
        ),
        (["recall", "q", "--token-budget", "0"], "argument --token-budget: must be at least 1"),
        (["recall", "q", "--wait", "-1"], "argument --wait: must be at least 0, got -1"),
        (["remember", "x", "--importance", "2"], "argument --importance: must be at most 1, got 2"),
        (["answer", "q", "-k", "0"], "argument -k/--top-k: must be at least 1, got 0"),
        (["judge", "--limit", "0"], "argument --limit: must be at least 1, got 0"),
        (["close-session", "--summary-timeout", "-1"], "argument --summary-timeout: must be at"),
        (["working", "--keep", "-1"], "argument --keep: must be at least 0, got -1"),
        (["working", "--model-window", "0"], "argument --model-window: must be at least 1"),
        (["working", "--budget-ratio", "0"], "argument --budget-ratio: must be greater than 0"),
        (["knowledge", "upsert", "x", "--importance", "-1"], "argument --importance: must be at"),
        (["knowledge", "search", "q", "-k", "99"], "argument -k/--top-k: must be at most 20"),
        (["import", "f.jsonl", "--batch-size", "0"], "argument --batch-size: must be at least 1"),
        (["bench", "--queries", "0"], "argument --queries: must be at least 1, got 0"),
        (["bench", "--ack-samples", "-1"], "argument --ack-samples: must be at least 0, got -1"),
        (["bench", "--peer-memories", "0"], "argument --peer-memories: must be at least 1"),
        (["bench", "--seed", "-1"], "argument --seed: must be at least 0, got -1"),
        (["eval", "--max-misses", "-1"], "argument --max-misses: must be at least 0, got -1"),
        (["eval", "--limit-questions", "0"], "argument --limit-questions: must be at least 1"),
    ],
)
def test_numeric_flags_are_checked_before_anything_runs(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--home", str(tmp_path / "home"), *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "home").exists()


def test_every_numeric_flag_has_a_range() -> None:
    """A plain ``type=int``/``float`` accepts any value: each numeric flag says its range."""
    unchecked = []
    parsers = [build_parser()]
    while parsers:
        parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
            elif action.type in (int, float):
                unchecked.append(f"{parser.prog} {'/'.join(action.option_strings)}")
    assert unchecked == []


def test_calibrate_refuses_too_few_folds_at_once(make_memory: Callable[..., AgentMemory]) -> None:
    mem = make_memory()
    for folds in (0, 1, True):
        with pytest.raises(ValidationError, match="folds: must be a whole number of at least 2"):
            mem.calibrate(folds=folds)


@pytest.mark.parametrize(
    "argv",
    [["stats"], ["doctor"], ["export"], ["recall", "q"], ["remember", "x", "--scope", "tenant"]],
)
def test_a_home_that_is_a_file_is_named_as_such(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    assert main(["--home", str(a_file), *argv]) == 2
    err = capsys.readouterr().err
    assert f"data dir {a_file} is a file, not a directory" in err
    assert "writable" not in err
    assert a_file.read_text() == "root:x:0:0\n"


def test_opening_a_file_as_a_data_dir_says_it_is_a_file(tmp_path: Path) -> None:
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    with pytest.raises(StorageError, match="is a file, not a directory"):
        AgentMemory(a_file)


# -- global flags before or after the command ----------------------------------------------------
def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Any]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield (*path, name), command
                yield from _commands(command, (*path, name))


def test_every_command_takes_every_global_flag() -> None:
    parser = build_parser()
    flags = {s for a in parser._actions if a.dest != "help" for s in a.option_strings}
    assert {"--home", "--tenant", "--user", "--agent", "--session", "--json", "--url"} <= flags
    missing = [
        f"{' '.join(path)} {flag}"
        for path, command in _commands(parser)
        for flag in sorted(flags)
        if flag not in command._option_string_actions
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--tenant", "acme", "recall", "q"], {"tenant": "acme", "user": None}),
        (["recall", "--tenant", "acme", "q", "--user", "u1"], {"tenant": "acme", "user": "u1"}),
        (["--tenant", "a", "--user", "u", "recall", "--tenant", "b", "q"], {"tenant": "b"}),
        (["--json", "stats"], {"json": True}),
        (["stats", "--home", "/h", "--json"], {"home": "/h", "json": True}),
        (["export", "--tenant-only", "--tenant", "acme"], {"tenant": "acme", "tenant_only": True}),
        (["--tenant", "g", "mcp", "--tenant", "t", "--session", "s"], {"tenant": "t"}),
        (["erase", "--tenant", "acme", "--user", "u1"], {"tenant": "acme", "user": "u1"}),
        (
            ["knowledge", "upsert", "x", "--agent", "bot", "--json", "--key", "k"],
            {"agent": "bot", "json": True, "key": "k"},
        ),
        # keys create --tenant is the key's tenant, not the identity's
        (["--tenant", "g", "keys", "create", "--tenant", "t"], {"tenant": "g", "key_tenant": "t"}),
    ],
)
def test_global_flags_are_taken_before_and_after_the_command(
    argv: list[str], expected: dict[str, Any]
) -> None:
    args = build_parser().parse_args(argv)
    assert {name: getattr(args, name) for name in expected} == expected


def test_identity_flags_after_the_command_reach_it(cli: CLI) -> None:
    made = cli("remember", "--tenant", "acme", "--user", "u1", "The gate code is 4417", "--json")
    assert made.status == 0, made.err
    fact = made.json()["id"]
    found = cli("recall", "--tenant", "acme", "gate code", "--user", "u1", "--json")
    assert [h["id"] for h in found.json()["items"]] == [fact]
    assert cli("--tenant", "other", "remember", "--user", "u1", "Another tenant's fact").status == 0
    only = cli("export", "--tenant-only", "--tenant", "acme")
    assert only.status == 0, only.err
    assert [line["id"] for line in only.jsonl()] == [fact]


def test_a_commands_help_names_the_global_flags(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["recall", "--help"], ["knowledge", "upsert", "--help"], ["--help"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 0
        shown = capsys.readouterr().out
        assert "--tenant" in shown and "--home" in shown, argv
    main_help = build_parser().format_help()
    assert "global options" not in main_help and "tenant id (default:" in main_help


def test_every_command_says_what_it_does_in_plain_text() -> None:
    for path, command in _commands(build_parser()):
        shown = command.format_help()
        assert command.description, path
        for mark in ("``", ":class:", ":func:", ":mod:", "**"):
            assert mark not in shown, (path, mark)
    stats = dict(_commands(build_parser()))[("stats",)].format_help()
    assert "index" in stats and "disk use" in stats


def test_a_refused_import_creates_no_data_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every line is checked before the data dir is opened: a bad file leaves no dir behind
    (a LOCK and an empty keyword index once made the next command find a data dir)."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "message", "role": "user"}\nnot json\n')
    home = tmp_path / "fresh"
    assert main(["--home", str(home), "--user", "u", "--session", "s", "import", str(bad)]) == 2
    assert "bad.jsonl" in capsys.readouterr().err
    assert not home.exists()
