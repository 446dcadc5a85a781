"""MCP over streamable HTTP at ``/mcp``, driven by the official SDK client; identity from the
API key (and, for a key that is not pinned, the URL's user/agent/session parameters)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from _agentmem_server import ServerProcess
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import agentmem
from agentmem.tools.mcp import MemoryToolbox
from agentmem.tools.specs import AGENT_STATE_TOOLS


async def _session_call(
    url: str, key: str, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[list[str], list[Any]]:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(60):
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            results = [await session.call_tool(name, args) for name, args in calls]
    return tools, results


def test_mcp_tools_over_http_act_for_the_keys_identity(server: ServerProcess) -> None:
    key = server.create_key("acme", user="u1")
    url = server.url + "/mcp?session_id=chat-1"
    tools, results = anyio.run(
        _session_call,
        url,
        key,
        [
            ("remember_fact", {"content": "The user is allergic to peanuts"}),
            ("remember_fact", {"content": "x", "tenant_id": "other"}),
        ],
    )
    with agentmem.connect(server.url, api_key=server.create_key("acme")) as client:
        every = list(MemoryToolbox(client.bind(user_id="u1")).specs)  # type: ignore[arg-type]
    # the key is pinned to a user: agent state is not its to read or write
    assert tools == [t for t in every if t not in AGENT_STATE_TOOLS]
    stored, widened = results
    assert not stored.is_error and stored.structured_content["scope"] == "user"
    assert widened.is_error and "tenant_id" in widened.content[0].text
    # the fact landed as u1 of tenant acme, visible to the Python client
    with agentmem.connect(server.url, api_key=server.create_key("acme")) as client:
        memory_id = stored.structured_content["id"]
        assert client.bind(user_id="u1").get(memory_id).content == "The user is allergic to peanuts"
        assert client.flush(timeout=60)
    _, (recalled,) = anyio.run(_session_call, url, key, [("recall", {"query": "peanut allergy"})])
    assert memory_id in json.dumps(recalled.structured_content)


def test_mcp_identity_from_the_url_within_the_keys_limits(server: ServerProcess) -> None:
    wide = server.create_key("acme")
    _, (stored,) = anyio.run(
        _session_call,
        server.url + "/mcp?user_id=u9&agent_id=helper&session_id=s9",
        wide,
        [("store_memory", {"content": "helper notes", "scope": "agent"})],
    )
    assert not stored.is_error
    with agentmem.connect(server.url, api_key=wide) as client:
        item = client.bind(agent_id="helper").get(stored.structured_content["memory_id"])
        assert (item.tenant_id, item.agent_id) == ("acme", "helper")

    pinned = server.create_key("acme", user="u1")
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {
        "Authorization": f"Bearer {pinned}",
        "Accept": "application/json, text/event-stream",
    }
    forbidden = httpx.post(server.url + "/mcp?user_id=u2", json=body, headers=headers)
    assert forbidden.status_code == 403
    other_tenant = httpx.post(server.url + "/mcp?tenant_id=globex", json=body, headers=headers)
    assert other_tenant.status_code == 403
    headers.pop("Authorization")
    assert httpx.post(server.url + "/mcp", json=body, headers=headers).status_code == 401


def test_a_revoked_key_is_refused_by_mcp(server: ServerProcess) -> None:
    key = server.create_key("acme", user="u1")
    anyio.run(_session_call, server.url + "/mcp", key, [])
    server.revoke_key(key)
    with pytest.raises(ExceptionGroup):  # the SDK's client fails on the 401
        anyio.run(_session_call, server.url + "/mcp", key, [])
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    refused = httpx.post(server.url + "/mcp", json=body, headers=headers)
    assert refused.status_code == 401
    assert refused.json()["error"]["context"]["reason"] == "revoked"


def test_store_memory_over_http_stays_with_the_user_of_the_url(
    server: ServerProcess, tenant: str
) -> None:
    """The issue's case: a fact stored for u9 of agent support is not recalled for u10."""
    key = server.create_key(tenant)
    mcp = server.url + "/mcp?agent_id=support&user_id="
    fact = {"content": "Home address of the user is 12 Elm Street", "memory_type": "fact"}
    _, (stored,) = anyio.run(_session_call, mcp + "u9", key, [("store_memory", fact)])
    assert not stored.is_error and stored.structured_content["scope"] == "user"
    _, (other,) = anyio.run(
        _session_call, mcp + "u10", key, [("recall", {"query": "home address"})]
    )
    assert "Elm Street" not in json.dumps(other.structured_content)
    with agentmem.connect(server.url, api_key=key) as client:
        u10 = client.bind(user_id="u10", agent_id="support")
        assert u10.recall("where does the user live?", min_score=0.0).items == []
        u9 = client.bind(user_id="u9", agent_id="support")
        assert u9.recall("where does the user live?").items[0].content == fact["content"]


def test_a_missing_identity_over_http_names_the_url_parameter(
    server: ServerProcess, tenant: str
) -> None:
    _, (failed,) = anyio.run(
        _session_call,
        server.url + "/mcp",
        server.create_key(tenant),
        [("remember_fact", {"content": "The user is left-handed"})],
    )
    assert failed.is_error
    assert "/mcp?user_id=" in failed.content[0].text


def test_a_key_pinned_to_a_user_gets_no_agent_state_tools(
    server: ServerProcess, tenant: str
) -> None:
    """The agent's state is what it keeps for every user it serves: u1's key, bound to the
    same agent, is offered no tool that reads or writes it."""
    with agentmem.connect(server.url, api_key=server.create_key(tenant)) as client:
        client.bind(user_id="u2", agent_id="support").state.set("task", "Refund 4711 for Bob")
    url = server.url + "/mcp?agent_id=support"
    user_key = server.create_key(tenant, user="u1")
    tools, _ = anyio.run(_session_call, url, user_key, [])
    assert not set(AGENT_STATE_TOOLS) & set(tools)
    with pytest.raises(ExceptionGroup) as refused:  # the SDK's client raises the MCP error
        anyio.run(_session_call, url, user_key, [("get_agent_state", {"key": "task"})])
    assert refused.group_contains(MCPError, match="unknown tool 'get_agent_state'", depth=None)
    # not blind: the agent's own key reads it
    agent_key = server.create_key(tenant, agent="support")
    _, (read,) = anyio.run(
        _session_call, server.url + "/mcp", agent_key, [("get_agent_state", {"key": "task"})]
    )
    assert read.structured_content["value"] == "Refund 4711 for Bob"
