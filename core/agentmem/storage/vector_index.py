"""Vector search over the records: Chroma collections partitioned by tenant and owner.

A metadata ``where`` filter on a large Chroma collection costs ~25x an unfiltered query, so
rows are spread over one collection per (tenant, partition), where the partition is the owner
of a scope (a user's conversations, a user's facts, an agent's facts, the tenant's
documents). The hot query (one partition, no kind/type filter) is unfiltered; only narrower
requests add a ``where`` clause, on an already small collection.

Collections use cosine space; a Chroma distance ``d`` becomes a similarity ``1 - d`` in [-1, 1]
(higher is better).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sqlite3
import struct
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..config import ChromaAddress
from ..errors import StorageError
from .chroma_guard import CorruptionGuard
from .database import read_only_uri
from .datadir import discard_unreadable, writable
from .exact_vectors import MAX_VECTORS, ExactVectors, Snapshot, where_matches

_PREFIX = "am_"
#: The collection (holding no vector) whose metadata names the records store the vectors
#: belong to; outside the prefix of the partitions' collections.
MARKER_COLLECTION = "agentmem-store"
#: Past this many vectors, a query with a metadata filter asks Chroma unfiltered for
#: :data:`POST_FILTER_FACTOR` times the results and filters them here.
POST_FILTER_MIN = 5_000
POST_FILTER_FACTOR = 4
#: The embedded Chroma store's SQLite file, and the name pattern of its segment directories
#: (both Chroma internals, used only to compact the embedded store after an erasure).
CHROMA_DB_FILE = "chroma.sqlite3"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def collection_name(tenant_id: str, partition: str) -> str:
    """Deterministic, Chroma-valid collection name for a (tenant, partition)."""
    digest = hashlib.sha256(f"{tenant_id}\x1f{partition}".encode()).hexdigest()[:40]
    return f"{_PREFIX}{digest}"


def _client_error(exc: Exception) -> bool:
    return type(exc).__module__.startswith("chromadb")


def collection_gone(exc: Exception) -> bool:
    """The collection behind a cached handle no longer exists (dropped, maybe recreated,
    by another process sharing a Chroma server, or by an operator)."""
    return _client_error(exc) and "does not exist" in str(exc).lower()


#: A get of the vectors and their metadata.
_WITH_METADATA = ["embeddings", "metadatas"]


def _get_whole(col: Any, collection: str, **request: Any) -> Any:
    """``col.get(**request)`` with one entry per id in each field it includes.

    Chroma (1.5, embedded or server) loads a get's embeddings only if its read of the
    collection shows a dimension, which the first vectors written to it record; a get that
    reads the collection before those vectors are stored, and their records after, answers
    with their ids and no embeddings, nothing saying which ids lack one. By then the
    dimension is recorded, so the same get again comes back whole (8 times of 8 that a read
    of 20 ids raced the first upsert into a new collection and came back short, measured);
    a read still short is refused (``StorageError``) rather than paired up wrong.
    """
    include = request.get("include", ())
    for _ in range(2):
        got = col.get(**request)
        n = len(got["ids"])
        short = [(f, k) for f in include if (k := len(got[f] if got[f] is not None else ())) != n]
        if not short:
            return got
    field, k = short[0]
    raise StorageError(
        f"vector read from {collection} inconsistent: {n} ids came back with {k} {field}"
    )


class VectorIndex:
    """Chroma-backed vector index.

    Args:
        path: Directory for an embedded ``PersistentClient`` (unused when ``client`` or
            ``server`` is given).
        client: A caller-supplied Chroma client, e.g. ``chromadb.HttpClient(...)``.
        server: A Chroma server to reach with an ``HttpClient`` made on first use (so
            opening a store does no network I/O).
        read_only: Opened beside the process that writes to the data dir: :meth:`close`
            leaves the files alone.
        exact_search_bytes: Memory for copies of small collections searched exactly in
            this process (:mod:`~agentmem.storage.exact_vectors`); only for an embedded
            store this process writes (another writer's vectors would be missed).

    Example:
        >>> vi = VectorIndex(tmp_path / "chroma")  # doctest: +SKIP
    """

    def __init__(
        self,
        path: Path | None = None,
        *,
        client: Any = None,
        server: ChromaAddress | None = None,
        read_only: bool = False,
        exact_search_bytes: int = 0,
    ) -> None:
        self.path = None if client is not None or server is not None else path
        #: Opened beside the writing process: never rewrites files (no scrub at close).
        self.read_only = read_only
        self.server = server
        self._owns_client = client is None and server is None
        #: Every Chroma call goes through it: a corrupt store raises ``StorageError``.
        self.guard = CorruptionGuard(self.location, sticky=self._owns_client)
        self._client: Any = None if client is None else self.guard.wrap(client)
        self._collections: dict[str, Any] = {}
        self._missing: set[str] = set()
        self._lock = threading.Lock()
        #: When this index first opened its embedded client (segment files written since
        #: are scrubbed at close).
        self._opened_at: float | None = None
        #: The private dir Chroma reads an unwritable embedded store through (read-only).
        self._view: Path | None = None
        budget = exact_search_bytes if self._owns_client and not read_only else 0
        self.exact = ExactVectors(budget, self._snapshot)
        self._fanout: ThreadPoolExecutor | None = None
        #: Vectors per collection and when they were counted (see :meth:`_large`).
        self._counts: dict[str, tuple[int, float]] = {}

    @property
    def owns_client(self) -> bool:
        """True for the embedded store this index opened itself (not a server)."""
        return self._owns_client

    @property
    def location(self) -> str:
        """Where the vectors are, for people: a server address or the embedded dir."""
        if self.server is not None:
            a = self.server
            scheme = "https" if a.ssl else "http"
            return f"{scheme}://{a.host}:{a.port} (database {a.database})"
        if self.path is None:
            return "a caller's Chroma client"
        return str(self.path)

    @property
    def client(self) -> Any:
        client = self._client
        if client is not None:
            return client
        with self._lock:  # one open at a time (and none while compact_files runs)
            if self._client is None and self.server is not None:
                from .chroma_server import http_client

                self._client = self.guard.wrap(http_client(self.server))
            if self._client is None:
                assert self.path is not None
                if self._opened_at is None:
                    self._opened_at = time.time()
                self._client, self._view = _open_embedded(self.path, self.guard, self.read_only)
            return self._client

    def _collection(self, name: str, *, create: bool) -> Any:
        col = self._collections.get(name)
        if col is not None:
            return col
        if not create and name in self._missing:
            return None
        try:
            if create:
                col = self.client.get_or_create_collection(
                    name,
                    configuration={"hnsw": {"space": "cosine"}},
                    embedding_function=None,
                )
            else:
                col = self.client.get_collection(name, embedding_function=None)
        except Exception as exc:
            if not create and _client_error(exc):
                if self._owns_client:
                    # only this process writes an embedded store: a collection it has not
                    # created does not appear behind its back (a shared server may differ)
                    self._missing.add(name)
                return None
            raise StorageError(f"vector index collection {name} unavailable: {exc}") from exc
        self._missing.discard(name)
        self._collections[name] = col
        return col

    def upsert(
        self,
        collection: str,
        ids: Sequence[str],
        embeddings: np.ndarray,
        metadatas: Sequence[dict[str, str]],
    ) -> None:
        for attempt in (1, 2):
            col = self._collection(collection, create=True)
            try:
                col.upsert(ids=list(ids), embeddings=embeddings, metadatas=list(metadatas))
                break
            except Exception as exc:
                self._collections.pop(collection, None)
                if attempt == 1 and collection_gone(exc):
                    continue  # dropped and perhaps recreated behind this handle's back
                raise StorageError(f"vector upsert into {collection} failed: {exc}") from exc
        self.exact.upserted(collection, ids, embeddings, metadatas)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        for attempt in (1, 2):
            col = self._collection(collection, create=False)
            if col is None:
                return
            try:
                col.delete(ids=list(ids))
                break
            except Exception as exc:
                self._collections.pop(collection, None)
                if attempt == 1 and collection_gone(exc):
                    continue
                raise StorageError(f"vector delete from {collection} failed: {exc}") from exc
        self.exact.deleted(collection, ids)

    def query(
        self,
        collection: str,
        embedding: np.ndarray,
        n: int,
        where: dict[str, Any] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest neighbours: (id, cosine similarity) best first; [] for an unknown collection."""
        exact = self.exact.search(collection, embedding, n, where)
        return exact if exact is not None else self._chroma_query(collection, where, embedding, n)

    def _chroma_query(
        self, collection: str, where: dict[str, Any] | None, embedding: np.ndarray, n: int
    ) -> list[tuple[str, float]]:
        if where is not None and self._large(collection):
            # a metadata filter on a large collection costs Chroma a scan (~95 ms for a
            # session_id $ne at 50,000 vectors, measured, against 0.9 ms unfiltered): ask
            # unfiltered for more and filter here, unless too few of them pass
            hits = self._ask(collection, None, embedding, n * POST_FILTER_FACTOR, metadatas=True)
            try:
                kept = [(i, sim) for i, sim, meta in hits if where_matches(where, meta)]
            except ValueError:  # a filter this module does not evaluate: Chroma's own
                kept = None
            if kept is not None and (len(kept) >= n or len(hits) < n * POST_FILTER_FACTOR):
                return kept[:n]
        return [(i, sim) for i, sim, _ in self._ask(collection, where, embedding, n)]

    def _ask(
        self,
        collection: str,
        where: dict[str, Any] | None,
        embedding: np.ndarray,
        n: int,
        *,
        metadatas: bool = False,
    ) -> list[tuple[str, float, Mapping[str, Any]]]:
        include = ["distances", "metadatas"] if metadatas else ["distances"]
        for attempt in (1, 2):
            col = self._collection(collection, create=False)
            if col is None:
                return []
            try:
                result = col.query(
                    query_embeddings=embedding.reshape(1, -1),
                    n_results=n,
                    where=where,
                    include=include,
                )
                break
            except Exception as exc:
                self._collections.pop(collection, None)
                if collection_gone(exc):
                    if attempt == 1:
                        continue
                    return []
                raise StorageError(f"vector query on {collection} failed: {exc}") from exc
        ids = result["ids"][0]
        distances = result["distances"][0]
        metas = result["metadatas"][0] if metadatas else [{}] * len(ids)
        return [(i, 1.0 - float(d), m or {}) for i, d, m in zip(ids, distances, metas, strict=True)]

    def _large(self, collection: str) -> bool:
        """More than :data:`POST_FILTER_MIN` vectors (counted at most once a minute)."""
        now = time.monotonic()
        known = self._counts.get(collection)
        if known is None or now - known[1] > 60.0:
            col = self._collection(collection, create=False)
            try:
                count = 0 if col is None else int(col.count())
            except Exception:  # counting is an optimisation: the filtered query decides
                return False
            known = self._counts[collection] = (count, now)
        return known[0] > POST_FILTER_MIN

    def search_many(
        self,
        targets: Sequence[tuple[str, dict[str, Any] | None]],
        embedding: np.ndarray,
        n: int,
    ) -> list[list[tuple[str, float]]]:
        """:meth:`query` of each (collection, where) target; the ones Chroma answers run at
        once (most of a Chroma query's time is spent outside the GIL)."""
        out: list[list[tuple[str, float]] | None] = [
            self.exact.search(name, embedding, n, where) for name, where in targets
        ]
        remote = [i for i, hits in enumerate(out) if hits is None]
        if len(remote) > 1:
            if self._fanout is None:
                self._fanout = ThreadPoolExecutor(4, thread_name_prefix="agentmem-vector-search")
            jobs = {
                i: self._fanout.submit(self._chroma_query, *targets[i], embedding, n)
                for i in remote[1:]
            }
            out[remote[0]] = self._chroma_query(*targets[remote[0]], embedding, n)
            for i, job in jobs.items():
                out[i] = job.result()
        elif remote:
            out[remote[0]] = self._chroma_query(*targets[remote[0]], embedding, n)
        return [hits or [] for hits in out]

    def _snapshot(self, collection: str) -> Snapshot | None:
        """Every vector of ``collection`` with its metadata, for an exact copy; None when it
        does not exist; ``OverflowError`` past the size of an exact copy."""
        col = self._collection(collection, create=False)
        if col is None:
            return None
        if int(col.count()) > MAX_VECTORS:
            raise OverflowError(collection)
        # the ids first, then their vectors by id a page at a time (each page made float32
        # at once: a copy's peak memory): pages by offset would skip a vector each time one
        # before the offset is deleted meanwhile (a delete is replayed on the copy; a vector
        # skipped would be missing from it for good)
        listed = col.get(include=[])["ids"]
        ids: list[str] = []
        pages: list[np.ndarray] = []
        metadatas: list[Any] = []
        for page in (listed[start : start + 1000] for start in range(0, len(listed), 1000)):
            got = _get_whole(col, collection, ids=page, include=_WITH_METADATA)
            if len(got["ids"]):
                pages.append(np.asarray(got["embeddings"], dtype=np.float32))
            ids.extend(got["ids"])
            metadatas.extend(got["metadatas"])
        vectors = np.concatenate(pages) if pages else np.zeros((0, 0), dtype=np.float32)
        return ids, vectors, metadatas

    def vectors(self, collection: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those of ``ids`` the collection holds."""
        col = self._collection(collection, create=False) if ids else None
        if col is None:
            return {}
        try:
            got = _get_whole(col, collection, ids=list(ids), include=["embeddings"])
        except Exception as exc:
            self._collections.pop(collection, None)
            if collection_gone(exc):
                return {}
            raise StorageError(f"vector read from {collection} failed: {exc}") from exc
        return {
            id_: np.asarray(vec, dtype=np.float32)
            for id_, vec in zip(got["ids"], got["embeddings"], strict=True)
        }

    def ids(self, collection: str) -> set[str]:
        col = self._collection(collection, create=False)
        if col is None:
            return set()
        out: set[str] = set()
        offset = 0
        while True:
            batch = col.get(include=[], limit=5000, offset=offset)["ids"]
            out.update(batch)
            if len(batch) < 5000:
                return out
            offset += len(batch)

    def count(self, collection: str) -> int:
        col = self._collection(collection, create=False)
        return 0 if col is None else int(col.count())

    def stored_dimensions(self, collections: Sequence[str]) -> int | None:
        """The length of a vector stored in the first of ``collections`` that holds one.

        None when none of them holds a vector. Raises ``StorageError`` if the index cannot
        be read.
        """
        for name in collections:
            col = self._collection(name, create=False)
            if col is None:
                continue
            try:
                got = _get_whole(col, name, limit=1, include=["embeddings"])
            except Exception as exc:
                self._collections.pop(name, None)
                raise StorageError(f"vector index collection {name} unreadable: {exc}") from exc
            embeddings = got.get("embeddings")
            if embeddings is not None and len(embeddings) > 0:
                return len(embeddings[0])
        return None

    def collections(self) -> list[str]:
        try:
            listed = self.client.list_collections()
        except StorageError:
            raise
        except Exception as exc:
            raise StorageError(f"vector index at {self.location} unreadable: {exc}") from exc
        return [c.name for c in listed if c.name.startswith(_PREFIX)]

    def drop(self, collection: str) -> None:
        self.exact.forget(collection)
        self._collections.pop(collection, None)
        self._missing.discard(collection)
        try:
            self.client.delete_collection(collection)
        except Exception as exc:
            if not _client_error(exc):
                raise StorageError(f"cannot drop collection {collection}: {exc}") from exc
        finally:
            # a recall may have copied the collection, or kept its handle, meanwhile
            self.exact.forget(collection)
            self._collections.pop(collection, None)

    def rebuild(self, collection: str, keep: set[str]) -> int:
        """Recreate ``collection`` with only its vectors of ``keep``; returns how many others
        it held (now gone).

        Deleting a vector from a Chroma collection leaves it in the HNSW files and the
        collection's log until they are rewritten; a new collection holding copies of the
        kept vectors leaves nothing of the others (the old files go with
        :meth:`compact_files`). A missing collection is left missing.
        """
        col = self._collection(collection, create=False)
        if col is None:
            return 0
        ids: list[str] = []
        embeddings: list[Any] = []
        metadatas: list[Any] = []
        try:
            offset = 0
            total = 0
            while True:
                got = _get_whole(col, collection, include=_WITH_METADATA, limit=5000, offset=offset)
                batch = got["ids"]
                total += len(batch)
                for i, id_ in enumerate(batch):
                    if id_ in keep:
                        ids.append(id_)
                        embeddings.append(got["embeddings"][i])
                        metadatas.append(got["metadatas"][i])
                if len(batch) < 5000:
                    break
                offset += len(batch)
        except Exception as exc:
            self._collections.pop(collection, None)
            raise StorageError(f"vector collection {collection} unreadable: {exc}") from exc
        self.drop(collection)
        for start in range(0, len(ids), 1000):
            self.upsert(
                collection,
                ids[start : start + 1000],
                np.asarray(embeddings[start : start + 1000], dtype=np.float32),
                metadatas[start : start + 1000],
            )
        return total - len(ids)

    def _let_go(self) -> None:
        """Close the embedded client and forget what was read through it; the next use
        opens the store anew (the caller holds ``_lock``)."""
        self.exact.forget()
        self._collections.clear()
        self._missing.clear()
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    def recreate_if_lost(self) -> bool:
        """Let go of an embedded store whose files were deleted under this process (its
        SQLite file is gone or holds no marker: SQLite may have made an empty file in its
        place); True if it did. The next use opens a new store there; the caller marks it
        and queues every row again (:mod:`~agentmem.storage.vector_check`).

        Chroma keeps writing into the deleted file, which SQLite refuses ("attempt to write
        a readonly database"): without this, no row would be embedded again until a restart.
        """
        if not self._owns_client or self.read_only or self.path is None:
            return False
        with self._lock:
            if self._client is None or _marked(self.path / CHROMA_DB_FILE):
                return False
            self._let_go()
            self.guard.corrupt = None
            return True

    def discard(self, reason: BaseException) -> str:
        """Remove the embedded store, found unreadable (``reindex`` builds it anew from the
        records; the next use starts an empty one); returns the note of it."""
        assert self._owns_client and self.path is not None
        with self._lock:
            self._let_go()
            self.guard.corrupt = None
            return discard_unreadable(self.path, "vector index", reason)

    def compact_files(self) -> list[str]:
        """Remove what the embedded store keeps of deleted vectors; returns what was done.

        Chroma leaves the HNSW files of a dropped collection on disk, its SQLite file keeps
        deleted rows in free pages, and its HNSW files carry whatever the writing process had
        in memory in their unused capacity (:func:`scrub_hnsw_files`). With the client closed,
        the SQLite file is rewritten (``VACUUM``), segment directories no segment refers to
        are deleted and the unused capacity of the others is zeroed; the client is opened
        again on next use. Nothing is done for a caller's client (a Chroma server compacts
        its own storage).
        """
        if not self._owns_client or self.path is None:
            return []
        done: list[str] = []
        with self._lock:
            self._let_go()
            db = self.path / CHROMA_DB_FILE
            if not db.is_file():
                return done
            try:
                conn = sqlite3.connect(db, timeout=30.0, isolation_level=None)
                try:
                    segments = {str(r[0]) for r in conn.execute("SELECT id FROM segments")}
                    conn.execute("VACUUM")
                finally:
                    conn.close()
            except sqlite3.Error as exc:
                raise StorageError(f"cannot compact vector index at {self.path}: {exc}") from exc
            done.append("vacuum")
            for entry in self.orphan_segment_dirs(segments):
                shutil.rmtree(entry)
                done.append(f"removed {entry.name}")
            for entry in sorted(self.path.iterdir()):
                if (
                    entry.is_dir()
                    and _UUID.fullmatch(entry.name)
                    and scrub_hnsw_files(entry, sync=True)
                ):
                    done.append(f"scrubbed {entry.name}")
        return done

    def unscrubbed_segment_dirs(self) -> list[Path]:
        """Segment directories whose HNSW files hold bytes in their unused capacity."""
        if not self._owns_client or self.path is None or not self.path.is_dir():
            return []
        return [
            entry
            for entry in sorted(self.path.iterdir())
            if entry.is_dir() and _UUID.fullmatch(entry.name) and scrub_hnsw_files(entry, dry=True)
        ]

    def vectors_on_disk(self) -> int:
        """Vectors the embedded store's files hold, read without opening Chroma (which
        writes to its files whenever it opens them); 0 without files or a path."""
        db = None if self.path is None else self.path / CHROMA_DB_FILE
        if db is None or not db.is_file():
            return 0
        try:
            conn = sqlite3.connect(read_only_uri(db), uri=True, timeout=30.0)
            try:
                return int(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise StorageError(f"vector index at {self.path} unreadable: {exc}") from exc

    def orphan_segment_dirs(self, segments: set[str] | None = None) -> list[Path]:
        """Segment directories of the embedded store that no segment refers to (left behind
        by dropped collections)."""
        if not self._owns_client or self.path is None or not self.path.is_dir():
            return []
        if segments is None:
            db = self.path / CHROMA_DB_FILE
            if not db.is_file():
                return []
            try:
                conn = sqlite3.connect(read_only_uri(db), uri=True, timeout=30.0)
                try:
                    segments = {str(r[0]) for r in conn.execute("SELECT id FROM segments")}
                finally:
                    conn.close()
            except sqlite3.Error as exc:
                raise StorageError(f"vector index at {self.path} unreadable: {exc}") from exc
        out = []
        for entry in sorted(self.path.iterdir()):
            if entry.is_dir() and _UUID.fullmatch(entry.name) and entry.name not in segments:
                out.append(entry)
        return out

    def close(self) -> None:
        """Close the client; segment files the embedded store wrote meanwhile are scrubbed
        (:func:`scrub_hnsw_files`: Chroma writes them whenever it loads a collection)."""
        self.exact.forget()
        if self._fanout is not None:
            self._fanout.shutdown(wait=True, cancel_futures=True)
            self._fanout = None
        self._collections.clear()
        self._missing.clear()
        self.guard.corrupt = None  # (read from its files anew on next use)
        if self._owns_client and self._client is not None:
            with contextlib.suppress(Exception):  # closing is best effort
                self._client.close()
        if self._owns_client or self.server is not None:
            self._client = None  # a caller's client stays theirs, reusable after close
        view, self._view = self._view, None
        if view is not None:
            shutil.rmtree(view, ignore_errors=True)
        if (
            self._owns_client
            and not self.read_only
            and self.path is not None
            and self._opened_at is not None
        ):
            since, self._opened_at = self._opened_at, None
            with contextlib.suppress(OSError):
                for entry in self.path.iterdir():
                    if _UUID.fullmatch(entry.name) and _written_since(entry, since):
                        scrub_hnsw_files(entry)


def _open_embedded(path: Path, guard: CorruptionGuard, read_only: bool) -> tuple[Any, Path | None]:
    """A guarded ``PersistentClient`` on the embedded store at ``path``, and the private dir
    it reads an unwritable store through (:func:`_read_only_view`; None when it reads
    ``path`` itself).

    Raises:
        StorageError: the store cannot be opened.
    """
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False, allow_reset=True)
    view = None
    try:
        if read_only and not _can_write(path):
            view = _read_only_view(path)
        else:
            path.mkdir(parents=True, exist_ok=True)
        with guard.watch():
            opened = chromadb.PersistentClient(path=str(view or path), settings=settings)
        return guard.wrap(opened), view
    except Exception as exc:
        # A failed open leaves Chroma half set up for this path: the next attempt fails on
        # that ("'RustBindingsAPI' object has no attribute 'bindings'") and the one after
        # starts clean. Trying again at once keeps every open of this index a fresh one,
        # whichever thread made the failed attempt.
        with contextlib.suppress(Exception), guard.watch():
            opened = chromadb.PersistentClient(path=str(view or path), settings=settings)
            return guard.wrap(opened), view
        if view is not None:
            shutil.rmtree(view, ignore_errors=True)
        raise StorageError(f"cannot open vector index at {path}: {exc}") from exc


def _marked(db: Path) -> bool:
    """Whether the embedded store's SQLite file ``db`` holds the marker collection
    (:data:`MARKER_COLLECTION`), read without Chroma; a file SQLite cannot read is left to
    the :class:`~.chroma_guard.CorruptionGuard` (True)."""
    if not db.is_file():
        return False
    try:
        conn = sqlite3.connect(read_only_uri(db), uri=True, timeout=30.0)
        try:
            found = conn.execute(
                "SELECT 1 FROM collections WHERE name = ?", (MARKER_COLLECTION,)
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        return "no such table" not in str(exc)  # an empty file: no store was made in it
    except sqlite3.Error:
        return True
    return found is not None


def _can_write(path: Path) -> bool:
    """Whether Chroma could write the embedded store at ``path`` (or create it there)."""
    db = path / CHROMA_DB_FILE
    if db.exists():
        return writable(db) and writable(path)
    return writable(path) if path.exists() else writable(path.parent)


def _read_only_view(path: Path) -> Path:
    """A private dir through which Chroma reads the embedded store in an unwritable ``path``.

    Chroma writes to its SQLite file whenever it opens it, which read-only media refuse. The
    view holds a consistent copy of that file (ids, metadata and the log of recent writes; no
    content: agentmem gives Chroma none) and links to the segment directories, which Chroma
    only reads; it is removed at :meth:`VectorIndex.close`. Without a store in ``path`` the
    view is empty, and Chroma starts an empty store in it.
    """
    view = Path(tempfile.mkdtemp(prefix="agentmem-vectors-"))
    try:
        db = path / CHROMA_DB_FILE
        if db.is_file():
            source = sqlite3.connect(read_only_uri(db), uri=True, timeout=30.0)
            copy = sqlite3.connect(view / CHROMA_DB_FILE)
            try:
                source.backup(copy)
            finally:
                copy.close()
                source.close()
        if path.is_dir():
            for entry in path.iterdir():
                if entry.is_dir():  # absolute: a relative link would resolve in the view
                    (view / entry.name).symlink_to(entry.absolute())
    except BaseException:
        shutil.rmtree(view, ignore_errors=True)
        raise
    return view


#: The header of a Chroma HNSW segment (``header.bin``, format version 1): hnswlib's index
#: parameters (offsetLevel0, max_elements, cur_element_count, size_data_per_element,
#: label_offset, offsetData, maxlevel, enterpoint, maxM, maxM0, M, mult, ef_construction).
_HNSW_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")


def _written_since(segment: Path, since: float) -> bool:
    header = segment / "header.bin"
    return header.is_file() and header.stat().st_mtime >= since - 1.0


def scrub_hnsw_files(segment: Path, *, dry: bool = False, sync: bool = False) -> bool:
    """Zero the unused capacity of a segment's HNSW files; True if it held any byte.

    hnswlib allocates room for ``max_elements`` vectors without clearing it and Chroma
    writes the whole allocation (when a collection is created, and again whenever a process
    loads it, a query included): the slots past ``cur_element_count`` in ``data_level0.bin``
    (and their entries in ``length.bin``) hold whatever the writing process had in that
    memory before: measured, fragments of other collections' records and of texts the
    process had handled. Only the used elements are read back, so zeroing the rest changes
    nothing Chroma sees. A header of another format is left alone (False). With ``dry``,
    nothing is written; with ``sync``, the zeros are on disk when it returns (an erasure; at
    close, the page cache writes them back: fsync per segment cost ~3 ms, measured).
    """
    header = segment / "header.bin"
    try:
        raw = header.read_bytes()
    except OSError:
        return False
    if len(raw) != _HNSW_HEADER.size:
        return False
    version, _offset0, capacity, count, size, *_ = _HNSW_HEADER.unpack(raw)
    if version != 1 or size <= 0 or count > capacity:
        return False
    found = False
    for name, used, total in (
        ("data_level0.bin", count * size, capacity * size),
        ("length.bin", count * 4, capacity * 4),
    ):
        path = segment / name
        try:
            length = path.stat().st_size
        except OSError:
            continue
        if length != total or length <= used:
            continue
        with open(path, "r+b") as f:
            f.seek(used)
            tail = f.read()
            if not tail.strip(b"\0"):
                continue
            found = True
            if not dry:
                f.seek(used)
                f.write(bytes(len(tail)))
                f.flush()
                if sync:
                    os.fsync(f.fileno())
    return found
