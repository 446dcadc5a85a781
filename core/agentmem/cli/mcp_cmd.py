"""``agentmem mcp``: serve the memory tools of one identity over MCP on stdin/stdout.

Identity comes from the command line only: ``--tenant/--user/--agent/--session`` given after
``mcp`` win over the same global flags given before it, which win over ``AGENTMEM_TENANT``,
``AGENTMEM_USER``, ``AGENTMEM_AGENT`` and ``AGENTMEM_SESSION``; the tenant defaults to
``default``. The data dir is ``--home``, else ``$AGENTMEM_HOME``, else a per-user dir.

``--tools`` picks the tool set: ``all`` (the default: every tool of the tool core, the same
list ``create_memory_tools(memory, include="all")`` returns in the LangChain and LlamaIndex
adapters), ``core`` (the small recommended set) or comma-separated tool names.

stdout carries the protocol, so everything else (logs, errors) goes to stderr.

Example (a Claude Desktop / MCP client configuration)::

    {"command": "agentmem",
     "args": ["--home", "/data/agentmem", "mcp", "--tenant", "acme", "--user", "u1",
              "--agent", "support", "--session", "chat-42"]}
"""

from __future__ import annotations

import argparse
import sys

from ..distribution import pip_install
from ..errors import ValidationError
from ..tools.specs import ALL_TOOLS, Include, tool_names
from ._common import EXIT_FAILED, CliError, bind, command, open_memory


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``mcp`` sub-command."""
    parser = subparsers.add_parser(
        "mcp",
        help="serve the memory tools over MCP (stdio)",
        description=(
            "Serve the memory tools over the Model Context Protocol on stdin/stdout, for one "
            f"fixed identity: {', '.join(ALL_TOOLS)} (--tools picks fewer). Needs the 'mcp' "
            "extra."
        ),
    )
    parser.add_argument(
        "--tools",
        default="all",
        metavar="SET",
        help="the tools to serve: all (default), core (recall, remember_fact, "
        "read_tool_output, and the agent-state tools with --agent) or comma-separated names",
    )
    parser.set_defaults(func=run)


def parse_tools(value: str) -> Include:
    """The ``include`` of a ``--tools`` value (``all``, ``core`` or ``name,name,...``)."""
    value = value.strip()
    if value in ("all", "core"):
        return value
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise CliError("--tools: name at least one tool, or all or core")
    return names


def tools_of(args: argparse.Namespace) -> Include:
    """The ``include`` of ``--tools``, its names checked (before any data dir or server is
    reached)."""
    include = parse_tools(args.tools)
    try:
        tool_names(include, agent_bound=True)
    except ValidationError as exc:
        raise CliError(f"--tools: {exc.reason}") from exc
    return include


@command
def run(args: argparse.Namespace) -> int:
    """Open the data dir, bind the identity and serve until the client disconnects."""
    include = tools_of(args)
    try:
        import anyio
        import mcp  # noqa: F401 - probe for the extra before opening the data dir
    except ImportError:
        sys.stderr.write(
            f"agentmem: error: the MCP server needs the 'mcp' extra: {pip_install('mcp')}\n"
        )
        return EXIT_FAILED

    from ..tools.mcp import serve_stdio

    with open_memory(args) as store:
        anyio.run(serve_stdio, bind(store, args), include)
    return 0
