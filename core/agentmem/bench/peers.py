"""The retrievers a user would pick instead of agentmem, on the same corpus, queries and embedder.

- **LangChain**: ``EnsembleRetriever`` (weights 0.5/0.5, its weighted RRF) over
  ``BM25Retriever`` (langchain-community, rank_bm25) and a ``langchain-chroma`` ``Chroma``
  vector store retriever.
- **LlamaIndex**: ``QueryFusionRetriever`` (``mode="reciprocal_rerank"``, ``num_queries=1``
  so no LLM is called) over ``llama-index-retrievers-bm25`` and a ``VectorStoreIndex`` on
  ``llama-index-vector-stores-chroma``.

Both use agentmem's embedder through small adapters defined here (a LangChain
``Embeddings`` and a LlamaIndex ``BaseEmbedding``), and an embedded persistent Chroma
client on disk, as agentmem does. Every system answers each query once with an uncached
query embedding (agentmem's LRU cache is cleared first), after a warm-up on other queries;
the systems (and one bare ``embed_query`` call, the floor) take each query back to back in
rotating order, so a change in machine load hits all of them alike.

Document embeddings are computed once and shared by the three builds (agentmem's included),
so build times here are index-insert times, not embedding times; the comparison is about
query latency and Recall@k.

The builders (:data:`BUILDERS`) are shared with ``agentmem eval --locomo``, which builds one
peer index per LoCoMo conversation (see :mod:`agentmem.evaluation.locomo`): each takes
``(work dir, texts, embedder, k)`` and returns ``(search, client)``, where ``search(query)``
gives the positions in ``texts`` of its first ``k`` hits, best first, and ``client`` is the
Chroma client to release with :func:`close_client` when done.

The frameworks are imported only inside these functions: importing :mod:`agentmem` or
:mod:`agentmem.bench` never imports LangChain or LlamaIndex. Install them with
``pip install "agentmem-layer[bench]"``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..embeddings import CachedEmbedder, Embedder, FloatArray
from ..memory import AgentMemory
from .corpus import QUERY_KINDS, iter_memories, memory_at
from .harness import (
    QUERY_SESSION,
    TENANT,
    USER,
    BenchSettings,
    Query,
    agentmem_search,
    bulk_import,
    interleaved,
    make_queries,
    recall_figures,
    score,
)
from .stats import summarize

__all__ = [
    "BUILDERS",
    "PEERS",
    "RETRIEVERS",
    "PrecomputedEmbedder",
    "close_client",
    "peer_status",
    "run_peers",
]

#: Peer name -> modules it needs.
PEERS: dict[str, tuple[str, ...]] = {
    "langchain": (
        "langchain_classic.retrievers",
        "langchain_community.retrievers",
        "rank_bm25",
        "langchain_chroma",
    ),
    "llamaindex": (
        "llama_index.core",
        "llama_index.retrievers.bm25",
        "llama_index.vector_stores.chroma",
    ),
}

#: Peer name -> the pipeline it builds, in words (for reports).
RETRIEVERS: dict[str, str] = {
    "langchain": "LangChain EnsembleRetriever(BM25Retriever + Chroma), weights 0.5/0.5",
    "llamaindex": "LlamaIndex QueryFusionRetriever(BM25Retriever + Chroma VectorStoreIndex), "
    "reciprocal rank, num_queries=1",
}

ProgressFn = Callable[[str], None]


def peer_status() -> dict[str, str | None]:
    """Per peer: None when importable, else why not."""
    import importlib

    out: dict[str, str | None] = {}
    for name, modules in PEERS.items():
        out[name] = None
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as exc:  # ImportError, or a version conflict raising at import
                out[name] = f"{module}: {type(exc).__name__}: {exc}"[:300]
                break
    return out


class PrecomputedEmbedder:
    """An :class:`~agentmem.embeddings.Embedder` that serves known document vectors from a table.

    ``embed_documents`` looks each text up and embeds only unknown ones; ``embed_query``
    always runs the model (no cache), so query latency stays honest.
    """

    def __init__(self, inner: Embedder, texts: Sequence[str], vectors: FloatArray) -> None:
        self.inner = inner
        self._row = {t: i for i, t in enumerate(texts)}
        self._vectors = vectors
        self.misses = 0
        """Texts embedded by the model because they were not in the table."""

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        missing = []
        for i, t in enumerate(texts):
            row = self._row.get(t)
            if row is None:
                missing.append(i)
            else:
                out[i] = self._vectors[row]
        if missing:
            out[missing] = self.inner.embed_documents([texts[i] for i in missing])
            self.misses += len(missing)
        return out

    def embed_query(self, text: str) -> FloatArray:
        return self.inner.embed_query(text)


def _chroma_client(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


# -- LangChain ----------------------------------------------------------------------------------
def build_langchain(
    work: Path, texts: Sequence[str], embedder: Embedder, k: int
) -> tuple[Callable[[str], list[int]], Any]:
    """An ``EnsembleRetriever`` over BM25 + Chroma; returns (query -> corpus indexes, client)."""
    from langchain_chroma import Chroma
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.embeddings import Embeddings

    class AgentMemEmbeddings(Embeddings):
        """agentmem's embedder as a LangChain ``Embeddings``."""

        def __init__(self, inner: Embedder) -> None:
            self.inner = inner

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in self.inner.embed_documents(texts)]

        def embed_query(self, text: str) -> list[float]:
            return list(map(float, self.inner.embed_query(text)))

    metadatas = [{"idx": i} for i in range(len(texts))]
    bm25 = BM25Retriever.from_texts(list(texts), metadatas=metadatas, k=k)
    client = _chroma_client(work / "langchain-chroma")
    store = Chroma(
        collection_name="bench",
        embedding_function=AgentMemEmbeddings(embedder),
        client=client,
    )
    for start in range(0, len(texts), 1000):
        chunk = list(range(start, min(start + 1000, len(texts))))
        store.add_texts(
            [texts[i] for i in chunk],
            metadatas=[metadatas[i] for i in chunk],
            ids=[str(i) for i in chunk],
        )
    ensemble = EnsembleRetriever(
        retrievers=[bm25, store.as_retriever(search_kwargs={"k": k})], weights=[0.5, 0.5]
    )

    def search(query: str) -> list[int]:
        return [int(d.metadata["idx"]) for d in ensemble.invoke(query)][:k]

    return search, client


