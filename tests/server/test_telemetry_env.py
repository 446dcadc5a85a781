"""``agentmem serve`` configured the standard way: ``OTEL_*`` variables send its spans to an
OTLP/HTTP collector (a loopback server here, decoding what it receives),
``OTEL_SDK_DISABLED=true`` keeps them off, and ``--metrics-port`` serves the metrics without a
key on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from _agentmem_server import ServerProcess
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from prometheus_client.parser import text_string_to_metric_families

import agentmem

pytestmark = pytest.mark.slow


class Collector:
    """An OTLP/HTTP trace receiver on loopback: the spans it was sent, with their service."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str]] = []  # (service.name, span name)
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource_spans in request.resource_spans:
                    service = next(
                        a.value.string_value
                        for a in resource_spans.resource.attributes
                        if a.key == "service.name"
                    )
                    for scope_spans in resource_spans.scope_spans:
                        received.extend((service, s.name) for s in scope_spans.spans)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.close()


def _serve_and_recall(
    home: Path, env: dict[str, str], serve_args: list[str], *, scrape: bool = False
) -> set[str]:
    """Start a server, write and recall through it, stop it (SIGTERM: the span processor
    flushes at exit); the metric families its metrics port served, when ``scrape``."""
    families: set[str] = set()
    srv = ServerProcess(home, env=env, serve_args=serve_args).start()
    try:
        with agentmem.connect(srv.url, api_key=srv.create_key("acme")) as client:
            m = client.bind(user_id="u1")
            m.remember("Alice moved to Porto last spring")
            assert m.recall("where does Alice live?").items
        if scrape:
            line = srv.wait_for(r"metrics on http://127\.0\.0\.1:\d+/metrics")
            answer = httpx.get(line.split("metrics on ", 1)[1].strip())  # no key
            assert answer.status_code == 200
            families = {f.name for f in text_string_to_metric_families(answer.text)}
            assert httpx.get(f"{srv.url}/metrics").status_code == 401  # the main port asks one
    finally:
        assert srv.stop() == 0
    return families


def test_otel_variables_export_the_servers_spans_and_the_metrics_port_answers(
    tmp_path: Path, collector: Collector
) -> None:
    env = {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_SERVICE_NAME": "memory-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    families = _serve_and_recall(tmp_path / "home", env, ["--metrics-port", "0"], scrape=True)
    names = {name for service, name in collector.spans if service == "memory-under-test"}
    assert {"POST /v1/ops/recall", "agentmem.recall", "agentmem.recall.score"} <= names
    assert {"POST /v1/ops/remember", "agentmem.write"} <= names
    assert {"agentmem_recalls", "agentmem_index_pending_rows", "agentmem_ready"} <= families


def test_otel_sdk_disabled_exports_nothing(tmp_path: Path, collector: Collector) -> None:
    env = {
        "OTEL_SDK_DISABLED": "true",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    _serve_and_recall(tmp_path / "home", env, [])
    assert collector.spans == []
