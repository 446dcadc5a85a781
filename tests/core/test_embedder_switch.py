"""Switching a data dir to another embedder: refused at open, then ``reindex --embeddings``
re-embeds every live row (resumably, with progress), records the new embedder and drops the
old one's calibration profile; vectors of two models never mix."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from agentmem import AgentMemError, AgentMemory, EmbedderMismatchError, MemoryConfig
from agentmem import UncalibratedEmbedderWarning as Uncalibrated
from agentmem.calibration import bundled_profile
from agentmem.calibration import store as calibration_store
from agentmem.calibration.profile import EmbedderIdentity
from agentmem.cli import main
from agentmem.embeddings import CachedEmbedder, FloatArray, OnnxMiniLMEmbedder
from agentmem.storage import fingerprint
from agentmem.storage.vector_index import collection_name

FACTS = [f"Project {name} ships on {day}" for name, day in (
    ("Apollo", "Monday"), ("Borealis", "Tuesday"), ("Cygnus", "Wednesday"),
    ("Draco", "Thursday"), ("Eridanus", "Friday"), ("Fornax", "Saturday"),
)]  # fmt: skip


class Counting(CachedEmbedder):
    """A real model under another name, counting the documents it embeds."""

    def __init__(self, name: str = "minilm-renamed") -> None:
        super().__init__(OnnxMiniLMEmbedder(model_name=name))
        self.documents = 0

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        self.documents += len(texts)
        return super().embed_documents(texts)


def _filled(path: Path, embedder: CachedEmbedder) -> list[str]:
    with AgentMemory(path, embedder=embedder, background=False) as mem:
        m = mem.bind("t", user_id="u")
        ids = [m.remember(fact).id for fact in FACTS]
        # a profile fitted for this store's (MiniLM) vectors
        shipped = bundled_profile("all-MiniLM-L6-v2-int8", 384)
        assert shipped is not None
        mem.context.use_profile(shipped)
        mem.flush()
    return ids


def _stored(path: Path, embedder: CachedEmbedder, ids: list[str]) -> dict[str, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Uncalibrated)
        mem = AgentMemory(path, embedder=embedder, background=False, read_only=True)
    with mem:
        partition = mem.records.partitions.all()[0][1]
        return dict(mem.vectors.vectors(collection_name("t", partition), ids))


def test_another_embedder_is_refused_naming_reindex_embeddings(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    home = tmp_path / "mem"
    _filled(home, shared_embedder)
    with pytest.raises(EmbedderMismatchError) as caught:
        AgentMemory(home, embedder=Counting())
    assert isinstance(caught.value, AgentMemError)
    assert "agentmem reindex --embeddings" in str(caught.value)
    with AgentMemory(home, embedder=shared_embedder, background=False) as mem:
        assert mem.recorded_embedder.model_name == "all-MiniLM-L6-v2-int8"  # unchanged
        assert mem.context.calibration.source == "store"


def test_an_interrupted_switch_resumes_where_it_stopped(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    home = tmp_path / "mem"
    ids = _filled(home, shared_embedder)
    new = Counting()
    small = MemoryConfig(embed_batch_size=2)
    with pytest.warns(Uncalibrated):  # the renamed model has no profile
        mem = AgentMemory(
            home, embedder=new, background=False, allow_embedder_change=True, config=small
        )
    # the old vectors and the old model's profile are gone at once; the new model recorded
    assert calibration_store.saved(mem.records) is None
    switch = fingerprint.read_switch(mem.records)
    assert switch is not None and switch.total == len(FACTS)
    assert switch.source is not None and switch.source.model_name == "all-MiniLM-L6-v2-int8"
    assert mem.recorded_embedder.model_name == "minilm-renamed"
    assert mem.indexer.run_once()  # one batch of two, then the process "dies"
    mem.close()
    assert new.documents == 2
    # the old model cannot come back: its vectors are gone
    with pytest.raises(EmbedderMismatchError):
        AgentMemory(home, embedder=shared_embedder)

    seen: list[tuple[int, int]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Uncalibrated)
        mem = AgentMemory(
            home, embedder=new, background=False, allow_embedder_change=True, config=small
        )
    assert mem.reindex(embeddings=True, progress=lambda d, t: seen.append((d, t))) == 6
    assert new.documents == len(FACTS)  # the two done before were not embedded again
    assert seen[0] == (2, 6) and seen[-1] == (6, 6)
    assert fingerprint.read_switch(mem.records) is None
    hits = mem.bind("t", user_id="u").recall("when does Cygnus ship?", min_score=0.0).items
    assert hits[0].content == FACTS[2]
    mem.close()
    vectors = _stored(home, new, ids)
    assert set(vectors) == set(ids)
    assert np.allclose(np.stack([vectors[i] for i in ids]), new.embed_documents(FACTS), atol=1e-5)


def test_cli_reindex_embeddings_switches_to_e5(
    tmp_path: Path, shared_embedder: CachedEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "mem"
    ids = _filled(home, shared_embedder)
    assert main(["--home", str(home), "--embedder", "e5", "stats"]) == 1
    refused = capsys.readouterr().err
    assert "reindex --embeddings" in refused
    # reading needs only the flag of the model that made the vectors: it is named
    assert "the embedder that made it (`--embedder minilm`)" in refused
    assert main(["--home", str(home), "--embedder", "e5", "reindex", "--embeddings"]) == 0
    out = capsys.readouterr()
    assert "embedded 6/6" in out.err  # progress, a line per tenth when not on a terminal
    assert f"embedded {len(FACTS)} record(s) with 'multilingual-e5-small-q4'" in out.out
    assert main(["--home", str(home), "--embedder", "e5", "--json", "stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["embedder"]["model_name"] == "multilingual-e5-small-q4"
    assert stats["vector_pending"] == 0
    # nothing of the old model's vectors is left: no file of a dropped collection
    doctor = main(["--home", str(home), "--embedder", "e5", "doctor"])
    assert doctor == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["--home", str(home), "stats"]) == 1  # the default, MiniLM, is refused
    assert "(`--embedder e5`)" in capsys.readouterr().err
    from agentmem.e5 import E5Embedder

    e5 = CachedEmbedder(E5Embedder())
    vectors = _stored(home, e5, ids)
    assert np.allclose(np.stack([vectors[i] for i in ids]), e5.embed_documents(FACTS), atol=1e-4)
    # running it again re-embeds with the same model, and keeps what belongs to it
    assert main(["--home", str(home), "--embedder", "e5", "--json", "reindex", "--embeddings"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["reembedded"] == len(FACTS) and again["replaced_embedder"] is None


def test_the_switch_record_round_trips() -> None:
    a = fingerprint.EmbedderFingerprint("a", 384)
    b = fingerprint.EmbedderFingerprint("b", 768, "reindex")
    switch = fingerprint.Switch(a, b, "2026-01-01T00:00:00+00:00", 12)
    assert fingerprint.Switch.from_json(switch.to_json()) == switch
    assert EmbedderIdentity("b", 768).names("b", None)  # a width not known yet
