"""A cluster: several ``agentmem serve`` nodes over one Postgres and one Chroma server.

Each node is a real subprocess on its own empty home, started with ``--records-url`` and
``--chroma-url``; the API keys are made once with ``agentmem keys create --records-url`` and
work on every node. The test writes on one node and reads on another, kills a node with
SIGKILL in the middle of a write load and checks that no acknowledged write is lost, and
starts a fresh node on an empty home that catches up from Postgres.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _agentmem_server import ServerProcess

import agentmem
from agentmem.bench.corpus import memory_at

pytestmark = pytest.mark.slow

#: How soon a write accepted by one node must be recallable on every other node.
VISIBLE_WITHIN = 1.0


@pytest.fixture
def cluster(
    postgres_server: Any, chroma_url: str, tmp_path: Path
) -> Iterator[tuple[list[str], Any]]:
    """(global flags of a node of this cluster, a factory of nodes on fresh homes)."""
    flags = ["--records-url", postgres_server.new_schema(), "--chroma-url", chroma_url]
    nodes: list[ServerProcess] = []

    def node(name: str) -> ServerProcess:
        env = {"AGENTMEM_SESSION_IDLE_SECONDS": "0", "AGENTMEM_JUDGE_INTERVAL": "0"}
        server = ServerProcess(tmp_path / name, env=env, global_args=flags)
        nodes.append(server)
        return server.start()

    yield flags, node
    # SIGKILL, not a clean stop: a clean stop flushes the indexer, which here waits for the
    # rows the killed node had claimed to embed until their lease (CLAIM_SECONDS, 60 s) runs
    # out; the records hold every write. The clean stop has its own tests (test_server_crash).
    for server in nodes:
        server.kill()


def _key(flags: list[str], home: Path) -> str:
    """``agentmem keys create`` against the cluster's records (any home: keys live in Postgres)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    argv = [sys.executable, "-m", "agentmem.cli", "--home", str(home), *flags, "--json"]
    argv += ["keys", "create", "--tenant", "acme", "--admin", "--name", "cluster-test"]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return str(json.loads(done.stdout)["key"])


def _token() -> str:
    return f"tok{uuid.uuid4().hex[:10]}"


def _recall_ids(bound: Any, query: str) -> tuple[list[str], bool]:
    result = bound.recall(query, top_k=5, min_score=0.0)
    return [h.id for h in result.items], bool(result.degraded)


