"""``agentmem recall`` and ``session-detail`` on a data dir and over ``--url`` (the server's app
run by uvicorn in this process, so the test reads what it observed): one command is one
recall, counted only for what it returned, and the recall options of the Python API
(``--no-rerank``, ``--tiers``, ``--target-agent``) reach the operation.

The reranker is a fake TEI server on loopback (the network edge): it counts the rerank calls
and orders by word overlap.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from _served_app import served

from agentmem import AgentMemory
from agentmem.cli import main
from agentmem.server.keys import create_key

MakeMemory = Callable[..., AgentMemory]


class _Tei(ThreadingHTTPServer):
    daemon_threads = True
    calls: list[str]


class _TeiHandler(BaseHTTPRequestHandler):
    server: _Tei

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.calls.append(request["query"])
        words = set(request["query"].lower().split())
        scores = [len(words & set(t.lower().split())) / len(words) for t in request["texts"]]
        body = json.dumps([{"index": i, "score": s} for i, s in enumerate(scores)]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def tei() -> Iterator[_Tei]:
    server = _Tei(("127.0.0.1", 0), _TeiHandler)
    server.calls = []
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@dataclass
class Where:
    """How the CLI reaches the store, and what the test can see of it."""

    flags: list[str]
    tei: _Tei
    #: The served memory (over --url), whose recall observations the test reads.
    served: AgentMemory | None = None
    ids: dict[str, str] = field(default_factory=dict)

    def recalls(self) -> int:
        assert self.served is not None
        return len(self.served.context.recalls.recent(tenant_id="acme"))


def _seed(mem: AgentMemory) -> dict[str, str]:
    planner = mem.bind("acme", agent_id="planner", session_id="p1")
    planner.add_message("user", "Plan the harbour inspection for Friday.")
    planner.add_message("assistant", "The harbour inspection is set for Friday.")
    planner.close_session(summary_timeout=10)
    mem.bind("acme", agent_id="planner").knowledge.upsert("The harbour opens at six.", key="h")
    fact = mem.bind("acme", user_id="u1").remember(
        "My warm-up routine is ten minutes of stretching"
    )
    mem.flush()
    return {"fact": fact.id}


@pytest.fixture(params=["home", "url"])
def where(
    request: pytest.FixtureRequest,
    make_memory: MakeMemory,
    tei: _Tei,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Where]:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "AGENTMEM_URL", "AGENTMEM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENTMEM_RERANKER_URL", f"http://127.0.0.1:{tei.server_address[1]}")
    mem = make_memory()
    ids = _seed(mem)
    tei.calls.clear()
    if request.param == "home":
        mem.close()  # the command opens the data dir itself
        yield Where(["--home", str(mem.home)], tei, ids=ids)
        return
    with served(mem) as app:
        key = create_key(mem.records, tenant_id="acme").key
        yield Where(["--url", app.url, "--api-key", key], tei, mem, ids)


def _run(capsys: pytest.CaptureFixture[str], where: Where, *argv: str) -> dict[str, Any]:
    capsys.readouterr()
    status = main([*where.flags, "--tenant", "acme", "--json", *argv])
    out, err = capsys.readouterr()
    assert status == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def _access_count(where: Where, capsys: pytest.CaptureFixture[str], memory_id: str) -> int:
    if where.served is None:  # the command wrote its counts when it closed the data dir
        rows = _run(capsys, where, "--user", "u1", "history", memory_id)["chain"]
        return sum(row["access_count"] for row in rows if row["id"] == memory_id)
    row = where.served.records.memories.get(memory_id)  # a server writes them in batches
    assert row is not None
    return row.item.access_count + where.served.context.access.pending().get(memory_id, 0)


def test_one_command_is_one_recall(where: Where, capsys: pytest.CaptureFixture[str]) -> None:
    before = where.recalls() if where.served is not None else 0
    for _ in range(3):
        answer = _run(capsys, where, "--user", "u1", "recall", "favourite colour")
        assert answer["items"] == [] and answer["best_score"] is not None
    assert len(where.tei.calls) == 3  # the recall's own rerank, nothing more
    if where.served is not None:
        assert where.recalls() == before + 3
    assert _access_count(where, capsys, where.ids["fact"]) == 0
    answer = _run(capsys, where, "--user", "u1", "recall", "my warm-up routine")
    assert [h["id"] for h in answer["items"]] == [where.ids["fact"]]
    assert _access_count(where, capsys, where.ids["fact"]) == 1


def test_recall_options_reach_the_operation(
    where: Where, capsys: pytest.CaptureFixture[str]
) -> None:
    u1 = ["--user", "u1", "recall", "my warm-up routine"]
    assert _run(capsys, where, *u1)["rerank_used"] is True
    assert len(where.tei.calls) == 1
    assert _run(capsys, where, *u1, "--no-rerank")["rerank_used"] is False
    assert len(where.tei.calls) == 1  # the reranker was not asked

    reader = ["--agent", "reader", "recall", "harbour inspection", "--min-score", "0"]
    own = [h["content"] for h in _run(capsys, where, *reader, "--no-rerank")["items"]]
    assert not [t for t in own if "inspection" in t]  # another agent's sessions: not by default
    other = [*reader, "--target-agent", "planner", "--no-rerank"]
    texts = [h["content"] for h in _run(capsys, where, *other)["items"]]
    assert any("inspection" in t for t in texts) and any("opens at six" in t for t in texts)
    history = _run(capsys, where, *other, "--scope", "history", "--tiers", "mid_term")["items"]
    assert history and {h["scope"] for h in history} == {"history"}
    assert not [h for h in history if "opens at six" in h["content"]]
    knowledge = _run(capsys, where, *other, "--tiers", "knowledge")["items"]
    assert [(h["scope"], h["content"]) for h in knowledge] == [
        ("knowledge", "The harbour opens at six.")
    ]

    detail = _run(capsys, where, "--agent", "reader", "session-detail", "p1", "--target-agent",
                  "planner")  # fmt: skip
    assert [e["content"] for e in detail["events"]] == [
        "Plan the harbour inspection for Friday.",
        "The harbour inspection is set for Friday.",
    ]
