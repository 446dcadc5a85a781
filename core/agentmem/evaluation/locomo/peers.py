"""The peer pipelines in a LoCoMo run: LangChain and LlamaIndex retrievers built on each
conversation's turns (the builders of :mod:`agentmem.bench.peers`), and hybrid-minus-peer deltas.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...bench import peers as peer_lib
from ...memory import AgentMemory
from .data import Conversation
from .ingest import turn_documents
from .retrieval import TOP_K

#: The peer pipelines (the names of :data:`agentmem.bench.peers.PEERS`).
PEER_MODES: tuple[str, ...] = ("langchain", "llamaindex")
#: The metric the hybrid-minus-peer comparison reports.
DELTA_METRIC = "recall@10"


def peer_plan(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per requested peer: its pipeline and ``status`` (``ok`` or ``skipped: <why>``)."""
    if not names:
        return {}
    status = peer_lib.peer_status()
    return {
        name: {
            "retriever": peer_lib.RETRIEVERS[name],
            "status": "ok" if status.get(name) is None else f"skipped: {status[name]}",
        }
        for name in names
    }


def deltas(modes: Mapping[str, Any]) -> dict[str, Any]:
    """Hybrid's :data:`DELTA_METRIC` minus each peer's, overall and per category."""
    hybrid = modes["hybrid"]
    out: dict[str, Any] = {}
    for name, res in modes.items():
        if name not in PEER_MODES:
            continue
        out[name] = {
            "overall": round(hybrid["overall"][DELTA_METRIC] - res["overall"][DELTA_METRIC], 4),
            "by_category": {
                c: round(r[DELTA_METRIC] - res["by_category"][c][DELTA_METRIC], 4)
                for c, r in hybrid["by_category"].items()
            },
        }
    return out


class PeerIndexes:
    """The peer pipelines of one conversation: built on its turns, closed after its questions."""

    def __init__(
        self,
        mem: AgentMemory,
        conv: Conversation,
        names: Sequence[str],
        work: Path,
        captions: bool,
    ) -> None:
        docs = turn_documents(conv, captions)
        self.dia_ids = [dia for dia, _ in docs]
        texts = [text for _, text in docs]
        self.searches: dict[str, Callable[[str], list[int]]] = {}
        self.failed: dict[str, str] = {}
        self.build_s: dict[str, float] = {}
        self._clients: list[Any] = []
        t = time.perf_counter()
        # embedded once through the run's embedder, shared by every peer (the disk cache,
        # when there is one, holds the vectors agentmem's own index computed for the turns it
        # embedded without a restatement key)
        vectors = mem.embedder.embed_documents(texts)
        self.embed_s = time.perf_counter() - t
        shared = peer_lib.PrecomputedEmbedder(mem.embedder, texts, vectors)
        for name in names:
            t = time.perf_counter()
            try:
                # k capped at the corpus (LlamaIndex's BM25 warns otherwise); same hits
                k = min(TOP_K, len(texts))
                search, client = peer_lib.BUILDERS[name](work / name, texts, shared, k)
            except Exception as exc:  # a peer that fails to build is reported, not fatal
                self.failed[name] = f"failed to build: {type(exc).__name__}: {exc}"[:300]
                continue
            self.searches[name] = search
            self._clients.append(client)
            self.build_s[name] = time.perf_counter() - t

    def search(self, name: str, query: str) -> list[dict[str, Any]]:
        """The peer's hits as metadata carrying their turn's ``dia_id``, best first."""
        return [{"dia_id": self.dia_ids[i]} for i in self.searches[name](query)[:TOP_K]]

    def close(self) -> None:
        for client in self._clients:
            peer_lib.close_client(client)
        self._clients.clear()


def open_peers(
    mem: AgentMemory,
    conv: Conversation,
    modes: Sequence[str],
    peers: dict[str, dict[str, Any]],
    captions: bool,
    stack: contextlib.ExitStack,
) -> PeerIndexes | None:
    """Build the conversation's peer indexes (closed and removed when ``stack`` exits)."""
    names = [mode for mode in modes if mode in PEER_MODES]
    if not names:
        return None
    work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agentmem-locomo-peers-")))
    index = PeerIndexes(mem, conv, names, work, captions)
    stack.callback(index.close)
    for name, secs in index.build_s.items():
        info = peers[name]
        info["build_s"] = round(info.get("build_s", 0.0) + secs, 3)
        info["documents"] = info.get("documents", 0) + len(index.dia_ids)
    return index
