"""Cluster mode against the embedded store: recall latency at N memories, write throughput
with one, two and three ``agentmem serve`` nodes, and the lock waits in Postgres meanwhile.

Needs a running Postgres and Chroma server (their URLs as arguments; an empty Postgres
schema/database and an unused Chroma database, both created when missing):

    python benchmarks/cluster_bench.py \\
        --records-url postgresql://postgres@127.0.0.1:5432/bench \\
        --chroma-url 'http://127.0.0.1:8000?database=bench' --memories 100000

1. **Load**: the same ``N`` memories of the synthetic corpus of ``agentmem bench``
   (:mod:`agentmem.bench.corpus`) into an embedded store (SQLite, Tantivy, embedded Chroma)
   and into a cluster store (Postgres records, Tantivy, the Chroma server), one after the
   other, each until both its indexes caught up. Each text is embedded once: the second store
   gets the vectors the first one computed (a memo in front of the model), so its figure is
   the storage path, not the model.
2. **Recall**: the same queries (half quote an id, half paraphrase) through both stores,
   interleaved (each query through both back to back, the order rotating), with the query
   embedding already cached, so the figures compare what the two storage paths cost; the
   model's ``embed_query`` time (the same for both) is printed beside them. Recall@10 counts
   queries whose target memory is among the hits.
3. **Writes**: ``agentmem serve`` nodes over the same Postgres and Chroma server; client
   threads (``--writers``) call ``remember`` one memory at a time for ``--write-seconds``,
   each write for one of ``--users`` users in turn, spread over each node count of
   ``--nodes``. Reported: acknowledged writes per second, the acknowledgement latency
   p50/p95, and the lock waits: Postgres's ``pg_stat_activity`` sampled every 20 ms, the
   mean number of backends waiting for a lock (by kind: ``advisory``, ``transactionid``,
   ``tuple``...) and the share of samples with any waiting; and the nodes' CPU time per
   acknowledged write (steadier than writes/s on a machine shared with other work).
   Embedding runs meanwhile in the nodes' background.

   ``--code LABEL=DIR`` (repeatable) runs the nodes of each write phase from the agentmem
   sources in ``DIR`` (its ``core`` first on ``PYTHONPATH``; e.g. a worktree of an older
   commit) as well as from this code (label ``this``), each on its own new Postgres schema and
   Chroma database; the variants take turns for each node count, ``--rounds`` times, so a
   change in machine load hits them alike.

Nothing here is asserted by the tests; the figures go to stdout (``--json`` for one JSON
document).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import agentmem
from agentmem import AgentMemory
from agentmem.bench.corpus import QUERY_KINDS, memory_at
from agentmem.bench.harness import (
    TENANT,
    USER,
    agentmem_search,
    bulk_import,
    interleaved,
    make_queries,
    recall_figures,
    score,
)
from agentmem.bench.stats import summarize
from agentmem.config import Settings
from agentmem.embeddings import CachedEmbedder, Embedder, default_embedder
from agentmem.storage.embedding_cache import DiskEmbeddingCache

_READY = re.compile(r"ready on (http://[0-9.]+:\d+)")


def load(
    name: str, home: Path, settings: Settings, embedder: Embedder, n: int, wanted: set[int]
) -> tuple[AgentMemory, dict[int, str], dict[str, Any]]:
    mem = AgentMemory(home, embedder=embedder, settings=settings)
    t = time.perf_counter()
    ids, figures, _ = bulk_import(
        mem, n, 0, 1000, wanted, lambda msg: print(f"[{name}] {msg}", file=sys.stderr)
    )
    figures["wall_s"] = round(time.perf_counter() - t, 1)
    return mem, ids, figures


def recall_both(
    stores: dict[str, tuple[AgentMemory, dict[int, str]]],
    n: int,
    queries_n: int,
    embedder: CachedEmbedder,
    model: Embedder,
) -> dict[str, Any]:
    queries = make_queries(queries_n, n, 0)
    searches = {}
    for name, (mem, ids) in stores.items():
        bound = mem.bind(TENANT, user_id=USER, session_id="bench-queries")
        search, _ = agentmem_search(bound, ids, 10)
        searches[name] = search
        for j in range(20):  # warm-up on other queries
            search(memory_at(n + 5000 + j, 0).query(QUERY_KINDS[j % 2]))
    floor = []
    for q in queries:  # cache every query's vector; time the model once per query
        t = time.perf_counter()
        model.embed_query(q.text)
        floor.append((time.perf_counter() - t) * 1000)
        embedder.embed_query(q.text)
    lat, results = interleaved(searches, [q.text for q in queries])
    out: dict[str, Any] = {"queries": len(queries), "embed_query_ms": summarize(floor)}
    for name in stores:
        out[name] = {
            "recall_ms": summarize(lat[name]),
            "recall_at_10": recall_figures(score(queries, results[name], 10)),
        }
    return out


class Node:
    """One ``agentmem serve`` subprocess on its own home (from the sources in ``code``, or
    this interpreter's agentmem)."""

    def __init__(self, home: Path, flags: list[str], code: Path | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
        env.update(AGENTMEM_RATE_LIMIT="0", AGENTMEM_JUDGE_INTERVAL="0")
        if code is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                [str(code / "core"), str(code), env.get("PYTHONPATH", "")]
            )
        argv = [sys.executable, "-m", "agentmem.cli", "--home", str(home), *flags, "serve"]
        argv += ["--port", "0", "--no-access-log", "--log-level", "warning"]
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            found = _READY.search(line)
            if found:
                self.url = found.group(1)
                break
        else:
            raise RuntimeError(f"node on {home} exited with {self.proc.wait()}")
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def cpu_seconds(self) -> float:
        """CPU time the node process has used so far (user + system, Linux ``/proc``)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


class LockWaits:
    """Samples ``pg_stat_activity`` of the records database every ``interval`` seconds in a
    thread: how many backends wait for a lock, by kind, while the write load runs."""

    def __init__(self, url: str, interval: float = 0.02) -> None:
        self.url = url
        self.interval = interval
        self.samples = 0
        self.busy_samples = 0
        self.waiting: Counter[str] = Counter()
        self.active = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LockWaits:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.wait(self.interval):
                rows = conn.execute(
                    "SELECT wait_event_type, wait_event FROM pg_stat_activity "
                    "WHERE datname = current_database() AND state = 'active' "
                    "AND pid != pg_backend_pid()"
                ).fetchall()
                self.samples += 1
                self.active += len(rows)
                locks = [str(event) for kind, event in rows if kind == "Lock"]
                self.waiting.update(locks)
                self.busy_samples += bool(locks)

    def figures(self) -> dict[str, Any]:
        n = max(self.samples, 1)
        return {
            "samples": self.samples,
            "mean_active_backends": round(self.active / n, 2),
            "mean_waiting_for_a_lock": round(sum(self.waiting.values()) / n, 3),
            "waiting_by_kind": {k: round(v / n, 3) for k, v in self.waiting.most_common()},
            "share_of_samples_with_a_wait": round(self.busy_samples / n, 3),
        }


def write_load(
    urls: list[str], key: str, writers: int, seconds: float, users: int
) -> dict[str, Any]:
    lat: list[list[float]] = [[] for _ in range(writers)]
    errors: list[str] = []
    go = threading.Event()
    stop_at = [0.0]

    def writer(w: int) -> None:
        with agentmem.connect(urls[w % len(urls)], api_key=key) as client:
            # each write for the next of ``users`` users, the writers starting apart
            bound = [client.bind(user_id=f"user{u}") for u in range(users)]
            go.wait()
            i = 0
            while time.perf_counter() < stop_at[0]:
                m = memory_at(10_000_000 + w * 1_000_000 + i, 0)
                t = time.perf_counter()
                try:
                    bound[(w * 7919 + i) % users].remember(m.text, memory_type=m.memory_type)
                except Exception as exc:
                    errors.append(repr(exc))
                    return
                lat[w].append((time.perf_counter() - t) * 1000)
                i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # every client connected
    t0 = time.perf_counter()
    stop_at[0] = t0 + seconds
    go.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    every = [x for per in lat for x in per]
    return {
        "nodes": len(urls),
        "writers": writers,
        "users": users,
        "seconds": round(elapsed, 2),
        "acked": len(every),
        "acked_per_s": round(len(every) / elapsed, 1),
        "ack_ms": summarize(every),
        "errors": errors[:5],
    }


def with_query(url: str, **params: str) -> str:
    """``url`` with ``params`` set in its query string."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.update(params)
    return urlunsplit(parts._replace(query=urlencode(query)))


def new_schema(records_url: str, name: str) -> str:
    """A new empty schema ``name`` in the database of ``records_url``; its URL."""
    import psycopg

    with psycopg.connect(records_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return with_query(records_url, options=f"-csearch_path={name}")


def drop_schema(records_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(records_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def code_env(code: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code / "core"), str(code)])
    return env


def write_phase(
    args: argparse.Namespace, work: Path, label: str, code: Path | None, count: int
) -> dict[str, Any]:
    """``count`` fresh nodes of one code variant on a new schema and Chroma database, under
    the write load; the figures and the lock waits sampled meanwhile."""
    name = f"bench_{label}_{count}_{uuid.uuid4().hex[:6]}".replace("-", "_")
    records_url = new_schema(args.records_url, name)
    flags = [
        "--records-url",
        records_url,
        "--chroma-url",
        with_query(args.chroma_url, database=name),
    ]
    try:
        argv = [sys.executable, "-m", "agentmem.cli", "--home", str(work / name / "keys"), *flags]
        argv += ["--json", "keys", "create", "--tenant", "bench-writes"]
        done = subprocess.run(argv, capture_output=True, text=True, check=True, env=code_env(code))
        key = json.loads(done.stdout)["key"]
        nodes = [Node(work / name / f"node{i}", flags, code) for i in range(count)]
        try:
            cpu = sum(n.cpu_seconds() for n in nodes)
            with LockWaits(args.records_url) as waits:
                figures = write_load(
                    [n.url for n in nodes], key, args.writers, args.write_seconds, args.users
                )
            cpu = sum(n.cpu_seconds() for n in nodes) - cpu
            figures["lock_waits"] = waits.figures()
            # the nodes' CPU per acknowledged write (their background embedding included):
            # on a shared machine a steadier figure than writes/s
            figures["node_cpu_ms_per_ack"] = round(cpu * 1000 / max(figures["acked"], 1), 2)
        finally:
            for n in nodes:
                n.stop()
    finally:
        drop_schema(args.records_url, name)
    return {"code": label, **figures}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records-url", required=True, help="postgresql:// URL (empty schema)")
    p.add_argument("--chroma-url", required=True, help="http://HOST:PORT?database=NAME")
    p.add_argument("--memories", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--writers", type=int, default=8, help="client threads of the write phase")
    p.add_argument("--write-seconds", type=float, default=20.0)
    p.add_argument("--users", type=int, default=100, help="users the writes are spread over")
    p.add_argument("--nodes", default="1,2,3", help="node counts of the write phase")
    p.add_argument(
        "--code",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="also run the write phase's nodes from the agentmem sources in DIR",
    )
    p.add_argument("--rounds", type=int, default=1, help="write phases per node count and code")
    p.add_argument("--skip-load", action="store_true", help="only the write phase")
    p.add_argument("--workdir", default=None, help="where the homes go (default a temp dir)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="agentmem-cluster-bench-", dir=args.workdir))
    cluster = Settings.from_env().replace(records_url=args.records_url, chroma_url=args.chroma_url)
    out: dict[str, Any] = {"memories": args.memories, "workdir": str(work)}
    if not args.skip_load:
        model = default_embedder()
        model.embed_query("load the model")
        # both stores embed the same texts: the second reads the first's vectors back
        memo = DiskEmbeddingCache(model.inner, work / "embeddings")
        embedder = CachedEmbedder(memo)
        wanted = {q.target for q in make_queries(args.queries, args.memories, 0)}
        stores = {}
        for name, settings in (("sqlite", Settings.from_env()), ("postgres_chroma", cluster)):
            mem, ids, figures = load(name, work / name, settings, embedder, args.memories, wanted)
            figures["vectors_computed_by_the_model"] = memo.misses
            memo.misses = 0
            out[f"load_{name}"] = figures
            stores[name] = (mem, ids)
            print(f"[{name}] loaded: {json.dumps(figures)}", file=sys.stderr)
        out["recall"] = recall_both(stores, args.memories, args.queries, embedder, model.inner)
        for mem, _ in stores.values():
            mem.close()
        memo.close()
    variants: list[tuple[str, Path | None]] = [("this", None)]
    for spec in args.code:
        label, _, where = spec.partition("=")
        variants.append((label, Path(where).resolve()))
    out["writes"] = []
    for r in range(args.rounds):
        for count in (int(c) for c in args.nodes.split(",")):
            turn = (r + count) % len(variants)
            for label, code in variants[turn:] + variants[:turn]:
                figures = write_phase(args, work, label, code, count)
                figures["round"] = r
                out["writes"].append(figures)
                print(f"[writes] {json.dumps(figures)}", file=sys.stderr)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(render(out))
    return 0


def render(out: dict[str, Any]) -> str:
    lines = [f"# cluster bench, {out['memories']:,} memories"]
    if "recall" in out:
        r = out["recall"]
        lines.append(f"embed_query (same for both) p50 {r['embed_query_ms']['p50']} ms")
        for name in ("sqlite", "postgres_chroma"):
            load_f = out[f"load_{name}"]
            ms = r[name]["recall_ms"]
            lines.append(
                f"{name}: recall p50 {ms['p50']} / p95 {ms['p95']} ms (query embedding cached), "
                f"Recall@10 {r[name]['recall_at_10']['all']}; load {load_f['rows']:,} rows: "
                f"commit {load_f['commit_rows_per_s']} rows/s, "
                f"until indexed {load_f['rows_per_s_until_flushed']} rows/s"
            )
    writes = out.get("writes") or []
    if writes:
        lines += [
            "",
            "| code | nodes | round | acked writes/s | ack p50 / p95 ms | node CPU ms per write | "
            "backends waiting for a lock (mean; by kind) | samples with a wait | "
            "active backends (mean) | errors |",
            "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|",
        ]
        for w in sorted(writes, key=lambda w: (w["nodes"], w["code"], w["round"])):
            lw = w["lock_waits"]
            kinds = ", ".join(f"{k} {v}" for k, v in lw["waiting_by_kind"].items()) or "-"
            lines.append(
                f"| {w['code']} | {w['nodes']} | {w['round']} | {w['acked_per_s']} | "
                f"{w['ack_ms']['p50']} / {w['ack_ms']['p95']} | {w['node_cpu_ms_per_ack']} | "
                f"{lw['mean_waiting_for_a_lock']} ({kinds}) | "
                f"{lw['share_of_samples_with_a_wait']:.0%} | {lw['mean_active_backends']} | "
                f"{len(w['errors'])} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
