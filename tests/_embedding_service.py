"""A loopback OpenAI-compatible embedding service, and real LangChain / LlamaIndex embeddings
classes that call it: the network edge of "bring your own embedder" tests.

``EmbeddingService`` serves ``POST /v1/embeddings`` (``{"input": [...], "model": ...}`` ->
``{"data": [{"index": i, "embedding": [...]}]}``) on 127.0.0.1, computing vectors with a real
local model (the bundled MiniLM by default). ``fail = True`` makes it answer 503 (a provider's
outage); ``requests`` counts the calls. ``http_embeddings`` and ``llama_embeddings`` build the
framework objects (importable by a server subprocess as ``--embedder`` factories, the service
URL read from ``EMBEDDING_SERVICE_URL``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding

from agentmem.embeddings import CachedEmbedder, Embedder, OnnxMiniLMEmbedder, default_embedder


class EmbeddingService:
    """See the module docstring."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder or default_embedder()
        self.fail = False
        self.requests = 0
        self.texts = 0
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                service.requests += 1
                if service.fail:
                    self._send(503, {"error": {"message": "overloaded"}})
                    return
                texts = body["input"]
                service.texts += len(texts)
                vectors = service.embedder.embed_documents(texts)
                data = [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
                self._send(200, {"data": data, "model": body.get("model")})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> EmbeddingService:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def _post(url: str, model: str, texts: list[str]) -> list[list[float]]:
    response = httpx.post(f"{url}/embeddings", json={"input": texts, "model": model}, timeout=30)
    response.raise_for_status()
    rows = sorted(response.json()["data"], key=lambda d: d["index"])
    return [row["embedding"] for row in rows]


class HttpEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` calling an OpenAI-compatible endpoint (as OpenAIEmbeddings
    does, without its dependencies)."""

    def __init__(self, base_url: str, model: str | None = "loopback-minilm") -> None:
        self.base_url = base_url
        self.model = model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return _post(self.base_url, self.model or "", list(texts))

    def embed_query(self, text: str) -> list[float]:
        return _post(self.base_url, self.model or "", [text])[0]


class HttpLlamaEmbedding(BaseEmbedding):
    """A LlamaIndex ``BaseEmbedding`` calling an OpenAI-compatible endpoint."""

    base_url: str = ""

    def _get_query_embedding(self, query: str) -> list[float]:
        return _post(self.base_url, self.model_name, [query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return _post(self.base_url, self.model_name, [text])[0]

    def _get_text_embeddings(self, texts: Sequence[str]) -> list[list[float]]:
        return _post(self.base_url, self.model_name, list(texts))


def http_embeddings() -> HttpEmbeddings:
    """Factory for ``--embedder _embedding_service:http_embeddings`` (a server subprocess)."""
    return HttpEmbeddings(os.environ["EMBEDDING_SERVICE_URL"])


def llama_embeddings() -> HttpLlamaEmbedding:
    return HttpLlamaEmbedding(
        model_name="loopback-minilm", base_url=os.environ["EMBEDDING_SERVICE_URL"]
    )


def renamed_minilm() -> Embedder:
    """The bundled MiniLM under a name agentmem ships no profile for (``--embedder
    _embedding_service:renamed_minilm``): a real local model without calibration."""
    return CachedEmbedder(OnnxMiniLMEmbedder(model_name="minilm-renamed"))
