"""``agentmem ui``: the inspector of a data dir in the browser (see :mod:`agentmem.inspector`).

Example::

    agentmem --home ./memdata ui                    # read-only, http://127.0.0.1:8721/ui
    agentmem --home ./memdata ui --writable         # also forget, erase a user, close again

A running ``agentmem serve`` offers the same pages under ``/ui``, behind an API key.
"""

from __future__ import annotations

import argparse

from ..errors import DataDirLockedError
from ._common import EXIT_FAILED, CliError, command, home_of, settings_of, shared_embedder
from .serve_cmd import add_listen_arguments, server_extra_missing

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
    add_listen_arguments(p, DEFAULT_PORT)
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
        return server_extra_missing("the inspector", exc)
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
