"""The shape of the core: no import cycle, dependencies point one way, SQL only in storage.

Every import counts (module level, inside functions, under TYPE_CHECKING): a deferred import
that dodges a cycle still ties the two modules together.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import inspect
import json
import re
import subprocess
import sys
import tomllib
import typing
from pathlib import Path
from typing import Any

from _blocked_imports import run_blocked
from packaging.requirements import Requirement

import agentmem
from agentmem.protocols import is_local
from agentmem.wire.ops import OPS, PARTS, declared_methods

ROOT = Path(agentmem.__file__).parent
PKG = "agentmem"

#: Layers, lowest first: a module may import its own layer and the layers below it only.
LAYERS: list[tuple[str, ...]] = [
    (
        "errors",
        "models",
        "config",
        "validation",
        "tokens",
        "chunking",
        "speakers",
        "phrasing",
        "distribution",
        "results",
        "recall_options",
        "key_identity",
        "tool_calls",
        "protocols",
    ),
    # the client side of the server: the contract's wire table, the codec and the clients
    # (nothing of the engine; tests/core/test_thin_client.py checks what importing loads)
    ("wire", "client"),
    (
        "storage",
        "embeddings",
        "embedding_adapters",
        "e5",
        "rerank",
        "llm",
        "scopes",
        "telemetry.tracing",
    ),
    (
        "write.index_text",
        "write.keys",
        "write.indexer",
        "recall.ranking",
        "recall.request",
        "recall.pending",
        "recall.profile",
        "recall.text",
        "calibration",
        "telemetry",
    ),
    ("recall.engine",),
    ("context",),
    ("write", "recall.api", "recall.explain"),
    ("tiers", "derived", "maintenance"),
    ("memory",),
    ("tools", "evaluation", "bench", "inspector", "server", "cli", "__main__"),
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        base = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base[: len(base) - (node.level - 1)]
                    prefix = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                subs = [f"{prefix}.{a.name}" for a in node.names]
                targets = [t for t in subs if t in mods] or [prefix]
            else:
                continue
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target.startswith(PKG + ".") and target != mod:
                    graph[mod].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _layer(module: str) -> int:
    name = module.removeprefix(PKG + ".")
    best = (-1, -1)  # (length of the matching prefix, layer)
    for n, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), n)
    assert best[1] >= 0, f"{module} is in no layer of this test: add it to LAYERS"
    return best[1]


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_dependencies_point_down() -> None:
    upward = []
    for mod, targets in _graph().items():
        if mod == PKG:  # the package root re-exports the public API
            continue
        for target in targets:
            if target != PKG and _layer(target) > _layer(mod):
                upward.append(f"{mod} -> {target}")
    assert upward == []


_SQL = re.compile(r"\b(SELECT\s+\S+.*\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b")


def test_only_the_storage_layer_speaks_sql() -> None:
    speakers = []
    for mod, path in _modules().items():
        if mod.startswith(f"{PKG}.storage"):
            continue
        source = path.read_text(encoding="utf-8")
        if _SQL.search(source) or ".execute(" in source:
            speakers.append(mod)
    assert speakers == []


def test_adapters_speak_no_sql() -> None:
    for package in ("langchain_agentmem", "llamaindex_agentmem"):
        module = __import__(package)
        for path in Path(module.__file__).parent.rglob("*.py"):
            source = path.read_text(encoding="utf-8")
            assert not _SQL.search(source) and ".records" not in source, path


#: Classes of the storage layer allowed over MAX_STORAGE_CLASS_LINES, with their size today:
#: the list only shrinks (a class may not grow, and one split below the limit leaves it).
MAX_STORAGE_CLASS_LINES = 400
LARGE_STORAGE_CLASSES = {"index_queue.IndexQueue": 515, "vector_index.VectorIndex": 547}

#: Functions allowed over MAX_FUNCTION_LINES, with their length today; same rule.
MAX_FUNCTION_LINES = 80
LONG_FUNCTIONS = {
    "evaluation.locomo.run.run_locomo": 157,
    "evaluation.golden.dataset._parse_case": 143,
    "bench.report.markdown": 139,
    "derived.ingest.ingest": 130,
    "bench.peers.run_peers": 123,
    "bench.runner.run_bench": 122,
    "evaluation.golden.results.summarize": 99,
    "bench.report.plot": 92,
    "evaluation.suite.run.run_suite": 88,
    "evaluation.locomo.data.load_locomo": 88,
    "rerank.HttpReranker._parse": 84,
    "evaluation.derived.report.run_extraction_eval": 81,
}


def _sizes(kinds: tuple[type[ast.AST], ...]) -> dict[str, int]:
    """Length in lines of every function (or class) of the core, by dotted name."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}.{child.name}"
                if isinstance(child, kinds):
                    out[name] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, name)

    for mod, path in _modules().items():
        visit(ast.parse(path.read_text(encoding="utf-8")), mod.removeprefix(PKG + "."))
    return out


def _over(sizes: dict[str, int], limit: int, allowed: dict[str, int]) -> list[str]:
    found = {name: n for name, n in sizes.items() if n > limit}
    grown = [f"{name}: {n} lines" for name, n in found.items() if n > allowed.get(name, limit)]
    # a function split below the limit leaves the list, so the list only shrinks
    stale = [f"{name}: no longer over {limit}" for name in allowed if name not in found]
    return grown + stale


def test_storage_classes_stay_small() -> None:
    sizes = {
        name.removeprefix("storage."): n
        for name, n in _sizes((ast.ClassDef,)).items()
        if name.startswith("storage.")
    }
    assert _over(sizes, MAX_STORAGE_CLASS_LINES, LARGE_STORAGE_CLASSES) == []


