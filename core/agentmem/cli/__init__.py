"""The ``agentmem`` command line.

Each command lives in its own module with a ``register(subparsers)`` function that adds a
sub-parser and sets ``func`` (called with the parsed args, returns an exit status).
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import logging
import os
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import AgentMemError
from ._common import CliError, add_storage_flags
from .remote_cmd import add_flags, remote_command

#: Modules (relative to this package) that register commands, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "memory_cmd",
    "transfer_cmd",
    "admin_cmd",
    "calibrate_cmd",
    "demo",
    "mcp_cmd",
    "eval_cmd",
    "bench_cmd",
    "derived_cmd",
    "tiers_cmd",
    "doctor_cmd",
    "keys_cmd",
    "serve_cmd",
    "ui_cmd",
    "erase_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentmem",
        description="Durable, searchable memory for AI agents.",
    )
    parser.add_argument("--home", help="data dir (default: $AGENTMEM_HOME or a per-user dir)")
    parser.add_argument(
        "--records-url",
        default=None,
        metavar="URL",
        help="postgresql:// URL of the shared records store; --home then holds only this "
        "node's keyword index and local state ($AGENTMEM_RECORDS_URL)",
    )
    parser.add_argument(
        "--tenant", default=None, help="tenant id (default: $AGENTMEM_TENANT or 'default')"
    )
    parser.add_argument("--user", default=None, help="user id ($AGENTMEM_USER)")
    parser.add_argument("--agent", default=None, help="agent id ($AGENTMEM_AGENT)")
    parser.add_argument("--session", default=None, help="session id ($AGENTMEM_SESSION)")
    parser.add_argument("--json", action="store_true", help="machine-readable JSON output")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    add_flags(parser)
    add_storage_flags(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        module.register(sub)
    global_flags = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    for command, summary in _subparsers(parser):
        _accept_global_flags(command, global_flags)
        if not command.description and summary:  # `agentmem stats --help` says what it does
            command.description = summary[0].upper() + summary[1:].rstrip(".") + "."
    return parser


#: The title of the global flags in a command's help.
GLOBAL_FLAGS_TITLE = "global options"


def _subparsers(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[argparse.ArgumentParser, str | None]]:
    """Every command's parser, nested ones (``knowledge upsert``) included, with its
    one-line help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, command in action.choices.items():
                yield command, helps.get(name)
                yield from _subparsers(command)


def _accept_global_flags(
    command: argparse.ArgumentParser, global_flags: list[argparse.Action]
) -> None:
    """Let ``command`` take the global flags too (``agentmem export --tenant acme``), except
    those it defines itself (``keys create --tenant`` is the key's tenant). Their default is
    SUPPRESS, so a flag given before the command is not reset by the command's parser."""
    accepted: list[str] = []
    for flag in global_flags:
        strings = [s for s in flag.option_strings if s not in command._option_string_actions]
        if not strings:
            continue
        accepted.append("/".join(strings))
        # listed once in the group's text below: each in full would repeat `agentmem --help`
        kwargs: dict[str, Any] = {
            "dest": flag.dest,
            "default": argparse.SUPPRESS,
            "help": argparse.SUPPRESS,
        }
        if isinstance(flag, argparse._StoreTrueAction):
            kwargs["action"] = "store_true"
        else:
            kwargs.update(type=flag.type, choices=flag.choices)
        command.add_argument(*strings, **kwargs)
    if accepted:
        # wrapped here: a command with a raw formatter (import) shows it as it is
        text = f"{', '.join(accepted)}: as before the command (see `agentmem --help`); given "
        command.add_argument_group(
            GLOBAL_FLAGS_TITLE, textwrap.fill(text + "after it, they win.", break_on_hyphens=False)
        )


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the program (``agentmem``, ``python -m agentmem.cli``), not a caller's
        # The interpreter's exit collects every object the imports made (chromadb,
        # onnxruntime, pydantic models): 0.5-1 s of every command. Frozen, they are left to
        # the OS; exit handlers (a store's close at exit) run all the same.
        atexit.register(gc.freeze)
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        func = remote_command(args) or args.func
    except CliError as exc:
        print(f"agentmem: error: {exc}", file=sys.stderr)
        return exc.status
    try:
        return int(func(args) or 0)
    except AgentMemError as exc:
        print(f"agentmem: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (| head): not an error of ours
        # stdout's buffered rest would fail again at exit: point it at nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
