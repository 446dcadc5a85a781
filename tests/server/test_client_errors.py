"""What ``agentmem.connect`` says when the server is not where, or not how, it should be.

A second process using a real ``agentmem serve``: a URL with a path, a server that stops
answering (SIGSTOP) and one that dies while it holds a call (SIGKILL). Each error names the
URL and the problem, and says whether the call may have taken effect on the server.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from _agentmem_server import ServerProcess

import agentmem
from agentmem.errors import RemoteError


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A server of this test alone (it is stopped and killed)."""
    srv = ServerProcess(tmp_path / "served", env={"AGENTMEM_RATE_LIMIT": "0"})
    srv.start()
    try:
        yield srv
    finally:
        srv.stop(signal.SIGKILL)


def test_a_url_with_a_path_is_named_with_the_fix(server: ServerProcess, tenant: str) -> None:
    url = f"{server.url}/v1"  # the API's prefix, not the server's root
    with pytest.raises(RemoteError) as caught:  # connect asks the server whose key it is
        agentmem.connect(url, api_key=server.create_key(tenant))
    said = str(caught.value)
    assert "HTTP 404" in said and f"{url}/v1/" in said and "root, without a path" in said


class _WebPage(BaseHTTPRequestHandler):
    """Another web app on the port the URL names: a page for every path."""

    def do_GET(self) -> None:
        page = b"<html><body>Welcome</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_url_of_another_web_app_is_named_with_the_fix() -> None:
    other = ThreadingHTTPServer(("127.0.0.1", 0), _WebPage)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{other.server_address[1]}"
    try:
        with pytest.raises(RemoteError) as caught:
            agentmem.connect(url, api_key="amk_whatever")
    finally:
        other.shutdown()
        other.server_close()
    said = str(caught.value)
    assert "not JSON" in said and f"GET {url}/v1/" in said and "agentmem serve" in said


def _bytes_waiting(port: int) -> bool:
    """Whether a connection to ``port`` holds request bytes its server has not read (Linux)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, queues = fields[1], fields[3], fields[4]
            established = int(local.rsplit(":", 1)[1], 16) == port and state == "01"
            if established and int(queues.split(":")[1], 16) > 0:
                return True
    return False


def test_a_server_that_stops_answering_times_out_saying_the_call_may_have_run(
    own_server: ServerProcess,
) -> None:
    key = own_server.create_key("acme")
    assert own_server.proc is not None
    with agentmem.connect(own_server.url, api_key=key, timeout=1) as client:
        own_server.proc.send_signal(signal.SIGSTOP)  # connected: it no longer reads anything
        with pytest.raises(RemoteError) as caught:
            client.bind(user_id="u1").remember("A fact sent to a frozen server")
    said = str(caught.value)
    assert own_server.url in said and "timed out" in said and "within 1 s" in said
    assert "may or may not have taken effect" in said and "timeout=" in said


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc/net/tcp")
def test_a_server_killed_during_a_call_is_not_reported_as_unreachable(
    own_server: ServerProcess,
) -> None:
    key = own_server.create_key("acme")
    port = urlsplit(own_server.url).port
    assert own_server.proc is not None and port is not None
    client = agentmem.connect(own_server.url, api_key=key)
    m = client.bind(user_id="u1", session_id="s1")
    m.add_message("user", "the connection is open")  # the kept-alive connection exists
    own_server.proc.send_signal(signal.SIGSTOP)
    failures: list[BaseException] = []

    def call() -> None:
        try:
            m.remember("A fact the server received and then died holding")
        except BaseException as exc:
            failures.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    waited = threading.Event()
    while not _bytes_waiting(port):  # the request is sent, the server holds it unread
        waited.wait(0.02)
    own_server.kill()
    caller.join(60)
    client.close()
    assert len(failures) == 1 and isinstance(failures[0], RemoteError)
    said = str(failures[0])
    assert own_server.url in said and "broke during the call" in said
    assert "may or may not have taken effect" in said and "cannot reach" not in said
