"""The ``langchain-tests`` standard suites, unmodified, for the retriever and every tool.

All tests share one AgentMemory and one tenant/user/agent; each gets a fresh session, seeded
again (explicit memories and the document are idempotent, so they are re-asserted, or
re-created after a ``delete_memory`` test removed one).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests, ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from agentmem import AgentMemory, BoundMemory
from langchain_agentmem import (
    AgentMemRetriever,
    AgentMemTool,
    DeleteMemoryTool,
    GetAgentStateTool,
    ReadToolOutputTool,
    RecallTool,
    RememberFactTool,
    SearchMemoryTool,
    SetAgentStateTool,
    StoreMemoryTool,
)


def fresh_identity(mem: AgentMemory) -> BoundMemory:
    return mem.bind(
        "acme", user_id="u1", agent_id="support", session_id=f"s-{uuid.uuid4().hex[:12]}"
    )


class TestAgentMemRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _identity(self, module_mem: AgentMemory, seeder: Any) -> None:
        self._memory = fresh_identity(module_mem)
        seeder(module_mem, self._memory)

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return AgentMemRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self._memory}

    @property
    def retriever_query_example(self) -> str:
        return "refund for my damaged order 4711"


class _ToolSuite:
    """What the standard tool suites need: the tool class, its memory, an example call."""

    tool_class: type[AgentMemTool]

    @pytest.fixture(autouse=True)
    def _identity(self, module_mem: AgentMemory, seeder: Any) -> None:
        self._memory = fresh_identity(module_mem)
        # Only the integration suites invoke the tools, so only they wait for the indexes.
        invokes = isinstance(self, ToolsIntegrationTests)
        self._ids = seeder(module_mem, self._memory, index=invokes)
        self._memory.state.set("current_task", "Refund order 4711")

    @property
    def tool_constructor(self) -> type[AgentMemTool]:
        return self.tool_class

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {"memory": self._memory}

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return self.example()

    def example(self) -> dict[str, Any]:
        raise NotImplementedError


class _Recall(_ToolSuite):
    tool_class = RecallTool

    def example(self) -> dict[str, Any]:
        return {"query": "refund status of order 4711", "top_k": 3, "source_kinds": ["tool_output"]}


class _RememberFact(_ToolSuite):
    tool_class = RememberFactTool

    def example(self) -> dict[str, Any]:
        return {"content": "The user's dog is called Biscuit", "scope": "user"}


class _ReadToolOutput(_ToolSuite):
    tool_class = ReadToolOutputTool

    def example(self) -> dict[str, Any]:
        key = self._memory.get(self._ids["status"]).source_ref
        assert key is not None
        return {"key": key}


class _StoreMemory(_ToolSuite):
    tool_class = StoreMemoryTool

    def example(self) -> dict[str, Any]:
        return {
            "content": "The customer prefers email communication over phone calls",
            "memory_type": "preference",
            "metadata": {"customer_id": "cust-42"},
            "importance": 0.8,
        }


class _SearchMemory(_ToolSuite):
    tool_class = SearchMemoryTool

    def example(self) -> dict[str, Any]:
        return {"query": "refund preferences", "top_k": 10, "memory_type": "preference"}


class _GetAgentState(_ToolSuite):
    tool_class = GetAgentStateTool

    def example(self) -> dict[str, Any]:
        return {"key": "current_task"}


class _SetAgentState(_ToolSuite):
    tool_class = SetAgentStateTool

    def example(self) -> dict[str, Any]:
        return {"key": "current_task", "value": {"step": "Generating the final report"}}


class _DeleteMemory(_ToolSuite):
    tool_class = DeleteMemoryTool

    def example(self) -> dict[str, Any]:
        return {"memory_id": self._ids["uv"]}


class TestRecallToolUnit(_Recall, ToolsUnitTests):
    pass


class TestRecallToolIntegration(_Recall, ToolsIntegrationTests):
    pass


class TestRememberFactToolUnit(_RememberFact, ToolsUnitTests):
    pass


class TestRememberFactToolIntegration(_RememberFact, ToolsIntegrationTests):
    pass


class TestReadToolOutputToolUnit(_ReadToolOutput, ToolsUnitTests):
    pass


class TestReadToolOutputToolIntegration(_ReadToolOutput, ToolsIntegrationTests):
    pass


class TestStoreMemoryToolUnit(_StoreMemory, ToolsUnitTests):
    pass


class TestStoreMemoryToolIntegration(_StoreMemory, ToolsIntegrationTests):
    pass


class TestSearchMemoryToolUnit(_SearchMemory, ToolsUnitTests):
    pass


class TestSearchMemoryToolIntegration(_SearchMemory, ToolsIntegrationTests):
    pass


class TestGetAgentStateToolUnit(_GetAgentState, ToolsUnitTests):
    pass


class TestGetAgentStateToolIntegration(_GetAgentState, ToolsIntegrationTests):
    pass


class TestSetAgentStateToolUnit(_SetAgentState, ToolsUnitTests):
    pass


class TestSetAgentStateToolIntegration(_SetAgentState, ToolsIntegrationTests):
    pass


class TestDeleteMemoryToolUnit(_DeleteMemory, ToolsUnitTests):
    pass


class TestDeleteMemoryToolIntegration(_DeleteMemory, ToolsIntegrationTests):
    pass
