"""The sync client's wire: an ``httpx`` transport on plain sockets and ``http.client``.

httpx's own sync transport (httpcore with h11) spends about as long in Python per request as
the server spends answering a small operation, and writes the headers and the body apart
(two packets, two wake-ups of the server). This one writes the request in one piece and
reads the answer with the standard library's parser (``http.client.HTTPResponse``). The
client keeps httpx's API (its request building, headers, timeouts, errors); only the bytes
on the wire go through here.

Connections are kept alive and shared between threads: a request takes an idle connection
(one the server has closed meanwhile is dropped, never written to) or opens a new one, and
gives it back once its answer was read to the end.

Plain ``http://`` only: ``https://`` keeps httpx's transport (its TLS settings), and so does
a URL that the environment sends through a proxy (``HTTP_PROXY``...), which httpx honours
only with its own transport.
"""

from __future__ import annotations

import http.client
import re
import select
import socket
import threading
import urllib.request
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx

#: Idle connections kept per client (httpx keeps 20 too).
MAX_IDLE = 20


def plain_http_transport(url: str) -> httpx.BaseTransport | None:
    """A :class:`KeepAliveTransport` for ``url``, or None where httpx's own one must stay
    (TLS, or a proxy from the environment)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return None
    proxies = urllib.request.getproxies_environment()
    if ("http" in proxies or "all" in proxies) and not urllib.request.proxy_bypass(parts.hostname):
        return None
    return KeepAliveTransport()


class KeepAliveTransport(httpx.BaseTransport):
    """Connections kept alive and reused (see the module docstring)."""

    def __init__(self) -> None:
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        message = _message(request)
        sock = self._connection(request, timeout.get("connect"))
        phase = "write"
        try:
            sock.settimeout(timeout.get("write"))
            sock.sendall(message)
            phase = "read"
            sock.settimeout(timeout.get("read"))
            response = http.client.HTTPResponse(sock, method=request.method)
            response.begin()
        except _WIRE_ERRORS as exc:
            sock.close()
            raise _mapped(exc, request, phase) from exc
        except BaseException:
            sock.close()
            raise
        return httpx.Response(
            response.status,
            headers=[(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.getheaders()],
            stream=_Body(self, sock, response, request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason.encode()},
            request=request,
        )

    def _connection(self, request: httpx.Request, connect_timeout: float | None) -> socket.socket:
        with self._lock:
            while self._idle:
                sock = self._idle.pop()
                if _usable(sock):
                    return sock
                sock.close()
        url = request.url
        try:
            sock = socket.create_connection((url.host, url.port or 80), connect_timeout)
        except _WIRE_ERRORS as exc:
            raise _mapped(exc, request, "connect") from exc
        # small requests and answers go out at once, not after the peer's delayed ACK
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def release(self, sock: socket.socket, reusable: bool) -> None:
        with self._lock:
            if reusable and not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(sock)
                return
        sock.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()


#: What a header name or value may not hold: it would end the header (or the request) early.
_BREAKS = re.compile(rb"[\r\n\0]")


def _message(request: httpx.Request) -> bytes:
    """The request's bytes: request line, headers and body, sent in one write (headers and
    body apart are two packets, and two wake-ups of the server)."""
    lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
    for name, value in request.headers.raw:
        if _BREAKS.search(name) or _BREAKS.search(value):
            raise httpx.LocalProtocolError(f"invalid header {name!r}", request=request)
        lines.append(b"%s: %s" % (name, value))
    return b"\r\n".join(lines) + b"\r\n\r\n" + request.read()


def _usable(sock: socket.socket) -> bool:
    """False for a connection the server closed (or wrote to) while it was idle: an idle
    HTTP/1.1 connection has nothing to read, so a readable one is at its end."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


class _Body(httpx.SyncByteStream):
    """A response body read from its connection as httpx asks for it; the connection goes
    back to the pool once the body was read to the end (closed otherwise)."""

    def __init__(
        self,
        transport: KeepAliveTransport,
        sock: socket.socket,
        response: http.client.HTTPResponse,
        request: httpx.Request,
    ) -> None:
        self._transport = transport
        self._sock: socket.socket | None = sock
        self._response = response
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = self._response.read1(65536)
            except _WIRE_ERRORS as exc:
                self.close()
                raise _mapped(exc, self._request, "read") from exc
            if not chunk:
                return
            yield chunk

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is None:
            return
        # read to the end: http.client closes a chunked body then; a sized one is at 0 left
        done = self._response.isclosed() or self._response.length == 0
        reusable = done and not self._response.will_close
        self._response.close()
        self._transport.release(sock, reusable)


#: What the socket and ``http.client`` raise when the wire fails.
_WIRE_ERRORS = (OSError, http.client.HTTPException)


def _mapped(exc: Exception, request: httpx.Request, phase: str) -> httpx.TransportError:
    """``exc`` as the httpx error the client handles (a connect error may be retried)."""
    if isinstance(exc, TimeoutError):
        kinds: dict[str, type[httpx.TimeoutException]] = {
            "connect": httpx.ConnectTimeout,
            "write": httpx.WriteTimeout,
            "read": httpx.ReadTimeout,
        }
        return kinds[phase](str(exc) or "timed out", request=request)
    if phase == "connect":
        return httpx.ConnectError(str(exc), request=request)
    if isinstance(exc, http.client.HTTPException):
        return httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request)
    return (httpx.WriteError if phase == "write" else httpx.ReadError)(str(exc), request=request)


__all__ = ["KeepAliveTransport", "plain_http_transport"]
