"""Load benchmark of ``agentmem serve``: K client processes, mixed recall and writes.

Builds a data dir of ``--memories`` synthetic memories (``agentmem.bench.corpus``), then:

1. **in-process, one caller**: ``--queries`` recalls on ``AgentMemory`` directly (the floor),
   on a copy of the data dir taken before the server starts (a dir has one writer);
2. **server, one client**: the same recalls through ``agentmem.connect`` (the HTTP cost per
   recall is remote p50 minus in-process p50);
3. **server, K clients**: ``--clients`` processes for ``--duration`` seconds, each looping
   over recall (fresh queries) and writes (``add_message`` / ``remember``, ``--write-ratio``);
   then every acknowledged write is read back (lost writes must be 0);
4. **in-process, K threads**: the same mix on ``AgentMemory`` directly, for comparison.

Phases 1 and 2 run together, query by query (which side goes first alternates), so the
machine's load of the moment hits both sides of each pair; each side sees each query once,
so neither gains from the query-embedding cache.
Both sides use the same embedder settings (``--embed-threads``, the server's default 1). The
server's ``Server-Timing`` header also splits each remote recall into the operation's own
time and the transport (round trip minus that).

Usage::

    python benchmarks/server_load.py --memories 10000 --clients 8 --duration 20

Prints a table and (``--json FILE``) the figures as JSON. Targets on 2 cores: zero errors and
zero lost writes with 8 clients; throughput with 8 clients at least 0.9x the in-process
threads'; HTTP cost per recall at most 1.5 ms at p50. ``benchmarks/http_profile.py`` splits
that cost into its parts.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agentmem import AgentMemError, AgentMemory, connect
from agentmem.bench.corpus import QUERY_KINDS, iter_memories, memory_at
from agentmem.bench.stats import summarize
from agentmem.client._wire import op_body, result_of
from agentmem.embeddings import CachedEmbedder, OnnxMiniLMEmbedder
from agentmem.server.keys import create_key
from agentmem.storage.datadir import RECORDS_FILE
from agentmem.storage.records import RecordStore

TENANT, USER = "bench", "bench-user"
_READY = re.compile(r"ready on (http://[0-9.]+:\d+)")


# -- data ------------------------------------------------------------------------------------
def embedder(threads: int) -> CachedEmbedder:
    """The embedder of the in-process runs: configured as the server's."""
    return CachedEmbedder(OnnxMiniLMEmbedder(intra_op_threads=threads))


def build(home: Path, n: int, seed: int) -> None:
    with AgentMemory(home, embedder=embedder(2)) as mem:
        facts = mem.bind(TENANT, user_id=USER)
        for b, start in enumerate(range(0, n, 500)):
            batch = list(iter_memories(min(start + 500, n), seed, start))
            if b % 2 == 0:
                session = mem.bind(TENANT, user_id=USER, session_id=f"bench-s{b}")
                session.add_messages({"role": "user", "content": m.text} for m in batch)
            else:
                facts.remember_many(
                    {"content": m.text, "memory_type": m.memory_type} for m in batch
                )
        while not mem.flush(timeout=30):
            print(f"  indexing... {mem.stats().vector_pending} left", file=sys.stderr)


def queries(n: int, corpus: int, seed: int, salt: int) -> list[str]:
    r = random.Random(seed * 7919 + salt)
    return [
        memory_at(i, seed).query(QUERY_KINDS[j % 2])
        for j, i in enumerate(r.sample(range(corpus), min(n, corpus)))
    ]


# -- the server --------------------------------------------------------------------------------
def start_server(home: Path, embed_threads: int) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env["AGENTMEM_RATE_LIMIT"] = "0"
    env["AGENTMEM_SERVER_EMBED_THREADS"] = str(embed_threads)
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmem.cli", "--home", str(home), "serve", "--port", "0",
         "--no-access-log"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        found = _READY.search(line)
        if found:
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, found.group(1)
    raise RuntimeError("the server did not start")


