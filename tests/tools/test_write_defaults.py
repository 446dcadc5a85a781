"""Every path that writes, audited in one test: by default it stores for the narrowest audience.

The write paths are enumerated, not listed by hand: every tool of the core on each tool
surface (LangChain, LlamaIndex, MCP), every public name of both adapters, and every command
of the CLI. Each one is either probed (written through with its defaults, as identity
acme/u1/support/s1) or declared here as writing nothing new; a write path added later is in
neither and fails the test until it is audited. What a probe stored is read back from an
export of the data dir: it must be seen by user u1 only (or by nobody but the component that
wrote it), unless the path is shared by design and its description says with whom.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from llama_index.core.base.llms.types import ChatMessage

import langchain_agentmem as lc
import llamaindex_agentmem as li
from agentmem import AgentMemory
from agentmem.cli import build_parser, main
from agentmem.maintenance.transfer import __doc__ as IMPORT_FORMAT
from agentmem.maintenance.transfer import export_lines
from agentmem.tools import SPECS

TENANT, USER, AGENT, SESSION = "acme", "u1", "support", "s1"
#: Who may see what a path stores by default: u1 alone, or nobody but the store that wrote
#: it (an adapter's own agent, which no user's or agent's binding uses).
NARROW = ("user u1", "agent langgraph-store:")

#: Tools that write, with the arguments of a probe (only what the tool requires). None: the
#: tool writes nothing new (it deletes or folds this identity's own rows).
TOOL_PROBES: dict[str, Callable[[str], dict[str, Any]] | None] = {
    "remember_fact": lambda text: {"content": text},
    "store_memory": lambda text: {"content": text},
    "set_agent_state": lambda text: {"key": text[:40], "value": text},
    "upsert_knowledge": lambda text: {"content": text},
    "delete_memory": None,
    "delete_knowledge": None,
    "compact": None,
}

#: Paths whose every write is shared by design: who sees it, and the words in its
#: description (what a model or a person reads before writing) that say so; None: the
#: description is the command's --help line.
SHARED: dict[str, tuple[str, str, str | None]] = {
    "tool upsert_knowledge": (
        "knowledge",
        "read by every user and agent of the tenant",
        SPECS["upsert_knowledge"].description,
    ),
    "tool set_agent_state": (
        "agent support",
        "Every user this agent serves can read it",
        SPECS["set_agent_state"].description,
    ),
    "cli knowledge upsert": ("knowledge", "every user and agent of the tenant", None),
    "cli import document": ("tenant", "every user of the tenant can recall", IMPORT_FORMAT or ""),
}

#: Public names of the adapters that write, each with a probe; the others only read, or
#: are a tool (probed through the tool surfaces) or its argument model.
_Probe = Callable[[AgentMemory, str], None]


def _lc_history(mem: AgentMemory, text: str) -> None:
    lc.AgentMemChatMessageHistory(memory=_bound(mem)).add_user_message(text)


def _lc_middleware(mem: AgentMemory, text: str) -> None:
    lc.AgentMemMiddleware(_bound(mem)).before_model({"messages": [HumanMessage(text)]}, None)  # type: ignore[arg-type]


def _lc_store(mem: AgentMemory, text: str) -> None:
    lc.AgentMemStore(mem, tenant_id=TENANT).put(("notes",), "k", {"content": text})


def _lc_store_users(mem: AgentMemory, text: str) -> None:
    store = lc.AgentMemStore(mem, tenant_id=TENANT, user_position=1)
    store.put(("memories", USER), "k", {"content": text})
    store.put(("memories",), "k", {"content": text + " (no user in the namespace)"})


def _li_block(mem: AgentMemory, text: str) -> None:
    block = li.AgentMemMemoryBlock(memory=_bound(mem))
    asyncio.run(block.aput([ChatMessage(role="user", content=text)]))


def _li_chat_store(mem: AgentMemory, text: str) -> None:
    store = li.AgentMemChatStore(mem, TENANT, user_id=USER, agent_id=AGENT)
    store.add_message(SESSION, ChatMessage(role="user", content=text))


ADAPTER_WRITERS: dict[str, _Probe] = {
    "langchain_agentmem.AgentMemChatMessageHistory": _lc_history,
    "langchain_agentmem.AgentMemMiddleware": _lc_middleware,
    "langchain_agentmem.AgentMemStore": _lc_store,
    "langchain_agentmem.AgentMemStore(user_position)": _lc_store_users,
    "llamaindex_agentmem.AgentMemMemoryBlock": _li_block,
    "llamaindex_agentmem.AgentMemChatStore": _li_chat_store,
}
ADAPTER_READERS = {
    "langchain_agentmem.AgentMemRetriever",
    "llamaindex_agentmem.AgentMemRetriever",
    "langchain_agentmem.ADVISORY_HEADER",
    "langchain_agentmem.TOOL_CLASSES",
    "langchain_agentmem.format_hits",
}

#: CLI commands that write, each with its probes: path -> (argv, lines of the file that
#: ``{file}`` names, or None).
_Cli = dict[str, tuple[list[str], list[dict[str, Any]] | None]]
CLI_WRITERS: dict[str, _Cli] = {
    "remember": {"cli remember": (["remember", "{text}"], None)},
    "add-message": {"cli add-message": (["add-message", "user", "{text}"], None)},
    "import": {
        "cli import memory": (["import", "{file}"], [{"type": "memory", "content": "{text}"}]),
        "cli import message": (["import", "{file}"], [{"role": "user", "content": "{text}"}]),
        "cli import document": (["import", "{file}"], [{"type": "document", "content": "{text}"}]),
    },
    "ingest": {
        "cli ingest": (["ingest", "{file}"], [{"role": "user", "content": "I like {text}"}])
    },
    "knowledge upsert": {"cli knowledge upsert": (["knowledge", "upsert", "{text}"], None)},
    "close-session": {"cli close-session": (["close-session"], None)},
}
#: CLI commands that store nothing new for an identity: they read, delete, rebuild what is
#: stored, administer keys, serve (through the tools, audited above; ``ui`` only forgets,
#: erases and closes sessions again) or use a store of their own.
CLI_OTHERS = {
    "recall", "get", "read-tool-output", "forget", "export", "stats", "reindex", "demo", "mcp",
    "eval", "bench", "history", "answer", "judge", "retention", "working", "session-detail",
    "knowledge get", "knowledge delete", "knowledge list", "knowledge search", "doctor",
    "keys create", "keys list", "keys revoke", "serve", "erase", "calibrate", "ui",
}  # fmt: skip


def _bound(mem: AgentMemory) -> Any:
    return mem.bind(TENANT, user_id=USER, agent_id=AGENT, session_id=SESSION)


def _key(line: dict[str, Any]) -> str:
    """A line's identity in an export; a changed agent-state value is a new line."""
    if line["type"] == "agent_state":
        return json.dumps([line["agent_id"], line["key"], line["value"]])
    if line["type"] == "session":
        return json.dumps([line["partition"], line["session_id"], line["closed_at"]])
    return str(line["id"])


