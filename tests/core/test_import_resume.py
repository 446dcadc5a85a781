"""``agentmem import`` run again, whole or after an interruption, stores nothing twice.

Each kind of line is checked: hand-written messages (a repeated "ok" included), tool
outputs, documents and memories (a topic superseded within the file included), and an
export's records of every kind (messages, tool outputs, document chunks, memories, knowledge,
session chunks and summaries), closed sessions and agent state. The interruption is a real
SIGINT to an ``agentmem import`` subprocess, sent once its progress shows rows stored.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmem import AgentMemory
from agentmem.errors import StorageError
from agentmem.maintenance import transfer
from agentmem.models import Identity

MakeMemory = Callable[..., AgentMemory]
BASE = Identity(tenant_id="acme", user_id="u1", agent_id="support", session_id="s-import")


def _written_lines() -> list[dict[str, Any]]:
    """Lines written by hand: one of each write type, with the cases that deduplication by
    text alone would get wrong."""
    return [
        {"role": "user", "content": "Can you book the 8:15 train?"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "And a window seat"},
        {"role": "assistant", "content": "ok"},  # said twice: stored twice, once per run
        {"type": "tool_output", "tool_call_id": "c1", "content": '{"seat": "14A"}'},
        {"type": "document", "content": "Trains leave Lisbon hourly.", "source_ref": "tt.md"},
        {"type": "memory", "content": "Prefers the aisle", "topic_key": "seat"},
        {"type": "memory", "content": "Prefers the window", "topic_key": "seat"},
        {"type": "memory", "content": "Travels with a bike"},
    ]


def _exported_lines(mem: AgentMemory) -> list[dict[str, Any]]:
    """An export holding a record of every kind, a closed session and agent state."""
    m = mem.bind("globex", user_id="u2", agent_id="desk", session_id="s-old")
    m.add_message("user", "My laptop will not boot after the update")
    m.add_message("assistant", "Hold the power button for ten seconds")
    m.add_tool_output("t1", "firmware 2.1 installed", tool_name="inventory")
    m.add_document("Boot issues: reset the firmware first.", source_ref="kb.md")
    m.remember("The user's laptop is a T14", memory_type="fact")
    m.knowledge.upsert("Reset firmware before reinstalling", key="boot")
    m.state.set("queue", {"open": 3})
    m.close_session(summary_timeout=5)
    lines = list(transfer.export_lines(mem.context))
    kinds = Counter(line["type"] for line in lines)
    assert (
        {"message", "tool_output", "document_chunk", "memory", "summary", "session_chunk"}
        <= set(kinds)
        and kinds["session"] == 1
        and kinds["agent_state"] == 1
    )
    assert any(line.get("scope") == "knowledge" for line in lines)
    return lines


def _state(mem: AgentMemory) -> Counter[str]:
    """What the store holds, ids aside (write lines get new ids): every line's content."""
    held: Counter[str] = Counter()
    for line in transfer.export_lines(mem.context):
        drop = {"id", "created_at", "updated_at", "event_time", "last_accessed", "access_count"}
        drop |= {"embedded", "keyword_indexed"}  # the indexer's progress, not what is stored
        kept = {k: v for k, v in line.items() if k not in drop and not k.endswith("_ids")}
        if line["type"] in ("message", "tool_output"):
            kept.pop("source_ref", None)  # names the row's id when the text is long
        kept.pop("superseded_by", None)
        held[json.dumps(kept, sort_keys=True, default=str)] += 1
    return held


@pytest.fixture
def source_file(make_memory: MakeMemory, tmp_path: Path) -> Path:
    src = make_memory()
    lines = _exported_lines(src) + _written_lines()
    path = tmp_path / "all-kinds.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def _plan(path: Path) -> transfer.ImportPlan:
    return transfer.parse_lines(path.read_text("utf-8").splitlines(), BASE)


def test_importing_a_file_again_stores_nothing_twice(
    make_memory: MakeMemory, source_file: Path
) -> None:
    mem = make_memory()
    first = transfer.apply_plan(mem.context, _plan(source_file), batch_size=2)
    held = _state(mem)
    again = transfer.apply_plan(mem.context, _plan(source_file), batch_size=2)

    assert _state(mem) == held
    assert first.messages_new == first.messages == 4
    assert again.messages == 4 and again.messages_new == 0
    assert first.memories_new == 3 and again.memories_new == 0
    assert again.restored == 0 and again.already_present == first.restored > 0
    assert again.sessions == 0 and again.agent_state == 0
    u1 = mem.bind("acme", user_id="u1", session_id="s-import")
    assert [m.content for m in u1.messages() if m.kind == "chat_message"].count("ok") == 2
    current = {h.content for h in u1.recall("seat", kinds="memory", min_score=0.0).items}
    assert "Prefers the window" in current and "Prefers the aisle" not in current


def _after(batches: int) -> Callable[[], bool]:
    """A ``should_stop`` that says stop once ``batches`` batches were written."""
    asked = iter(range(1_000_000))
    return lambda: next(asked) >= batches


