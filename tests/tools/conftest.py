"""Fixtures for the tool-core tests: a real AgentMemory, and the three tool surfaces.

A :class:`Surface` calls a memory tool the way its framework does and reports what the model
would see: LangChain (``BaseTool.invoke`` with a tool call, giving a ``ToolMessage``),
LlamaIndex (``FunctionTool.call``, giving a ``ToolOutput``) and MCP (the SDK's own client
talking to :func:`agentmem.tools.mcp.build_server` over the protocol, in process; the
subprocess stdio tests live in ``tests/mcp``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pytest
from langchain_core.messages import ToolMessage
from mcp import Client

import langchain_agentmem
import llamaindex_agentmem
from agentmem import AgentMemory, BoundMemory
from agentmem.tools.mcp import build_server

SURFACES = ("langchain", "llamaindex", "mcp")


@dataclass(frozen=True)
class Outcome:
    """One tool call as the model sees it: error or not, and the text."""

    is_error: bool
    text: str
    data: Any = None


class Surface(Protocol):
    name: str

    def names(self, include: Any = "all") -> list[str]: ...

    def call(self, tool: str, args: dict[str, Any]) -> Outcome: ...


class LangChainSurface:
    name = "langchain"

    def __init__(self, memory: BoundMemory) -> None:
        self.memory = memory

    def names(self, include: Any = "all") -> list[str]:
        return [t.name for t in langchain_agentmem.create_memory_tools(self.memory, include)]

    def call(self, tool: str, args: dict[str, Any]) -> Outcome:
        (t,) = langchain_agentmem.create_memory_tools(self.memory, [tool])
        msg = t.invoke({"name": tool, "args": args, "id": "call-1", "type": "tool_call"})
        assert isinstance(msg, ToolMessage)
        assert isinstance(msg.content, str)
        return Outcome(msg.status == "error", msg.content, msg.artifact)


class LlamaIndexSurface:
    name = "llamaindex"

    def __init__(self, memory: BoundMemory) -> None:
        self.memory = memory

    def names(self, include: Any = "all") -> list[str]:
        tools = llamaindex_agentmem.create_memory_tools(self.memory, include)
        return [str(t.metadata.name) for t in tools]

    def call(self, tool: str, args: dict[str, Any]) -> Outcome:
        (t,) = llamaindex_agentmem.create_memory_tools(self.memory, [tool])
        out = t.call(**args)
        return Outcome(bool(out.is_error), str(out.content), out.raw_output)


class McpSurface:
    name = "mcp"

    def __init__(self, memory: BoundMemory) -> None:
        self.memory = memory

    def names(self, include: Any = "all") -> list[str]:
        async def go() -> list[str]:
            async with Client(build_server(self.memory, include)) as client:
                return [t.name for t in (await client.list_tools()).tools]

        return asyncio.run(go())

    def call(self, tool: str, args: dict[str, Any]) -> Outcome:
        async def go() -> Outcome:
            async with Client(build_server(self.memory)) as client:
                result = await client.call_tool(tool, args)
            text = "\n".join(getattr(block, "text", "") for block in result.content)
            return Outcome(bool(result.is_error), text, result.structured_content)

        return asyncio.run(go())


MakeSurface = Callable[[BoundMemory], Surface]
_CLASSES: dict[str, Callable[[BoundMemory], Surface]] = {
    "langchain": LangChainSurface,
    "llamaindex": LlamaIndexSurface,
    "mcp": McpSurface,
}


@pytest.fixture(params=SURFACES)
def surface_of(request: pytest.FixtureRequest) -> MakeSurface:
    """``surface_of(memory)``: one surface (the test runs once per surface)."""
    return _CLASSES[request.param]


@pytest.fixture
def all_surfaces() -> Callable[[BoundMemory], list[Surface]]:
    """``all_surfaces(memory)``: the three surfaces of ``memory``."""
    return lambda memory: [cls(memory) for cls in _CLASSES.values()]


@pytest.fixture
def mem(make_memory: Callable[..., AgentMemory]) -> AgentMemory:
    return make_memory()


@pytest.fixture
def bound(mem: AgentMemory) -> BoundMemory:
    """``mem`` bound to tenant acme, user u1, agent support, session s1."""
    return mem.bind("acme", user_id="u1", agent_id="support", session_id="s1")
