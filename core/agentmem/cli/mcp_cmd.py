"""``agentmem mcp``: serve the memory tools of one identity over MCP on stdin/stdout.

Identity comes from the command line only: ``--tenant/--user/--agent/--session`` given after
``mcp`` win over the same global flags given before it, which win over ``AGENTMEM_TENANT``,
``AGENTMEM_USER``, ``AGENTMEM_AGENT`` and ``AGENTMEM_SESSION``; the tenant defaults to
``default``. The data dir is ``--home``, else ``$AGENTMEM_HOME``, else a per-user dir.

stdout carries the protocol, so everything else (logs, errors) goes to stderr.

Example (a Claude Desktop / MCP client configuration)::

    {"command": "agentmem",
     "args": ["--home", "/data/agentmem", "mcp", "--tenant", "acme", "--user", "u1",
              "--agent", "support", "--session", "chat-42"]}
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import EXIT_FAILED, IDENTITY_ENV, bind, command, open_memory

_LABELS = {"tenant": "tenant id", "user": "user id", "agent": "agent id", "session": "session id"}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``mcp`` sub-command."""
    parser = subparsers.add_parser(
        "mcp",
        help="serve the memory tools over MCP (stdio)",
        description=(
            "Serve recall, remember_fact, read_tool_output, store_memory, search_memory, "
            "get_agent_state, set_agent_state and delete_memory over the Model Context "
            "Protocol on stdin/stdout, for one fixed identity. Needs the 'mcp' extra."
        ),
    )
    for name, label in _LABELS.items():
        parser.add_argument(
            f"--{name}",
            dest=f"mcp_{name}",
            default=None,
            metavar=name.upper(),
            help=f"{label} (overrides the global --{name} and ${IDENTITY_ENV[name]})",
        )
    parser.set_defaults(func=run)


def merge_identity_flags(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with ``--tenant`` etc. given after ``mcp`` taking precedence over the globals."""
    merged = argparse.Namespace(**vars(args))
    for name in _LABELS:
        value: Any = getattr(args, f"mcp_{name}", None)
        if value is not None:
            setattr(merged, name, value)
    return merged


@command
def run(args: argparse.Namespace) -> int:
    """Open the data dir, bind the identity and serve until the client disconnects."""
    try:
        import anyio
        import mcp  # noqa: F401 - probe for the extra before opening the data dir
    except ImportError:
        sys.stderr.write(
            "agentmem: error: the MCP server needs the 'mcp' extra: pip install 'agentmem[mcp]'\n"
        )
        return EXIT_FAILED

    from ..tools.mcp import serve_stdio

    args = merge_identity_flags(args)
    with open_memory(args) as store:
        anyio.run(serve_stdio, bind(store, args))
    return 0
