"""Over MCP, a fact saved with ``remember_fact`` is found by the very next ``recall``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Spawn = Callable[..., Any]
IDENTITY = ("--tenant", "acme", "--user", "u1", "--agent", "support", "--session", "s1")

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


async def test_remember_fact_then_recall_at_once(spawn: Spawn, tmp_path: Path) -> None:
    async with spawn(tmp_path / "home", "mcp", *IDENTITY) as session:
        saved = await session.call_tool(
            "remember_fact", {"content": "The user's dog is called Biscuit"}
        )
        found = await session.call_tool("recall", {"query": "what is my dog's name?"})
    assert not saved.is_error and not found.is_error
    items = found.structured_content["items"]
    assert items and items[0]["id"] == saved.structured_content["id"]
    assert found.structured_content["degraded"] is False
