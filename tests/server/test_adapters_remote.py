"""The adapters run unchanged on a remote memory: every LangChain and LlamaIndex component, the
LangGraph store and ``agentmem mcp`` take a client of ``agentmem serve`` (or its bound
memory) where they take an ``AgentMemory`` (or a ``BoundMemory``)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from _agentmem_server import ServerProcess
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from mcp import ClientSession, StdioServerParameters, stdio_client
from pydantic import Field

import agentmem
from agentmem.client import Client, RemoteBoundMemory
from langchain_agentmem import (
    AgentMemChatMessageHistory,
    AgentMemMiddleware,
    AgentMemRetriever,
    AgentMemStore,
)
from langchain_agentmem import create_memory_tools as lc_tools
from llamaindex_agentmem import (
    AgentMemChatStore,
    AgentMemMemoryBlock,
)
from llamaindex_agentmem import AgentMemRetriever as LlamaRetriever
from llamaindex_agentmem import create_memory_tools as llama_tools


class ScriptedModel(GenericFakeChatModel):
    """Replies with scripted messages; accepts any tools (a stand-in for a hosted model)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self


class RecordingModel(ScriptedModel):
    """A scripted model that also keeps every prompt it was sent."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


@pytest.fixture
def client(server: ServerProcess, tenant: str) -> Iterator[Client]:
    with agentmem.connect(server.url, api_key=server.create_key(tenant)) as c:
        yield c


@pytest.fixture
def remote(client: Client) -> RemoteBoundMemory:
    return client.bind(user_id="u1", agent_id="support", session_id="s1")


def test_langchain_retriever_chat_history_and_tools(
    client: Client, remote: RemoteBoundMemory
) -> None:
    history = AgentMemChatMessageHistory(memory=remote)
    history.add_messages([HumanMessage("My parcel 4711 is late"), AIMessage("Let me check")])
    assert [m.content for m in history.messages] == ["My parcel 4711 is late", "Let me check"]

    tools = {t.name: t for t in lc_tools(remote)}
    stored = tools["remember_fact"].invoke({"content": "The user prefers email contact"})
    assert "was_new" in stored
    client.flush(timeout=60)
    docs = AgentMemRetriever(memory=remote, k=3).invoke("how should we contact the user?")
    assert docs and docs[0].page_content == "The user prefers email contact"
    history.add_user_message("Any news?")  # the question the recall below answers
    recalled = tools["recall"].invoke({"query": "parcel 4711"})
    assert "My parcel 4711 is late" in recalled and "Any news?" not in recalled
    docs_async = asyncio.run(AgentMemRetriever(memory=remote, k=3).ainvoke("parcel 4711"))
    assert docs_async
    history.clear()
    assert history.messages == []


def test_langchain_agent_middleware(client: Client, remote: RemoteBoundMemory) -> None:
    call = AIMessage("", tool_calls=[{"name": "recall", "args": {"query": "allergy"}, "id": "c1"}])
    model = ScriptedModel(messages=iter([call, AIMessage("Nothing about allergies yet.")]))
    agent = create_agent(model, tools=[], middleware=[AgentMemMiddleware(remote, window=10)])
    out = agent.invoke({"messages": [HumanMessage("Do I have allergies?")]})
    assert isinstance(out["messages"][2], ToolMessage)
    assert next(m.content for m in remote.messages()) == "Do I have allergies?"


def test_langchain_agent_middleware_folds_a_long_loop_remotely(remote: RemoteBoundMemory) -> None:
    """The working memory runs on the server (prompt_view): past the window the older
    messages are folded into the summary, and every call still sees the question."""
    calls = [
        AIMessage("", tool_calls=[{"name": "recall", "args": {"query": f"q{i}"}, "id": f"c{i}"}])
        for i in range(6)
    ]
    model = RecordingModel(messages=iter([*calls, AIMessage("Done.")]))
    agent = create_agent(model, tools=[], middleware=[AgentMemMiddleware(remote, window=4)])
    question = "Which of my orders are late?"
    out = agent.invoke({"messages": [HumanMessage(question)]})
    assert out["messages"][-1].content == "Done."
    assert len(model.prompts) == 7
    for prompt in model.prompts:
        assert any(isinstance(m, HumanMessage) and m.content == question for m in prompt)
    last = model.prompts[-1]
    assert "Summary of earlier messages" in str(last[0].content)
    assert len(last) < len(out["messages"])


def test_langgraph_store_on_a_client(client: Client, tenant: str) -> None:
    store = AgentMemStore(client, user_position=1, wait_for_index=True)  # the key's tenant
    assert store.tenant_id == tenant
    store.put(("memories", "u1"), "pref", {"content": "Prefers dark mode"})
    item = store.get(("memories", "u1"), "pref")
    assert item is not None and item.value == {"content": "Prefers dark mode"}
    hits = store.search(("memories", "u1"), query="UI theme")
    assert hits and hits[0].key == "pref"
    assert store.list_namespaces() == [("memories", "u1")]
    store.delete(("memories", "u1"), "pref")
    assert store.get(("memories", "u1"), "pref") is None


def test_langgraph_store_item_goes_when_its_memory_is_forgotten_remotely(client: Client) -> None:
    store = AgentMemStore(client, user_position=1, wait_for_index=True)
    store.put(("memories", "u1"), "code", {"content": "My locker code is 4417"})
    store.put(("memories", "u1"), "pref", {"content": "Prefers dark mode"})
    user = client.bind(user_id="u1")
    (hit,) = [h for h in user.recall("locker code", scope="user").items if "4417" in h.content]
    assert user.forget(hit.id)
    assert store.get(("memories", "u1"), "code") is None
    assert [i.key for i in store.search(("memories", "u1"))] == ["pref"]
    assert [i.key for i in store.search(("memories", "u1"), query="locker code")] == ["pref"]
    assert store.list_namespaces() == [("memories", "u1")]


def test_langgraph_store_ttl_on_a_client(client: Client, tenant: str) -> None:
    """Expiry is kept in the records, so it holds over a remote memory; the swept item's
    memory is forgotten on the server."""
    now = [datetime(2031, 5, 4, tzinfo=UTC)]
    store = AgentMemStore(client, tenant_id=tenant, user_position=1, clock=lambda: now[0])
    ns = ("memories", "u1")
    store.put(ns, "code", {"content": "The door code is 4417"}, ttl=5)
    store.put(ns, "pet", {"content": "The user has a cat named Miso"})
    assert client.flush(timeout=60)
    u1 = client.bind(user_id="u1")
    assert any("4417" in h.content for h in u1.recall("door code", min_score=0.0).items)
    now[0] += timedelta(minutes=6)
    assert store.sweep_ttl() == 1
    assert store.get(ns, "code") is None
    assert not any("4417" in h.content for h in u1.recall("door code", min_score=0.0).items)
    assert [i.key for i in store.search(ns)] == ["pet"]


def test_llamaindex_retriever_memory_block_tools_and_chat_store(
    client: Client, remote: RemoteBoundMemory, tenant: str
) -> None:
    tools = {t.metadata.name: t for t in llama_tools(remote)}
    tools["remember_fact"].call(content="The user's dog is called Biscuit")
    client.flush(timeout=60)
    nodes = LlamaRetriever(remote, similarity_top_k=2).retrieve("what is the dog's name?")
    assert nodes and "Biscuit" in nodes[0].node.get_content()
    assert asyncio.run(LlamaRetriever(remote).aretrieve("dog name"))
    assert "Biscuit" in str(tools["recall"].call(query="dog"))

    block = AgentMemMemoryBlock(memory=remote, priority=1)
    chat = Memory.from_defaults(
        session_id="llama-1",
        memory_blocks=[block],
        token_limit=400,
        chat_history_token_ratio=0.2,
        token_flush_size=40,
    )
    for text in ["Biscuit is a golden retriever.", "He loves the beach.", "We walk at 7am."] * 3:
        chat.put(ChatMessage(role="user", content=text))
    client.flush(timeout=60)
    assert "Biscuit" in str(chat.get())

    store = AgentMemChatStore(client, user_id="u2")  # the API key's tenant
    assert store.tenant_id == tenant
    store.set_messages("k1", [ChatMessage(role="user", content="hello from llama")])
    store.add_message("k2", ChatMessage(role="assistant", content="second chat"))
    assert [m.content for m in store.get_messages("k1")] == ["hello from llama"]
    assert store.get_keys() == ["k1", "k2"]
    assert store.delete_last_message("k2") is not None and store.get_keys() == ["k1"]


def test_agentmem_mcp_over_stdio_on_a_remote_memory(server: ServerProcess, tenant: str) -> None:
    key = server.create_key(tenant, user="u1")

    async def run() -> tuple[list[str], str]:
        params = StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "agentmem.cli",
                "--url",
                server.url,
                "--api-key",
                key,
                "mcp",
                "--session",
                "s1",
            ],
            env={},
        )
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(60):
                await session.initialize()
                names = [t.name for t in (await session.list_tools()).tools]
                stored = await session.call_tool("remember_fact", {"content": "Likes jazz"})
        return names, str(stored.structured_content["id"])

    names, memory_id = anyio.run(run)
    assert {"recall", "remember_fact", "read_tool_output"} <= set(names)
    with agentmem.connect(server.url, api_key=server.create_key(tenant)) as client:
        item = client.bind(user_id="u1").get(memory_id)
    assert (item.tenant_id, item.user_id, item.content) == (tenant, "u1", "Likes jazz")
