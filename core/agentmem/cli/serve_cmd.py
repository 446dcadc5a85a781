"""``agentmem serve``: serve the data dir to many processes over HTTP.

Clients connect with ``agentmem.connect(url, api_key=...)`` (keys from ``agentmem keys
create``); MCP clients use ``<url>/mcp``. The server runs until SIGTERM or SIGINT, then
drains in-flight requests and lets the indexer catch up before it exits. Settings come from
``AGENTMEM_*`` variables (see :class:`agentmem.config.ServerConfig`). The embedder is the one
``--embedder`` (or ``AGENTMEM_EMBEDDER``) names: ``minilm`` (default), ``e5``, or
``package.module:attribute``, an embedder object (a LangChain ``Embeddings``, a LlamaIndex
``BaseEmbedding``) or a factory returning one.

Example::

    agentmem --home /srv/agentmem keys create --tenant acme --name web
    agentmem --home /srv/agentmem serve --host 127.0.0.1 --port 8720
    agentmem --home /srv/agentmem serve --embedder myapp.embeddings:make_embedder
    agentmem --home /srv/agentmem serve --metrics-port 9464   # /metrics without a key, loopback
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from ..distribution import pip_install
from ._common import EXIT_FAILED, command, home_of, settings_of

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8720


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="serve the memory to many processes over HTTP (agentmem.connect, MCP at /mcp)",
        description="Serve the data dir over HTTP until SIGTERM/SIGINT. Every request but "
        "GET /health needs an API key (agentmem keys create). Put TLS in a reverse proxy in "
        "front of it. Needs the 'server' extra.",
    )
    add_listen_arguments(p, DEFAULT_PORT)
    p.add_argument(
        "--log-level",
        default="info",
        choices=("critical", "error", "warning", "info", "debug"),
        help="uvicorn's log level (default info: startup and one line per request)",
    )
    p.add_argument("--no-access-log", action="store_true", help="no line per request")
    p.add_argument(
        "--metrics-port",
        type=port_number,
        default=None,
        metavar="PORT",
        help="also serve Prometheus metrics without a key on 127.0.0.1:PORT, for a scraper on "
        "this host (default $AGENTMEM_METRICS_PORT, else only GET /metrics on the main port, "
        "with an operator key)",
    )
    p.set_defaults(func=cmd_serve)


@command
def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from ..server.runner import serve
    except ImportError as exc:
        return server_extra_missing("the server", exc)
    settings = settings_of(args)
    if args.metrics_port is not None:
        server = dataclasses.replace(settings.server, metrics_port=args.metrics_port)
        settings = settings.replace(server=server)
    return serve(
        home_of(args),
        settings=settings,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=not args.no_access_log,
    )


def add_listen_arguments(p: argparse.ArgumentParser, default_port: int) -> None:
    """``--host`` (default loopback) and ``--port`` of a command that serves HTTP."""
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    p.add_argument(
        "--port",
        type=port_number,
        default=default_port,
        help=f"port (default {default_port}; 0 picks one)",
    )


def server_extra_missing(what: str, exc: ImportError) -> int:
    """Say that ``what`` needs the 'server' extra (``exc`` names the missing module)."""
    sys.stderr.write(
        f"agentmem: error: {what} needs the 'server' extra ({exc.name} is missing): "
        f"{pip_install('server')}\n"
    )
    return EXIT_FAILED


def port_number(raw: str) -> int:
    try:
        port = int(raw)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (0..65535): {raw!r}")
    return port
