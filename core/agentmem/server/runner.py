"""``agentmem serve``: open the data dir, serve it with uvicorn, shut down cleanly.

uvicorn (with uvloop and httptools when installed) runs the app of :mod:`.app` in this one
process, which holds the data dir's writer lock. SIGTERM or SIGINT stops accepting
connections, lets in-flight requests finish (up to ``drain_seconds``), stops the background
jobs, then waits for the indexer to catch up with every acknowledged write before the store is
closed. Acknowledged writes are committed to the records store before their response is sent,
so even a SIGKILL loses none of them (the indexes are rebuilt from the records at the next
start).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from ..config import Settings
from ..context import settings_embedder
from ..embeddings import CachedEmbedder, Embedder, OnnxMiniLMEmbedder
from ..memory import AgentMemory
from .app import create_app
from .state import ServerState

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8720


class QuerylessAccessLog(logging.Filter):
    """Drops the query string from uvicorn's access log lines: a query string may carry what
    a user searched for (``/ui/search?q=...``), and the log holds no content."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            path, mark, _ = args[2].partition("?")
            record.args = (args[0], args[1], path + ("?..." if mark else ""), args[3], args[4])
        return True


def quiet_access_log() -> None:
    """Install :class:`QuerylessAccessLog` on uvicorn's access logger (once)."""
    logger = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, QuerylessAccessLog) for f in logger.filters):
        logger.addFilter(QuerylessAccessLog())


class AnnouncedServer(uvicorn.Server):
    """uvicorn's server, announcing the bound address once it accepts connections
    (``<name>: ready on http://HOST:PORT<path>``)."""

    announce: bool = True
    name: str = "agentmem serve"
    path: str = ""
    #: The app's state: its metrics port is announced too (the app's lifespan opened it).
    state: ServerState | None = None

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.should_exit or not self.announce:
            return
        for server in self.servers:
            for sock in server.sockets:
                host, port = sock.getsockname()[:2]
                print(f"{self.name}: ready on http://{host}:{port}{self.path}", flush=True)
        if self.state is not None and self.state.metrics_url is not None:
            print(f"agentmem serve: metrics on {self.state.metrics_url}", flush=True)


@contextmanager
def quiet_signals() -> Iterator[None]:
    """Handlers uvicorn restores (and calls again) after its graceful shutdown.

    uvicorn re-raises the signal that stopped it once it is done; with Python's defaults that
    kills the process (SIGTERM) or raises KeyboardInterrupt (SIGINT) before the store is
    closed. These handlers ignore it, so :func:`serve` closes the store and exits 0.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _ignore(signum: int, frame: Any) -> None:
    return None


def serve(
    home: Path | None,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    log_level: str = "info",
    access_log: bool = True,
) -> int:
    """Serve the data dir ``home`` until SIGTERM/SIGINT; returns an exit status.

    ``embedder`` defaults to the one ``settings.embedder`` names (``--embedder``,
    ``AGENTMEM_EMBEDDER``), else the packaged MiniLM with ``settings.server.embed_threads``
    onnxruntime threads per call.

    Raises:
        DataDirLockedError: another process holds the data dir.
    """
    resolved = settings or Settings.from_env()
    if embedder is None and resolved.embedder is not None:
        embedder = settings_embedder(resolved)
    elif embedder is None:
        threads = resolved.server.embed_threads
        embedder = CachedEmbedder(OnnxMiniLMEmbedder(intra_op_threads=threads))
    store = AgentMemory(home, settings=resolved, embedder=embedder)
    drain = resolved.server.drain_seconds
    try:
        app = create_app(store)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            access_log=access_log,
            timeout_graceful_shutdown=int(drain) if drain > 0 else None,
            server_header=False,
        )
        quiet_access_log()
        server = AnnouncedServer(config)
        server.state = app.state.agentmem
        with quiet_signals():
            server.run()
        return 0 if server.started else 1
    finally:
        store.close()
        sys.stdout.flush()


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "AnnouncedServer",
    "QuerylessAccessLog",
    "quiet_access_log",
    "quiet_signals",
    "serve",
]
