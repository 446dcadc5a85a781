"""A real embedded Chroma client whose reads can be made to answer as Chroma does when a get
races the first vectors written to a collection: the ids, without their embeddings.

Chroma 1.5 loads a get's embeddings only if its read of the collection shows a dimension,
recorded by the first vectors written to it; a get that reads the collection before they are
stored, and its records after, comes back with the ids and no embedding at all. The race is
too short to time in a test (a few reads in a thousand, racing first upserts), so the client
here answers that way on demand; everything else is the real client's answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chromadb
from chromadb.config import Settings


class LaggingClient:
    """A ``PersistentClient`` at ``path`` whose next :attr:`lagging` gets that include
    embeddings (and find ids) leave the embeddings out, or only the last one with
    ``drop="last"``."""

    def __init__(self, path: Path, drop: str = "all") -> None:
        self.real = chromadb.PersistentClient(
            path=str(path), settings=Settings(anonymized_telemetry=False)
        )
        self.drop = drop
        #: How many gets with embeddings still come back without them.
        self.lagging = 0
        #: How many came back that way.
        self.short_reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def get_collection(self, *args: Any, **kwargs: Any) -> Any:
        return _LaggingCollection(self.real.get_collection(*args, **kwargs), self)

    def get_or_create_collection(self, *args: Any, **kwargs: Any) -> Any:
        return _LaggingCollection(self.real.get_or_create_collection(*args, **kwargs), self)


class _LaggingCollection:
    def __init__(self, real: Any, client: LaggingClient) -> None:
        self.real = real
        self.client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        got = self.real.get(*args, **kwargs)
        client = self.client
        if client.lagging > 0 and "embeddings" in kwargs.get("include", ()) and got["ids"]:
            client.lagging -= 1
            client.short_reads += 1
            got["embeddings"] = got["embeddings"][: -1 if client.drop == "last" else 0]
        return got