def stop_server(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(120)


def new_key(home: Path) -> str:
    records = RecordStore(home / RECORDS_FILE)
    try:
        return create_key(records, tenant_id=TENANT).key
    finally:
        records.close()


# -- workloads ---------------------------------------------------------------------------------
def timed_recalls(m: Any, texts: list[str]) -> list[float]:
    out = []
    for text in texts:
        t = time.perf_counter()
        m.recall(text)
        out.append((time.perf_counter() - t) * 1000)
    return out


def timed_remote_recalls(client: Any, m: Any, texts: list[str]) -> tuple[list[float], list[float]]:
    """Round-trip times and the server's own time for the operation (``Server-Timing``)."""
    rtt, op = [], []
    for text in texts:
        t = time.perf_counter()
        response = client.request(
            "POST", "/v1/ops/recall", content=op_body("recall", m.identity, {"query": text})
        )
        result_of("recall", response)
        rtt.append((time.perf_counter() - t) * 1000)
        op.append(float(response.headers["server-timing"].split("dur=")[1]))
    return rtt, op


def mixed_loop(
    m: Any, name: str, pool: list[str], duration: float, write_ratio: float
) -> dict[str, Any]:
    r = random.Random(name)
    lat: dict[str, list[float]] = {"recall": [], "write": []}
    errors: list[str] = []
    acked: list[str] = []
    q = 0
    i = 0
    end = time.monotonic() + duration
    while time.monotonic() < end:
        t = time.perf_counter()
        try:
            if r.random() < write_ratio:
                i += 1
                if i % 2:
                    acked.append(m.add_message("user", f"{name} says parcel {i} is late").id)
                else:
                    acked.append(m.remember(f"{name} fact {i}: prefers slot {i % 7}").id)
                lat["write"].append((time.perf_counter() - t) * 1000)
            else:
                m.recall(pool[q % len(pool)])
                q += 1
                lat["recall"].append((time.perf_counter() - t) * 1000)
        except AgentMemError as exc:
            errors.append(type(exc).__name__)
    return {"lat": lat, "errors": errors, "acked": acked}


def client_process(url: str, key: str, name: str, pool: list[str], duration: float,
                   write_ratio: float, out: Any) -> None:  # fmt: skip
    with connect(url, api_key=key) as client:
        m = client.bind(user_id=USER, session_id=name)
        m.recall(pool[-1])  # connection and first-request warm-up
        out.put(mixed_loop(m, name, pool[:-1], duration, write_ratio))


def merge(results: list[dict[str, Any]], duration: float) -> dict[str, Any]:
    recall = [x for r in results for x in r["lat"]["recall"]]
    write = [x for r in results for x in r["lat"]["write"]]
    return {
        "ops_per_s": round((len(recall) + len(write)) / duration, 1),
        "recall_per_s": round(len(recall) / duration, 1),
        "write_per_s": round(len(write) / duration, 1),
        "recall": summarize(recall),
        "write": summarize(write),
        "errors": sum(len(r["errors"]) for r in results),
        "error_types": sorted({e for r in results for e in r["errors"]}),
        "acked": [i for r in results for i in r["acked"]],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--memories", type=int, default=10_000)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--write-ratio", type=float, default=0.2)
    p.add_argument("--queries", type=int, default=300, help="single-caller recalls per phase")
    p.add_argument(
        "--embed-threads", type=int, default=1, help="onnxruntime threads per call (both sides)"
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--home", default=None, help="reuse (or keep) this data dir")
    p.add_argument("--json", default=None, help="write the figures to this file")
    args = p.parse_args(argv)
    servers: list[subprocess.Popen[str]] = []
    try:
        return run(args, servers)
    finally:
        for proc in servers:  # a failed run leaves no server behind
            if proc.poll() is None:
                proc.kill()


def run(args: argparse.Namespace, servers: list[subprocess.Popen[str]]) -> int:

    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="agentmem-load-"))
    if not (home / RECORDS_FILE).exists():
        print(f"building {args.memories:,} memories in {home}", file=sys.stderr)
        build(home, args.memories, args.seed)
    single = queries(args.queries + 20, args.memories, args.seed, salt=1)
    warm, measured = single[:20], single[20:]
    pools = [queries(5000, args.memories, args.seed, salt=100 + k) for k in range(args.clients)]
    fig: dict[str, Any] = {"memories": args.memories, "clients": args.clients,
                           "duration_s": args.duration, "write_ratio": args.write_ratio,
                           "cpus": os.cpu_count()}  # fmt: skip

    # phases 1 and 2 together, query by query, the in-process side on a copy of the dir
    inproc: list[float] = []
    remote: list[float] = []
    server_op: list[float] = []
    twin = Path(tempfile.mkdtemp(prefix="agentmem-load-twin-")) / "home"
    shutil.copytree(home, twin)
    print("1-2/4 in-process and server, one caller each, query by query", file=sys.stderr)
    proc, url = start_server(home, args.embed_threads)
    servers.append(proc)
    key = new_key(home)
    try:
        with (
            AgentMemory(twin, embedder=embedder(args.embed_threads)) as mem,
            connect(url, api_key=key) as client,
        ):
            local = mem.bind(TENANT, user_id=USER, session_id="inproc")
            m = client.bind(user_id=USER, session_id="single")
            timed_recalls(local, warm)
            timed_recalls(m, warm)
            for n, text in enumerate(measured):
                if n % 2:
                    inproc += timed_recalls(local, [text])
                rtt, op = timed_remote_recalls(client, m, [text])
                remote += rtt
                server_op += op
                if not n % 2:
                    inproc += timed_recalls(local, [text])
    finally:
        shutil.rmtree(twin.parent, ignore_errors=True)
    fig["inprocess_single"] = summarize(inproc)
    fig["server_single"] = summarize(remote)
    fig["server_single_op"] = summarize(server_op)
    fig["transport_per_recall"] = summarize([a - b for a, b in zip(remote, server_op, strict=True)])
    fig["http_cost_per_pair"] = summarize([a - b for a, b in zip(remote, inproc, strict=True)])
    try:
        print(f"3/4 server, {args.clients} client processes", file=sys.stderr)
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        workers = [
            ctx.Process(target=client_process,
                        args=(url, key, f"c{k}", pools[k], args.duration, args.write_ratio, out))
            for k in range(args.clients)
        ]  # fmt: skip
        for w in workers:
            w.start()
        results = [out.get(timeout=args.duration + 300) for _ in workers]
        for w in workers:
            w.join(60)
        load = merge(results, args.duration)
        acked = load.pop("acked")
        lost = 0
        with connect(url, api_key=key) as client:
            reader = client.bind(user_id=USER)
            for k in range(args.clients):
                session = {i.id for i in client.bind(user_id=USER, session_id=f"c{k}").messages()}
                for r in results[k]["acked"]:
                    if r in session:
                        continue
                    try:
                        reader.get(r)
                    except AgentMemError:
                        lost += 1
        load["acknowledged_writes"] = len(acked)
        load["lost_writes"] = lost
        fig["server_load"] = load
    finally:
        stop_server(proc)

    print(f"4/4 in-process, {args.clients} threads", file=sys.stderr)
    with AgentMemory(home, embedder=embedder(args.embed_threads)) as mem:
        boxes: list[dict[str, Any]] = []

        def run(k: int) -> None:
            m = mem.bind(TENANT, user_id=USER, session_id=f"t{k}")
            boxes.append(mixed_loop(m, f"t{k}", pools[k], args.duration, args.write_ratio))

        threads = [threading.Thread(target=run, args=(k,)) for k in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        inproc = merge(boxes, args.duration)
        inproc.pop("acked")
        fig["inprocess_threads"] = inproc

    s, r, lo, it = (
        fig["inprocess_single"],
        fig["server_single"],
        fig["server_load"],
        fig["inprocess_threads"],
    )
    fig["http_cost_p50_ms"] = round(r["p50"] - s["p50"], 3)
    fig["load_p95_over_single_p95"] = round(lo["recall"]["p95"] / r["p95"], 2)
    rows = [
        ("in-process, 1 caller", "-", s, None),
        ("server, 1 client", "-", r, None),
        (f"server, {args.clients} clients", lo["ops_per_s"], lo["recall"], lo),
        (f"in-process, {args.clients} threads", it["ops_per_s"], it["recall"], it),
    ]
    print(f"\n{args.memories:,} memories, {os.cpu_count()} CPUs, write ratio {args.write_ratio}, "
          f"{args.duration:g} s per load phase")  # fmt: skip
    print("| run | ops/s | recall p50 / p95 / p99 ms | write p50 / p95 / p99 ms | errors |")
    print("|---|---:|---:|---:|---:|")
    for name, ops, rec, mix in rows:
        w = (
            f"{mix['write']['p50']:.2f} / {mix['write']['p95']:.2f} / {mix['write']['p99']:.2f}"
            if mix
            else "-"
        )
        e = mix["errors"] if mix else 0
        print(
            f"| {name} | {ops} | {rec['p50']:.2f} / {rec['p95']:.2f} / {rec['p99']:.2f} | {w} | {e} |"
        )
    print(f"\nHTTP cost per recall (p50 remote - p50 in-process): {fig['http_cost_p50_ms']:.2f} ms "
          f"(p50 of the pairs' differences: {fig['http_cost_per_pair']['p50']:.2f} ms)")  # fmt: skip
    t, o = fig["transport_per_recall"], fig["server_single_op"]
    print(f"same requests: server's own time p50 {o['p50']:.2f} ms, transport (round trip - "
          f"server time) p50 / p95 {t['p50']:.2f} / {t['p95']:.2f} ms")  # fmt: skip
    print(f"recall p95 under load / single-client p95: {fig['load_p95_over_single_p95']:.2f}x")
    print(f"acknowledged writes under load: {lo['acknowledged_writes']}, lost: {lo['lost_writes']}")
    if args.json:
        Path(args.json).write_text(json.dumps(fig, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
