"""``agentmem ui``: the inspector of a data dir in the browser (see :mod:`agentmem.inspector`).

Example::

    agentmem --home ./memdata ui                    # read-only, http://127.0.0.1:8721/ui
    agentmem --home ./memdata ui --writable         # also forget, erase a user, close again

A running ``agentmem serve`` offers the same pages under ``/ui``, behind an API key.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import DataDirLockedError
from ._common import EXIT_FAILED, CliError, command, home_of, settings_of, shared_embedder
from .serve_cmd import port_number

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8721


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ui",
        help="look inside the data dir in a browser: tenants, rows, history, why recall "
        "scored what it did (read-only unless --writable)",
        description="Serve the inspector of the data dir on loopback until SIGTERM/SIGINT. "
        "Read-only by default: the dir is opened beside any process writing to it, nothing is "
        "changed. With --writable the inspector is the dir's writer and can forget rows, erase "
        "users and close sessions again. It has no login: keep it on loopback (a running "
        "`agentmem serve` offers the same pages under /ui, behind an API key). Needs the "
        "'server' extra.",
    )
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    p.add_argument(
        "--port",
        type=port_number,
        default=DEFAULT_PORT,
        help=f"port (default {DEFAULT_PORT}; 0 picks one)",
    )
    p.add_argument(
        "--writable",
        action="store_true",
        help="open the data dir as its writer and offer forget, erase and close (refused "
        "while another process holds the dir)",
    )
    p.set_defaults(func=cmd_ui)


@command
def cmd_ui(args: argparse.Namespace) -> int:
    try:
        from ..inspector.runner import run_ui
    except ImportError as exc:
        sys.stderr.write(
            f"agentmem: error: the inspector needs the 'server' extra ({exc.name} is missing): "
            "pip install 'agentmem-layer[server]'\n"
        )
        return EXIT_FAILED
    settings = settings_of(args)
    home = home_of(args)
    if home is not None and not settings.records_url and not home.exists():
        raise CliError(f"--home: there is no data dir at {home}")
    try:
        return run_ui(
            home,
            settings=settings,
            embedder=shared_embedder(args),
            host=args.host,
            port=args.port,
            writable=args.writable,
        )
    except DataDirLockedError as exc:
        raise CliError(
            f"{exc}. Without --writable the inspector reads the dir beside its writer; a "
            "running `agentmem serve` offers the same pages, writable, under /ui",
            status=EXIT_FAILED,
        ) from exc
