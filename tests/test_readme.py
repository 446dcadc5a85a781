"""The README's Python examples run as written (in a temporary working directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_core_langchain_and_llamaindex_examples() -> None:
    joined = "\n".join(BLOCKS)
    assert "from agentmem import AgentMemory" in joined
    assert "from langchain_agentmem import" in joined
    assert "from llamaindex_agentmem import" in joined


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(
    block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out  # every example prints what it shows
