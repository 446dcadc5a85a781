"""The sync client's wire (``agentmem.client._transport``): connections kept alive and
reused, a connection the server closed replaced without an error, headers and body in one
write, timeouts and refused connections reported as before. The server here is a loopback
``http.server`` that counts its connections and records what it received."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentmem.client import Client
from agentmem.client._transport import KeepAliveTransport, plain_http_transport
from agentmem.errors import RemoteError


class _Recorder(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.handle_error = lambda request, address: None  # a client that gave up
        self.connections = 0
        self.requests: list[dict[str, Any]] = []
        #: "keep" (HTTP/1.1 keep-alive), "close" (``Connection: close``), "drop" (closes the
        #: connection after answering without saying so), "slow" (answers after 2 s).
        self.mode = "keep"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Recorder

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(size) if size else b""
        self.server.requests.append(
            {"path": self.path, "headers": dict(self.headers), "body": body}
        )
        if self.server.mode == "slow":
            time.sleep(2)
        payload = b'{"result": "%d"}' % len(self.server.requests)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if self.server.mode == "close":
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        if self.server.mode == "drop":
            self.close_connection = True

    do_GET = do_POST = _answer


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    srv = _Recorder()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_sync_client_uses_the_keepalive_transport() -> None:
    assert isinstance(plain_http_transport("http://127.0.0.1:8720"), KeepAliveTransport)
    assert plain_http_transport("https://memory.example.com") is None


def test_one_connection_serves_every_request(recorder: _Recorder) -> None:
    with Client(recorder.url, api_key="k") as client:
        answers = [client.request("POST", "/v1/x", content=b'{"n": 1}').json() for _ in range(5)]
        answers.append(client.request("GET", "/v1/y?a=1").json())
    assert answers == [{"result": str(n)} for n in range(1, 7)]
    assert recorder.connections == 1
    first = recorder.requests[0]
    assert first["body"] == b'{"n": 1}'
    assert first["headers"]["Authorization"] == "Bearer k"
    assert recorder.requests[-1]["path"] == "/v1/y?a=1"


@pytest.mark.parametrize("mode", ["close", "drop"])
def test_a_connection_the_server_closed_is_replaced(recorder: _Recorder, mode: str) -> None:
    recorder.mode = mode
    with Client(recorder.url, api_key="k") as client:
        for _ in range(3):
            assert client.request("POST", "/v1/x", content=b"{}").status_code == 200
            time.sleep(0.05)  # the server's close reaches the client's socket
    assert recorder.connections == 3


def test_headers_and_body_go_out_in_one_write(
    recorder: _Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Apart they are two packets and two wake-ups of the server."""
    writes: list[bytes] = []

    def counting(write: Any) -> Any:
        def counted(self: socket.socket, data: Any, *args: Any) -> Any:
            if self.getpeername()[1] == recorder.server_address[1]:  # the client's writes
                writes.append(bytes(data))
            return write(self, data, *args)

        return counted

    with Client(recorder.url, api_key="k") as client:
        client.request("GET", "/v1/warm-up")  # the connection is open
        monkeypatch.setattr(socket.socket, "sendall", counting(socket.socket.sendall))
        monkeypatch.setattr(socket.socket, "send", counting(socket.socket.send))
        client.request("POST", "/v1/ops/recall", content=b'{"q": 1}')
    assert len(writes) == 1
    assert writes[0].startswith(b"POST /v1/ops/recall HTTP/1.1\r\n")
    assert writes[0].endswith(b'\r\n\r\n{"q": 1}')


def test_a_header_cannot_smuggle_another(recorder: _Recorder) -> None:
    with Client(recorder.url, api_key="k\r\nX-Evil: 1") as client, pytest.raises(RemoteError):
        client.request("GET", "/v1/x")
    assert all("X-Evil" not in r["headers"] for r in recorder.requests)


def test_a_slow_answer_times_out(recorder: _Recorder) -> None:
    recorder.mode = "slow"
    client = Client(recorder.url, api_key="k", timeout=0.3)
    with client, pytest.raises(RemoteError, match="timed out"):
        client.request("GET", "/v1/x")


def test_a_refused_connection_is_retried_then_reported() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = Client(f"http://127.0.0.1:{port}", api_key="k", max_retries=1)
    with client, pytest.raises(RemoteError, match="cannot reach"):
        client.request("GET", "/v1/x")


def test_a_proxy_from_the_environment_keeps_httpx_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost")
    assert plain_http_transport("http://memory.internal:8720") is None
    assert isinstance(plain_http_transport("http://localhost:8720"), KeepAliveTransport)
