"""Generate the clients' code from its two sources: the contract and the async client.

- ``client/_ops_aio.py``: one async method per operation declared in
  ``agentmem/protocols.py`` (the contract), with the declared signature and a body that sends
  the arguments on the wire;
- ``client/_ops_sync.py`` and ``client/sync.py``: the sync twins of ``_ops_aio.py`` and the
  hand-written ``client/aio.py`` (:mod:`async_to_sync`).

``python tools/generate_client.py`` writes them (``make generate``); ``--check`` exits 1
when a file on disk is not what would be generated (``tests/client/test_generated.py``).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from async_to_sync import convert, ruff_format

from agentmem.wire.ops import OPTION_TYPES, PARTS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "core" / "agentmem"
CONTRACT = PACKAGE / "protocols.py"
CLIENT = PACKAGE / "client"
#: Per part of a bound memory (as the wire table names them): its generated mixin and the
#: class implementing its operations (for the docstrings).
MIXINS: dict[str | None, tuple[str, str]] = {
    None: ("AsyncBoundOps", "BoundMemory"),
    "knowledge": ("AsyncKnowledgeOps", "tiers.knowledge.Knowledge"),
    "state": ("AsyncStateOps", "tiers.agent_state.AgentState"),
    "working": ("AsyncWorkingOps", "tiers.working.WorkingMemory"),
}
#: Options values a declaration takes with ``**kwargs`` (they travel as their fields).
OPTIONS = {t.__name__ for t in OPTION_TYPES}


def _is_local(node: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "local" for d in node.decorator_list)


def _is_property(node: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)


def _argument(arg: ast.arg) -> str:
    """How a declared argument is sent: an iterable is listed first (it may be a generator,
    which JSON cannot carry and the checks could not look into)."""
    annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
    plain_iterable = annotation.startswith("Iterable[") and annotation.endswith("]")
    return f"list({arg.arg})" if plain_iterable else arg.arg


def _body(node: ast.FunctionDef, wire_name: str) -> list[str]:
    """Send the arguments by name; an options value (with the ``**kwargs`` laid over it)
    goes as its fields, which is how the wire carries it."""
    args = node.args
    fields: list[str] = []
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.arg == "self":
            continue
        annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        kind = annotation.split(" |")[0]
        if kind in OPTIONS:
            extra = f", **{args.kwarg.arg}" if args.kwarg else ""
            fields.append(f"**{kind}.of({arg.arg}{extra}).as_dict()")
        else:
            fields.append(f"{arg.arg!r}: {_argument(arg)}")
    returns = ast.unparse(node.returns) if node.returns is not None else "Any"
    call = f"await self._call({wire_name!r}, {{{', '.join(fields)}}})"
    return [f"result: {returns} = {call}", "return result"]


def render_ops() -> str:
    """``_ops_aio.py``: the async methods of every declared operation."""
    contract = ast.parse(CONTRACT.read_text(encoding="utf-8"))
    out = [
        '"""The operations of a remote bound memory, one async method each, generated from the',
        "contract (:mod:`agentmem.protocols`) by tools/generate_client.py: do not edit; change",
        'the contract and run ``make generate``."""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Mapping",
        "from typing import Any",
    ]
    for node in contract.body:  # the contract's imports, one level deeper
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.ImportFrom) and node.level:
                node.level += 1
            out.append(ast.unparse(node))
    part_of = {protocol.__name__: part for part, protocol in PARTS.items()}
    for node in contract.body:
        if not isinstance(node, ast.ClassDef) or node.name not in part_of:
            continue
        part = part_of[node.name]
        mixin, implementation = MIXINS[part]
        out += [
            "",
            "",
            f"class {mixin}:",
            f'    """The operations of :class:`~agentmem.protocols.{node.name}`, each one request."""',
            "",
            "    async def _call(self, op: str, args: Mapping[str, Any]) -> Any:",
            "        raise NotImplementedError",
        ]
        for method in node.body:
            if not isinstance(method, ast.FunctionDef) or _is_local(method):
                continue
            if _is_property(method) or method.name.startswith("_"):
                continue
            wire_name = method.name if part is None else f"{part}.{method.name}"
            signature = ast.unparse(method.args)
            returns = ast.unparse(method.returns) if method.returns is not None else "Any"
            out += [
                "",
                f"    async def {method.name}({signature}) -> {returns}:",
                f'        """See :meth:`agentmem.{implementation}.{method.name}`."""',
                *(f"        {line}" for line in _body(method, wire_name)),
            ]
    return "\n".join(out) + "\n"


def outputs() -> dict[Path, str]:
    """Every generated file and the text it must have."""
    ops_async = ruff_format(render_ops(), CLIENT / "_ops_aio.py", ROOT)
    ops_sync = convert(ops_async, "_ops_aio.py")
    client_sync = convert((CLIENT / "aio.py").read_text(encoding="utf-8"), "aio.py")
    return {
        CLIENT / "_ops_aio.py": ops_async,
        CLIENT / "_ops_sync.py": ruff_format(ops_sync, CLIENT / "_ops_sync.py", ROOT),
        CLIENT / "sync.py": ruff_format(client_sync, CLIENT / "sync.py", ROOT),
    }


def main(argv: list[str]) -> int:
    stale = []
    for path, text in outputs().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if "--check" in argv:
            stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("not current (run `make generate`): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
