"""Postgres as the system of record: several nodes (each its own home) over one database.

Every test here runs against the real PostgreSQL server of the session (``postgres_server``),
each on a new schema. Nodes that share the records share one vector index too: a Chroma
``PersistentClient`` passed to both, standing in for the Chroma server of a real cluster.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import chromadb
import pytest
from chromadb.config import Settings as ChromaSettings

from agentmem import AgentMemory, MemoryConfig, StorageError, ValidationError
from agentmem.cli import main
from agentmem.embeddings import CachedEmbedder
from agentmem.storage import postgres
from agentmem.storage.keyword_index import KeywordFilter
from agentmem.storage.postgres import CLUSTER_LOCK, PostgresDatabase, to_postgres
from agentmem.storage.records import RecordStore
from agentmem.storage.schema import POSTGRES_MIGRATIONS
from agentmem.storage.write_locks import topic_key

MakeMemory = Callable[..., AgentMemory]


@pytest.fixture
def pg_url(postgres_server: Any) -> str:
    return str(postgres_server.new_schema())


@pytest.fixture
def chroma(tmp_path: Path) -> Any:
    """One vector store shared by the nodes of a test."""
    return chromadb.PersistentClient(
        path=str(tmp_path / "shared-chroma"), settings=ChromaSettings(anonymized_telemetry=False)
    )


def _until(check: Callable[[], bool], timeout: float) -> float:
    """Seconds until ``check()`` holds (fails after ``timeout``)."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            pytest.fail(f"not true within {timeout} s")
        time.sleep(0.01)
    return time.monotonic() - start


# -- the SQL and the schema ---------------------------------------------------------------------
def test_statements_are_translated_for_postgres() -> None:
    sql = (
        "SELECT a FROM memories INDEXED BY memories_vec_todo WHERE +tenant_id = ? "
        "AND user_id IS ? AND agent_id IS NOT ? AND note = 'what? 100%' AND n = ?"
    )
    assert to_postgres(sql) == (
        "SELECT a FROM memories WHERE tenant_id = %s AND user_id IS NOT DISTINCT FROM %s "
        "AND agent_id IS DISTINCT FROM %s AND note = 'what? 100%%' AND n = %s"
    )


