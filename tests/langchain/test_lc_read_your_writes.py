"""LangChain surfaces see what was just written, with no flush: tools, retriever, store."""

from __future__ import annotations

from agentmem import AgentMemory, BoundMemory
from langchain_agentmem import AgentMemRetriever, AgentMemStore, create_memory_tools


def test_remember_fact_tool_then_recall_tool(bound: BoundMemory) -> None:
    tools = {t.name: t for t in create_memory_tools(bound)}
    tools["remember_fact"].invoke({"content": "The user's favourite tea is genmaicha"})
    text = tools["recall"].invoke({"query": "which tea does the user like?"})
    assert "genmaicha" in text


def test_retriever_sees_a_message_just_added(bound: BoundMemory) -> None:
    bound.add_message("user", "Ship the replacement to the Rotterdam office, not Delft")
    docs = AgentMemRetriever(memory=bound, k=3).invoke("where should the replacement go?")
    assert "Rotterdam" in docs[0].page_content


def test_langgraph_store_put_then_search(mem: AgentMemory) -> None:
    store = AgentMemStore(mem, tenant_id="acme", user_position=1)
    store.put(("memories", "u1"), "theme", {"content": "Prefers a dark editor theme"})
    hits = store.search(("memories", "u1"), query="which UI colours does the user want?")
    assert hits and hits[0].key == "theme"
