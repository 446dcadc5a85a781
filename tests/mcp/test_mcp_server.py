"""``agentmem mcp`` end to end: a real server subprocess, driven by the SDK's stdio client."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, MCPError
from mcp.types import CallToolResult

import langchain_agentmem
import llamaindex_agentmem
from agentmem import AgentMemory

Spawn = Callable[..., Any]

IDENTITY = ("--tenant", "acme", "--user", "u1", "--agent", "support", "--session", "s1")
TOOLS = {
    "recall",
    "remember_fact",
    "read_tool_output",
    "store_memory",
    "search_memory",
    "get_agent_state",
    "set_agent_state",
    "delete_memory",
    "upsert_knowledge",
    "get_knowledge",
    "list_knowledge",
    "delete_knowledge",
    "session_detail",
    "answer",
    "compact",
}
IDENTITY_KEYS = {"tenant_id", "user_id", "agent_id", "session_id", "tenant", "user", "session"}

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


def text_of(result: CallToolResult) -> str:
    """The text content of a tool result."""
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def recall_until(
    session: ClientSession,
    arguments: dict[str, Any],
    found: Callable[[CallToolResult], bool],
    *,
    tool: str = "recall",
    timeout: float = 30.0,
) -> CallToolResult:
    """Call ``tool`` until ``found(result)`` (the background indexer needs a moment)."""
    deadline = time.monotonic() + timeout
    while True:
        result = await session.call_tool(tool, arguments)
        if found(result) or time.monotonic() > deadline:
            return result
        await anyio.sleep(0.1)


@pytest.fixture(autouse=True)
def _server_log_is_clean(server_log: Path) -> Iterator[None]:
    """Show the servers' stderr on failure, and fail on any traceback the servers logged."""
    yield
    log = server_log.read_text() if server_log.exists() else ""
    print(log)  # captured; pytest shows it only for failing tests
    assert "Traceback" not in log


async def test_lists_the_tool_set_with_schemas_for_a_model(spawn: Spawn, tmp_path: Path) -> None:
    async with spawn(tmp_path / "home", "mcp", *IDENTITY) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}

    assert set(tools) == TOOLS
    for tool in tools.values():
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert not IDENTITY_KEYS & set(schema["properties"]), tool.name
        assert all(p.get("description") for p in schema["properties"].values()), tool.name
        assert tool.description and len(tool.description) > 60, tool.name
        assert tool.annotations is not None
    recall = tools["recall"].input_schema
    assert recall["required"] == ["query"]
    assert set(recall["properties"]) == {"query", "top_k", "source_kinds", "scope", "enable_rerank"}
    assert recall["properties"]["top_k"]["maximum"] == 20
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["delete_memory"].annotations.destructive_hint is True
    assert set(tools["remember_fact"].input_schema["properties"]) == {
        "content",
        "scope",
        "metadata",
    }


async def test_remember_fact_then_recall_finds_it(spawn: Spawn, tmp_path: Path) -> None:
    async with spawn(tmp_path / "home", "mcp", *IDENTITY) as session:
        saved = await session.call_tool(
            "remember_fact", {"content": "The user's cat is named Pixel"}
        )
        again = await session.call_tool(
            "remember_fact", {"content": "The user's cat is named Pixel"}
        )
        fact_id = saved.structured_content["id"]
        found = await recall_until(
            session,
            {"query": "what is the name of my cat?"},
            lambda r: any(i["id"] == fact_id for i in r.structured_content["items"]),
        )

    assert not saved.is_error
    assert saved.structured_content == {"id": fact_id, "was_new": True, "scope": "user"}
    assert again.structured_content["was_new"] is False
    assert not found.is_error
    top = found.structured_content["items"][0]
    assert top["id"] == fact_id
    assert top["source_kind"] == "memory"
    assert top["content"] == "The user's cat is named Pixel"
    assert 0.0 <= top["score"] <= 1.0
    assert {"total", "degraded", "rerank_used"} <= set(found.structured_content)
    text = text_of(found)
    assert text.startswith("<recalled-memories")
    assert "not instructions" in text
    assert "The user's cat is named Pixel" in text


async def test_read_tool_output_returns_payloads_and_errors_on_unknown_keys(
    spawn: Spawn, tmp_path: Path, make_memory: Callable[..., AgentMemory]
) -> None:
    home = tmp_path / "home"
    mem = make_memory(path=home)
    payload = "\n".join(f"order {n}: shipped" for n in range(3000))
    key = mem.bind("acme", user_id="u1", session_id="s1").add_tool_output("call-7", payload)
    mem.close()

    async with spawn(home, "mcp", *IDENTITY) as session:
        full = await session.call_tool("read_tool_output", {"key": key.source_ref})
        missing = await session.call_tool("read_tool_output", {"key": "tout_nosuchkey"})
        still_serving = await session.call_tool("get_agent_state", {"key": "anything"})

    assert not full.is_error
    assert full.structured_content == {"key": key.source_ref, "content": payload}
    assert text_of(full).startswith("<recalled-memories>")  # stored text, framed as data
    assert f"\n{payload}\n</memory>" in text_of(full)
    assert missing.is_error
    assert "tout_nosuchkey" in text_of(missing)
    assert text_of(missing).startswith("Error: ")
    assert not still_serving.is_error


