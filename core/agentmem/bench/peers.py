"""The retrievers a user would pick instead of agentmem, on the same corpus, queries and embedder.

- **LangChain**: ``EnsembleRetriever`` (weights 0.5/0.5, its weighted RRF) over
  ``BM25Retriever`` (langchain-community, rank_bm25) and a ``langchain-chroma`` ``Chroma``
  vector store retriever.
- **LlamaIndex**: ``QueryFusionRetriever`` (``mode="reciprocal_rerank"``, ``num_queries=1``
  so no LLM is called) over ``llama-index-retrievers-bm25`` and a ``VectorStoreIndex`` on
  ``llama-index-vector-stores-chroma``.
- **mem0** OSS (``mem0ai``): ``Memory`` with its default local vector store (Qdrant, the
  client's on-disk local mode), agentmem's embedder through mem0's LangChain embedder
  provider, each memory written with ``add(..., infer=False)`` (stored as given, no LLM) and
  found with ``search``. Offline it ranks by vector similarity alone: its BM25 half needs
  ``fastembed`` and the ``Qdrant/bm25`` model download, its lemmatizer and entity boosts need
  spaCy's ``en_core_web_sm`` download, and ``infer=True`` needs an LLM service; its telemetry
  posts to PostHog unless ``MEM0_TELEMETRY=False`` is set before it is imported (done here;
  a process that imported it with telemetry on gets the peer refused). It must be given an
  LLM, which it builds at start and never calls with ``infer=False``: a LangChain fake chat
  model. Its files (config, history database) go under the work dir (``MEM0_DIR``).
- **LangGraph**: ``InMemoryStore(index={"embed": ..., "dims": ...})``, one ``put`` per
  memory, ``search(query=...)``: vector similarity only (it has no keyword search), exact,
  in the process's memory.

All use agentmem's embedder through small adapters defined here (a LangChain
``Embeddings``, a LlamaIndex ``BaseEmbedding``); the fusion retrievers use an embedded
persistent Chroma client on disk, as agentmem does. Nothing reaches the network. Every system answers each query once with an uncached
query embedding (agentmem's LRU cache is cleared first), after a warm-up on other queries;
the systems (and one bare ``embed_query`` call, the floor) take each query back to back in
rotating order, so a change in machine load hits all of them alike.

Document embeddings are computed once and shared by the three builds (agentmem's included),
so build times here are index-insert times, not embedding times (``writes_per_s`` is the
corpus over its build time: the write path of each system without the model); the
comparison is about query latency and Recall@k.

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
    "PeerUnavailable",
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
    "mem0": ("qdrant_client", "langchain_core", "mem0"),
    "langgraph": ("langgraph.store.memory", "langchain_core"),
}

#: Peer name -> the pipeline it builds, in words (for reports).
RETRIEVERS: dict[str, str] = {
    "langchain": "LangChain EnsembleRetriever(BM25Retriever + Chroma), weights 0.5/0.5",
    "llamaindex": "LlamaIndex QueryFusionRetriever(BM25Retriever + Chroma VectorStoreIndex), "
    "reciprocal rank, num_queries=1",
    "mem0": "mem0 OSS Memory (local Qdrant, add(infer=False), search): vector similarity only "
    "offline (its BM25 and entity boosts need model downloads)",
    "langgraph": "LangGraph InMemoryStore(index=embed+dims), put / search: vector similarity only",
}

#: Modules only looked up here, imported when their peer is built: importing mem0 reads its
#: telemetry switch and writes its config directory, which :func:`build_mem0` sets first.
_IMPORTED_WHEN_BUILT = {"mem0"}

ProgressFn = Callable[[str], None]


def peer_status() -> dict[str, str | None]:
    """Per peer: None when importable, else why not."""
    import importlib
    import importlib.util

    out: dict[str, str | None] = {}
    for name, modules in PEERS.items():
        out[name] = None
        for module in modules:
            try:
                if module not in _IMPORTED_WHEN_BUILT:
                    importlib.import_module(module)
                elif importlib.util.find_spec(module) is None:
                    raise ImportError(f"No module named {module!r}")
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

    def vector_of(self, text: str) -> FloatArray | None:
        """The precomputed vector of a corpus text, or None."""
        row = self._row.get(text)
        return None if row is None else self._vectors[row]


def _langchain_embeddings(inner: Embedder, *, documents_by_query: bool = False) -> Any:
    """agentmem's embedder as a LangChain ``Embeddings``.

    ``documents_by_query``: ``embed_query`` of a corpus text gives its precomputed document
    vector (for a peer that embeds what it stores with ``embed_query``, as mem0's LangChain
    provider does); every other text, the bench's queries among them, runs the model.
    """
    from langchain_core.embeddings import Embeddings

    class AgentMemEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [list(map(float, v)) for v in inner.embed_documents(texts)]

        def embed_query(self, text: str) -> list[float]:
            known = inner.vector_of(text) if isinstance(inner, PrecomputedEmbedder) else None
            if documents_by_query and known is not None:
                return list(map(float, known))
            return list(map(float, inner.embed_query(text)))

    return AgentMemEmbeddings()


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

    metadatas = [{"idx": i} for i in range(len(texts))]
    bm25 = BM25Retriever.from_texts(list(texts), metadatas=metadatas, k=k)
    client = _chroma_client(work / "langchain-chroma")
    store = Chroma(
        collection_name="bench",
        embedding_function=_langchain_embeddings(embedder),
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


# -- mem0 ----------------------------------------------------------------------------------------
class PeerUnavailable(RuntimeError):
    """A peer that cannot run here, and why (reported as the peer's status)."""


def _mem0_offline(home: Path) -> None:
    """Before mem0 is imported: telemetry off, and its files under ``home`` (it reads both
    once, at import)."""
    import os
    import sys

    if "mem0" in sys.modules:
        return
    os.environ["MEM0_TELEMETRY"] = "False"
    home.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MEM0_DIR", str(home))


def build_mem0(
    work: Path, texts: Sequence[str], embedder: Embedder, k: int
) -> tuple[Callable[[str], list[int]], Any]:
    """mem0 OSS ``Memory`` on a local Qdrant, filled with ``add(infer=False)``."""
    _mem0_offline(work / "mem0-home")
    import mem0.memory.telemetry as mem0_telemetry

    if mem0_telemetry.MEM0_TELEMETRY:
        raise PeerUnavailable(
            "mem0 was imported with telemetry on (it would post to PostHog); set "
            "MEM0_TELEMETRY=False before it is imported"
        )
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from mem0 import Memory
    from mem0.configs.base import MemoryConfig

    logging.getLogger("mem0").setLevel(logging.ERROR)  # a warning per missing BM25 / spaCy
    config = MemoryConfig(
        vector_store={
            "provider": "qdrant",
            "config": {
                "collection_name": "bench",
                "path": str(work / "mem0-qdrant"),
                "embedding_model_dims": embedder.dimensions,
            },
        },
        embedder={
            "provider": "langchain",
            "config": {"model": _langchain_embeddings(embedder, documents_by_query=True)},
        },
        # built at start, never called with infer=False
        llm={"provider": "langchain", "config": {"model": FakeListChatModel(responses=["{}"])}},
        history_db_path=str(work / "mem0-history.db"),
    )
    memory = Memory(config)
    for i, text in enumerate(texts):
        memory.add(text, user_id=USER, metadata={"idx": i}, infer=False)

    def search(query: str) -> list[int]:
        found = memory.search(query, top_k=k, filters={"user_id": USER}, threshold=0.0)
        return [int(r["metadata"]["idx"]) for r in found["results"]][:k]

    return search, memory.vector_store.client


# -- LangGraph ------------------------------------------------------------------------------------
def build_langgraph(
    work: Path, texts: Sequence[str], embedder: Embedder, k: int
) -> tuple[Callable[[str], list[int]], Any]:
    """LangGraph's ``InMemoryStore`` with a vector index, one ``put`` per memory."""
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore(
        index={
            "embed": _langchain_embeddings(embedder),
            "dims": embedder.dimensions,
            "fields": ["text"],  # the memory's text, not the whole value as JSON
        }
    )
    namespace = (TENANT, USER)
    for i, text in enumerate(texts):
        store.put(namespace, str(i), {"text": text, "idx": i})

    def search(query: str) -> list[int]:
        return [int(item.value["idx"]) for item in store.search(namespace, query=query, limit=k)]

    return search, None


#: Peer name -> ``builder(work, texts, embedder, k) -> (search, client)``; ``search(query)``
#: returns positions in ``texts``, best first, at most ``k``.
BUILDERS: dict[str, Callable[..., tuple[Callable[[str], list[int]], Any]]] = {
    "langchain": build_langchain,
    "llamaindex": build_llamaindex,
    "mem0": build_mem0,
    "langgraph": build_langgraph,
}


def close_client(client: Any) -> None:
    """Release a builder's client (best effort: closing never fails a run)."""
    if client is None:
        return
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
    am_writes = round(pn / am_build, 1) if am_build else None

    searches: dict[str, Callable[[str], Any]] = {}
    clients: list[Any] = []
    with AgentMemory(home, embedder=am_embedder) as mem:
        mem.flush()
        m = mem.bind(TENANT, user_id=USER, session_id=QUERY_SESSION)
        searches["agentmem"], _ = agentmem_search(m, ids, k)
        systems["agentmem"] = {"build_s": am_build, "writes_per_s": am_writes}
        for name in runnable:
            say(f"peers: building {name} on {pn:,} memories")
            t = time.perf_counter()
            misses_before = shared.misses
            try:
                search, client = BUILDERS[name](work, texts, shared, k)
            except PeerUnavailable as exc:
                summary["status"][name] = f"cannot run here: {exc}"[:300]
                continue
            except Exception as exc:  # a peer that fails to build is reported, not fatal
                summary["status"][name] = f"failed to build: {type(exc).__name__}: {exc}"[:300]
                continue
            searches[name] = search
            clients.append(client)
            build_s = time.perf_counter() - t
            systems[name] = {
                "build_s": round(build_s, 2),
                "writes_per_s": round(pn / build_s, 1) if build_s else None,
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
