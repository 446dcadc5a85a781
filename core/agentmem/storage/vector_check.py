"""Does the vector index hold what the records say was embedded? Checked when a store opens.

The records know which rows have a vector (``embedded``) and in which collection; the vector
index beside them (the embedded Chroma store in the data dir, or a Chroma server's database)
can be lost on its own: its files deleted, a server's database wiped or replaced. Chroma then
answers every query from empty collections, without an error, so recall would lose its
vector half silently. Two cheap signs tell a lost index at open:

- **A marker.** The records store gets an id (``meta`` key :data:`STORE_ID_KEY`), and the
  vector index carries it in a marker collection (written before the index's first vectors,
  :func:`mark`). An index without the marker while the records say vectors were written is
  a new one: every embedded row is queued to be embedded again. An index marked with another
  id holds another store's vectors (one Chroma database serves one store): refused.
- **The collections.** Every partition with an embedded row needs its collection; one that
  does not exist lost its vectors, and its rows are queued again.

The cost is one query of the records (one index probe per partition), the marker and one
listing of the collections: no count or read per collection. A collection that exists but
lost some of its vectors is not found here; ``agentmem doctor`` compares every id.

Rows queued again are embedded by the background indexer; until then recall scores the
newest of them on the spot and says ``degraded`` past that (as for any backlog).

Example:
    >>> loss = verify(records, vectors, repair=True)  # doctest: +SKIP
    >>> loss.describe() if loss else "vectors match the records"  # doctest: +SKIP
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..errors import ConfigError, StorageError
from .records import RecordStore
from .vector_index import MARKER_COLLECTION, VectorIndex, collection_gone, collection_name

#: ``meta`` key of the records store's id, which the vector index's marker repeats.
STORE_ID_KEY = "store_id"


@dataclass(frozen=True)
class VectorLoss:
    """Partitions whose vectors the index no longer holds.

    Attributes:
        location: Where the vector index is.
        partitions: (tenant, partition) pairs whose collection is gone.
        whole: The index has no marker: it is a new one, every vector was lost.
        queued: Rows queued to be embedded again (None when nothing was repaired).
    """

    location: str
    partitions: tuple[tuple[str, str], ...]
    whole: bool
    queued: int | None = None

    def describe(self) -> str:
        what = (
            "is a new one (its marker is missing): every vector was lost"
            if self.whole
            else f"lost the collections of {len(self.partitions)} partition(s)"
        )
        note = f"vector index at {self.location} {what}"
        if self.queued is None:
            return (
                f"{note}; recall here is keyword-only for those rows (degraded). Open the data "
                "dir for writing (any agentmem command that writes, or `agentmem reindex`) "
                "to embed them again"
            )
        return f"{note}; {self.queued} row(s) queued to be embedded again in the background"


def verify(records: RecordStore, vectors: VectorIndex, *, repair: bool) -> VectorLoss | None:
    """Compare the vector index with the records (see the module docstring).

    With ``repair``, the rows of lost partitions are queued again and the index is marked
    as this store's.

    Raises:
        ConfigError: the index holds another records store's vectors.
        StorageError: the vector index cannot be read.
    """
    expected = records.index.embedded_partitions()
    if not expected:
        return None  # nothing to lose; the index is marked before its first vectors
    store_id = records.meta.get(STORE_ID_KEY)
    marker = _store_marker(vectors)
    if marker is not None and store_id is not None and marker != store_id:
        raise _foreign(records, vectors, marker, store_id)
    whole = marker is None and store_id is not None
    if whole:
        lost = tuple(expected)
    else:  # marked as ours, or a store from before the marker existed
        present = set(vectors.collections())
        lost = tuple(p for p in expected if collection_name(*p) not in present)
    queued = None
    if repair:
        if lost:
            queued = records.index.requeue_embedded(lost)
        if whole and vectors.owns_client:
            vectors.compact_files()  # the lost store's segment files, if any are left
        if marker is None or store_id is None:
            if marker is not None:  # a store from before the id: the index is its own
                records.meta.set(STORE_ID_KEY, marker, replace=False)
            mark(records, vectors)
    return VectorLoss(vectors.location, lost, whole, queued) if lost else None


def mark(records: RecordStore, vectors: VectorIndex) -> None:
    """Mark the vector index as this records store's (before the first vectors go in).

    Raises:
        ConfigError: it is marked as another store's.
        StorageError: it cannot be written.
    """
    records.meta.set(STORE_ID_KEY, uuid.uuid4().hex, replace=False)
    store_id = records.meta.get(STORE_ID_KEY) or ""
    try:
        col = vectors.client.get_or_create_collection(
            MARKER_COLLECTION, metadata={"store_id": store_id}, embedding_function=None
        )
    except StorageError:
        raise
    except Exception as exc:
        raise StorageError(f"cannot mark vector index at {vectors.location}: {exc}") from exc
    marked = str((col.metadata or {}).get("store_id", ""))
    if marked != store_id:
        raise _foreign(records, vectors, marked, store_id)


def _store_marker(vectors: VectorIndex) -> str | None:
    """The id of the records store whose vectors ``vectors`` holds (written by :func:`mark`),
    or None: a new (or lost and recreated) vector store.

    Raises:
        StorageError: the index cannot be read.
    """
    try:
        col = vectors.client.get_collection(MARKER_COLLECTION, embedding_function=None)
    except StorageError:
        raise
    except Exception as exc:
        if collection_gone(exc):
            return None
        raise StorageError(f"vector index at {vectors.location} unreadable: {exc}") from exc
    value = (col.metadata or {}).get("store_id")
    return None if value is None else str(value)


def _foreign(records: RecordStore, vectors: VectorIndex, marker: str, ours: str) -> ConfigError:
    return ConfigError(
        f"the vector index at {vectors.location} holds the vectors of another agentmem "
        f"records store (store id {marker}; the records at {records.location} are store "
        f"{ours}). One Chroma database serves one store: give this one its own "
        "(`?database=NAME` in the Chroma URL), or open the data dir with the records that "
        "index belongs to",
        path=vectors.location,
    )


__all__ = ["STORE_ID_KEY", "VectorLoss", "mark", "verify"]