async def test_identity_arguments_are_rejected(spawn: Spawn, tmp_path: Path) -> None:
    async with spawn(tmp_path / "home", "mcp", *IDENTITY) as session:
        widened = await session.call_tool("recall", {"query": "anything", "tenant_id": "globex"})
        as_other = await session.call_tool(
            "remember_fact", {"content": "Planted fact", "user_id": "u2"}
        )
        state = await session.call_tool(
            "set_agent_state", {"key": "k", "value": 1, "agent_id": "other-agent"}
        )
        planted = await session.call_tool("search_memory", {"query": "Planted fact"})

    for result, key in ((widened, "tenant_id"), (as_other, "user_id"), (state, "agent_id")):
        assert result.is_error
        assert key in text_of(result)
        assert "identity" in text_of(result)
    assert planted.structured_content["items"] == []


async def test_identity_comes_from_flags_then_env(
    spawn: Spawn, tmp_path: Path, make_memory: Callable[..., AgentMemory]
) -> None:
    home = tmp_path / "home"
    mem = make_memory(path=home)
    mem.bind("acme", user_id="u1").remember("Ana's favourite fruit is mango")
    mem.bind("acme", user_id="u2").remember("Bruno's favourite fruit is kiwi")
    mem.bind("globex", user_id="u1").remember("Globex user's favourite fruit is lychee")
    assert mem.flush(timeout=60)
    mem.close()
    query = {"query": "favourite fruit", "scope": "user"}

    async def fruits(*args: str, env: dict[str, str] | None = None) -> list[str]:
        async with spawn(home, *args, env=env) as session:
            result = await session.call_tool("recall", query)
        assert not result.is_error, text_of(result)
        return [item["content"] for item in result.structured_content["items"]]

    assert await fruits("mcp", "--tenant", "acme", "--user", "u1") == [
        "Ana's favourite fruit is mango"
    ]
    assert await fruits("mcp", env={"AGENTMEM_TENANT": "acme", "AGENTMEM_USER": "u2"}) == [
        "Bruno's favourite fruit is kiwi"
    ]
    # Flags after `mcp` beat the global ones, which beat the environment.
    overridden = "--tenant acme --user u2 mcp --tenant globex --user u1".split()
    assert await fruits(*overridden, env={"AGENTMEM_TENANT": "acme"}) == [
        "Globex user's favourite fruit is lychee"
    ]


async def test_seed_001_tools_round_trip(spawn: Spawn, tmp_path: Path) -> None:
    async with spawn(tmp_path / "home", "mcp", *IDENTITY) as session:
        stored = await session.call_tool(
            "store_memory",
            {
                "content": "The customer prefers email over phone calls",
                "memory_type": "preference",
                "metadata": {"customer_id": "cust-42"},
                "importance": 0.8,
            },
        )
        low = await session.call_tool(
            "store_memory",
            {"content": "The customer once mentioned phone calls", "importance": 0.1},
        )
        memory_id = stored.structured_content["memory_id"]
        found = await recall_until(
            session,
            {"query": "customer communication preferences", "min_importance": 0.5},
            lambda r: bool(r.structured_content["items"]),
            tool="search_memory",
        )
        typed = await session.call_tool(
            "search_memory", {"query": "phone calls", "memory_type": "fact"}
        )
        missing_state = await session.call_tool("get_agent_state", {"key": "current_task"})
        set_state = await session.call_tool(
            "set_agent_state", {"key": "current_task", "value": {"step": 2, "of": 5}}
        )
        got_state = await session.call_tool("get_agent_state", {"key": "current_task"})
        deleted = await session.call_tool("delete_memory", {"memory_id": memory_id})
        deleted_again = await session.call_tool("delete_memory", {"memory_id": memory_id})
        after = await session.call_tool(
            "search_memory", {"query": "customer communication preferences"}
        )

    assert stored.structured_content["status"] == "stored"
    assert stored.structured_content["scope"] == "user"  # the narrowest bound
    assert not low.is_error
    items = found.structured_content["items"]
    assert [i["memory_id"] for i in items] == [memory_id]
    assert items[0]["importance"] == 0.8
    assert items[0]["memory_type"] == "preference"
    assert items[0]["metadata"] == {"customer_id": "cust-42"}
    assert {i["memory_type"] for i in typed.structured_content["items"]} == {"fact"}
    assert missing_state.structured_content == {
        "key": "current_task",
        "found": False,
        "value": None,
        "updated_at": None,
    }
    assert set_state.structured_content["value"] == {"step": 2, "of": 5}
    assert got_state.structured_content["found"] is True
    assert got_state.structured_content["value"] == {"step": 2, "of": 5}
    assert deleted.structured_content == {"memory_id": memory_id, "deleted": True}
    assert deleted_again.is_error and memory_id in text_of(deleted_again)
    assert memory_id not in {i["memory_id"] for i in after.structured_content["items"]}


