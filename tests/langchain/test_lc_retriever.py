"""AgentMemRetriever beyond the standard suite: metadata, overrides, isolation, async."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from agentmem import AgentMemory, BoundMemory, RecallResult, ScopeError
from langchain_agentmem import AgentMemRetriever


def test_documents_carry_the_memory_fields(bound: BoundMemory, seeded: dict[str, str]) -> None:
    docs = AgentMemRetriever(memory=bound, k=5, kinds=["memory"]).invoke(
        "refund to the original card"
    )
    doc = next(d for d in docs if d.id == seeded["card"])
    assert doc.page_content == "The user prefers refunds to the original card over store credit"
    meta = doc.metadata
    assert meta["id"] == seeded["card"]
    assert meta["kind"] == "memory"
    assert meta["memory_type"] == "preference"
    assert meta["scope"] == "user"
    assert 0.0 <= meta["score"] <= 1.0
    assert meta["source_ref"] is None
    assert meta["session_id"] is None
    assert datetime.fromisoformat(meta["event_time"]).tzinfo is not None
    assert meta["source"] == "onboarding"  # the stored metadata rides along


def test_tool_output_documents_name_their_key(bound: BoundMemory, seeded: dict[str, str]) -> None:
    docs = AgentMemRetriever(memory=bound, kinds=["tool_output"]).invoke("refund approved")
    assert [d.id for d in docs] == [seeded["status"]]
    assert docs[0].metadata["source_ref"].startswith("tout_")
    assert docs[0].metadata["session_id"] == "s1"
    assert docs[0].metadata["tool_call_id"] == "call_status"


def test_agentmem_fields_win_over_stored_metadata(mem: AgentMemory, bound: BoundMemory) -> None:
    bound.remember("The office dog is called Pixel", metadata={"id": "spoofed", "score": 99})
    mem.flush()
    (doc,) = AgentMemRetriever(memory=bound, k=1).invoke("office dog name")
    assert doc.metadata["id"] == doc.id != "spoofed"
    assert doc.metadata["score"] <= 1.0


def test_k_as_field_and_as_invoke_kwarg(bound: BoundMemory, seeded: dict[str, str]) -> None:
    retriever = AgentMemRetriever(memory=bound, k=4, min_score=0.0)  # six memories qualify
    assert len(retriever.invoke("order 4711 refund")) == 4
    assert len(retriever.invoke("order 4711 refund", k=2)) == 2
    assert retriever.k == 4  # a per-call k does not change the field


def test_token_budget_and_rerank_as_invoke_kwargs(
    bound: BoundMemory, seeded: dict[str, str]
) -> None:
    """Every field a search uses can be given per call, as k can."""
    retriever = AgentMemRetriever(memory=bound, k=4, min_score=0.0)
    whole = retriever.invoke("order 4711 refund")
    tight = retriever.invoke("order 4711 refund", token_budget=12)
    assert len(whole) == 4 and [d.id for d in tight] == [d.id for d in whole[: len(tight)]]
    text = sum(len(d.page_content) for d in whole)
    assert sum(len(d.page_content) for d in tight) < text  # cut to the budget
    assert retriever.invoke("order 4711 refund", rerank=False) == whole  # none configured
    assert retriever.token_budget is None  # the field is unchanged


def test_invoke_overrides_scope_and_kinds(bound: BoundMemory, seeded: dict[str, str]) -> None:
    retriever = AgentMemRetriever(memory=bound, k=5)
    docs = retriever.invoke("refund policy damaged items", scope="tenant")
    assert {d.metadata["kind"] for d in docs} == {"document_chunk"}
    docs = retriever.invoke("order 4711", kinds=["chat_message"])
    assert {d.metadata["kind"] for d in docs} == {"chat_message"}


def test_filters_and_memory_types(bound: BoundMemory, seeded: dict[str, str]) -> None:
    docs = AgentMemRetriever(memory=bound, filters={"source": "onboarding"}).invoke("refund")
    assert [d.id for d in docs] == [seeded["card"]]
    docs = AgentMemRetriever(memory=bound, memory_types=["fact"]).invoke("python packages")
    assert [d.id for d in docs] == [seeded["uv"]]


def test_min_score_cuts_unrelated_results(bound: BoundMemory, seeded: dict[str, str]) -> None:
    strict = AgentMemRetriever(memory=bound, k=20, min_score=0.9)
    loose = AgentMemRetriever(memory=bound, k=20, min_score=0.0)
    query = "order 4711 refund"
    assert len(strict.invoke(query)) < len(loose.invoke(query))
    assert all(d.metadata["score"] >= 0.9 for d in strict.invoke(query))


def test_unknown_invoke_kwargs_are_rejected(bound: BoundMemory) -> None:
    with pytest.raises(TypeError, match="tenant_id"):
        AgentMemRetriever(memory=bound).invoke("x", tenant_id="other")


def test_identity_filters_cannot_widen_the_view(bound: BoundMemory) -> None:
    with pytest.raises(ValueError, match="identity"):
        AgentMemRetriever(memory=bound, filters={"user_id": "someone-else"}).invoke("x")


def test_k_is_validated_on_construction(bound: BoundMemory) -> None:
    with pytest.raises(ValueError):
        AgentMemRetriever(memory=bound, k=0)
    with pytest.raises(ValueError):
        AgentMemRetriever(memory=bound, k=21)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scope": "everywhere"}, "scope"),
        ({"kinds": ["email"]}, "kinds"),
        ({"memory_types": ["gossip"]}, "memory_types"),
        ({"kinds": []}, "kinds"),
    ],
)
def test_bad_settings_fail_at_construction_naming_the_field(
    bound: BoundMemory, kwargs: dict[str, Any], field: str
) -> None:
    """As the LlamaIndex retriever's do: not at the first search, inside a chain."""
    with pytest.raises(ValueError, match=rf"{field}: must"):
        AgentMemRetriever(memory=bound, **kwargs)


