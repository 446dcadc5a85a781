"""Exact in-memory search of small collections: same answers as a full scan, kept exact
through writes (also those made while a collection loads), bounded memory, and only where
this process is the one writer."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentmem import AgentMemory, MemoryConfig
from agentmem.storage import exact_vectors
from agentmem.storage.exact_vectors import ExactVectors, Partition, where_matches
from agentmem.storage.vector_index import VectorIndex

DIM = 16
MB = 2**20


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _meta(i: int) -> dict[str, str]:
    return {
        "session_id": f"s{i % 3}",
        "kind": "memory" if i % 2 else "chat_message",
        "memory_type": "fact" if i % 4 == 1 else "",
        "scope": "user",
    }


def _reference(
    vectors: np.ndarray, metas: list[dict[str, str]], q: np.ndarray, n: int, keep: Any = None
) -> list[str]:
    sims = vectors @ (q / np.linalg.norm(q))
    order = [int(i) for i in np.argsort(-sims, kind="stable") if keep is None or keep(metas[i])]
    return [f"r{i}" for i in order[:n]]


@pytest.fixture
def filled(tmp_path: Path) -> tuple[VectorIndex, np.ndarray, list[dict[str, str]]]:
    rng = np.random.default_rng(7)
    vectors = _unit(rng, 300)
    metas = [_meta(i) for i in range(300)]
    index = VectorIndex(tmp_path / "chroma", exact_search_bytes=64 * MB)
    index.upsert("am_c", [f"r{i}" for i in range(300)], vectors, metas)
    yield index, vectors, metas
    index.close()


def _held_query(index: VectorIndex, q: np.ndarray, n: int, where: Any = None) -> list[str]:
    """Query twice (the copy is made on the second query) and return the ids."""
    index.query("am_c", q, n, where)
    hits = index.query("am_c", q, n, where)
    assert index.exact.held() == {"am_c": 300}
    return [i for i, _ in hits]


@pytest.mark.parametrize("vecdot", [True, False], ids=["vecdot", "einsum"])
def test_exact_answers_are_a_full_scan(
    filled: Any, vecdot: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not vecdot:  # numpy 1 has no vecdot: the scan falls back to einsum
        monkeypatch.setattr(exact_vectors, "_VECDOT", None)
    index, vectors, metas = filled
    rng = np.random.default_rng(1)
    for q in _unit(rng, 5):
        assert _held_query(index, q, 20) == _reference(vectors, metas, q, 20)
        hits = index.query("am_c", q, 5)
        chroma = index._chroma_query("am_c", None, q, 5)
        # the same similarity scale as Chroma's cosine distance
        assert [i for i, _ in hits] == [i for i, _ in chroma]
        for (_, a), (_, b) in zip(hits, chroma, strict=True):
            assert a == pytest.approx(b, abs=1e-4)


@pytest.mark.parametrize(
    ("where", "keep"),
    [
        ({"session_id": "s1"}, lambda m: m["session_id"] == "s1"),
        ({"session_id": {"$ne": "s1"}}, lambda m: m["session_id"] != "s1"),
        ({"kind": {"$in": ["memory"]}}, lambda m: m["kind"] == "memory"),
        ({"kind": "memory"}, lambda m: m["kind"] == "memory"),
        (
            {"$and": [{"session_id": {"$ne": "s0"}}, {"memory_type": {"$in": ["fact", "x"]}}]},
            lambda m: m["session_id"] != "s0" and m["memory_type"] == "fact",
        ),
        ({"session_id": "nobody"}, lambda m: False),
    ],
)
def test_where_filters_match_chroma(filled: Any, where: Any, keep: Any) -> None:
    index, vectors, metas = filled
    q = _unit(np.random.default_rng(3), 1)[0]
    got = _held_query(index, q, 25, where)
    assert got == _reference(vectors, metas, q, 25, keep)
    assert got == [i for i, _ in index._chroma_query("am_c", where, q, 25)][: len(got)]


def test_an_unsupported_filter_goes_to_chroma(filled: Any) -> None:
    index, _, _ = filled
    q = _unit(np.random.default_rng(4), 1)[0]
    _held_query(index, q, 5)
    where = {"session_id": {"$gt": "s0"}}
    assert index.exact.search("am_c", q, 5, where) is None
    with pytest.raises(Exception, match="gt"):  # Chroma's own answer to it
        index.query("am_c", q, 5, where)


def test_writes_reach_the_copy(filled: Any) -> None:
    index, _, _ = filled
    rng = np.random.default_rng(5)
    q = _unit(rng, 1)[0]
    _held_query(index, q, 5)
    index.upsert("am_c", ["new"], q.reshape(1, -1), [_meta(1)])
    assert index.query("am_c", q, 1)[0][0] == "new"
    assert index.query("am_c", q, 3, {"session_id": "s1"})[0][0] == "new"
    # replacing a vector moves the row, deleting it removes it
    index.upsert("am_c", ["new"], -q.reshape(1, -1), [_meta(1)])
    assert "new" not in [i for i, _ in index.query("am_c", q, 10)]
    index.delete("am_c", ["new", "r0", "r299"])
    assert index.exact.held() == {"am_c": 298}
    ids = {i for i, _ in index.query("am_c", q, 400)}
    assert not ids & {"new", "r0", "r299"} and len(ids) == 298


def test_a_deleted_vector_leaves_nothing_in_memory() -> None:
    part = Partition()
    vectors = _unit(np.random.default_rng(6), 3)
    part.upsert(["a", "b", "c"], vectors, [{}, {}, {}])
    part.delete(["c", "a"])
    assert part.ids == ["b"]
    used, free = part.matrix[:1], part.matrix[1:]
    assert np.allclose(used[0], vectors[1]) and not free.any()


def test_writes_during_a_load_are_replayed() -> None:
    """The indexer upserts while a recall copies the collection: without the journal the
    copy misses the new row (it was not in what the load read)."""
    rng = np.random.default_rng(8)
    base = _unit(rng, 4)
    loading, written = threading.Event(), threading.Event()

    def load(name: str) -> Any:
        loading.set()
        assert written.wait(5)
        return ["a", "b", "c", "d"], base, [{}] * 4

    exact = ExactVectors(64 * MB, load)
    q = base[0]
    assert exact.search("c1", q, 3, None) is None  # first query: not copied yet
    late = -base[0].reshape(1, -1)
    results: list[Any] = []
    t = threading.Thread(target=lambda: results.append(exact.search("c1", q, 10, None)))
    t.start()
    assert loading.wait(5)
    exact.upserted("c1", ["late"], late, [{}])
    exact.deleted("c1", ["b"])
    written.set()
    t.join(5)
    assert {i for i, _ in results[0]} == {"a", "c", "d", "late"}
    assert exact.held() == {"c1": 4}


def test_a_delete_while_a_large_collection_loads_skips_no_other_vector(tmp_path: Path) -> None:
    """The copy is read in pages while the indexer may delete: a deleted vector before the
    page being read must not shift another out of the copy (it would be missing for good,
    never found by meaning)."""
    rng = np.random.default_rng(3)
    vectors = _unit(rng, 2500)
    index = VectorIndex(tmp_path / "chroma", exact_search_bytes=64 * MB)
    index.upsert("am_c", [f"r{i}" for i in range(2500)], vectors, [_meta(i) for i in range(2500)])
    index.query("am_c", vectors[0], 5)  # the first query marks the collection
    real = index._collection("am_c", create=False)
    deleted: list[str] = []

    class DeletingDuringLoad:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def get(self, *args: Any, **kwargs: Any) -> Any:
            got = real.get(*args, **kwargs)
            if "embeddings" in (kwargs.get("include") or []) and not deleted:
                deleted.append("r5")  # after the first page of vectors
                index.delete("am_c", ["r5"])
            return got

    index._collections["am_c"] = DeletingDuringLoad()
    try:
        index.query("am_c", vectors[0], 5)  # the second query loads the copy
    finally:
        index._collections["am_c"] = real
    assert deleted and index.exact.held() == {"am_c": 2499}
    for i in (1000, 1001, 2499):  # each still found by its own vector
        assert index.query("am_c", vectors[i], 1)[0][0] == f"r{i}"
    index.close()


def test_a_recall_copying_a_collection_being_dropped_keeps_nothing_of_it(
    tmp_path: Path,
) -> None:
    """rebuild (erasure) drops the collection and writes back the vectors it keeps: a recall
    that copied the old collection just before it went must not keep the erased vector."""
    rng = np.random.default_rng(2)
    vectors = _unit(rng, 50)
    index = VectorIndex(tmp_path / "chroma", exact_search_bytes=64 * MB)
    index.upsert("am_c", [f"r{i}" for i in range(50)], vectors, [_meta(i) for i in range(50)])
    index.query("am_c", vectors[0], 1)  # marked: the next query copies it
    client = index.client

    class RecallDuringDrop:
        def __getattr__(self, name: str) -> Any:
            return getattr(client, name)

        def delete_collection(self, name: str) -> None:
            assert index.query("am_c", vectors[0], 1)[0][0] == "r0"  # copied just now
            client.delete_collection(name)

    index._client = RecallDuringDrop()
    try:
        assert index.rebuild("am_c", {f"r{i}" for i in range(1, 50)}) == 1
    finally:
        index._client = client
    assert "r0" not in index.ids("am_c")
    assert "r0" not in [i for i, _ in index.query("am_c", vectors[0], 50)]
    index.close()


def test_memory_is_bounded_and_idle_copies_make_room(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(9)
    data = {name: _unit(rng, 100) for name in ("c1", "c2")}

    def load(name: str) -> Any:
        return [f"{name}-{i}" for i in range(100)], data[name], [{}] * 100

    one_copy = Partition()
    one_copy.upsert([f"x{i}" for i in range(100)], data["c1"], [{}] * 100)
    exact = ExactVectors(int(one_copy.nbytes * 1.5), load)
    q = data["c1"][0]
    for name in ("c1", "c1", "c2", "c2"):
        exact.search(name, q, 3, None)
    assert exact.held() == {"c1": 100}  # c1 is busy: c2 stays with Chroma
    monkeypatch.setattr(exact_vectors, "IDLE_SECONDS", 0.0)
    exact.forget("c2")  # its refusal expires
    assert exact.search("c2", q, 3, None) is not None
    assert exact.held() == {"c2": 100}


def test_large_collections_stay_with_chroma(filled: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    index, vectors, metas = filled
    monkeypatch.setattr(exact_vectors, "MAX_VECTORS", 299)
    q = vectors[0]
    index.query("am_c", q, 5)
    assert [i for i, _ in index.query("am_c", q, 5)] == _reference(vectors, metas, q, 5)
    assert index.exact.held() == {}
    # a copy that grows past the limit is dropped
    monkeypatch.setattr(exact_vectors, "MAX_VECTORS", 300)
    index.exact.forget()
    _held_query(index, q, 5)
    index.upsert("am_c", ["one-more"], q.reshape(1, -1), [_meta(0)])
    assert index.exact.held() == {}
    assert index.query("am_c", q, 1)[0][0] in {"one-more", "r0"}


def test_only_the_one_writer_keeps_copies(tmp_path: Path) -> None:
    assert VectorIndex(tmp_path / "a", exact_search_bytes=MB).exact.budget == MB
    assert VectorIndex(tmp_path / "a", exact_search_bytes=MB, read_only=True).exact.budget == 0
    assert VectorIndex(client=object(), exact_search_bytes=MB).exact.budget == 0


@pytest.mark.parametrize("exact_mb", [0, 256])
def test_recall_is_the_same_with_and_without_copies(tmp_path: Path, exact_mb: int) -> None:
    facts = [
        "I commute by bicycle every day",
        "My sister lives in Lisbon",
        "The staging database is db-stage-04",
        "I am allergic to penicillin",
        "Our team standup is at 9:30",
    ]
    config = MemoryConfig(exact_search_mb=exact_mb)
    with AgentMemory(tmp_path / "m", config=config) as memory:
        bound = memory.bind("acme", user_id="ana", session_id="s1")
        for fact in facts:
            bound.remember(fact)
        memory.flush()
        got = [
            [h.content for h in bound.recall(q, min_score=0.0).items]
            for q in ("how do I get to work?", "which hostname is staging?", "drug allergies")
            for _ in range(2)
        ]
        held = memory.context.vectors.exact.held()
        # written after the copy was made, found by meaning only (no word in common)
        bound.remember("My brother works as a dentist in Porto")
        memory.flush()
        late = [h.content for h in bound.recall("what is my sibling's job?", min_score=0.0).items]
    assert bool(held) == (exact_mb > 0)
    assert got[0][0] == facts[0] and got[2][0] == facts[2] and got[4][0] == facts[3]
    assert got[0] == got[1]
    assert "My brother works as a dentist in Porto" in late


@pytest.mark.parametrize(
    ("where", "keep"),
    [
        ({"session_id": {"$ne": "s1"}}, lambda m: m["session_id"] != "s1"),
        ({"kind": {"$in": ["memory"]}}, lambda m: m["kind"] == "memory"),
        (
            {"$or": [{"session_id": "s0"}, {"memory_type": {"$nin": ["", "x"]}}]},
            lambda m: m["session_id"] == "s0" or m["memory_type"] not in ("", "x"),
        ),
        # a few rows pass: too few among the unfiltered results, Chroma filters itself
        (
            {"$and": [{"session_id": "s1"}, {"memory_type": "fact"}]},
            lambda m: m["session_id"] == "s1" and m["memory_type"] == "fact",
        ),
    ],
)
def test_a_large_collection_is_filtered_after_an_unfiltered_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: Any, keep: Any
) -> None:
    """Chroma scans a large collection for a metadata filter (~95 ms at 50,000 vectors for a
    session_id $ne); past POST_FILTER_MIN vectors the index asks unfiltered for more and
    filters them itself, with the same answers."""
    from agentmem.storage import vector_index

    monkeypatch.setattr(vector_index, "POST_FILTER_MIN", 100)
    rng = np.random.default_rng(11)
    vectors = _unit(rng, 300)
    metas = [_meta(i) for i in range(300)]
    index = VectorIndex(tmp_path / "chroma")  # no exact copies: Chroma answers
    index.upsert("am_c", [f"r{i}" for i in range(300)], vectors, metas)
    asked: list[Any] = []
    real_ask = index._ask
    monkeypatch.setattr(
        index, "_ask", lambda c, w, e, n, **kw: asked.append(w) or real_ask(c, w, e, n, **kw)
    )
    try:
        for q in _unit(rng, 3):
            asked.clear()
            got = [i for i, _ in index.query("am_c", q, 10, where)]
            assert got == _reference(vectors, metas, q, 10, keep)
            assert asked[0] is None  # unfiltered first
            few = sum(map(keep, metas)) < 30
            assert (len(asked) == 2 and asked[1] == where) == few  # Chroma filters only then
    finally:
        index.close()


def test_a_filter_the_post_filter_cannot_evaluate_is_left_to_chroma(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentmem.storage import vector_index

    monkeypatch.setattr(vector_index, "POST_FILTER_MIN", 10)
    rng = np.random.default_rng(12)
    vectors = _unit(rng, 30)
    metas: list[dict[str, Any]] = [{"rank": i} for i in range(30)]
    index = VectorIndex(tmp_path / "chroma")
    index.upsert("am_c", [f"r{i}" for i in range(30)], vectors, metas)
    try:
        where = {"rank": {"$gte": 25}}  # not one this module evaluates
        with pytest.raises(ValueError):
            where_matches(where, metas[0])
        got = {i for i, _ in index.query("am_c", vectors[0], 10, where)}
        assert got == {f"r{i}" for i in range(25, 30)}
    finally:
        index.close()


def test_where_matches_is_chromas_filter() -> None:
    meta = {"session_id": "s1", "kind": "memory"}
    assert where_matches({"session_id": "s1"}, meta)
    assert not where_matches({"session_id": {"$ne": "s1"}}, meta)
    assert where_matches({"memory_type": {"$ne": "fact"}}, meta)  # missing key: no value
    assert not where_matches({"memory_type": {"$in": ["fact"]}}, meta)
    assert where_matches({"$and": [{"kind": "memory"}, {"session_id": {"$nin": ["s2"]}}]}, meta)
    assert where_matches({"$or": [{"kind": "chat"}, {"session_id": "s1"}]}, meta)
    for unsupported in ({"session_id": {"$gt": "s0"}}, {"$not": {}}, {"a": 1, "b": 2}):
        with pytest.raises(ValueError):
            where_matches(unsupported, meta)


def test_an_emptied_collection_is_held_and_filled_again(tmp_path: Path) -> None:
    index = VectorIndex(tmp_path / "chroma", exact_search_bytes=64 * MB)
    try:
        vectors = _unit(np.random.default_rng(12), 2)
        index.upsert("am_c", ["a", "b"], vectors, [_meta(0), _meta(1)])
        index.delete("am_c", ["a", "b"])  # the collection exists, with no vector
        assert index.query("am_c", vectors[0], 5) == []
        assert index.query("am_c", vectors[0], 5) == []  # second query: copied (empty)
        assert index.exact.held() == {"am_c": 0}
        index.upsert("am_c", ["c"], vectors[:1], [_meta(2)])
        assert [i for i, _ in index.query("am_c", vectors[0], 5)] == ["c"]
        assert index.exact.held() == {"am_c": 1}
    finally:
        index.close()
