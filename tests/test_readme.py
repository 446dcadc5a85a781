"""The README's Python examples run as written (in a temporary working directory).

An example that connects to a server (``agentmem.connect``) gets a real ``agentmem serve`` on
a loopback port, with ``AGENTMEM_URL`` and ``AGENTMEM_API_KEY`` set as its text expects.
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from _agentmem_server import ServerProcess
from _readme import README, code_spans, python_blocks, shell_lines

import agentmem
from agentmem.cli import main

BLOCKS = python_blocks()


def test_readme_has_core_langchain_and_llamaindex_examples() -> None:
    joined = "\n".join(BLOCKS)
    assert "from agentmem import AgentMemory" in joined
    assert "from langchain_agentmem import" in joined
    assert "from llamaindex_agentmem import" in joined


@pytest.fixture(scope="module")
def readme_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("readme-server")) as server:
        yield server


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(
    block: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    monkeypatch.chdir(tmp_path)
    if "agentmem.connect(" in block:
        server: ServerProcess = request.getfixturevalue("readme_server")
        monkeypatch.setenv("AGENTMEM_URL", server.url)
        monkeypatch.setenv("AGENTMEM_API_KEY", server.create_key("acme"))
    exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out  # every example prints what it shows


def test_each_example_has_a_data_dir_of_its_own() -> None:
    """Run one after another in one directory, two examples opening the same data dir with
    different embedders would stop at ``EmbedderMismatchError``."""
    dirs = [set(re.findall(r"AgentMemory\(\s*\"([^\"]+)\"", block)) for block in BLOCKS]
    seen: dict[str, int] = {}
    for n, names in enumerate(dirs):
        for name in names:
            assert name not in seen, f"{name} is opened by blocks {seen[name]} and {n}"
            seen[name] = n
    assert len(seen) >= 5


def test_the_cli_example_recalls_what_it_remembers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The MCP server and CLI section: the question it asks finds the preference it stored,
    at default settings with the bundled MiniLM."""
    monkeypatch.chdir(tmp_path)
    lines = shell_lines()
    remember = next(line for line in lines if " remember " in line and "uv" in line)
    recall = lines[lines.index(remember) + 1]
    assert " recall " in recall
    stored = shlex.split(remember)[shlex.split(remember).index("remember") + 1]
    assert main(shlex.split(remember)[1:]) == 0
    capsys.readouterr()
    assert main([*shlex.split(recall)[1:], "--json"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    assert [item["content"] for item in items][:1] == [stored]


#: What the README names ``agentmem.*`` that is not an import: the telemetry's span names.
SPANS_SENTENCE = re.compile(r"The spans:(.*?)Their attributes", re.S)


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:n]))
        except ImportError:
            continue
        try:
            for part in parts[n:]:
                obj = getattr(obj, part)
        except AttributeError:
            return False
        return True
    return False


def test_the_names_the_readme_gives_import_as_written() -> None:
    spans_text = SPANS_SENTENCE.search(README.read_text(encoding="utf-8"))
    assert spans_text is not None
    spans = set(re.findall(r"`(agentmem\.[\w.]+)`", spans_text.group(1)))
    dotted = {
        m.group(0)
        for span in code_spans()
        if (m := re.match(r"agentmem(\.[A-Za-z_]\w*)+", span)) and m.group(0) not in spans
    }
    assert len(dotted) >= 10
    assert [name for name in sorted(dotted) if not _resolves(name)] == []
    # the errors and warnings it names are the package's own, exported at its root
    raised = {s for s in code_spans() if re.fullmatch(r"[A-Z]\w*(Error|Warning)", s)}
    assert "ModelFilesWarning" in raised
    assert sorted(raised - set(agentmem.__all__)) == []