def test_one_kind_or_type_may_be_a_string(bound: BoundMemory, seeded: dict[str, str]) -> None:
    """As per call and in the core: ``kinds="memory"`` is ``["memory"]``."""
    retriever = AgentMemRetriever(memory=bound, kinds="memory", memory_types="preference")
    assert (retriever.kinds, retriever.memory_types) == (["memory"], ["preference"])
    docs = retriever.invoke("refund to the card or store credit?")
    assert [d.id for d in docs] == [seeded["card"]]


def test_scope_needing_an_unbound_identity_is_an_error(mem: AgentMemory) -> None:
    tenant_only = mem.bind("acme")
    with pytest.raises(ScopeError):
        AgentMemRetriever(memory=tenant_only, scope="user").invoke("x")


def test_tenants_and_users_are_isolated(mem: AgentMemory, seeded: dict[str, str]) -> None:
    other_user = mem.bind("acme", user_id="u2", session_id="s9")
    other_tenant = mem.bind("globex", user_id="u1", agent_id="support", session_id="s1")
    own_ids = set(seeded.values())
    for view in (other_user, other_tenant):
        docs = AgentMemRetriever(memory=view, k=20, min_score=0.0).invoke("order 4711 refund")
        leaked = {d.id for d in docs} & own_ids
        if view is other_user:  # the tenant-wide document is shared within the tenant
            assert leaked == {seeded["policy"]}
        else:
            assert leaked == set()


def test_retriever_in_a_chain(bound: BoundMemory, seeded: dict[str, str]) -> None:
    retriever = AgentMemRetriever(memory=bound, k=2, kinds=["memory"])

    def join(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    prompt = ChatPromptTemplate.from_messages([("human", "Context:\n{context}\n\nQ: {q}")])
    chain = {"context": retriever | RunnableLambda(join), "q": RunnablePassthrough()} | prompt
    text = chain.invoke("how should refunds be paid?").to_messages()[0].content
    assert "original card" in text


@pytest.mark.asyncio
async def test_ainvoke_matches_invoke(bound: BoundMemory, seeded: dict[str, str]) -> None:
    retriever = AgentMemRetriever(memory=bound, k=3)
    sync_ids = [d.id for d in retriever.invoke("order 4711 refund")]
    async_ids = [d.id for d in await retriever.ainvoke("order 4711 refund")]
    assert async_ids == sync_ids
    assert len(await retriever.ainvoke("order 4711 refund", k=1)) == 1


class _ObservedMemory(BoundMemory):
    """A bound memory that notes a counter's value when each recall starts and ends."""

    def __init__(self, base: BoundMemory, counter: Callable[[], int]) -> None:
        super().__init__(base.store, base.identity)
        self._counter = counter
        self.spans: list[tuple[int, int]] = []

    def recall(self, query: str, **kwargs: Any) -> RecallResult:
        start = self._counter()
        result = super().recall(query, **kwargs)
        self.spans.append((start, self._counter()))
        return result


@pytest.mark.asyncio
async def test_ainvoke_does_not_block_the_event_loop(
    bound: BoundMemory, seeded: dict[str, str]
) -> None:
    """A ticker task keeps ticking while a recall runs: the recall is off the loop."""
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    observed = _ObservedMemory(bound, lambda: ticks)
    retriever = AgentMemRetriever(memory=observed, k=5)
    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    docs = await retriever.ainvoke("which refund ticket was opened for the cracked screen?")
    stop.set()
    await task
    assert docs
    ((started, ended),) = observed.spans
    assert ended - started > 0  # the loop ran the ticker during the recall itself
