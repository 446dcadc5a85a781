"""Recall with a reranker: the TEI HTTP reranker against a real loopback server, fail-open."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentmem import HttpReranker, ValidationError

MEMORIES = [
    "The staging database password rotates every 30 days",
    "I prefer dark roast coffee in the morning",
    "The staging database lives on host db-stage-2 in Frankfurt",
]


class _Server(ThreadingHTTPServer):
    mode = "ok"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        mode = self.server.mode
        if mode == "slow":
            time.sleep(1.5)
        if mode == "500":
            self.send_response(500)
            self.end_headers()
            return
        if mode == "malformed":
            payload = b"{not json"
        else:
            # Prefer documents that mention "Frankfurt": the opposite of what fusion would do
            # for a query about rotation, so a test can see the reranker's order win.
            scores = [0.95 if "Frankfurt" in t else 0.2 for t in body["texts"]]
            order = sorted(range(len(scores)), key=lambda i: -scores[i])
            payload = json.dumps([{"index": i, "score": scores[i]} for i in order]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _memory(make_memory: Any, url: str) -> Any:
    mem = make_memory(reranker=HttpReranker(url, timeout=0.5))
    m = mem.bind("acme", user_id="u1")
    for text in MEMORIES:
        m.remember(text)
    mem.flush()
    return m


def test_reranker_orders_results(make_memory: Any, server: _Server) -> None:
    m = _memory(make_memory, f"http://127.0.0.1:{server.server_port}")
    result = m.recall("staging database password rotation", min_score=0.0)
    assert result.rerank_used is True
    assert "Frankfurt" in result.items[0].content
    assert result.items[0].score == pytest.approx(0.95)
    plain = m.recall("staging database password rotation", rerank=False, min_score=0.0)
    assert plain.rerank_used is False
    assert "rotates" in plain.items[0].content


@pytest.mark.parametrize("mode", ["500", "malformed", "slow"])
def test_reranker_failure_is_fail_open(
    make_memory: Any, server: _Server, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    m = _memory(make_memory, f"http://127.0.0.1:{server.server_port}")
    server.mode = mode
    with caplog.at_level(logging.WARNING, logger="agentmem"):
        result = m.recall("staging database password rotation", min_score=0.0)
    assert result.rerank_used is False
    assert "rotates" in result.items[0].content
    assert any("rerank_failed" in r.getMessage() for r in caplog.records)


def test_reranker_down_is_fail_open(make_memory: Any, server: _Server) -> None:
    port = server.server_port
    server.shutdown()
    server.server_close()
    m = _memory(make_memory, f"http://127.0.0.1:{port}")
    result = m.recall("staging database password rotation", min_score=0.0)
    assert result.rerank_used is False
    assert result.total >= 2


def test_reranker_from_env(
    make_memory: Any, server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTMEM_RERANKER_URL", f"http://127.0.0.1:{server.server_port}")
    mem = make_memory()
    assert isinstance(mem.reranker, HttpReranker)
    m = mem.bind("acme", user_id="u1")
    m.remember(MEMORIES[2])
    mem.flush()
    assert m.recall("where is the staging database").rerank_used is True


def test_a_reranker_failing_partway_leaves_every_fused_score(make_memory: Any) -> None:
    """One unusable score among usable ones: the fused order and scores, all of them (the
    first scores were kept before, under rerank_used=False)."""

    class Partial:
        def rerank(self, query: str, documents: list[str]) -> list[Any]:
            return [0.99] * (len(documents) - 1) + [None]

    plain = make_memory()
    reranked = make_memory(reranker=Partial())
    results = []
    for mem in (plain, reranked):
        m = mem.bind("acme", user_id="u1")
        for text in MEMORIES:
            m.remember(text)
        mem.flush()
        results.append(m.recall("staging database password rotation", min_score=0.0))
    without, failed = results
    assert failed.rerank_used is False
    assert [(h.content, h.score) for h in failed.items] == [
        (h.content, h.score) for h in without.items
    ]


def test_include_superseded_must_be_a_bool(make_memory: Any) -> None:
    m = make_memory().bind("acme", user_id="u1")
    with pytest.raises(ValidationError, match="include_superseded: must be a bool"):
        m.recall("x", include_superseded="false")


def test_without_a_profile_min_score_applies_to_the_rerankers_scores(
    make_memory: Any, server: _Server
) -> None:
    """An uncalibrated embedder's scores mean nothing, a reranker's do: once reranked,
    ``min_score`` cuts by them, and no keyword evidence is needed."""
    import warnings

    from agentmem import UncalibratedEmbedderWarning
    from agentmem.embeddings import CachedEmbedder, OnnxMiniLMEmbedder

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncalibratedEmbedderWarning)
        mem = make_memory(
            embedder=CachedEmbedder(OnnxMiniLMEmbedder(model_name="minilm-no-profile")),
            reranker=HttpReranker(f"http://127.0.0.1:{server.server_port}", timeout=10),
        )
    assert mem.calibration is None
    m = mem.bind("acme", user_id="u1")
    for text in MEMORIES:
        m.remember(text)
    mem.flush()
    # no query word in any memory: the keyword gate alone would return nothing
    result = m.recall("which city hosts our servers?", min_score=0.5)
    assert result.rerank_used
    assert [h.content for h in result.items] == [MEMORIES[2]]  # the one the reranker scores 0.95
    assert m.recall("which city hosts our servers?", rerank=False).items == []
