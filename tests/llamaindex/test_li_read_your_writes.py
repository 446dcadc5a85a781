"""LlamaIndex surfaces see what was just written, with no flush."""

from __future__ import annotations

from agentmem import BoundMemory
from llamaindex_agentmem import AgentMemRetriever, create_memory_tools


def test_retriever_sees_a_fact_just_remembered(bound: BoundMemory) -> None:
    bound.remember("Our staging cluster runs in Frankfurt (eu-central-1)")
    nodes = AgentMemRetriever(memory=bound, similarity_top_k=3).retrieve("where is staging hosted?")
    assert "Frankfurt" in nodes[0].node.get_content()


def test_remember_fact_tool_then_recall_tool(bound: BoundMemory) -> None:
    tools = {t.metadata.name: t for t in create_memory_tools(bound)}
    tools["remember_fact"].call(content="The build server is called hopper")
    out = tools["recall"].call(query="what is the build machine's name?")
    assert not out.is_error and "hopper" in out.content
