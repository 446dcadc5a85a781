"""The shape of the core: no import cycle, dependencies point one way, SQL only in storage.

Every import counts (module level, inside functions, under TYPE_CHECKING): a deferred import
that dodges a cycle still ties the two modules together.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import agentmem

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
        "distribution",
    ),
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
    ("memory", "protocols"),
    ("tools", "wire", "evaluation", "bench", "inspector", "server", "client", "cli", "__main__"),
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