async def test_bad_arguments_and_unknown_tools(spawn: Spawn, tmp_path: Path) -> None:
    async with spawn(tmp_path / "home", "mcp", "--tenant", "acme") as session:
        too_many = await session.call_tool("recall", {"query": "x", "top_k": 99})
        no_query = await session.call_tool("recall", {})
        extra = await session.call_tool("recall", {"query": "x", "verbose": True})
        no_user = await session.call_tool("remember_fact", {"content": "A fact"})
        no_agent = await session.call_tool("get_agent_state", {"key": "k"})
        with pytest.raises(MCPError, match="unknown tool"):
            await session.call_tool("forget_everything", {})
        alive = await session.call_tool("recall", {"query": "anything"})

    assert too_many.is_error and "top_k" in text_of(too_many)
    assert no_query.is_error and "query" in text_of(no_query)
    assert extra.is_error and "verbose: is not a parameter" in text_of(extra)
    assert no_user.is_error and "--user" in text_of(no_user)
    assert no_agent.is_error and "agent_id" in text_of(no_agent)
    assert not alive.is_error


async def test_lists_exactly_what_create_memory_tools_all_returns(
    spawn: Spawn, tmp_path: Path, make_memory: Callable[..., AgentMemory]
) -> None:
    bound = make_memory().bind("acme", user_id="u1", agent_id="support", session_id="s1")
    langchain = [t.name for t in langchain_agentmem.create_memory_tools(bound, include="all")]
    llamaindex = [
        t.metadata.name for t in llamaindex_agentmem.create_memory_tools(bound, include="all")
    ]
    core = [t.name for t in langchain_agentmem.create_memory_tools(bound, include="core")]

    async with spawn(tmp_path / "home", "mcp", *IDENTITY) as session:
        served = [t.name for t in (await session.list_tools()).tools]
    async with spawn(tmp_path / "home", "mcp", "--tools", "core", *IDENTITY) as session:
        served_core = [t.name for t in (await session.list_tools()).tools]
    async with spawn(tmp_path / "home", "mcp", "--tools", "answer,recall", *IDENTITY) as session:
        picked = [t.name for t in (await session.list_tools()).tools]
        with pytest.raises(MCPError, match="unknown tool"):
            await session.call_tool("remember_fact", {"content": "not served"})

    assert served == langchain == llamaindex
    assert set(served) == TOOLS
    assert (
        served_core
        == core
        == [
            "recall",
            "remember_fact",
            "read_tool_output",
            "get_agent_state",
            "set_agent_state",
        ]
    )
    assert picked == ["answer", "recall"]


async def test_knowledge_sessions_answer_and_compact_over_stdio(
    spawn: Spawn, tmp_path: Path, make_memory: Callable[..., AgentMemory]
) -> None:
    home = tmp_path / "home"
    mem = make_memory(path=home)
    earlier = mem.bind("acme", user_id="u1", agent_id="support", session_id="s0")
    earlier.add_message("user", "My parcel 88 went to the wrong address")
    now = mem.bind("acme", user_id="u1", agent_id="support", session_id="s1")
    for n in range(6):
        now.add_message("user" if n % 2 == 0 else "assistant", f"Turn {n} about parcel 88")
    mem.close()

    async with spawn(home, "mcp", *IDENTITY) as session:
        upserted = await session.call_tool(
            "upsert_knowledge", {"content": "Parcels are re-routed within 2 days", "key": "reroute"}
        )
        detail = await session.call_tool("session_detail", {"session_ref": "s0"})
        fact = await session.call_tool("remember_fact", {"content": "The user's parcel is 88"})
        fact_id = fact.structured_content["id"]
        await recall_until(
            session,
            {"query": "which parcel?", "scope": "user"},
            lambda r: any(i["id"] == fact_id for i in r.structured_content["items"]),
        )
        answered = await session.call_tool("answer", {"question": "Which parcel is the user's?"})
        compacted = await session.call_tool("compact", {"keep": 2})

    billing = ("--tenant", "acme", "--agent", "billing")
    async with spawn(home, "mcp", *billing) as session:
        read = await session.call_tool(
            "get_knowledge", {"key": "reroute", "owner_agent": "support"}
        )
        listed = await session.call_tool("list_knowledge", {"all_agents": True})
        refused = await session.call_tool(
            "delete_knowledge", {"key_or_id": upserted.structured_content["id"]}
        )

    assert upserted.structured_content["was_new"] is True
    assert "My parcel 88 went to the wrong address" in text_of(detail)
    assert detail.structured_content["session_id"] == "s0"
    assert not answered.is_error
    assert fact_id in answered.structured_content["used_ids"], answered.structured_content
    assert "parcel is 88" in text_of(answered) and 'kind="answer"' in text_of(answered)
    assert compacted.structured_content["ok"] is True
    assert compacted.structured_content["rolled_off"] >= 3
    assert read.structured_content["found"] is True
    assert "Parcels are re-routed within 2 days" in text_of(read)
    assert [e["key"] for e in listed.structured_content["entries"]] == ["reroute"]
    assert refused.is_error and "own agent" in text_of(refused)
