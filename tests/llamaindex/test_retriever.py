"""AgentMemRetriever: node shape, filters, identity, and use inside LlamaIndex query pipelines."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from agentmem import AgentMemory, BoundMemory, ValidationError
from llamaindex_agentmem import AgentMemRetriever

MODES = pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])


def retrieve(retriever: AgentMemRetriever, query: str, use_async: bool) -> list[NodeWithScore]:
    if use_async:
        return asyncio.run(retriever.aretrieve(query))
    return retriever.retrieve(query)


@MODES
def test_nodes_carry_memory_ids_scores_and_metadata(
    bound: BoundMemory, seeded: dict[str, str], use_async: bool
) -> None:
    nodes = retrieve(AgentMemRetriever(bound), "what does the user like to drink?", use_async)

    assert nodes, "the tea preference should be recalled"
    top = nodes[0]
    assert isinstance(top.node, TextNode)
    assert top.node.node_id == seeded["tea"]
    assert top.node.get_content() == "The user prefers green tea over coffee"
    assert top.score is not None and 0.0 <= top.score <= 1.0
    assert [n.score for n in nodes] == sorted((n.score or 0.0 for n in nodes), reverse=True)
    meta = top.node.metadata
    assert meta["id"] == seeded["tea"]
    assert meta["kind"] == "memory"
    assert meta["memory_type"] == "preference"
    assert meta["scope"] == "user"
    assert meta["score"] == top.score
    assert meta["source_ref"] is None
    assert meta["session_id"] is None
    assert datetime.fromisoformat(meta["event_time"]).tzinfo is not None
    assert meta["source"] == "onboarding"  # stored metadata travels along


def test_node_metadata_is_kept_out_of_embeddings_and_mostly_out_of_the_prompt(
    bound: BoundMemory, seeded: dict[str, str]
) -> None:
    node = AgentMemRetriever(bound).retrieve("cracked screen order 4711")[0].node

    assert node.node_id == seeded["order"]
    assert node.metadata["session_id"] == "s1"
    assert node.get_content(metadata_mode=MetadataMode.EMBED) == node.get_content()
    llm_view = node.get_content(metadata_mode=MetadataMode.LLM)
    assert "kind: chat_message" in llm_view
    assert seeded["order"] not in llm_view  # ids and scores stay out of the prompt


def test_stored_metadata_cannot_override_agentmem_fields(mem: AgentMemory) -> None:
    m = mem.bind("acme", user_id="u1")
    rid = m.remember("Quarterly numbers are due Friday", metadata={"id": "fake", "score": 9}).id
    mem.flush(timeout=60)

    node = AgentMemRetriever(m).retrieve("when are the quarterly numbers due?")[0]

    assert node.node.metadata["id"] == rid
    assert node.node.metadata["score"] == node.score


@MODES
def test_filters_narrow_the_results(
    bound: BoundMemory, seeded: dict[str, str], use_async: bool
) -> None:
    query = "order 4711 refund"
    only_messages = retrieve(AgentMemRetriever(bound, kinds=["chat_message"]), query, use_async)
    only_docs = retrieve(AgentMemRetriever(bound, scope="tenant"), query, use_async)
    only_facts = retrieve(
        AgentMemRetriever(bound, memory_types="preference", min_score=0.0), "tea", use_async
    )

    assert {n.node.metadata["kind"] for n in only_messages} == {"chat_message"}
    assert {n.node.node_id for n in only_messages} <= {seeded["order"], seeded["refund"]}
    assert [n.node.node_id for n in only_docs] == [seeded["doc"]]
    assert [n.node.node_id for n in only_facts] == [seeded["tea"]]


@MODES
def test_metadata_filters_as_a_dict_or_as_llamaindex_metadata_filters(
    bound: BoundMemory, seeded: dict[str, str], use_async: bool
) -> None:
    """``filters`` is the LangChain retriever's (a dict) and LlamaIndex's own type."""
    onboarding = MetadataFilters(filters=[MetadataFilter(key="source", value="onboarding")])
    for filters in ({"source": "onboarding"}, onboarding):
        nodes = retrieve(AgentMemRetriever(bound, filters=filters, min_score=0.0), "tea", use_async)
        assert [n.node.node_id for n in nodes] == [seeded["tea"]]
    unfiltered = retrieve(AgentMemRetriever(bound, min_score=0.0), "tea", use_async)
    assert len(unfiltered) > 1


@pytest.mark.parametrize(
    "filters",
    [
        MetadataFilters(
            filters=[MetadataFilter(key="n", value=3, operator=FilterOperator.GT)],
        ),
        MetadataFilters(
            filters=[MetadataFilter(key="a", value=1), MetadataFilter(key="b", value=2)],
            condition=FilterCondition.OR,
        ),
        "source=onboarding",
    ],
)
def test_filters_it_cannot_apply_are_refused(bound: BoundMemory, filters: object) -> None:
    with pytest.raises(ValidationError) as err:
        AgentMemRetriever(bound, filters=filters)  # type: ignore[arg-type]
    assert err.value.field == "filters"


def test_similarity_top_k_caps_the_results(bound: BoundMemory, seeded: dict[str, str]) -> None:
    nodes = AgentMemRetriever(bound, similarity_top_k=1, min_score=0.0).retrieve("order 4711")

    assert len(nodes) == 1


def test_identity_comes_only_from_the_bound_memory(
    mem: AgentMemory, bound: BoundMemory, seeded: dict[str, str]
) -> None:
    other_user = mem.bind("acme", user_id="u2", session_id="s9")
    other_tenant = mem.bind("globex", user_id="u1", session_id="s1")

    for m in (other_user, other_tenant):
        ids = {n.node.node_id for n in AgentMemRetriever(m, min_score=0.0).retrieve("green tea")}
        assert seeded["tea"] not in ids
        assert seeded["order"] not in ids
    assert seeded["doc"] not in {
        n.node.node_id for n in AgentMemRetriever(other_tenant).retrieve("refund policy")
    }


def test_aretrieve_runs_off_the_event_loop_thread(
    bound: BoundMemory, seeded: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    real_recall = bound.recall

    def spy(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        threads.append(threading.get_ident())
        return real_recall(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bound, "recall", spy)

    async def main() -> tuple[int, list[NodeWithScore]]:
        nodes = await AgentMemRetriever(bound).aretrieve(QueryBundle("green tea"))
        return threading.get_ident(), nodes

    loop_thread, nodes = asyncio.run(main())

    assert nodes and threads and threads[0] != loop_thread


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"similarity_top_k": 0}, "similarity_top_k"),
        ({"similarity_top_k": 21}, "similarity_top_k"),
        ({"scope": "everywhere"}, "scope"),
        ({"kinds": ["email"]}, "kinds"),
        ({"memory_types": ["gossip"]}, "memory_types"),
        ({"min_score": 1.5}, "min_score"),
    ],
)
def test_bad_arguments_fail_at_construction(
    bound: BoundMemory, kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as err:
        AgentMemRetriever(bound, **kwargs)  # type: ignore[arg-type]
    assert err.value.field == field


def test_memory_must_be_bound(mem: AgentMemory) -> None:
    with pytest.raises(TypeError, match="BoundMemory"):
        AgentMemRetriever(mem)  # type: ignore[arg-type]


@MODES
def test_works_inside_a_retriever_query_engine(
    bound: BoundMemory, seeded: dict[str, str], use_async: bool
) -> None:
    engine = RetrieverQueryEngine.from_args(AgentMemRetriever(bound), llm=MockLLM())
    question = "Which ticket was opened for the cracked screen?"

    response = asyncio.run(engine.aquery(question)) if use_async else engine.query(question)

    source_ids = [n.node.node_id for n in response.source_nodes]
    assert seeded["refund"] in source_ids
    # MockLLM echoes its prompt, so the answer shows the retrieved context reached the LLM.
    assert "RF-2291" in str(response)


@MODES
def test_works_inside_a_query_fusion_retriever(
    bound: BoundMemory, seeded: dict[str, str], use_async: bool
) -> None:
    fusion = QueryFusionRetriever(
        [AgentMemRetriever(bound, scope="session"), AgentMemRetriever(bound, scope="tenant")],
        llm=MockLLM(),
        num_queries=1,
        mode=FUSION_MODES.RECIPROCAL_RANK,
        similarity_top_k=5,
        use_async=use_async,
    )

    nodes = retrieve(fusion, "refund for order 4711", use_async)  # type: ignore[arg-type]

    ids = {n.node.node_id for n in nodes}
    assert seeded["doc"] in ids
    assert ids & {seeded["order"], seeded["refund"]}
