"""``agentmem --url URL --api-key KEY COMMAND``: the commands against a running server
instead of a data dir, wherever the server has the operation.

With ``--url`` (or ``$AGENTMEM_URL``, unless ``--home`` is given) these commands talk to
``agentmem serve`` with the key of ``--api-key`` (or ``$AGENTMEM_API_KEY``):

- the memory commands, which run unchanged on a connected client (:func:`open_store`):
  remember, recall, add-message, read-tool-output, forget, import, ingest, history, answer,
  close-session, session-detail and knowledge, as the key's tenant (and pinned user/agent);
- and these, the server's own:

=======  ===================================================================================
stats    the key's tenant's counts (an admin key); the whole store's plus the server's
         background jobs (last run, outcome) with an operator key
doctor   the doctor report of the key's tenant, or of the store with an operator key (exit 1
         on drift, as on a data dir)
export   the key's tenant as import-ready JSON Lines (``-o FILE`` or stdout)
erase    erase the key's tenant, or a user/agent of it (``--tenant`` must be the key's)
mcp      serve the MCP tools over stdio for an identity of the key's tenant
=======  ===================================================================================

``stats``, ``doctor``, ``export``, ``import`` and ``erase`` need an admin key (``agentmem keys
create --admin``; ``stats`` and ``doctor`` of the whole store an operator key,
``--operator``). The others (reindex, judge, retention, working, keys, serve, demo, eval,
bench) work on a data dir only (the server runs its own jobs); given ``--url`` they stop
with a message saying so.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from rich.table import Table

from ..client import Client
from ..maintenance.stats import Stats
from ..server.pins import mcp_tools
from ..tools.mcp import serve_stdio
from ._common import (
    API_KEY_ENV,
    EXIT_OK,
    URL_ENV,
    CliError,
    Output,
    bind,
    command,
    markup,
    remote_client,
    to_jsonable,
    url_of,
)
from .admin_cmd import stats_table
from .doctor_cmd import render as render_doctor
from .erase_cmd import describe_receipt, erase_identity
from .mcp_cmd import tools_of
from .transfer_cmd import refuse_ignored_export_flags, write_export


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The global ``--url`` and ``--api-key`` flags."""
    parser.add_argument(
        "--url",
        default=None,
        help=f"a running `agentmem serve` to use instead of --home (${URL_ENV}, unless "
        "--home is given); for the memory commands, import, export, stats, doctor, erase and "
        "mcp",
    )
    parser.add_argument(
        "--api-key",
        default=None,
        help=f"API key for --url (${API_KEY_ENV}); stats, doctor, export, import and erase "
        "need an admin key",
    )


def remote_command(args: argparse.Namespace) -> Callable[[argparse.Namespace], int] | None:
    """The remote variant of the parsed command when a server URL is set, else None.

    Raises:
        CliError: a URL is set for a command that works on a data dir only.
    """
    if url_of(args) is None:
        return None
    name = str(getattr(args, "command", None))
    if name in STORE_COMMANDS:
        return args.func  # type: ignore[no-any-return]
    found = REMOTE_COMMANDS.get(name)
    if found is None:
        served = sorted({*REMOTE_COMMANDS, *STORE_COMMANDS})
        raise CliError(
            f"`agentmem {name}` works on a data dir (--home); with --url (or ${URL_ENV}) "
            f"these run against a server: {', '.join(served)}"
        )
    return found


def _client(args: argparse.Namespace) -> Client:
    client = remote_client(args)
    assert client is not None  # remote_command checked the URL
    return client


# -- stats ------------------------------------------------------------------------------------
@command
def remote_stats(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with _client(args) as client:
        data = client.stats()
    stats: Stats = data["stats"]
    if out.json:
        out.result({**to_jsonable(data), "url": client.options.url})
        return EXIT_OK
    if "tenant_id" in data:  # an admin key: its tenant's figures only
        out.print(stats_table(f"{client.options.url} (tenant {data['tenant_id']})", stats))
        return EXIT_OK
    table = stats_table(f"{client.options.url} ({data['home']})", stats)
    server = data.get("server", {})
    table.add_row("server version", markup(str(server.get("version", "?"))))
    table.add_row("server uptime (s)", str(server.get("uptime_seconds", "?")))
    out.print(table)
    jobs = Table(title="background jobs", title_justify="left")
    jobs.add_column("job", no_wrap=True)  # a name is never cut: the outcome folds instead
    for column in ("last run", "ok", "outcome", "runs", "failures", "next run"):
        jobs.add_column(column, overflow="fold")
    for job in data.get("jobs", []):
        jobs.add_row(
            job["name"],
            _time(job.get("last_run")),
            {True: "yes", False: "[red]no[/red]", None: ""}[job.get("last_ok")],
            markup(job.get("last_outcome") or ""),
            str(job.get("runs", 0)),
            str(job.get("failures", 0)),
            _time(job.get("next_run")),
        )
    out.print(jobs)
    return EXIT_OK


def _time(value: Any) -> str:
    return str(value)[:19].replace("T", " ") if value else ""


# -- doctor -----------------------------------------------------------------------------------
@command
def remote_doctor(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    with _client(args) as client:
        report = client.doctor()
        where = client.options.url
    return render_doctor(out, where, report)


# -- export -----------------------------------------------------------------------------------
@command
def remote_export(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    refuse_ignored_export_flags(args, whole_store=False)  # a server exports the key's tenant
    target = Path(args.output) if args.output else None
    with _client(args) as client:
        return write_export(out, client.export(kinds=args.kind), target)


# -- mcp --------------------------------------------------------------------------------------
@command
def remote_mcp(args: argparse.Namespace) -> int:
    include = tools_of(args)
    with _client(args) as client:
        include = mcp_tools(client.whoami(), include)
        bound = bind(client, args)
        # the MCP tools call the bound memory's operations, which a remote one has too
        anyio.run(serve_stdio, bound, include)
    return EXIT_OK


@command
def remote_erase(args: argparse.Namespace) -> int:
    out = Output.from_args(args)
    tenant, user, agent = erase_identity(args)
    with _client(args) as client:
        receipt = client.erase(tenant_id=tenant, user_id=user, agent_id=agent)
    out.result(to_jsonable(receipt), text=describe_receipt(receipt))
    return EXIT_OK


#: Commands written on :func:`open_store`: the same function runs on a server.
STORE_COMMANDS = frozenset(
    {
        "remember",
        "recall",
        "add-message",
        "read-tool-output",
        "forget",
        "get",
        "import",
        "ingest",
        "history",
        "answer",
        "close-session",
        "session-detail",
        "knowledge",
    }
)
#: The server's own commands, in their remote form.
REMOTE_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "erase": remote_erase,
    "stats": remote_stats,
    "doctor": remote_doctor,
    "export": remote_export,
    "mcp": remote_mcp,
}

__all__ = [
    "API_KEY_ENV",
    "REMOTE_COMMANDS",
    "STORE_COMMANDS",
    "URL_ENV",
    "add_flags",
    "remote_command",
]
