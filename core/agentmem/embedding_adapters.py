"""Embedders of other libraries, taken as they are: LangChain ``Embeddings`` and LlamaIndex
``BaseEmbedding`` objects, recognised by their shape (agentmem imports neither framework).

:func:`as_embedder` turns what a user passes as ``AgentMemory(path, embedder=...)`` into an
:class:`~agentmem.embeddings.Embedder`:

- an agentmem :class:`~agentmem.embeddings.Embedder` is used as it is;
- a LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch``, ``get_query_embedding``) or a
  LangChain ``Embeddings`` (``embed_documents``, ``embed_query``, ``aembed_documents``) is
  wrapped in a :class:`FrameworkEmbedder`, behind a query cache.

The wrapper returns float32, L2-normalised rows; sends at most ``batch_size`` texts per call;
checks every answer (one finite, non-zero vector of one width per text) and turns any failure
into :class:`~agentmem.errors.EmbeddingError`, which the indexer retries with backoff and then
leaves the rows keyword-searchable (recall ``degraded``), as for the packaged model.

The model name identifies the vectors (a store refuses another model's): it is taken from the
object (``model_name``, ``model``, ``model_id``, ``deployment_name``) or from ``name``
(``AgentMemory(..., embedder_name=...)``), and an object that has neither is refused. The
width is taken from the object (``dimensions``, ``embed_dim``) or learnt from its first
answer, so opening a store makes no call to a remote embedder.

Example:
    >>> from langchain_openai import OpenAIEmbeddings  # doctest: +SKIP
    >>> mem = AgentMemory(path, embedder=OpenAIEmbeddings(model="text-embedding-3-small"))  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from .e5 import E5_MODEL_NAME, e5_embedder
from .embeddings import (
    CachedEmbedder,
    Embedder,
    FloatArray,
    _check_text,
    _check_texts,
    default_embedder,
)
from .errors import EmbeddingError, ValidationError

#: Attributes an embeddings object may name its model by, in the order they are tried.
NAME_ATTRIBUTES = ("model_name", "model", "model_id", "deployment_name", "deployment")
#: Attributes an embeddings object may declare its width by.
DIMENSION_ATTRIBUTES = ("dimensions", "embed_dim", "dimension")
#: Names that say nothing (LlamaIndex's default ``model_name``).
_PLACEHOLDER_NAMES = frozenset({"", "unknown", "default", "none"})


def _shape(obj: object) -> str | None:
    """``"llamaindex"``, ``"langchain"`` or None, from the methods ``obj`` has."""
    if callable(getattr(obj, "get_text_embedding_batch", None)) and callable(
        getattr(obj, "get_query_embedding", None)
    ):
        return "llamaindex"
    if all(
        callable(getattr(obj, m, None))
        for m in ("embed_documents", "embed_query", "aembed_documents")
    ):
        return "langchain"  # every LangChain Embeddings has the async twins
    return None


def model_name_of(obj: object) -> str | None:
    """The model name an embeddings object declares, or None."""
    for attr in NAME_ATTRIBUTES:
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value.strip().lower() not in _PLACEHOLDER_NAMES:
            return value.strip()
    return None


def _declared_width(obj: object) -> int | None:
    for attr in DIMENSION_ATTRIBUTES:
        value = getattr(obj, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


class FrameworkEmbedder:
    """An :class:`~agentmem.embeddings.Embedder` over a LangChain or LlamaIndex embeddings
    object (see the module docstring).

    Args:
        obj: The LangChain ``Embeddings`` or LlamaIndex ``BaseEmbedding``.
        name: The model name; default the object's own (refused when it has none).
        dimensions: The width, if known; default the object's, else learnt on first use.
        batch_size: Most texts per call to the object.

    Raises:
        ValidationError: ``obj`` has neither shape, no model name is known, or a number is
            out of range.

    Example:
        >>> embedder = FrameworkEmbedder(HuggingFaceEmbeddings(model_name="BAAI/bge-small-en"))  # doctest: +SKIP
        >>> embedder.embed_query("hello").shape  # doctest: +SKIP
        (384,)
    """

    def __init__(
        self,
        obj: object,
        *,
        name: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 64,
    ) -> None:
        shape = _shape(obj)
        if shape is None:
            raise ValidationError(
                "embedder",
                f"{type(obj).__name__} is neither a LangChain Embeddings (embed_documents, "
                "embed_query) nor a LlamaIndex BaseEmbedding (get_text_embedding_batch, "
                "get_query_embedding)",
            )
        if batch_size < 1:
            raise ValidationError("batch_size", f"must be >= 1, got {batch_size}")
        if dimensions is not None and dimensions < 1:
            raise ValidationError("dimensions", f"must be >= 1, got {dimensions}")
        model = (name or "").strip() or model_name_of(obj)
        if model is None:
            raise ValidationError(
                "embedder_name",
                f"the {shape} embeddings object {type(obj).__name__} names no model (none of "
                f"{', '.join(NAME_ATTRIBUTES)}): pass embedder_name=... (the model it runs); "
                "a store records it and refuses vectors of another model",
            )
        self._obj = obj
        self._shape = shape
        self._name = model
        self._batch_size = batch_size
        self._dimensions = dimensions or _declared_width(obj)
        self._lock = threading.Lock()
        docs: Callable[[list[str]], Any]
        query: Callable[[str], Any]
        if shape == "llamaindex":
            docs, query = obj.get_text_embedding_batch, obj.get_query_embedding  # type: ignore[attr-defined]
        else:
            docs, query = obj.embed_documents, obj.embed_query  # type: ignore[attr-defined]
        self._docs = docs
        self._query = query

    @property
    def wrapped(self) -> object:
        """The framework object."""
        return self._obj

    @property
    def framework(self) -> str:
        """``"langchain"`` or ``"llamaindex"``."""
        return self._shape

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def known_dimensions(self) -> int | None:
        """The width if declared or learnt already (reading it makes no call)."""
        return self._dimensions

    @property
    def dimensions(self) -> int:
        """The width; embeds one probe text the first time when nothing declared it."""
        if self._dimensions is None:
            self.embed_query("dimension probe")
        assert self._dimensions is not None
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Embed texts in batches of ``batch_size``; see :meth:`Embedder.embed_documents`.

        Raises:
            EmbeddingError: the object raised, or answered with the wrong number, width or
                values of vectors.
        """
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, self._dimensions or 0), dtype=np.float32)
        batches = [
            items[start : start + self._batch_size]
            for start in range(0, len(items), self._batch_size)
        ]
        return np.vstack([self._call(partial(self._docs, b), len(b)) for b in batches])

    def embed_query(self, text: str) -> FloatArray:
        """Embed one query; see :meth:`Embedder.embed_query`."""
        query = _check_text(text)
        vector: FloatArray = self._call(lambda: [self._query(query)], 1)[0]
        return vector

    def _call(self, fn: Callable[[], Any], n: int) -> FloatArray:
        try:
            raw = fn()
            matrix = np.asarray([np.asarray(v, dtype=np.float64) for v in raw], dtype=np.float64)
        except EmbeddingError:
            raise
        except Exception as exc:  # a remote call: any of the provider's errors
            raise EmbeddingError(
                f"embedder {self._name!r} ({type(self._obj).__name__}) failed: "
                f"{type(exc).__name__}: {exc}",
                model_name=self._name,
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != n or matrix.shape[1] == 0:
            raise EmbeddingError(
                f"embedder {self._name!r} returned shape {matrix.shape} for {n} texts",
                model_name=self._name,
            )
        if not np.isfinite(matrix).all():
            raise EmbeddingError(
                f"embedder {self._name!r} returned non-finite values", model_name=self._name
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if (norms == 0).any():
            raise EmbeddingError(
                f"embedder {self._name!r} returned an all-zero vector", model_name=self._name
            )
        with self._lock:
            if self._dimensions is None:
                self._dimensions = int(matrix.shape[1])
            expected = self._dimensions
        if matrix.shape[1] != expected:
            raise EmbeddingError(
                f"embedder {self._name!r} returned {matrix.shape[1]}-dimensional vectors, "
                f"expected {expected}",
                model_name=self._name,
            )
        result: FloatArray = (matrix / norms).astype(np.float32)
        return result

    def __repr__(self) -> str:
        return f"FrameworkEmbedder({type(self._obj).__name__}, model_name={self._name!r})"


def as_embedder(obj: object, *, name: str | None = None) -> Embedder:
    """What ``AgentMemory(embedder=obj, embedder_name=name)`` embeds with (see the module
    docstring).

    Raises:
        ValidationError: ``obj`` is no embedder of a known shape, or it names no model and
            ``name`` is None.
    """
    if _shape(obj) is not None and not isinstance(obj, CachedEmbedder):
        return CachedEmbedder(FrameworkEmbedder(obj, name=name))
    if isinstance(obj, Embedder):
        if name is not None and name != obj.model_name:
            raise ValidationError(
                "embedder_name",
                f"{name!r} given, but the embedder names its model {obj.model_name!r}",
            )
        return obj
    raise ValidationError(
        "embedder",
        f"expected an agentmem Embedder, a LangChain Embeddings or a LlamaIndex "
        f"BaseEmbedding, got {type(obj).__name__}",
    )


#: Embedders named by a word in ``--embedder`` / ``AGENTMEM_EMBEDDER``.
BUILTIN_EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "minilm": default_embedder,
    "e5": e5_embedder,
}
#: The word of each of those by the model name a data dir records for it.
BUILTIN_SPECS: dict[str, str] = {"all-MiniLM-L6-v2-int8": "minilm", E5_MODEL_NAME: "e5"}


def from_spec(spec: str, *, name: str | None = None) -> Embedder:
    """The embedder a setting names (``--embedder``, ``AGENTMEM_EMBEDDER``): ``minilm`` (the
    default), ``e5`` (:class:`~agentmem.e5.E5Embedder`), or ``package.module:attribute``
    naming an embedder object, or a factory called with no argument that returns one (an
    agentmem Embedder, a LangChain ``Embeddings`` or a LlamaIndex ``BaseEmbedding``);
    ``name`` as for :func:`as_embedder`.

    Raises:
        ValidationError: the spec is malformed, its module cannot be imported, or what it
            names is no embedder.

    Example:
        >>> from_spec("e5").model_name
        'multilingual-e5-small-q4'
    """
    text = spec.strip()
    if text.lower() in BUILTIN_EMBEDDERS:
        return as_embedder(BUILTIN_EMBEDDERS[text.lower()](), name=name)
    module_name, sep, attribute = text.partition(":")
    if not sep or not module_name or not attribute:
        raise ValidationError(
            "embedder",
            f"{spec!r}: expected {', '.join(BUILTIN_EMBEDDERS)} or package.module:attribute",
        )
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ValidationError("embedder", f"{spec!r}: cannot load it: {exc}") from exc
    if callable(target) and _shape(target) is None and not isinstance(target, Embedder):
        try:
            target = target()
        except Exception as exc:
            raise ValidationError(
                "embedder", f"{spec!r}: the factory failed: {type(exc).__name__}: {exc}"
            ) from exc
    return as_embedder(target, name=name)


def known_dimensions(embedder: Embedder) -> int | None:
    """The embedder's width without embedding anything (None: it learns it on first use)."""
    inner = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    if isinstance(inner, FrameworkEmbedder):
        return inner.known_dimensions
    return int(embedder.dimensions)


__all__ = [
    "BUILTIN_EMBEDDERS",
    "BUILTIN_SPECS",
    "DIMENSION_ATTRIBUTES",
    "NAME_ATTRIBUTES",
    "FrameworkEmbedder",
    "as_embedder",
    "from_spec",
    "known_dimensions",
    "model_name_of",
]