def _snapshot(mem: AgentMemory) -> dict[str, dict[str, Any]]:
    return {_key(line): line for line in export_lines(mem.context)}


def _audience(line: dict[str, Any]) -> str:
    """Who can see an exported line (see agentmem.scopes)."""
    if line["type"] == "agent_state":
        return f"agent {line['agent_id']}"
    scope = line.get("scope", "session")  # a closed session's line is its conversation's
    if scope in ("user", "session") and line["user_id"] is not None:
        return f"user {line['user_id']}"
    if scope in ("agent", "session") and line["agent_id"] is not None:
        return f"agent {line['agent_id']}"
    return str(scope)


def _cli_commands(parser: argparse.ArgumentParser, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(command, its help) of every command and sub-command of the CLI."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                nested = list(_cli_commands(sub, f"{prefix}{name} "))
                yield from nested or [(f"{prefix}{name}", helps.get(name, ""))]


def test_every_write_path_defaults_to_the_narrowest_scope(
    make_memory: Callable[..., AgentMemory],
    all_surfaces: Callable[[Any], list[Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mem = make_memory()
    home = mem.home
    written: dict[str, list[dict[str, Any]]] = {}
    unaudited: list[str] = []
    helps: dict[str, str] = {}  # a CLI path's --help line

    def probe(path: str, write: Callable[[], Any]) -> None:
        before = _snapshot(mem)
        write()
        written[path] = [line for k, line in _snapshot(mem).items() if k not in before]

    # 1. every tool on every tool surface
    for tools in all_surfaces(_bound(mem)):
        for name in tools.names("all"):
            if SPECS[name].read_only:
                continue
            if name not in TOOL_PROBES:
                unaudited.append(f"tool {name}")
                continue
            args = TOOL_PROBES[name]
            if args is not None:
                text = f"{tools.name} {name} wrote this"
                path = f"tool {name}" if tools.name == "mcp" else f"{tools.name} tool {name}"
                probe(path, functools.partial(tools.call, name, args(text)))

    # 2. every public name of both adapters
    for module in (lc, li):
        for name in module.__all__:
            qualified = f"{module.__name__}.{name}"
            tool_like = name.endswith(("Tool", "Input")) or name == "create_memory_tools"
            if tool_like or qualified in ADAPTER_READERS:
                continue
            probes = {k: p for k, p in ADAPTER_WRITERS.items() if k.startswith(qualified)}
            if not probes:
                unaudited.append(qualified)
            for path, write in probes.items():
                probe(path, functools.partial(write, mem, f"{path} wrote this"))

    # 3. every command of the CLI, on the same data dir
    mem.close()
    who = ["--home", str(home), "--tenant", TENANT, "--user", USER, "--agent", AGENT]
    for command, help_text in _cli_commands(build_parser()):
        if command not in CLI_WRITERS:
            if command not in CLI_OTHERS:
                unaudited.append(f"cli {command}")
            continue
        for path, (argv, lines) in CLI_WRITERS[command].items():
            helps[path] = help_text
            text = f"{path} wrote this"
            file = tmp_path / f"{path.replace(' ', '-')}.jsonl"
            file.write_text("\n".join(json.dumps(ln) for ln in lines or []).replace("{text}", text))
            args = [a.replace("{text}", text).replace("{file}", str(file)) for a in argv]
            with make_memory(path=home) as before_mem:
                before = _snapshot(before_mem)
            assert main([*who, "--session", SESSION, *args]) == 0, capsys.readouterr()
            with make_memory(path=home) as after_mem:
                written[path] = [v for k, v in _snapshot(after_mem).items() if k not in before]

    problems = [f"{path}: not audited (add a probe above)" for path in unaudited]
    for path, lines in written.items():
        if not lines:
            problems.append(f"{path}: the probe stored nothing (fix the probe)")
        shared = SHARED.get(path.removeprefix("langchain ").removeprefix("llamaindex "))
        for line in lines:
            audience = _audience(line)
            if audience.startswith(NARROW):
                continue
            if shared is None or audience != shared[0]:
                problems.append(f"{path}: stored a {line['type']} seen by {audience}")
            elif shared[1] not in (shared[2] if shared[2] is not None else helps[path]):
                problems.append(f"{path}: its description does not say {shared[1]!r}")
    assert problems == [], "\n".join(problems)
