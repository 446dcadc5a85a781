"""The README's Python examples, as the tests that run them read them."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(readme: Path = README) -> list[str]:
    """Every fenced ``python`` block of ``readme``, in order."""
    return re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.S)


def core_example(readme: Path = README) -> str:
    """The core API example: the first block that imports only ``AgentMemory``."""
    for block in python_blocks(readme):
        if block.startswith("from agentmem import AgentMemory\n\n"):
            return block
    raise LookupError(f"{readme} has no core example")


def shell_lines(readme: Path = README) -> list[str]:
    """Every line of the fenced ``bash`` blocks of ``readme``, comments cut, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.S)
    lines = (line.split("  #")[0].strip() for block in blocks for line in block.splitlines())
    return [line for line in lines if line]


def code_spans(readme: Path = README) -> list[str]:
    """Every inline code span (`` `name` ``) of ``readme``'s prose, outside fenced blocks."""
    text = re.sub(r"```.*?```", "", readme.read_text(encoding="utf-8"), flags=re.S)
    return re.findall(r"`([^`\n]+)`", text)