def test_functions_stay_short() -> None:
    sizes = _sizes((ast.FunctionDef, ast.AsyncFunctionDef))
    assert _over(sizes, MAX_FUNCTION_LINES, LONG_FUNCTIONS) == []


def test_module_aliases_say_what_they_are() -> None:
    short = []
    for mod, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                short += [
                    f"{mod}: {a.name} as {a.asname}"
                    for a in node.names
                    if a.asname and len(a.asname) == 1
                ]
    assert short == []


def test_the_facade_exposes_nothing_typed_any() -> None:
    import typing

    from agentmem.memory import AgentMemory

    untyped = []
    for name, member in vars(AgentMemory).items():
        if name.startswith("_"):
            continue
        func = member.fget if isinstance(member, property) else member
        if callable(func) and typing.get_type_hints(func).get("return") is typing.Any:
            untyped.append(name)
    assert untyped == []


# -- the thin client ---------------------------------------------------------------------------
def test_the_client_imports_no_engine() -> None:
    out = run_blocked(
        "import sys, json\n"
        "before = set(sys.modules)\n"
        "import agentmem.client\n"
        "from agentmem import connect, connect_async, RecallOptions, RecallResult\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    loaded = set(json.loads(out))
    ours = {m for m in loaded if m.startswith(PKG + ".")}
    # the bottom layer, and the client side of the wire above it
    assert {m for m in ours if _layer(m) > 1} == set()
    # every other distribution it loads is one the `client` extra asks for, or theirs (an
    # optional one of theirs too: httpx imports its cli extra's packages when present)
    assert _distributions(loaded) <= _client_closure()


def test_engine_names_still_import_from_the_root() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import agentmem; print(agentmem.AgentMemory.__module__)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.strip() == "agentmem.memory", proc.stderr


def _distributions(modules: set[str]) -> set[str]:
    by_module = importlib.metadata.packages_distributions()
    tops = {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names) - {PKG}
    return {_norm(d) for top in tops for d in by_module.get(top, [])} - {"agentmem-layer"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _client_closure() -> set[str]:
    pyproject = tomllib.loads((ROOT.parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    todo = [Requirement(r).name for r in pyproject["project"]["optional-dependencies"]["client"]]
    seen: set[str] = set()
    while todo:
        name = _norm(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [Requirement(raw).name for raw in requires]
    return seen


# -- one declaration of each operation ---------------------------------------------------------
def _surfaces() -> dict[str | None, list[type]]:
    """Each part of a bound memory and the classes that serve it (embedded, sync, async)."""
    from agentmem.client import aio, sync
    from agentmem.memory import BoundMemory
    from agentmem.tiers.agent_state import AgentState
    from agentmem.tiers.knowledge import Knowledge
    from agentmem.tiers.working import WorkingMemory

    return {
        None: [BoundMemory, sync.RemoteBoundMemory, aio.AsyncRemoteBoundMemory],
        "knowledge": [Knowledge, sync.RemoteKnowledge, aio.AsyncRemoteKnowledge],
        "state": [AgentState, sync.RemoteState, aio.AsyncRemoteState],
        "working": [WorkingMemory, sync.RemoteWorking, aio.AsyncRemoteWorking],
    }


def _shape(function: Any) -> tuple[list[tuple[str, Any, Any, Any]], Any]:
    """A method's parameters (name, kind, default, type) and result type."""
    hints = typing.get_type_hints(function)
    params = [
        (p.name, p.kind, p.default, hints.get(p.name))
        for p in inspect.signature(function).parameters.values()
        if p.name != "self"
    ]
    return params, hints.get("return")


def test_every_surface_matches_the_declared_operations() -> None:
    """The embedded facade and both clients offer exactly the declared methods, with the
    declared names, parameters, defaults, types and result types (async ones awaited)."""
    for part, surfaces in _surfaces().items():
        declared = declared_methods(PARTS[part])
        for cls in surfaces:
            for name, function in declared.items():
                where = f"{cls.__module__}.{cls.__name__}.{name}"
                assert _shape(getattr(cls, name)) == _shape(function), where
                is_async = cls.__name__.startswith("Async")
                assert inspect.iscoroutinefunction(getattr(cls, name)) == is_async, where
            offered = {n for n in dir(cls) if not n.startswith("_")}
            methods = {n for n in offered if inspect.isfunction(getattr(cls, n))}
            assert methods == set(declared), cls


def test_the_wire_and_the_server_match_the_declaration() -> None:
    from agentmem.server.routes import body_model

    remote = {
        (name if part is None else f"{part}.{name}")
        for part, protocol in PARTS.items()
        for name, function in declared_methods(protocol).items()
        if not is_local(function)
    }
    assert set(OPS) == remote
    for op in OPS.values():
        schema = body_model(op).model_json_schema()
        args = schema["$defs"][schema["properties"]["args"]["$ref"].rpartition("/")[2]]
        assert list(args.get("properties", {})) == list(op.parameters), op.name
        required = [n for n, p in op.parameters.items() if p.default is p.empty]
        assert args.get("required", []) == required, op.name
        for name, param in op.parameters.items():
            if param.default is not param.empty:
                assert args["properties"][name].get("default") == param.default, (op.name, name)


def test_the_generated_clients_are_current() -> None:
    """client/_ops_aio.py, _ops_sync.py and sync.py are what `make generate` writes."""
    spec = importlib.util.spec_from_file_location(
        "generate_client", ROOT.parent.parent / "tools" / "generate_client.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    stale = [
        path.name
        for path, text in generator.outputs().items()
        if path.read_text(encoding="utf-8") != text
    ]
    assert stale == [], "run `make generate`"
