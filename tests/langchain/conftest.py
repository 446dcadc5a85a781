"""Fixtures for the LangChain adapter tests: a real AgentMemory, bound identities, data.

The ``langchain-tests`` standard suites define ``async def`` tests without an asyncio
marker (their own projects run pytest-asyncio in auto mode); this project runs strict
mode, so the hook below marks the coroutine tests collected in this directory.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmem import AgentMemory, BoundMemory
from agentmem.embeddings import CachedEmbedder

MakeMemory = Callable[..., AgentMemory]


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_pycollect_makeitem(
    collector: pytest.Collector, name: str, obj: object
) -> Generator[None, Any, Any]:
    # trylast makes this the innermost wrapper: the marker is in place before
    # pytest-asyncio's wrapper inspects the collected items.
    result = yield
    items = result if isinstance(result, list) else [result]
    for item in items:
        if (
            isinstance(item, pytest.Function)
            and inspect.iscoroutinefunction(item.obj)
            and item.get_closest_marker("asyncio") is None
        ):
            item.add_marker(pytest.mark.asyncio)
    return result


@pytest.fixture
def mem(make_memory: MakeMemory) -> AgentMemory:
    """A fresh AgentMemory on ``tmp_path`` with the session's shared embedder."""
    return make_memory()


@pytest.fixture
def bound(mem: AgentMemory) -> BoundMemory:
    """``mem`` bound to tenant acme, user u1, agent support, session s1."""
    return mem.bind("acme", user_id="u1", agent_id="support", session_id="s1")


def seed(mem: AgentMemory, m: BoundMemory, *, index: bool = True) -> dict[str, str]:
    """A few memories of every kind around one support case; label -> id.

    With ``index`` (default) waits until both indexes have them, so recall finds them.
    """
    ids = {
        "order": m.add_message("user", "My order 4711 arrived with a cracked screen").id,
        "ticket": m.add_message(
            "assistant", "I have opened refund ticket RF-2291 for order 4711"
        ).id,
        "status": m.add_tool_output(
            "call_status",
            '{"order": 4711, "status": "refund approved", "amount": 129.0}',
            tool_name="refund_status",
        ).id,
        "card": m.remember(
            "The user prefers refunds to the original card over store credit",
            memory_type="preference",
            metadata={"source": "onboarding"},
        ).id,
        "uv": m.remember("The user manages Python packages with uv, never pip").id,
        "policy": m.add_document(
            "Refund policy: damaged items are refunded within 14 days of delivery. "
            "Send a photo of the damage.",
            source_ref="policy.md",
        )[0].id,
    }
    if index:
        assert mem.flush(timeout=60)
    return ids


Seeder = Callable[..., dict[str, str]]


@pytest.fixture(scope="session")
def seeder() -> Seeder:
    """:func:`seed`, as a fixture (test modules here are not a package)."""
    return seed


@pytest.fixture
def seeded(mem: AgentMemory, bound: BoundMemory) -> dict[str, str]:
    """``bound`` with :func:`seed`'s memories."""
    return seed(mem, bound)


@pytest.fixture(scope="module")
def module_mem(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: CachedEmbedder
) -> Iterator[AgentMemory]:
    """One AgentMemory for a whole module (the standard suites); tests use fresh tenants."""
    path: Path = tmp_path_factory.mktemp("lc-module-mem")
    mem = AgentMemory(path, embedder=shared_embedder)
    yield mem
    mem.close()
