"""Bring your own embedder: LangChain ``Embeddings`` and LlamaIndex ``BaseEmbedding`` objects
taken as they are (real framework classes calling a loopback embedding service: the network
edge), named by their model, failing without losing a write; ``--embedder`` for the CLI."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _embedding_service import EmbeddingService, HttpEmbeddings, HttpLlamaEmbedding

from agentmem import AgentMemory, UncalibratedEmbedderWarning, ValidationError
from agentmem.cli import main
from agentmem.embedding_adapters import FrameworkEmbedder, as_embedder, from_spec
from agentmem.embeddings import CachedEmbedder, Embedder
from agentmem.errors import EmbeddingError

FACTS = (
    "My sister Ana lives in Lisbon and teaches chemistry",
    "The staging database runs on host db-stage-04",
    "I am allergic to penicillin",
)


@pytest.fixture
def service(shared_embedder: CachedEmbedder) -> Iterator[EmbeddingService]:
    with EmbeddingService(shared_embedder) as s:
        yield s


def _open(path: Path, embedder: Any, **kw: Any) -> AgentMemory:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncalibratedEmbedderWarning)  # pinned elsewhere
        return AgentMemory(path, embedder=embedder, background=False, **kw)


@pytest.mark.parametrize("framework", ["langchain", "llamaindex"])
def test_a_framework_object_is_an_embedder_named_by_its_model(
    framework: str, service: EmbeddingService, tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    obj: Any = (
        HttpEmbeddings(service.url)
        if framework == "langchain"
        else HttpLlamaEmbedding(model_name="loopback-minilm", base_url=service.url)
    )
    with _open(tmp_path / "mem", obj) as mem:
        inner = mem.embedder.inner  # type: ignore[attr-defined]
        assert isinstance(inner, FrameworkEmbedder) and inner.framework == framework
        assert inner.known_dimensions is None  # opening the store called nothing
        assert service.requests == 0
        m = mem.bind("t", user_id="u")
        for fact in FACTS:
            m.remember(fact)
        mem.flush()
        hits = m.recall("where does my sister live?", min_score=0.0).items
        assert hits[0].content == FACTS[0]
        recorded = mem.recorded_embedder
        assert (recorded.model_name, recorded.dimensions) == ("loopback-minilm", 384)
        # the service's vectors, normalised float32: the same as the model's own
        stored = mem.embedder.embed_documents([FACTS[1]])
        assert stored.dtype == np.float32
        assert np.allclose(stored, shared_embedder.embed_documents([FACTS[1]]), atol=1e-5)


def test_batches_are_cut_to_the_batch_size(service: EmbeddingService) -> None:
    embedder = FrameworkEmbedder(HttpEmbeddings(service.url), batch_size=2)
    vectors = embedder.embed_documents([f"text {i}" for i in range(5)])
    assert vectors.shape == (5, 384) and service.requests == 3
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_an_object_without_a_model_name_needs_embedder_name(
    service: EmbeddingService, tmp_path: Path
) -> None:
    nameless = HttpEmbeddings(service.url, model=None)
    with pytest.raises(ValidationError, match="embedder_name") as caught:
        AgentMemory(tmp_path / "a", embedder=nameless)
    assert caught.value.field == "embedder_name"
    unnamed_llama = HttpLlamaEmbedding(base_url=service.url)  # LlamaIndex says "unknown"
    with pytest.raises(ValidationError, match="embedder_name"):
        AgentMemory(tmp_path / "b", embedder=unnamed_llama)
    with _open(tmp_path / "c", nameless, embedder_name="my-model-v2") as mem:
        assert mem.embedder.model_name == "my-model-v2"
    with pytest.raises(ValidationError, match="embedder_name"):
        AgentMemory(tmp_path / "d", embedder_name="x")  # no embedder to name
    with pytest.raises(ValidationError, match="LangChain Embeddings"):
        as_embedder(object())


def test_a_failing_service_loses_no_write_and_recall_is_degraded(
    service: EmbeddingService, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mem = _open(tmp_path / "mem", HttpEmbeddings(service.url))
    mem.indexer.backoff = 0.01
    m = mem.bind("t", user_id="u")
    service.fail = True
    with caplog.at_level(logging.ERROR, logger="agentmem"):
        written = [m.remember(fact).id for fact in FACTS]
        mem.flush()
    assert "failed permanently" in caplog.text
    assert mem.stats().vector_failed == len(FACTS)
    result = m.recall("penicillin allergy")  # the query cannot be embedded either
    assert result.degraded and result.items[0].content == FACTS[2]
    assert {h.id for h in m.recall("db-stage-04 host").items} <= set(written)
    service.fail = False  # the provider is back: a reindex embeds what waited
    assert mem.reindex(embeddings=True) == len(FACTS)
    assert mem.stats().vector_failed == 0
    assert not m.recall("where does my sister live?").degraded
    mem.close()


def test_wrong_answers_are_embedding_errors(service: EmbeddingService) -> None:
    class Short(HttpEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return super().embed_documents(texts)[:-1]

    class Zero(HttpEmbeddings):
        def embed_query(self, text: str) -> list[float]:
            return [0.0] * 384

    with pytest.raises(EmbeddingError, match="shape"):
        FrameworkEmbedder(Short(service.url)).embed_documents(["a", "b"])
    with pytest.raises(EmbeddingError, match="all-zero"):
        FrameworkEmbedder(Zero(service.url)).embed_query("a")


def test_a_store_refuses_another_model_by_name_without_calling_it(
    service: EmbeddingService, tmp_path: Path
) -> None:
    with _open(tmp_path / "mem", HttpEmbeddings(service.url)) as mem:
        mem.bind("t", user_id="u").remember(FACTS[0])
        mem.flush()
    calls = service.requests
    other = HttpEmbeddings(service.url, model="another-model")
    with pytest.raises(Exception, match="reindex --embeddings"):
        AgentMemory(tmp_path / "mem", embedder=other)
    assert service.requests == calls


def test_embedder_specs(monkeypatch: pytest.MonkeyPatch, service: EmbeddingService) -> None:
    assert from_spec("minilm").model_name == "all-MiniLM-L6-v2-int8"
    monkeypatch.setenv("EMBEDDING_SERVICE_URL", service.url)
    factory = from_spec("_embedding_service:http_embeddings")  # a factory, called
    assert isinstance(factory, CachedEmbedder) and factory.model_name == "loopback-minilm"
    llama = from_spec("_embedding_service:llama_embeddings", name="renamed")
    assert llama.model_name == "renamed"
    for bad in ("nonsense", "no_such_module_xyz:thing", "_embedding_service:missing"):
        with pytest.raises(ValidationError, match="embedder"):
            from_spec(bad)


def test_cli_embedder_flag_and_environment(
    monkeypatch: pytest.MonkeyPatch,
    service: EmbeddingService,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("EMBEDDING_SERVICE_URL", service.url)
    home = str(tmp_path / "mem")
    spec = "_embedding_service:http_embeddings"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncalibratedEmbedderWarning)
        assert main(["--home", home, "--embedder", spec, "--user", "u", "remember", FACTS[2]]) == 0
        assert main(["--home", home, "reindex", "--embedder", spec, "--json"]) == 0
        capsys.readouterr()
        monkeypatch.setenv("AGENTMEM_EMBEDDER", spec)
        assert main(["--home", home, "stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["embedder"]["model_name"] == "loopback-minilm"
    monkeypatch.delenv("AGENTMEM_EMBEDDER")
    # the default embedder is another model: refused, naming the way to switch
    assert main(["--home", home, "stats"]) == 1
    assert "reindex --embeddings" in capsys.readouterr().err


def test_our_own_embedders_are_used_as_they_are(shared_embedder: Embedder) -> None:
    assert as_embedder(shared_embedder) is shared_embedder
    with pytest.raises(ValidationError, match="embedder_name"):
        as_embedder(shared_embedder, name="something-else")
