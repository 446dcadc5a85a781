"""``agentmem serve --embedder``: a server embeds with the embedder a setting names (a LangChain
``Embeddings`` factory calling a loopback embedding service, the network edge), and scores with
the calibration profile saved in its data dir when it starts."""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

from _agentmem_server import ServerProcess
from _embedding_service import EmbeddingService, HttpEmbeddings

import agentmem
from agentmem import AgentMemory, UncalibratedEmbedderWarning
from agentmem.calibration import bundled_profile
from agentmem.calibration.profile import EmbedderIdentity
from agentmem.embeddings import CachedEmbedder

#: Where the server subprocess imports its embedder factory from.
TESTS = Path(__file__).resolve().parents[1]


def test_a_server_embeds_with_the_named_embedder_and_its_stored_profile(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    home = tmp_path / "served"
    with EmbeddingService(shared_embedder) as service:
        # a profile fitted for this data dir's embedder, saved before the server starts
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UncalibratedEmbedderWarning)
            mem = AgentMemory(home, embedder=HttpEmbeddings(service.url), background=False)
        shipped = bundled_profile("all-MiniLM-L6-v2-int8", 384)
        assert shipped is not None  # the service computes MiniLM's vectors: its weights fit
        identity = EmbedderIdentity("loopback-minilm", 384)
        mem.context.use_profile(dataclasses.replace(shipped, embedder=identity, fitted_on="test"))
        mem.close()
        env = {
            "AGENTMEM_RATE_LIMIT": "0",
            "EMBEDDING_SERVICE_URL": service.url,
            "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        }
        spec = "_embedding_service:http_embeddings"
        with ServerProcess(home, env=env, global_args=["--embedder", spec]) as server:
            before = service.texts
            with agentmem.connect(server.url, api_key=server.create_key("acme")) as client:
                m = client.bind(user_id="u1")
                m.remember("I am allergic to penicillin")
                hits = m.recall("which antibiotic must I avoid?").items
                assert [h.content for h in hits] == ["I am allergic to penicillin"]
                assert m.recall("best pizza in Naples").items == []
            with agentmem.connect(server.url, api_key=server.create_key("x", admin=True)) as a:
                stats = a.stats()["stats"]
            assert service.texts > before  # the server's embeddings came from the service
            assert stats.embedder["model_name"] == "loopback-minilm"
            assert stats.calibration["source"] == "store"
            assert stats.calibration["fitted_on"] == "test"
            assert "UncalibratedEmbedderWarning" not in server.output()