# -- LlamaIndex ---------------------------------------------------------------------------------
def build_llamaindex(
    work: Path, texts: Sequence[str], embedder: Embedder, k: int
) -> tuple[Callable[[str], list[int]], Any]:
    """A ``QueryFusionRetriever`` over BM25 + a Chroma ``VectorStoreIndex``."""
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
    from llama_index.core.schema import BaseNode, TextNode
    from llama_index.retrievers.bm25 import BM25Retriever
    from llama_index.vector_stores.chroma import ChromaVectorStore
    from pydantic import PrivateAttr

    class AgentMemEmbedding(BaseEmbedding):
        """agentmem's embedder as a LlamaIndex ``BaseEmbedding``."""

        _inner: Any = PrivateAttr()

        def __init__(self, inner: Embedder, **kwargs: Any) -> None:
            super().__init__(model_name=inner.model_name, embed_batch_size=256, **kwargs)
            self._inner = inner

        def _get_query_embedding(self, query: str) -> list[float]:
            return list(map(float, self._inner.embed_query(query)))

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return list(map(float, self._inner.embed_documents([text])[0]))

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in self._inner.embed_documents(texts)]

    nodes: list[BaseNode] = [
        TextNode(
            text=t,
            id_=str(i),
            metadata={"idx": i},
            # keep the bookkeeping id out of the embedded and BM25-indexed text
            excluded_embed_metadata_keys=["idx"],
            excluded_llm_metadata_keys=["idx"],
        )
        for i, t in enumerate(texts)
    ]
    client = _chroma_client(work / "llamaindex-chroma")
    collection = client.get_or_create_collection("bench")
    storage = StorageContext.from_defaults(
        vector_store=ChromaVectorStore(chroma_collection=collection)
    )
    index = VectorStoreIndex(
        nodes,
        storage_context=storage,
        embed_model=AgentMemEmbedding(embedder),
        insert_batch_size=1000,
        show_progress=False,
    )
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every build at DEBUG
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=k)
    fusion = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=k), bm25],
        llm=MockLLM(),
        similarity_top_k=k,
        num_queries=1,
        mode=FUSION_MODES.RECIPROCAL_RANK,
        use_async=False,
    )

    def search(query: str) -> list[int]:
        return [int(n.node.metadata["idx"]) for n in fusion.retrieve(query)][:k]

    return search, client


#: Peer name -> ``builder(work, texts, embedder, k) -> (search, client)``; ``search(query)``
#: returns positions in ``texts``, best first, at most ``k``.
BUILDERS: dict[str, Callable[..., tuple[Callable[[str], list[int]], Any]]] = {
    "langchain": build_langchain,
    "llamaindex": build_llamaindex,
}


def close_client(client: Any) -> None:
    """Release a builder's Chroma client (best effort: closing never fails a run)."""
    with contextlib.suppress(Exception):
        client.close()


