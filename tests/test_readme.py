"""The README's Python examples run as written (in a temporary working directory).

An example that connects to a server (``agentmem.connect``) gets a real ``agentmem serve`` on
a loopback port, with ``AGENTMEM_URL`` and ``AGENTMEM_API_KEY`` set as its text expects.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _agentmem_server import ServerProcess
from _readme import README, python_blocks

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
