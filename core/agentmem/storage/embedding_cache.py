"""An embedder that keeps every vector it computes on disk, for repeated evaluation runs."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from ..embeddings import CachedEmbedder, Embedder, FloatArray, default_embedder

__all__ = ["DiskEmbeddingCache", "cached_on_disk"]


class DiskEmbeddingCache:
    """An :class:`~agentmem.embeddings.Embedder` that keeps every vector it computes on disk.

    Keyed by model name and exact text (sha256), so a changed text (say, a new indexed-text
    format) is embedded afresh while unchanged ones are read back: repeated LoCoMo runs
    spend their time on retrieval, not on the model. A SQLite file ``embeddings.sqlite3``
    in ``path``; safe to share between the indexer thread and the caller.

    Example:
        >>> cache = DiskEmbeddingCache(OnnxMiniLMEmbedder(), "~/.cache/agentmem-locomo")  # doctest: +SKIP
    """

    def __init__(self, inner: Embedder, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.path = Path(path).expanduser()
        self.path.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path / "embeddings.sqlite3", check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def _key(self, text: str, *, query: bool = False) -> str:
        # a query is keyed apart: an asymmetric model (e5's "query: " / "passage: ")
        # embeds the same text differently on each side; one that says per query which side
        # it embeds it as (E5Embedder.query_side) is keyed by that, so vectors cached before
        # that choice changed are not read back
        side = ""
        if query:
            query_side = getattr(self.inner, "query_side", None)
            side = f"query-as-{query_side(text)}\x1f" if callable(query_side) else "query\x1f"
        raw = f"{side}{self.inner.model_name}\x1f{text}".encode("utf-8", errors="surrogatepass")
        return hashlib.sha256(raw).hexdigest()

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        import numpy as np

        texts = list(texts)
        keys = [self._key(t) for t in texts]
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                found.update(
                    self._db.execute(
                        f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk
                    ).fetchall()
                )
        missing = [i for i, k in enumerate(keys) if k not in found]
        for i, k in enumerate(keys):
            if k in found:
                out[i] = np.frombuffer(found[k], dtype=np.float32)
        if missing:
            vectors = self.inner.embed_documents([texts[i] for i in missing])
            out[missing] = vectors
            with self._lock, self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                    [
                        (keys[i], vectors[j].astype(np.float32).tobytes())
                        for j, i in enumerate(missing)
                    ],
                )
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        return out

    def embed_query(self, text: str) -> FloatArray:
        import numpy as np

        key = self._key(text, query=True)
        with self._lock:
            row = self._db.execute("SELECT vec FROM vectors WHERE key = ?", (key,)).fetchone()
        if row is not None:
            self.hits += 1
            cached: FloatArray = np.frombuffer(row[0], dtype=np.float32).copy()
            return cached
        vector: FloatArray = self.inner.embed_query(text)
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                (key, np.asarray(vector, dtype=np.float32).tobytes()),
            )
        self.misses += 1
        return vector

    def close(self) -> None:
        with self._lock:
            self._db.close()


def cached_on_disk(
    embedder: Embedder | None, path: str | os.PathLike[str]
) -> tuple[CachedEmbedder, DiskEmbeddingCache]:
    """``embedder`` (default: the packaged one) with its vectors kept in ``path``: the
    embedder to use (behind the usual query cache) and the disk cache, to close afterwards.

    An embedder that is already a :class:`~agentmem.embeddings.CachedEmbedder` is unwrapped
    first, so queries are cached once.
    """
    base = embedder if embedder is not None else default_embedder()
    inner = base.inner if isinstance(base, CachedEmbedder) else base
    disk = DiskEmbeddingCache(inner, path)
    return CachedEmbedder(disk), disk