def run_peers(
    settings: BenchSettings,
    embedder: Embedder,
    work: Path,
    *,
    main_home: Path,
    main_ids: dict[int, str],
    main_queries: Sequence[Query],
    progress: ProgressFn | None = None,
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Peer comparison on the first ``peer_memories`` memories; (summary, latency samples)."""

    say = progress or (lambda _msg: None)
    n = settings.memories
    pn = settings.effective_peer_memories()
    k = settings.top_k
    status = peer_status()
    summary: dict[str, Any] = {
        "corpus": pn,
        "capped": pn < n,
        "status": {
            name: ("ok" if why is None else f"skipped: {why}") for name, why in status.items()
        },
        "method": "same corpus prefix, same queries, same embedder; each query asked once with "
        "an uncached query embedding after a warm-up; document embeddings computed once and "
        "shared by all builds",
    }
    samples: dict[str, list[float]] = {}
    runnable = [name for name, why in status.items() if why is None]
    if not runnable:
        return summary, samples

    queries = (
        list(main_queries) if pn == n else make_queries(settings.queries, pn, settings.seed, 1)
    )
    warmup = [
        memory_at(n + settings.ack_samples + j, settings.seed).query(QUERY_KINDS[j % 2])
        for j in range(settings.warmup_queries)
    ]
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    say(f"peers: embedding the {pn:,}-memory corpus once")
    texts = [m.text for m in iter_memories(pn, settings.seed)]
    t = time.perf_counter()
    vectors = np.concatenate(
        [inner.embed_documents(texts[s : s + 1000]) for s in range(0, pn, 1000)]
    )
    summary["corpus_embedding_s"] = round(time.perf_counter() - t, 2)
    shared = PrecomputedEmbedder(inner, texts, vectors)

    # agentmem on the same corpus (the main store when it is that corpus)
    systems: dict[str, dict[str, Any]] = {}
    if pn == n:
        home, ids = main_home, main_ids
        am_embedder: Embedder = embedder
        am_build: float | None = None
    else:
        say(f"peers: agentmem on {pn:,} memories")
        home = work / "agentmem-peer-corpus"
        am_embedder = CachedEmbedder(shared)
        t = time.perf_counter()
        with AgentMemory(home, embedder=am_embedder) as mem:
            ids, _, _ = bulk_import(
                mem, pn, settings.seed, settings.batch_size, {q.target for q in queries}
            )
        am_build = round(time.perf_counter() - t, 2)

    searches: dict[str, Callable[[str], Any]] = {}
    clients: list[Any] = []
    with AgentMemory(home, embedder=am_embedder) as mem:
        mem.flush()
        m = mem.bind(TENANT, user_id=USER, session_id=QUERY_SESSION)
        searches["agentmem"], _ = agentmem_search(m, ids, k)
        systems["agentmem"] = {"build_s": am_build}
        for name in runnable:
            say(f"peers: building {name} on {pn:,} memories")
            t = time.perf_counter()
            misses_before = shared.misses
            try:
                search, client = BUILDERS[name](work, texts, shared, k)
            except Exception as exc:  # a peer that fails to build is reported, not fatal
                summary["status"][name] = f"failed to build: {type(exc).__name__}: {exc}"[:300]
                continue
            searches[name] = search
            clients.append(client)
            systems[name] = {
                "build_s": round(time.perf_counter() - t, 2),
                "docs_not_precomputed": shared.misses - misses_before,
            }
        searches["embed_query"] = inner.embed_query
        say(f"peers: {len(queries)} queries through {', '.join(searches)} (interleaved)")
        for text in warmup:
            for fn in searches.values():
                fn(text)
        if isinstance(am_embedder, CachedEmbedder):
            am_embedder.clear_cache()
        lat, results = interleaved(searches, [q.text for q in queries])
    for client in clients:
        close_client(client)

    for name, res in systems.items():
        res["latency_ms"] = summarize(lat[name])
        res[f"recall@{k}"] = recall_figures(score(queries, results[name], k))
        samples[f"{name}_peer_corpus_ms" if name == "agentmem" else f"{name}_ms"] = lat[name]
    samples["embed_query_peer_corpus_ms"] = lat["embed_query"]
    summary["embed_query_ms"] = summarize(lat["embed_query"])
    am = systems["agentmem"]["latency_ms"]
    for name, res in systems.items():
        if name == "agentmem":
            continue
        peer = res["latency_ms"]
        res["ratio_agentmem_over_peer"] = {
            p: (round(am[p] / peer[p], 3) if peer[p] else None) for p in ("p50", "p95", "p99")
        }
        res["speedup_p95"] = round(peer["p95"] / am["p95"], 2) if am["p95"] else None
    summary["systems"] = systems
    summary["queries"] = len(queries)
    return summary, samples
