"""Where the HTTP cost of a recall goes: ``agentmem.connect`` against the same recall in-process.

A data dir is built as ``server_load.py`` builds it (``--home`` reuses one) and copied:
``agentmem serve`` serves the dir while this process opens the copy (same rows, same
indexes; a data dir has one writer). Each query is then recalled on both,
in turn (which side goes first alternates), so the machine's load of the moment hits both
sides of a pair and neither side has the query's embedding cached. For each remote recall
the client's encoding of the body, the round trip and the client's decoding of the result
are timed, with the server's own time for the operation (its ``Server-Timing`` header,
which includes the hop to the worker thread). Then round trips of ``GET /health`` (no key,
no body, no thread) and of a tiny operation (``knowledge.get`` of a missing key: all of a
call but the engine's work).

Prints the p50 of each part and the HTTP cost (p50 of remote - in-process, per pair),
split into

- **client**: encoding + decoding (the transport's own time is in the wire part);
- **wire and framework**: round trip - server's operation time: both HTTP stacks, the
  loopback, the server's middleware, key check, body validation and response;
- **thread hop and binding**: server's operation time - in-process recall;

and the CPU time per recall of each side (this process's around its calls; the server's
from ``/proc``, Linux), which waiting for a CPU on a loaded machine does not inflate.

Usage::

    python benchmarks/http_profile.py --memories 10000 --queries 400

``--json FILE`` writes the figures. To compare code before and after a change in one session,
alternate runs over one ``--home`` (``PYTHONPATH=<old checkout>/core`` for the old code).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from server_load import (
    TENANT,
    USER,
    build,
    embedder,
    new_key,
    queries,
    start_server,
    stop_server,
    timed_recalls,
)

from agentmem import AgentMemory, connect
from agentmem.client._wire import op_body, result_of
from agentmem.storage.datadir import RECORDS_FILE


def p50(xs: list[float]) -> float:
    return round(statistics.median(xs), 3)


def ms_since(t: float) -> float:
    return (time.perf_counter() - t) * 1000


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) of process ``pid`` so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def paired(
    mem: Any, client: Any, server_pid: int, texts: list[str], n_small: int
) -> dict[str, list[float]]:
    keys = ("inproc", "total", "encode", "rtt", "decode", "op", "health", "small", "small_op")
    out: dict[str, list[float]] = {k: [] for k in keys}
    local = mem.bind(TENANT, user_id=USER, session_id="profile")
    m = client.bind(user_id=USER, session_id="profile")
    cpu = {"inproc": 0.0, "client": 0.0}
    server_cpu = cpu_seconds(server_pid)

    def local_recall(text: str) -> None:
        c = time.process_time()
        out["inproc"] += timed_recalls(local, [text])
        cpu["inproc"] += time.process_time() - c

    for n, text in enumerate(texts):
        if n % 2:
            local_recall(text)
        c = time.process_time()
        t0 = time.perf_counter()
        body = op_body("recall", m.identity, {"query": text})
        t1 = time.perf_counter()
        response = client.request("POST", "/v1/ops/recall", content=body)
        t2 = time.perf_counter()
        result_of("recall", response)
        out["total"].append(ms_since(t0))
        out["encode"].append((t1 - t0) * 1000)
        out["rtt"].append((t2 - t1) * 1000)
        out["decode"].append(ms_since(t2))
        out["op"].append(float(response.headers["server-timing"].split("dur=")[1]))
        cpu["client"] += time.process_time() - c
        if not n % 2:
            local_recall(text)
    # CPU per recall, which waiting for a CPU on a loaded machine does not inflate
    n = max(len(texts), 1)
    out["cpu_inproc"] = [cpu["inproc"] * 1000 / n]
    out["cpu_client"] = [cpu["client"] * 1000 / n]
    out["cpu_server"] = [(cpu_seconds(server_pid) - server_cpu) * 1000 / n]
    small = op_body("knowledge.get", m.identity, {"key": "none", "agent_id": "profile"})
    for _ in range(n_small):
        t = time.perf_counter()
        client.request("GET", "/health")
        out["health"].append(ms_since(t))
        t = time.perf_counter()
        response = client.request("POST", "/v1/ops/knowledge.get", content=small)
        result_of("knowledge.get", response)
        out["small"].append(ms_since(t))
        out["small_op"].append(float(response.headers["server-timing"].split("dur=")[1]))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--memories", type=int, default=10_000)
    p.add_argument("--queries", type=int, default=400, help="recalls on each side")
    p.add_argument("--embed-threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--home", default=None, help="reuse (or keep) this data dir")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="agentmem-http-"))
    if not (home / RECORDS_FILE).exists():
        print(f"building {args.memories:,} memories in {home}", file=sys.stderr)
        build(home, args.memories, args.seed)
    twin = Path(tempfile.mkdtemp(prefix="agentmem-http-twin-")) / "home"
    shutil.copytree(home, twin)
    texts = queries(args.queries + 20, args.memories, args.seed, salt=int(time.time()))
    proc, url = start_server(home, args.embed_threads)
    try:
        with (
            AgentMemory(twin, embedder=embedder(args.embed_threads)) as mem,
            connect(url, api_key=new_key(home)) as client,
        ):
            paired(mem, client, proc.pid, texts[:20], 20)  # warm-up: connection, caches
            got = paired(mem, client, proc.pid, texts[20:], args.queries)
    finally:
        stop_server(proc)
        shutil.rmtree(twin.parent, ignore_errors=True)
    fig: dict[str, Any] = {k: p50(v) for k, v in got.items()}
    fig["inprocess"] = fig.pop("inproc")
    fig["http_cost_p50_ms"] = p50([a - b for a, b in zip(got["total"], got["inproc"], strict=True)])
    fig["http_cost_p50_of_sides_ms"] = round(fig["total"] - fig["inprocess"], 3)
    fig["wire_and_framework"] = p50([a - b for a, b in zip(got["rtt"], got["op"], strict=True)])
    fig["client"] = round(fig["encode"] + fig["decode"], 3)
    fig["hop_and_bind"] = p50([a - b for a, b in zip(got["op"], got["inproc"], strict=True)])
    fig["http_cpu_ms"] = round(fig["cpu_client"] + fig["cpu_server"] - fig["cpu_inproc"], 3)
    fig["small_wire_and_framework"] = p50(
        [a - b for a, b in zip(got["small"], got["small_op"], strict=True)]
    )
    print(f"\n{args.memories:,} memories, {args.queries} recalls a side, paired (p50, ms)")
    print(f"in-process recall {fig['inprocess']:.2f}; through connect {fig['total']:.2f}: "
          f"HTTP cost {fig['http_cost_p50_ms']:.2f} (p50 of pairs), "
          f"{fig['http_cost_p50_of_sides_ms']:.2f} (difference of p50s)")  # fmt: skip
    print(f"  client encode + decode       {fig['client']:.3f}")
    print(
        f"  wire and framework           {fig['wire_and_framework']:.3f} (round trip - server op)"
    )
    print(f"  thread hop and binding       {fig['hop_and_bind']:.3f} (server op - in-process)")
    print(f"GET /health round trip {fig['health']:.3f}; tiny op round trip {fig['small']:.3f} "
          f"(server op {fig['small_op']:.3f}, wire and framework "
          f"{fig['small_wire_and_framework']:.3f})")  # fmt: skip
    print(f"CPU per recall: in-process {fig['cpu_inproc']:.2f}, through connect "
          f"{fig['cpu_client'] + fig['cpu_server']:.2f} (client {fig['cpu_client']:.2f}, server "
          f"{fig['cpu_server']:.2f}): HTTP CPU cost {fig['http_cpu_ms']:.2f}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(fig, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
