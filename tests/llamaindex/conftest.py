"""Fixtures for the LlamaIndex adapter tests: a real AgentMemory and a bound identity."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentmem import AgentMemory, BoundMemory

MakeMemory = Callable[..., AgentMemory]


@pytest.fixture
def mem(make_memory: MakeMemory) -> AgentMemory:
    """A fresh AgentMemory on ``tmp_path`` with the session's shared embedder."""
    return make_memory()


@pytest.fixture
def bound(mem: AgentMemory) -> BoundMemory:
    """``mem`` bound to tenant acme, user u1, agent support, session s1."""
    return mem.bind("acme", user_id="u1", agent_id="support", session_id="s1")


@pytest.fixture
def seeded(mem: AgentMemory, bound: BoundMemory) -> dict[str, str]:
    """A few memories of every kind in ``bound`` (indexed), by label -> memory id."""
    ids = {
        "tea": bound.remember(
            "The user prefers green tea over coffee",
            memory_type="preference",
            metadata={"source": "onboarding"},
        ).id,
        "uv": bound.remember("The user manages Python packages with uv, never pip").id,
        "order": bound.add_message("user", "My order 4711 arrived with a cracked screen").id,
        "refund": bound.add_message(
            "assistant", "I have opened refund ticket RF-2291 for order 4711"
        ).id,
        "doc": bound.add_document(
            "Refund policy: damaged items are refunded within 14 days of delivery.",
            source_ref="policy.md",
        )[0].id,
    }
    assert mem.flush(timeout=60)
    return ids