def test_an_interrupted_import_finishes_on_a_second_run(
    make_memory: MakeMemory, source_file: Path
) -> None:
    whole = make_memory()
    transfer.apply_plan(whole.context, _plan(source_file), batch_size=2)

    for stop_after in range(1, len(_plan(source_file).ops)):
        resumed = make_memory()
        cut = transfer.apply_plan(
            resumed.context, _plan(source_file), batch_size=1, should_stop=_after(stop_after)
        )
        assert cut.interrupted and cut.applied == stop_after
        rest = transfer.apply_plan(resumed.context, _plan(source_file), batch_size=1)
        assert not rest.interrupted and rest.applied == rest.planned
        assert _state(resumed) == _state(whole), stop_after
        resumed.close()


# -- a real Ctrl-C ----------------------------------------------------------------------------
def _cli(home: Path, *argv: str) -> list[str]:
    return [sys.executable, "-m", "agentmem.cli", "--home", str(home), "--tenant", "acme",
            "--user", "u1", "--session", "s-big", "--json", *argv]  # fmt: skip


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env["COLUMNS"] = "120"
    return env


def _progress(proc: subprocess.Popen[str]) -> Iterator[tuple[int, int]]:
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("importing: "):
            done, total = line.split()[1].split("/")
            yield int(done), int(total)


@pytest.mark.slow
def test_ctrl_c_stops_an_import_saying_what_it_stored(tmp_path: Path) -> None:
    n = 3000
    path = tmp_path / "big.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"role": "user" if i % 2 else "assistant", "content": f"turn {i % 50}"})
            for i in range(n)
        )
        + "\n"
    )
    home = tmp_path / "home"
    proc = subprocess.Popen(
        _cli(home, "import", str(path), "--batch-size", "10"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    done, total = next(_progress(proc))  # some rows are stored: interrupt now
    assert 0 < done <= total == n
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    first = json.loads(out)
    if first["interrupted"]:
        assert done <= first["applied"] < n and first["messages_new"] == first["applied"]
    else:  # every line was stored before the signal came: it stopped the indexing wait
        assert first["messages_new"] == n and first["indexed"] is False

    rerun = subprocess.run(
        _cli(home, "import", str(path), "--batch-size", "500"),
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert rerun.returncode == 0, rerun.stderr
    second = json.loads(rerun.stdout)
    assert second["messages"] == n
    assert first["messages_new"] + second["messages_new"] == n
    with AgentMemory(home, read_only=True) as mem:
        stored = mem.bind("acme", user_id="u1", session_id="s-big").messages()
    assert Counter(m.content for m in stored) == Counter(f"turn {i % 50}" for i in range(n))


def test_the_interrupted_message_names_what_was_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a person reads after Ctrl-C (the signal is simulated: the handler's own event)."""
    from agentmem.cli import main, transfer_cmd

    path = tmp_path / "few.jsonl"
    path.write_text("\n".join(json.dumps({"role": "user", "content": f"m{i}"}) for i in range(9)))
    real = transfer.apply_plan

    def stop_after_first_batch(*args: Any, **kwargs: Any) -> transfer.ImportCounts:
        return real(*args, **{**kwargs, "should_stop": _after(1)})

    monkeypatch.setattr(transfer_cmd.transfer, "apply_plan", stop_after_first_batch)
    argv = ["--home", str(tmp_path / "h"), "--user", "u", "--session", "s"]
    assert main([*argv, "import", str(path), "--batch-size", "4"]) == 130
    out = capsys.readouterr().out
    assert "interrupted after 4 of 9 line(s)" in " ".join(out.split())
    assert "4 messages (4 new)" in " ".join(out.split())
    assert "Run the same import again" in " ".join(out.split())


def test_a_full_disk_stops_an_import_saying_what_was_kept_and_a_rerun_finishes(
    tmp_path: Path,
) -> None:
    """SQLite's own "database or disk is full" (SQLITE_FULL), raised here by capping the
    file's pages as a full disk would: the error says so, how far the import got, and that
    running it again stores the rest; nothing stored before it is lost or stored twice."""
    lines = [json.dumps({"role": "user", "content": f"note {i}: " + "x" * 2000}) for i in range(60)]
    plan = transfer.parse_lines(lines, BASE)
    with AgentMemory(tmp_path / "mem", background=False) as mem:
        with mem.records.db.write() as conn:  # the writer connection: no room past 40 pages
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count={pages + 40}")
        with pytest.raises(StorageError) as caught:
            transfer.apply_plan(mem.context, plan, batch_size=10)
        said = str(caught.value)
        assert "full" in said and "free some space" in said
        m = mem.bind("acme", user_id="u1", session_id="s-import")
        stored = len(m.messages())
        assert 0 < stored < len(lines)
        assert f"{stored} of {len(lines)} line(s) stored before it are kept" in said
        assert "run the same import again" in said
        with mem.records.db.write() as conn:  # space freed
            conn.execute("PRAGMA max_page_count=1073741823")
        rest = transfer.apply_plan(mem.context, plan, batch_size=10)
        assert rest.messages_new == len(lines) - stored
        assert sorted(row.content for row in m.messages()) == sorted(
            json.loads(line)["content"] for line in lines
        )
