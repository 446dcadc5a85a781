"""A deterministic embedder for timing the store's own work: vectors from a hash of the
text, no model (what a benchmark of reads, writes or erasure measures is not the model)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

DIM = 384


class HashEmbedder:
    """Deterministic unit vectors from a hash of the text (fast; no model)."""

    model_name = "bench-hash"
    dimensions = DIM

    def _one(self, text: str) -> npt.NDArray[np.float32]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, DIM), np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._one(text)
