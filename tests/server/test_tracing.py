"""OpenTelemetry spans: a recall through the server is a server span with the recall and its
phases below it, writes, index batches and jobs have spans of their own, no attribute, event,
name or status anywhere carries stored content or the query, and an unconfigured process
makes no span at all (it does not even import OpenTelemetry)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _served_app import served
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentmem import AgentMemory
from agentmem.recall.profile import PHASES
from agentmem.server.jobs import Job, JobRunner
from agentmem.server.keys import create_key
from agentmem.telemetry import tracing, use_tracer_provider

MakeMemory = Any


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use_tracer_provider(provider)
    try:
        yield exporter
    finally:
        use_tracer_provider(None)
        provider.shutdown()


def _named(found: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in found if s.name == name]


def _everything_said(span: ReadableSpan) -> str:
    """Every string a span carries: name, attributes, events, status, resource."""
    parts = [span.name, str(span.status.description or "")]
    parts += [f"{k}={v}" for k, v in (span.attributes or {}).items()]
    for event in span.events:
        parts.append(event.name)
        parts += [f"{k}={v}" for k, v in (event.attributes or {}).items()]
    parts += [f"{k}={v}" for k, v in span.resource.attributes.items()]
    return "\n".join(parts)


def test_a_recall_through_the_server_is_a_tree_of_spans_without_content(
    make_memory: MakeMemory, spans: InMemorySpanExporter
) -> None:
    marker = f"zq{uuid.uuid4().hex[:12]}"
    content = f"The vault code word is {marker} and the vault is in Lisbon"
    query = f"what is the vault code word {marker}?"
    mem: AgentMemory = make_memory()
    tenant = f"tenant-{uuid.uuid4().hex[:8]}"
    key = create_key(mem.records, tenant_id=tenant).key
    with served(mem) as srv, httpx.Client(base_url=srv.url, timeout=60) as http:
        headers = {"Authorization": f"Bearer {key}"}
        ident = {"user_id": "u-7", "session_id": "s-1"}
        wrote = http.post(
            "/v1/ops/remember",
            headers=headers,
            json={"identity": ident, "args": {"content": content}},
        )
        assert wrote.status_code == 200, wrote.text
        assert http.post("/v1/flush", headers=headers, json={"timeout": 60}).json()["result"]
        found = http.post(
            "/v1/ops/recall", headers=headers, json={"identity": ident, "args": {"query": query}}
        )
        assert found.status_code == 200, found.text
        assert marker in found.text  # the recall did find the content
        failed = http.post(
            "/v1/ops/recall", headers=headers, json={"identity": ident, "args": {"query": ""}}
        )
        assert failed.status_code == 422
    finished = spans.get_finished_spans()

    (server_span,) = [
        s
        for s in _named(finished, "POST /v1/ops/recall")
        if s.attributes["http.response.status_code"] == 200
    ]
    assert server_span.kind == SpanKind.SERVER
    assert server_span.attributes["http.route"] == "/v1/ops/recall"
    assert server_span.attributes["agentmem.tenant_hash"] == tracing.short_hash(tenant)
    (recall,) = [
        s
        for s in _named(finished, "agentmem.recall")
        if s.parent is not None and s.parent.span_id == server_span.context.span_id
    ]
    assert recall.context.trace_id == server_span.context.trace_id
    attributes = recall.attributes or {}
    assert attributes["agentmem.recall.results"] >= 1
    assert attributes["agentmem.recall.candidates"] >= attributes["agentmem.recall.results"]
    assert attributes["agentmem.recall.degraded"] is False
    assert attributes["agentmem.recall.rerank_used"] is False
    assert attributes["agentmem.recall.scope"] == "any"
    phases = [
        s for s in finished if s.parent is not None and s.parent.span_id == recall.context.span_id
    ]
    names = {s.name.removeprefix("agentmem.recall.") for s in phases}
    assert {"plan", "keyword_search", "embed_model", "vector_search", "score", "budget"} <= names
    assert names <= set(PHASES)
    assert all(s.start_time <= s.end_time for s in phases)

    (write,) = [
        s
        for s in _named(finished, "agentmem.write")
        if s.parent is not None
        and any(
            p.context.span_id == s.parent.span_id for p in _named(finished, "POST /v1/ops/remember")
        )
    ]
    assert write.attributes["agentmem.write.event"] == "remember"
    assert write.attributes["agentmem.write.count"] == 1
    assert write.attributes["agentmem.write.new"] == 1
    keyword_batches = _named(finished, "agentmem.index.keywords")
    vector_batches = _named(finished, "agentmem.index.vectors")
    assert sum(s.attributes.get("agentmem.index.rows", 0) for s in keyword_batches) >= 1
    assert sum(s.attributes.get("agentmem.index.embedded", 0) for s in vector_batches) >= 1

    (refused,) = [
        s
        for s in _named(finished, "POST /v1/ops/recall")
        if s.attributes["http.response.status_code"] == 422
    ]
    assert refused.status.status_code == StatusCode.UNSET  # a client error is not the server's
    for span in finished:
        said = _everything_said(span)
        assert marker not in said, span.name
        assert "Lisbon" not in said and "vault" not in said, span.name
        assert tenant not in said and "u-7" not in said, span.name


def test_the_server_span_continues_the_callers_trace(
    make_memory: MakeMemory, spans: InMemorySpanExporter
) -> None:
    mem: AgentMemory = make_memory(background=False)
    key = create_key(mem.records, tenant_id="acme").key
    trace_id = uuid.uuid4().hex
    parent = uuid.uuid4().hex[:16]
    with served(mem) as srv:
        answer = httpx.get(
            f"{srv.url}/v1/whoami",
            headers={"Authorization": f"Bearer {key}", "traceparent": f"00-{trace_id}-{parent}-01"},
        )
    assert answer.status_code == 200
    (span,) = _named(spans.get_finished_spans(), "GET /v1/whoami")
    assert format(span.context.trace_id, "032x") == trace_id
    assert span.parent is not None and format(span.parent.span_id, "016x") == parent


def test_an_unknown_path_is_named_by_no_raw_path(
    make_memory: MakeMemory, spans: InMemorySpanExporter
) -> None:
    mem: AgentMemory = make_memory(background=False)
    with served(mem) as srv:
        assert httpx.get(f"{srv.url}/secret-{uuid.uuid4().hex}").status_code == 404
    (span,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert span.name == "GET other" and "secret" not in _everything_said(span)


def test_an_embedded_recall_and_a_failing_job_have_spans_of_their_own(
    make_memory: MakeMemory, spans: InMemorySpanExporter
) -> None:
    marker = f"zq{uuid.uuid4().hex[:12]}"
    mem: AgentMemory = make_memory(background=False)
    m = mem.bind("acme", user_id="u1")
    m.remember(f"The gate code is {marker}")
    assert m.recall(f"gate code {marker}").items
    (recall,) = _named(spans.get_finished_spans(), "agentmem.recall")
    assert recall.parent is None  # no server: the recall is the root
    assert recall.attributes["agentmem.recall.results"] >= 1
    assert any(s.name == "agentmem.recall.keyword_search" for s in spans.get_finished_spans())

    def broken() -> str:
        raise RuntimeError(f"the job met {marker}")

    runner = JobRunner([Job("judge", 60.0, broken)], retry_delay=60.0)
    runner.run_once(runner.jobs[0])
    (job,) = _named(spans.get_finished_spans(), "agentmem.job")
    assert job.attributes["agentmem.job.name"] == "judge"
    assert job.attributes["agentmem.job.ok"] is False
    assert job.status.status_code == StatusCode.ERROR
    assert job.attributes["error.type"] == "RuntimeError"
    for span in spans.get_finished_spans():
        assert marker not in _everything_said(span)


def test_without_opentelemetry_installed_the_memory_works_and_makes_no_spans(
    tmp_path: Path,
) -> None:
    """The core needs no OpenTelemetry package (the server's FastAPI brings the API along),
    even with the environment asking for traces."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["opentelemetry"] = None  # an import of it fails, as if not installed
        from agentmem import AgentMemory
        from agentmem.telemetry import tracing
        with AgentMemory({str(tmp_path / "home")!r}, background=False) as mem:
            m = mem.bind("acme", user_id="u1")
            m.remember("Alice lives in Porto")
            assert m.recall("where does Alice live?").items
            assert not tracing.enabled()
            assert mem.context.recalls.recent()[-1].results >= 1
        print("ok")
        """
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OTEL_TRACES_EXPORTER": "console"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")


def test_unconfigured_tracing_stays_off(make_memory: MakeMemory) -> None:
    """No provider set and no OTEL_* variable: opening a store turns nothing on, and a span
    site gets the shared no-op context."""
    mem: AgentMemory = make_memory(background=False)
    mem.bind("acme", user_id="u1").recall("anything")
    assert not tracing.setup()
    assert not tracing.enabled()
    with tracing.span("agentmem.write", {"agentmem.write.count": 1}) as span:
        assert span is None
