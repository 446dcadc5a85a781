"""A vector read Chroma answers with ids but fewer embeddings (a get racing the first vectors
written to a collection) is read again, and refused with ``StorageError`` if it is still
short: never paired up wrong, never a bare ``ValueError`` in a background pass."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from _lagging_chroma import LaggingClient

from agentmem.errors import StorageError
from agentmem.storage.vector_index import VectorIndex

DIM = 8
IDS = [f"r{i}" for i in range(5)]


@pytest.fixture
def client(tmp_path: Path) -> LaggingClient:
    return LaggingClient(tmp_path / "chroma")


@pytest.fixture
def stored() -> np.ndarray:
    return np.random.default_rng(3).standard_normal((len(IDS), DIM)).astype(np.float32)


@pytest.fixture
def index(client: LaggingClient, stored: np.ndarray) -> Iterator[VectorIndex]:
    vi = VectorIndex(client=client)
    vi.upsert("am_c", IDS, stored, [{"kind": "memory"}] * len(IDS))
    yield vi
    vi.close()


def test_a_short_read_is_read_again(
    index: VectorIndex, client: LaggingClient, stored: np.ndarray
) -> None:
    client.lagging = 1
    got = index.vectors("am_c", IDS)
    assert client.short_reads == 1
    assert sorted(got) == IDS
    for i, id_ in enumerate(IDS):
        np.testing.assert_allclose(got[id_], stored[i], rtol=1e-6)


@pytest.mark.parametrize("drop", ["all", "last"])
def test_a_read_short_twice_is_refused(
    index: VectorIndex, client: LaggingClient, drop: str
) -> None:
    client.drop = drop
    client.lagging = 2
    kept = 0 if drop == "all" else len(IDS) - 1
    with pytest.raises(StorageError, match=f"am_c.* 5 ids came back with {kept} embeddings"):
        index.vectors("am_c", IDS)
    assert client.short_reads == 2
    assert sorted(index.vectors("am_c", IDS)) == IDS  # whole again once Chroma is


def test_the_stored_dimensions_are_read_again_or_refused(
    index: VectorIndex, client: LaggingClient
) -> None:
    client.lagging = 1
    assert index.stored_dimensions(["am_c"]) == DIM
    client.lagging = 2
    with pytest.raises(StorageError, match="am_c"):
        index.stored_dimensions(["am_c"])  # not None: the collection holds vectors


def test_an_exact_copy_is_not_made_of_a_short_read(
    index: VectorIndex, client: LaggingClient, stored: np.ndarray
) -> None:
    client.lagging = 2
    with pytest.raises(StorageError, match="am_c"):
        index._snapshot("am_c")  # the exact copy is refused; Chroma answers the query
    client.lagging = 1
    snapshot = index._snapshot("am_c")
    assert snapshot is not None
    ids, vectors, _ = snapshot
    assert ids == IDS
    np.testing.assert_allclose(vectors, stored, rtol=1e-6)


def test_a_rebuild_reads_a_short_page_again(
    index: VectorIndex, client: LaggingClient, stored: np.ndarray
) -> None:
    client.lagging = 1
    assert index.rebuild("am_c", {"r0", "r3"}) == 3
    got = index.vectors("am_c", IDS)
    assert sorted(got) == ["r0", "r3"]
    np.testing.assert_allclose(got["r3"], stored[3], rtol=1e-6)