def test_write_on_one_node_read_on_another_kill_and_catch_up(cluster, tmp_path: Path) -> None:
    flags, node = cluster
    key = _key(flags, tmp_path / "keys-home")
    a = node("a")
    b = node("b")
    on_a = agentmem.connect(a.url, api_key=key).bind(user_id="u1")
    on_b = agentmem.connect(b.url, api_key=key).bind(user_id="u1")

    # 1. a write accepted by A is recallable on B within a second (keyword and vector half)
    on_b.recall("warm up the query path")  # a node's first query loads its embedder
    lags = []
    for i in range(5):
        token = _token()
        written = on_a.remember(f"Shipment {token} leaves the Rotterdam warehouse on day {i}")
        start = time.monotonic()
        while True:
            # the time a recall was asked, not when its answer came back: how long after the
            # acknowledgement the write is visible on B, apart from how long B takes to answer
            asked = time.monotonic()
            if written.id in _recall_ids(on_b, token)[0]:
                break
            assert asked - start < VISIBLE_WITHIN, f"{token} not on B after 1 s"
            time.sleep(0.02)
        lags.append(asked - start)
    assert max(lags) < VISIBLE_WITHIN, lags
    print("A->B visibility (ms):", [round(lag * 1000) for lag in lags])
    fact = on_a.remember("The customer's daughter plays the violin every evening")
    start = time.monotonic()
    while True:
        asked = time.monotonic()
        if [h.id for h in on_b.recall("musical instrument child").items[:1]] == [fact.id]:
            break
        assert asked - start < VISIBLE_WITHIN, "the meaning of A's write is not on B after 1 s"
        time.sleep(0.02)

    # 2. SIGKILL A in the middle of a write load: every acknowledged write survives
    acked: list[tuple[str, str]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def load() -> None:
        with agentmem.connect(a.url, api_key=key) as client:
            bound = client.bind(user_id="u1")
            while not stop.is_set():
                token = _token()
                try:
                    got = bound.remember(f"Load test entry {token} for the audit trail")
                except Exception as exc:  # the node died under the request
                    errors.append(exc)
                    return
                acked.append((got.id, token))

    writers = [threading.Thread(target=load) for _ in range(3)]
    for t in writers:
        t.start()
    deadline = time.monotonic() + 60
    while len(acked) < 60 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert a.kill() == -9
    stop.set()
    for t in writers:
        t.join(30)
    assert len(acked) >= 60 and errors, (len(acked), errors)
    print(f"acknowledged before SIGKILL: {len(acked)}")
    for id_, token in acked:
        assert on_b.get(id_).content.endswith(f"{token} for the audit trail")
    for id_, token in acked[-10:]:  # the last acknowledged ones, recallable on B
        ids, _ = _recall_ids(on_b, token)
        assert id_ in ids

    # 3. a fresh node on an empty home catches up and serves correct results
    # varied texts (the benchmark corpus): 2,000 near-identical ones would make a graph in
    # which Chroma's HNSW search misses an outlier at n_results=40 (measured: the violin
    # fact at cosine 0.51 missed, found from n_results=200), a property of approximate
    # search on degenerate data, not of the cluster
    corpus = [memory_at(i, 0) for i in range(2000)]
    bulk = []
    for start in range(0, len(corpus), 500):
        bulk += on_b.remember_many([m.text for m in corpus[start : start + 500]])
    c = node("c")
    on_c = agentmem.connect(c.url, api_key=key).bind(user_id="u1")
    seen_degraded = []
    deadline = time.monotonic() + 120
    while True:
        # while degraded too: the backlog rows naming the queried id are read from Postgres
        ids, degraded = _recall_ids(on_c, corpus[123].query("keyword"))
        assert bulk[123].id in ids, (
            "the fresh node answered wrongly",
            degraded,
            c.output()[-3000:],
        )
        seen_degraded.append(degraded)
        if not degraded:
            break
        assert time.monotonic() < deadline, "the fresh node did not catch up in 120 s"
        time.sleep(0.1)
    print(f"fresh node: {sum(seen_degraded)} degraded answers, then caught up")
    for id_, token in acked[:10]:
        ids, degraded = _recall_ids(on_c, token)
        assert id_ in ids and not degraded
    meaning = on_c.recall("musical instrument child")
    assert [h.id for h in meaning.items[:1]] == [fact.id], (meaning, c.output()[-3000:])


def test_erasing_a_user_on_one_node_removes_its_store_values_from_postgres(
    cluster, tmp_path: Path
) -> None:
    import psycopg

    from langchain_agentmem import AgentMemStore

    flags, node = cluster
    key = _key(flags, tmp_path / "keys-home")
    a, b = node("a"), node("b")
    with agentmem.connect(a.url, api_key=key) as on_a, agentmem.connect(b.url, api_key=key) as on_b:
        store = AgentMemStore(on_a, user_position=1)
        store.put(("memories", "u1"), "code", {"content": "Canary-PG-7305 locker code"})
        store.put(("memories", "u2"), "code", {"content": "Canary-PG-1196 locker code"})

        on_b.erase(tenant_id="acme", user_id="u1")

        assert AgentMemStore(on_b, user_position=1).search(("memories", "u1")) == []
        assert store.get(("memories", "u1"), "code") is None
        assert store.get(("memories", "u2"), "code") is not None
    with psycopg.connect(flags[1]) as conn:
        rows = conn.execute(
            "SELECT COUNT(*) FROM agent_state WHERE value LIKE %s", ("%Canary-PG-7305%",)
        ).fetchone()
    assert rows == (0,)
