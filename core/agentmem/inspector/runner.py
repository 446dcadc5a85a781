"""``agentmem ui``: serve the inspector of one data dir with uvicorn until SIGTERM/SIGINT.

Read-only (the default), the data dir is opened beside whatever process writes to it (a
running ``agentmem serve``, an application): no lock, no indexing, no write of any kind.
``--writable`` opens it as its one writer (refused while another process holds it; use that
server's ``/ui`` then) and offers the changes.

The pages have no login: whoever reaches the port reads every tenant. On a loopback address
(the default) the app answers only requests naming a loopback host, so a web page of another
site cannot read it through a name of its own pointed at 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path

import uvicorn

from ..config import Settings
from ..embeddings import Embedder
from ..memory import AgentMemory
from ..server.runner import AnnouncedServer, quiet_access_log, quiet_signals
from .app import create_ui_app
from .render import PREFIX

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8721
#: The names a browser on this machine uses for a loopback address.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_ui(
    home: Path | None,
    *,
    settings: Settings,
    embedder: Embedder,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    writable: bool = False,
    log_level: str = "warning",
) -> int:
    """Serve the inspector of ``home`` until SIGTERM/SIGINT; returns an exit status.

    Raises:
        DataDirLockedError: ``writable`` and another process holds the data dir.
        StorageError: ``home`` is not a data dir (read-only).
    """
    store = AgentMemory(
        home,
        settings=settings,
        embedder=embedder,
        read_only=not writable,
        background=writable,
    )
    try:
        hosts = {*LOOPBACK_NAMES, host} if loopback(host) else None
        config = uvicorn.Config(
            create_ui_app(store, writable=writable, hosts=hosts),
            host=host,
            port=port,
            log_level=log_level,
            server_header=False,
        )
        quiet_access_log()
        server = AnnouncedServer(config)
        server.name, server.path = "agentmem ui", PREFIX
        if hosts is None:
            print(
                f"agentmem ui: warning: listening on {host}, not loopback: the inspector has no "
                "login, anyone who reaches this port reads every tenant"
                + (" and may change the store" if writable else ""),
                file=sys.stderr,
                flush=True,
            )
        with quiet_signals():
            server.run()
        return 0 if server.started else 1
    finally:
        store.close()
        sys.stdout.flush()
