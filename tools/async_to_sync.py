"""Turn the async client's source into its sync twin (the idea of psycopg's tool of this name).

The transformation works on the syntax tree: ``async def``/``async with``/``async for``
lose ``async``, ``await x`` becomes ``x``, and names are renamed through :data:`RENAMES`
(``AsyncClient`` -> ``Client``, ``aclose`` -> ``close``, ``asyncio.sleep`` ->
``time.sleep``...), in code and in docstrings alike. A block ``if True:  # ASYNC`` keeps only
its ``else:`` branch: the one escape for code that cannot be the same in both.

The tree is printed back with :func:`ast.unparse` (comments are lost: say what matters in
docstrings) and formatted with ruff, so the output is stable for a given input and ruff.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

#: Names of the async source and what they are called in the sync output.
RENAMES: dict[str, str] = {
    "AsyncClient": "Client",
    "AsyncRemoteBoundMemory": "RemoteBoundMemory",
    "AsyncRemoteKnowledge": "RemoteKnowledge",
    "AsyncRemoteState": "RemoteState",
    "AsyncRemoteWorking": "RemoteWorking",
    "AsyncBoundOps": "BoundOps",
    "AsyncKnowledgeOps": "KnowledgeOps",
    "AsyncStateOps": "StateOps",
    "AsyncWorkingOps": "WorkingOps",
    "AsyncBaseTransport": "BaseTransport",
    "AsyncIterator": "Iterator",
    "_ops_aio": "_ops_sync",
    "aclose": "close",
    "aread": "read",
    "aiter_lines": "iter_lines",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "asyncio": "time",
    "connect_async": "connect",
}
#: Phrases of docstrings that say "async" in words.
PHRASES: dict[str, str] = {
    "The asynchronous client": "The synchronous client",
    "(awaited)": "",
    "no threads": "safe to share between threads",
    "(``await m.recall(...)``)": "(``m.recall(...)``)",
    "is a coroutine": "is a method call",
    "async with": "with",
    "await ": "",
}
_WORD = re.compile(r"\b(" + "|".join(map(re.escape, RENAMES)) + r")\b")
_PHRASE = re.compile("|".join(map(re.escape, PHRASES)))


#: A remark for asyncio code alone, ``(asyncio: ...)``, is left out of the sync twin.
_ASYNC_REMARK = re.compile(r"\s*\(asyncio: [^)]*\)")


def rename_text(text: str) -> str:
    """A docstring or other string with the async names and phrases replaced."""
    text = _ASYNC_REMARK.sub("", text)
    text = _PHRASE.sub(lambda m: PHRASES[m.group(0)], text)
    return _WORD.sub(lambda m: RENAMES[m.group(0)], text)


class _ToSync(ast.NodeTransformer):
    def __init__(self, source_lines: list[str]) -> None:
        self._lines = source_lines

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        self.generic_visit(node)
        fields = {name: getattr(node, name) for name in node._fields}
        sync = ast.FunctionDef(**fields)
        sync.name = RENAMES.get(sync.name, sync.name)
        return ast.copy_location(sync, node)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> ast.AST:
        self.generic_visit(node)
        return ast.copy_location(ast.With(items=node.items, body=node.body), node)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> ast.AST:
        self.generic_visit(node)
        sync = ast.For(target=node.target, iter=node.iter, body=node.body, orelse=node.orelse)
        return ast.copy_location(sync, node)

    def visit_Await(self, node: ast.Await) -> ast.AST:
        return self.visit(node.value)

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        line = self._lines[node.lineno - 1]
        if isinstance(node.test, ast.Constant) and node.test.value is True and "# ASYNC" in line:
            return [self.visit(stmt) for stmt in node.orelse]
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = RENAMES.get(node.id, node.id)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        node.attr = RENAMES.get(node.attr, node.attr)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.generic_visit(node)
        node.name = RENAMES.get(node.name, node.name)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self.generic_visit(node)
        node.name = RENAMES.get(node.name, node.name)
        return node

    def visit_alias(self, node: ast.alias) -> ast.AST:
        node.name = RENAMES.get(node.name, node.name)
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        self.generic_visit(node)
        if node.module is not None:
            node.module = _WORD.sub(lambda m: RENAMES[m.group(0)], node.module)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            node.value = rename_text(node.value)
        return node


def convert(source: str, origin: str) -> str:
    """The sync twin of the async module ``source`` (not yet formatted)."""
    tree = _ToSync(source.splitlines()).visit(ast.parse(source))
    banner = (
        f"# GENERATED from {origin} by tools/async_to_sync.py: do not edit, run `make generate`"
    )
    return banner + "\n" + ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def ruff_format(source: str, path: Path, root: Path) -> str:
    """``source`` as ruff would leave it at ``path`` (fixes, imports sorted, formatted)."""
    name = str(path.relative_to(root))
    for command in (["check", "--fix-only", "--exit-zero", "--quiet"], ["format"]):
        source = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", name, "-"],
            input=source,
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
        ).stdout
    return source
