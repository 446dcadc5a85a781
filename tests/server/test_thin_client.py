"""A process that only talks to a server runs the client and the adapters without the engine:
the engine's modules and native libraries are refused in it (see ``_blocked_imports``)."""

from __future__ import annotations

import json

from _agentmem_server import ServerProcess
from _blocked_imports import ENGINE_MODULES, run_blocked

SETUP = """
import json, sys, agentmem
client = agentmem.connect({url!r}, api_key={key!r})
m = client.bind(user_id="u1", session_id="s1")
m.remember("The user's favourite tea is genmaicha", memory_type="preference")
assert client.flush(timeout=60)
"""
LOADED = "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {top!r})))"


def _run(server: ServerProcess, tenant: str, code: str, blocked: tuple[str, ...]) -> list[str]:
    setup = SETUP.format(url=server.url, key=server.create_key(tenant))
    top = sorted({b.split(".")[0] for b in blocked} - {"agentmem"})
    lines = run_blocked(setup + code + LOADED.format(top=top), blocked).splitlines()
    assert json.loads(lines[-1]) == []  # and none of the blocked libraries crept in
    return lines[:-1]


def test_langchain_adapters_run_on_a_thin_client(server: ServerProcess, tenant: str) -> None:
    code = """
from langchain_agentmem import AgentMemRetriever, create_memory_tools
docs = AgentMemRetriever(memory=m, k=3).invoke("which tea does the user like?")
print(docs[0].page_content)
tools = {t.name: t for t in create_memory_tools(m)}
print("genmaicha" in tools["recall"].invoke({"query": "favourite tea"}))
"""
    out = _run(server, tenant, code, ENGINE_MODULES)
    assert out == ["The user's favourite tea is genmaicha", "True"]


def test_llamaindex_adapters_run_on_a_thin_client(server: ServerProcess, tenant: str) -> None:
    code = """
from llamaindex_agentmem import AgentMemRetriever
nodes = AgentMemRetriever(m, similarity_top_k=3).retrieve("which tea does the user like?")
print(nodes[0].node.get_content())
"""
    # llama-index-core itself needs numpy; the engine's own libraries stay refused
    blocked = tuple(b for b in ENGINE_MODULES if b != "numpy")
    out = _run(server, tenant, code, blocked)
    assert out == ["The user's favourite tea is genmaicha"]