def test_migrations_apply_once_and_a_newer_schema_is_refused(pg_url: str) -> None:
    # two nodes starting at once: the advisory lock lets one migrate, the other sees it done
    stores: list[RecordStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            stores.append(RecordStore(Path("unused"), url=pg_url, node_id="n"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    store = stores[0]
    assert store.schema_version() == len(POSTGRES_MIGRATIONS)
    assert store.read("SELECT COUNT(*) FROM schema_version")[0][0] == len(POSTGRES_MIGRATIONS)
    tables = {
        r[0]
        for r in store.read(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
    }
    assert {"memories", "sessions", "working_state", "agent_state", "meta", "api_keys"} <= tables
    assert {"audit_log", "erasures", "index_progress", "memory_deletions"} <= tables
    with store.write() as tx:
        tx.execute("INSERT INTO schema_version (version) VALUES (?)", (999,))
    for s in stores:
        s.close()
    with pytest.raises(StorageError, match="newer than this agentmem"):
        RecordStore(Path("unused"), url=pg_url, node_id="n")


def test_driver_errors_are_storage_errors(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = PostgresDatabase(pg_url)
    try:
        with pytest.raises(StorageError, match="read failed"):
            db.read("SELECT * FROM no_such_table")
        db.migrate(POSTGRES_MIGRATIONS)
        with pytest.raises(StorageError, match="write failed"), db.write() as tx:
            tx.execute("INSERT INTO meta (key, value, updated_at) VALUES (?,?,?)", ("k", "v", "t"))
            tx.execute("INSERT INTO meta (key, value, updated_at) VALUES (?,?,?)", ("k", "v", "t"))
        assert db.read("SELECT COUNT(*) FROM meta WHERE key = 'k'")[0][0] == 0  # rolled back
    finally:
        db.close()


class _StartingServer:
    """A loopback stand-in for a Postgres server that is starting up: its first ``refusals``
    connections get the server's refusal (SQLSTATE 57P03), the others are passed on to the
    real server at ``target``."""

    def __init__(self, target: tuple[str, int], refusals: int) -> None:
        self.target = target
        self.left = refusals
        self.refused = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            if self.left > 0:
                self.left -= 1
                self._refuse(conn)
            else:
                upstream = socket.create_connection(self.target)
                for a, b in ((conn, upstream), (upstream, conn)):
                    threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    def _refuse(self, conn: socket.socket) -> None:
        with conn:
            while True:  # SSL and GSS requests are declined ("N"); then the startup packet
                length = struct.unpack("!i", _read(conn, 4))[0]
                code = struct.unpack("!i", _read(conn, 4))[0]
                _read(conn, length - 8)
                if code not in (80877103, 80877104):
                    break
                conn.sendall(b"N")
            fields = b"SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0"
            conn.sendall(b"E" + struct.pack("!i", len(fields) + 4) + fields)
            self.refused += 1


def _read(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    for s in (src, dst):
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)


def test_an_open_fails_at_once_naming_the_cause_but_waits_for_a_server_starting_up(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # nothing listens: one error, naming the host, the port and the cause, and no retries
    # (the pool retried, logging each failure, until CONNECT_WAIT and then said only that)
    monkeypatch.setattr(postgres, "CONNECT_WAIT", 1.0)
    with pytest.raises(StorageError, match="cannot open records store") as err:
        PostgresDatabase("postgresql://nobody@127.0.0.1:1/none")
    assert 'server at "127.0.0.1", port 1 failed: Connection refused' in str(err.value)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("psycopg")] == []

    # a server that says it is starting up is waited for
    monkeypatch.setattr(postgres, "CONNECT_WAIT", 60.0)
    parts = urlsplit(pg_url)
    assert parts.hostname is not None and parts.port is not None
    starting = _StartingServer((parts.hostname, parts.port), refusals=2)
    try:
        url = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{starting.port}"))
        db = PostgresDatabase(url)
        try:
            assert db.read("SELECT 1") == [(1,)]
        finally:
            db.close()
    finally:
        starting.sock.close()
    assert starting.refused == 2


def test_close_ends_the_change_listener_without_waiting_for_its_poll(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a poll this long would keep the listener (and so close(), up to its join timeout) waiting
    monkeypatch.setattr(postgres, "LISTEN_POLL", 3600.0)
    for read_only in (False, True):
        db = PostgresDatabase(pg_url, read_only=read_only)
        before = set(threading.enumerate())
        listening = threading.Event()
        db.listen(listening.set)  # called once the listener has subscribed
        assert listening.wait(30)
        (listener,) = [
            t for t in threading.enumerate() if t not in before and t.name == "agentmem-listen"
        ]
        db.close()
        listener.join(30)
        assert not listener.is_alive(), f"read_only={read_only}: the listener outlived close()"


def test_a_bad_records_url_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="records_url"):
        AgentMemory(tmp_path / "home", records_url="mysql://db/agentmem")
    assert not (tmp_path / "home").exists()


def test_the_environment_variable_selects_postgres(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_embedder: CachedEmbedder
) -> None:
    monkeypatch.setenv("AGENTMEM_RECORDS_URL", pg_url)
    with AgentMemory(tmp_path / "node", embedder=shared_embedder, background=False) as mem:
        mem.bind("acme", user_id="u1").remember("The boiler was serviced in March")
        assert mem.records.shared
    # the home holds the node's keyword index and local state, no records file
    assert not (tmp_path / "node" / "records.sqlite3").exists()
    assert (tmp_path / "node" / "keywords").is_dir()
    db = PostgresDatabase(pg_url)
    try:
        assert db.read("SELECT content FROM memories") == [("The boiler was serviced in March",)]
    finally:
        db.close()


def test_a_second_node_with_its_own_embedded_chroma_is_refused(
    make_memory: MakeMemory, pg_url: str, tmp_path: Path
) -> None:
    first = make_memory(records_url=pg_url)
    first.bind("acme", user_id="u1").remember("The first node keeps the vectors")
    with pytest.raises(StorageError, match="same Chroma"):
        make_memory(records_url=pg_url)
    # the node that owns them opens again (here: after losing its keyword index)
    home = first.home
    first.close()
    shutil.rmtree(home / "keywords")
    again = make_memory(path=home, records_url=pg_url, background=False)
    assert again.flush(timeout=60)
    assert again.keywords.num_docs() == 1


# -- several nodes --------------------------------------------------------------------------------
def test_a_write_on_one_node_is_recallable_on_another(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    a = make_memory(records_url=pg_url, chroma_client=chroma)
    b = make_memory(records_url=pg_url, chroma_client=chroma)
    ma, mb = a.bind("acme", user_id="u1"), b.bind("acme", user_id="u1")
    mb.recall("warm up")
    for text in (
        "The staging deploy key is KX-93-ZQ-771",
        "Invoices go out on the 3rd",
        "Dana likes jazz",
    ):
        written = ma.remember(text).id
        token = text.split()[-1]

        def arrived(written: str = written, token: str = token) -> bool:
            return written in {h.id for h in mb.recall(token).items}

        # how soon is a figure of the cluster benchmark, not something a loaded machine can
        # promise a test: here it must arrive, through the change sequence
        _until(arrived, 60.0)
    # and B's own keyword index follows the change sequence (not only B's records scan)
    assert b.flush(timeout=30)
    assert b.keywords.num_docs() == 3
    assert not mb.recall("KX-93-ZQ-771").degraded


def test_a_change_on_one_node_wakes_the_others(make_memory: MakeMemory, pg_url: str) -> None:
    writer = make_memory(records_url=pg_url, background=False)
    listener = PostgresDatabase(pg_url)
    woke = threading.Event()
    try:
        listener.listen(woke.set)
        assert woke.wait(10)  # once when it starts listening: changes made before it
        time.sleep(0.2)
        woke.clear()
        writer.bind("acme", user_id="u1").remember("A change the other nodes hear about")
        assert woke.wait(10)
    finally:
        listener.close()


def test_each_row_is_embedded_once_across_the_nodes(
    make_memory: MakeMemory, pg_url: str, chroma: Any, shared_embedder: CachedEmbedder
) -> None:
    embedded: Counter[str] = Counter()
    lock = threading.Lock()

    class Counting(CachedEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> Any:
            with lock:
                embedded.update(texts)
            return super().embed_documents(texts)

    # small batches, so both nodes' embedders are busy at the same time
    cfg = MemoryConfig(embed_batch_size=8, index_interval=0.0)
    nodes = [
        make_memory(
            records_url=pg_url,
            chroma_client=chroma,
            embedder=Counting(shared_embedder.inner),
            config=cfg,
        )
        for _ in range(2)
    ]
    texts = [f"Shipment {n} left the Rotterdam warehouse on pallet {n * 7}" for n in range(160)]

    def write(node: AgentMemory, part: list[str]) -> None:
        node.bind("acme", user_id="u1").remember_many(part)

    threads = [
        threading.Thread(target=write, args=(nodes[i], texts[i::2])) for i in range(len(nodes))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for node in nodes:
        assert node.flush(timeout=120)
    assert sorted(embedded) == sorted(texts)
    assert set(embedded.values()) == {1}, [t for t, n in embedded.items() if n > 1][:5]
    assert sum(node.indexer.embedded_total for node in nodes) == len(texts)
    assert all(node.indexer.embedded_total > 0 for node in nodes)  # both took a share
    assert nodes[1].vectors.count(nodes[1].vectors.collections()[0]) == len(texts)


def test_a_node_on_an_empty_home_rebuilds_its_keyword_index_from_the_records(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    a = make_memory(records_url=pg_url, chroma_client=chroma)
    ma = a.bind("acme", user_id="u1")
    ma.remember_many([f"Ticket {n}: the printer on floor {n} jams" for n in range(60)])
    needle = ma.remember("The backup generator is tested every Friday at noon")
    assert a.flush(timeout=120)

    # a fresh node that has not indexed anything yet answers from the records and vectors,
    # and says so while its backlog is larger than what a recall scans
    fresh = make_memory(
        records_url=pg_url,
        chroma_client=chroma,
        background=False,
        config=MemoryConfig(pending_scan=16),
    )
    mf = fresh.bind("acme", user_id="u1")
    assert fresh.keywords.num_docs() == 0
    result = mf.recall("when is the backup generator tested?")
    assert result.degraded is True
    assert result.items[0].id == needle.id  # found through the shared vectors
    assert fresh.flush(timeout=120)
    assert fresh.keywords.num_docs() == 61
    result = mf.recall("backup generator Friday")
    assert result.degraded is False and result.items[0].id == needle.id


def test_concurrent_supersession_on_two_nodes_leaves_one_current_row(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    nodes = [make_memory(records_url=pg_url, chroma_client=chroma) for _ in range(2)]
    barrier = threading.Barrier(2)

    def write(i: int) -> None:
        m = nodes[i].bind("acme", user_id="u1")
        barrier.wait()
        for n in range(15):
            m.remember(f"Deploys go out on day {i}-{n}", memory_type="fact", topic_key="deploy")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    current = nodes[0].records.count(
        "topic_key = 'deploy' AND superseded_by IS NULL AND deleted_at IS NULL"
    )
    assert current == 1
    assert nodes[1].records.count("topic_key = 'deploy'") == 30


def test_a_write_that_names_no_keys_runs_alone(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    # maintenance, forgetting, erasure and imports name no keys: they take the cluster lock
    # exclusively, and every other node's writes wait for them
    a = make_memory(records_url=pg_url, chroma_client=chroma)
    b = make_memory(records_url=pg_url, chroma_client=chroma)
    done = threading.Event()

    def write_on_b() -> None:
        b.bind("acme", user_id="u1").remember("Written while the other node held a write")
        done.set()

    with a.records.write() as tx:
        tx.execute("SELECT 1")
        thread = threading.Thread(target=write_on_b)
        thread.start()
        _waiting_for(a, a.records.db.lock_id(CLUSTER_LOCK))
        assert not done.is_set()
    thread.join(30)
    assert done.is_set()


def _waiting_for(mem: AgentMemory, lock: int) -> None:
    """Until some transaction waits for the advisory lock number ``lock`` (``pg_locks``)."""
    high, low = (lock >> 32) & 0xFFFFFFFF, lock & 0xFFFFFFFF

    def waiting() -> bool:
        return bool(
            mem.records.read(
                "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                "AND classid::bigint = ? AND objid::bigint = ? AND objsubid = 1",
                (high, low),
            )[0][0]
        )

    _until(waiting, 30.0)


def test_writes_of_other_users_and_topics_run_while_one_topic_is_locked(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    a = make_memory(records_url=pg_url, chroma_client=chroma)
    b = make_memory(records_url=pg_url, chroma_client=chroma)
    u1, u2 = b.bind("acme", user_id="u1"), b.bind("acme", user_id="u2")
    first = u1.remember("Deploys go out on Mondays", memory_type="fact", topic_key="deploy")
    row = a.records.memories.get(first.id)
    assert row is not None
    held = topic_key("acme", row.partition, "deploy")
    done: dict[str, threading.Event] = {}

    def write(name: str, m: Any, text: str, topic: str | None) -> None:
        done[name] = threading.Event()

        def run() -> None:
            m.remember(text, memory_type="fact", topic_key=topic)
            done[name].set()

        threading.Thread(target=run).start()

    # node A holds u1's "deploy" topic, as a write superseding it would
    with a.records.db.write(keys=(held,)):
        write("same topic", u1, "Deploys go out on Tuesdays", "deploy")
        write("other user", u2, "Deploys go out on Fridays", "deploy")
        write("other topic", u1, "The office opens at nine", "office")
        write("no topic", u1, "Dana likes jazz", None)
        for name in ("other user", "other topic", "no topic"):
            assert done[name].wait(30), f"the write of {name} waited for u1's deploy topic"
        _waiting_for(a, a.records.db.lock_id(held))
        assert not done["same topic"].is_set()
    assert done["same topic"].wait(30)
    assert u1.recall("when do deploys go out", min_score=0.0).items[0].content.endswith("Tuesdays")
    current = a.records.count(
        "topic_key = 'deploy' AND superseded_by IS NULL AND deleted_at IS NULL"
    )
    assert current == 2  # one per user


def test_a_change_committed_after_a_later_one_reaches_every_keyword_index(
    make_memory: MakeMemory, pg_url: str, chroma: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Change N is written but not committed when change N+1 commits on another node: a node
    indexing meanwhile must not move past N (it would skip N forever)."""
    a = make_memory(records_url=pg_url, chroma_client=chroma, background=False)
    b = make_memory(records_url=pg_url, chroma_client=chroma, background=False)
    reader = make_memory(records_url=pg_url, chroma_client=chroma, background=False)
    inserted, release = threading.Event(), threading.Event()
    real_write = a.records.db.write

    @contextmanager
    def write_held_open(**kw: Any) -> Iterator[Any]:
        with real_write(**kw) as tx:
            yield tx
            inserted.set()  # the row and its change number are written, not committed
            assert release.wait(60)

    monkeypatch.setattr(a.records.db, "write", write_held_open)
    earlier: list[str] = []
    first = threading.Thread(
        target=lambda: earlier.append(
            a.bind("acme", user_id="u1").remember("The vault code is zqearly1").id
        )
    )
    first.start()
    try:
        assert inserted.wait(30)
        later = threading.Thread(
            target=lambda: b.bind("acme", user_id="u2").remember("The gate code is zqlate2")
        )
        later.start()
        later.join(30)
        assert not later.is_alive(), "a write of another user waited for an open write"
        reader.indexer.run_once()
        assert not reader.keywords.all_ids()  # zqlate2 waits behind the open transaction
        assert reader.records.index.held_back
        # recall still finds the committed row (from the records: read-your-writes)
        found = reader.bind("acme", user_id="u2").recall("zqlate2").items
        assert [h.content for h in found[:1]] == ["The gate code is zqlate2"]
    finally:
        release.set()
        first.join(30)
    reader.indexer.run_once(drain=True)
    assert len(reader.keywords.all_ids()) == 2 and earlier[0] in reader.keywords.all_ids()
    assert not reader.records.index.held_back
    assert reader.stats().keyword_pending == 0


def test_concurrent_writers_on_two_nodes_keep_every_guarantee(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    """Writers on two nodes, over several users: topics superseded serially (one current
    row per user and topic), the same write through both nodes stored once with one id,
    every acknowledged write readable on the other node at once, and every change in both
    nodes' keyword indexes once they caught up."""
    nodes = [make_memory(records_url=pg_url, chroma_client=chroma) for _ in range(2)]
    users = [f"u{n}" for n in range(4)]
    topics = ["deploy", "office", "lunch"]
    acked: list[tuple[int, str, str]] = []  # (node, id, content)
    same: dict[str, set[str]] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(8)

    def writer(w: int) -> None:
        node = w % 2
        try:
            barrier.wait()
            for n in range(12):
                user = users[(w + n) % len(users)]
                m = nodes[node].bind("acme", user_id=user)
                if n % 3 == 0:
                    text = f"Shared note {n} of {user}"  # written by every writer
                    got = m.remember(text)
                    with lock:
                        same.setdefault(text, set()).add(got.id)
                else:
                    topic = topics[n % len(topics)] if n % 3 == 1 else None
                    text = f"Writer {w} note {n} for {user}"
                    got = m.remember(text, memory_type="fact", topic_key=topic)
                other = nodes[1 - node].records.memories.get(got.id)
                assert other is not None and other.item.content == text
                with lock:
                    acked.append((node, got.id, text))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    assert all(len(ids) == 1 for ids in same.values()), same
    records = nodes[0].records
    assert records.count("content LIKE 'Shared note %'") == len(same)
    doubled = records.read(
        "SELECT tenant_id, partition, topic_key, COUNT(*) FROM memories WHERE topic_key IS "
        "NOT NULL AND superseded_by IS NULL AND deleted_at IS NULL "
        "GROUP BY tenant_id, partition, topic_key HAVING COUNT(*) > 1"
    )
    assert doubled == []
    live = {r[0] for r in records.read("SELECT id FROM memories WHERE deleted_at IS NULL")}
    assert {id_ for _, id_, _ in acked} <= live
    for node in nodes:
        assert node.flush(timeout=120)
        assert node.keywords.all_ids() == live


def test_the_same_write_through_two_nodes_is_stored_once(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    a = make_memory(records_url=pg_url, chroma_client=chroma)
    b = make_memory(records_url=pg_url, chroma_client=chroma)
    first = a.bind("acme", user_id="u1").remember("My passport expires in 2031")
    again = b.bind("acme", user_id="u1").remember("My passport expires in 2031")
    assert again.id == first.id
    assert a.records.count("content = 'My passport expires in 2031'") == 1


def test_forget_and_erase_on_one_node_reach_the_other_nodes_index(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    a = make_memory(records_url=pg_url, chroma_client=chroma)
    b = make_memory(records_url=pg_url, chroma_client=chroma)
    ma = a.bind("acme", user_id="u1")
    keep = a.bind("acme", user_id="u2").remember("Reza parks in bay zqkeep42")
    gone = ma.remember("The vault code is zqcanary7731")
    other = ma.remember("Lena's locker is zqlocker55")
    assert a.flush(timeout=60) and b.flush(timeout=60)
    assert b.keywords.num_docs() == 3

    assert ma.forget(gone.id)
    _until(lambda: gone.id not in b.keywords.all_ids(), 5.0)
    assert not b.bind("acme", user_id="u1").recall("zqcanary7731").items

    receipt = a.erase(tenant_id="acme", user_id="u1")
    assert receipt is not None
    _until(lambda: other.id not in b.keywords.all_ids(), 5.0)
    assert b.keywords.all_ids() == {keep.id}
    assert a.records.count("user_id = 'u1'") == 0
    for needle in ("zqcanary7731", "zqlocker55"):
        assert not a.records.count("content LIKE ?", (f"%{needle}%",))
        assert not b.bind("acme", user_id="u1").recall(needle, min_score=0.0).items
    assert b.bind("acme", user_id="u2").recall("zqkeep42").items[0].id == keep.id


def test_an_erased_message_leaves_no_context_in_the_other_nodes_entries(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    """A message of the erased agent preceded another agent's message in a shared session:
    every node writes the follower's keyword entry again without it, not only the erasing
    node (which rewrites its whole keyword index)."""
    a = make_memory(records_url=pg_url, chroma_client=chroma)
    b = make_memory(records_url=pg_url, chroma_client=chroma)
    scout = a.bind("acme", user_id="u9", agent_id="scout", session_id="shared")
    helper = a.bind("acme", user_id="u9", agent_id="helper", session_id="shared")
    scout.add_message("user", "Scout, what is the garage code zqgarage4711?")
    follower = helper.add_message("user", "Helper, book the dentist for Tuesday afternoon.")
    assert a.flush(timeout=60) and b.flush(timeout=60)
    row = a.records.memories.get(follower.id)
    assert row is not None
    flt = KeywordFilter(tenant="acme", partitions=(row.partition,))
    canary = b.keywords.query_terms("zqgarage4711")
    assert [i for i, _ in b.keywords.search(canary, flt, 10)] != []  # the scout's and its context

    assert a.erase(tenant_id="acme", agent_id="scout") is not None
    for node in (a, b):
        _until(lambda node=node: not node.keywords.search(canary, flt, 10), 10.0)
        dentist = node.keywords.search(node.keywords.query_terms("dentist Tuesday"), flt, 10)
        assert [i for i, _ in dentist] == [follower.id]


def test_a_message_embedded_ahead_of_one_nodes_keyword_pass_is_gated_on_every_node(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    """Node B embeds a few new messages before its keyword pass writes them (gated); node A's
    keyword pass wrote them meanwhile, before any was embedded (provisional: all context).
    B's embedder must requeue the off-topic one for every node, not skip it as one its own
    keyword pass is about to write."""
    a = make_memory(records_url=pg_url, chroma_client=chroma, background=False)
    b = make_memory(records_url=pg_url, chroma_client=chroma, background=False)
    m = a.bind("acme", user_id="u1", session_id="s1")
    budget = m.add_message("user", "The quarterly budget review is on Friday.")
    m.add_message("assistant", "We need the finance slides ready for that review.")
    cat = m.add_message("user", "My cat only eats tuna.")
    embedder = b.indexer.embedder

    class KeywordsOfAMeanwhile:
        def __getattr__(self, name: str) -> Any:
            return getattr(embedder, name)

        def embed_documents(self, texts: Any) -> Any:
            a.indexer.run_once()  # A's keyword pass: nothing embedded yet
            return embedder.embed_documents(texts)

    b.indexer.embedder = KeywordsOfAMeanwhile()
    try:
        b.indexer.run_once()
    finally:
        b.indexer.embedder = embedder
    assert a.flush(timeout=60) and b.flush(timeout=60)
    row = a.records.memories.get(budget.id)
    assert row is not None
    flt = KeywordFilter(tenant="acme", partitions=(row.partition,))
    for node in (a, b):
        hits = {i for i, _ in node.keywords.search(node.keywords.query_terms("budget"), flt, 10)}
        assert budget.id in hits and cat.id not in hits


def test_tenants_stay_apart_across_nodes(make_memory: MakeMemory, pg_url: str, chroma: Any) -> None:
    a = make_memory(records_url=pg_url, chroma_client=chroma)
    b = make_memory(records_url=pg_url, chroma_client=chroma)
    secret = a.bind("globex", user_id="u1").remember("Globex keeps its violins in vault KX-93")
    mine = a.bind("acme", user_id="u1").remember("Acme keeps its violins in the attic")
    assert a.flush(timeout=60) and b.flush(timeout=60)
    for query in ("violins", "vault KX-93", "musical instruments storage"):
        seen = {h.id for h in b.bind("acme", user_id="u1").recall(query, min_score=0.0).items}
        assert secret.id not in seen and mine.id in seen


# -- the command line ----------------------------------------------------------------------------
def test_every_command_takes_records_url(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    base = ["--records-url", pg_url, "--tenant", "acme", "--user", "u1"]
    assert main([*base, "--home", one, "remember", "The wifi password is zqwifi99"]) == 0
    capsys.readouterr()
    assert main([*base, "--home", one, "--json", "recall", "zqwifi99"]) == 0
    assert "The wifi password is zqwifi99" in capsys.readouterr().out
    # a second node needs the shared Chroma server the first one's embedded store is not
    assert main([*base, "--home", two, "--json", "recall", "zqwifi99"]) == 1
    assert "same Chroma server" in capsys.readouterr().out
    assert main(["--records-url", pg_url, "--home", one, "keys", "create", "--tenant", "acme"]) == 0
    capsys.readouterr()
    # the key lives in Postgres: another home lists it
    assert main(["--records-url", pg_url, "--home", two, "keys", "list", "--json"]) == 0
    assert '"tenant": "acme"' in capsys.readouterr().out
    assert main(["--records-url", "sqlite:///x", "--home", one, "stats"]) == 2


def test_export_from_postgres_imports_into_sqlite_exactly(
    make_memory: MakeMemory, pg_url: str, chroma: Any
) -> None:
    from agentmem.maintenance import transfer
    from agentmem.models import Identity

    source = make_memory(records_url=pg_url, chroma_client=chroma)
    m = source.bind("acme", user_id="u1", agent_id="support", session_id="s1")
    m.add_messages(
        [
            {"role": "user", "content": "My router keeps dropping Wi-Fi"},
            {"role": "assistant", "content": "Try channel 6"},
        ]
    )
    m.close_session()
    m.remember("Prefers email over phone calls", memory_type="preference")
    source.bind("acme", user_id="u2", session_id="s2").add_message("user", "Book a table")
    assert source.flush(timeout=60)
    lines = list(transfer.export_lines(source.context))
    kinds = Counter(line.get("kind") for line in lines)
    assert kinds["chat_message"] >= 3 and kinds["memory"] >= 1  # messages and chunks
    assert any(line.get("session_id") == "s1" and line.get("tier") for line in lines)

    target = make_memory()
    plan = transfer.parse_lines([json.dumps(line) for line in lines], Identity(tenant_id="acme"))
    transfer.apply_plan(target.context, plan)
    assert target.flush(timeout=60)
    again = list(transfer.export_lines(target.context))
    for n, (a, b) in enumerate(zip(again, lines, strict=False)):
        diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
        assert not diff, (n, diff)
    assert again == lines


def test_a_node_home_opened_without_its_records_url_is_refused(
    make_memory: MakeMemory, pg_url: str
) -> None:
    node = make_memory(records_url=pg_url)
    node.bind("acme", user_id="u1").remember("Kept in Postgres")
    home = node.home
    node.close()
    for read_only in (False, True):
        with pytest.raises(StorageError, match="records URL"):
            AgentMemory(home, read_only=read_only)
    assert not (home / "records.sqlite3").exists()  # no empty SQLite store was started
