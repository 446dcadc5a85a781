"""``agentmem bench``: the corpus generator, the figures it reports, the report files.

No timing is asserted anywhere (benchmarks print figures; they are never thresholds).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from agentmem.bench import BenchSettings, iter_memories, memory_at, run_bench
from agentmem.bench import peers as peer_lib
from agentmem.bench.corpus import QUERY_KINDS, unique_code
from agentmem.bench.harness import embedding_rate, make_queries
from agentmem.bench.peers import PrecomputedEmbedder, peer_status
from agentmem.bench.report import markdown
from agentmem.bench.stats import percentile, summarize
from agentmem.cli import bench_cmd, main
from agentmem.embeddings import CachedEmbedder
from agentmem.errors import ValidationError
from agentmem.recall.profile import BESIDE


# -- corpus -----------------------------------------------------------------------------------
def test_corpus_is_deterministic_streamable_and_varied() -> None:
    streamed = list(iter_memories(200, seed=3))
    assert [m.index for m in streamed] == list(range(200))
    assert streamed[57] == memory_at(57, seed=3)
    assert list(iter_memories(60, seed=3, start=50)) == streamed[50:60]
    assert memory_at(57, seed=4) != streamed[57]
    texts = [m.text for m in streamed]
    assert len(set(texts)) == 200  # every memory carries a unique id
    assert len({t.split()[0] for t in texts}) > 40  # varied openings, not one template
    assert {m.memory_type for m in streamed} >= {"fact", "preference", "decision", "event", "task"}
    assert all(any(c.isdigit() for c in t) for t in texts)  # numbers and ids
    assert all(m.keyword_query and m.paraphrase_query for m in streamed)


def test_keyword_queries_quote_an_id_of_their_memory() -> None:
    for m in iter_memories(100, seed=1):
        ident = m.keyword_query.split()[-1]
        assert ident in m.text, (m.keyword_query, m.text)


def test_unique_code_is_a_bijection_per_salt() -> None:
    codes = {unique_code(i, 5) for i in range(50_000)}
    assert len(codes) == 50_000
    assert all(len(c) == 6 for c in list(codes)[:100])


def test_make_queries_alternate_kinds_and_distinct_targets() -> None:
    qs = make_queries(20, 300, seed=0)
    assert len({q.target for q in qs}) == 20
    assert [q.kind for q in qs[:4]] == [*QUERY_KINDS, *QUERY_KINDS]
    assert qs == make_queries(20, 300, seed=0)
    assert len(make_queries(50, 10, seed=0)) == 10


# -- helpers ----------------------------------------------------------------------------------
def test_percentiles_and_summary() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == pytest.approx(50.5)
    assert percentile(values, 0.95) == pytest.approx(95.05)
    assert percentile([], 0.5) == 0.0
    s = summarize(values)
    assert s["n"] == 100 and s["max"] == 100.0 and s["p50"] == pytest.approx(50.5)


def test_embedding_rate_from_samples() -> None:
    # (t, committed, embedded): 0 at t=1, then 100 rows/s from t=1 to t=3
    points = [(0.5, 1000, 0), (1.0, 1000, 0), (2.0, 1000, 100), (3.0, 1000, 200), (3.2, 1000, 200)]
    assert embedding_rate(points) == pytest.approx(100.0)
    assert embedding_rate([(1.0, 5, 0)]) == 0.0


def test_precomputed_embedder_serves_known_texts(shared_embedder: CachedEmbedder) -> None:
    inner = shared_embedder.inner
    vectors = np.eye(2, inner.dimensions, dtype=np.float32)
    emb = PrecomputedEmbedder(inner, ["a", "b"], vectors)
    out = emb.embed_documents(["b", "something else", "a"])
    assert np.array_equal(out[0], vectors[1]) and np.array_equal(out[2], vectors[0])
    assert np.allclose(out[1], inner.embed_documents(["something else"])[0], atol=1e-5)
    assert emb.embed_query("a").shape == (inner.dimensions,)
    assert emb.model_name == inner.model_name


def test_settings_validation() -> None:
    with pytest.raises(ValidationError):
        run_bench(BenchSettings(memories=0))
    with pytest.raises(ValidationError):
        run_bench(BenchSettings(memories=10, ack_samples=-1))
    assert BenchSettings(memories=100_000).effective_peer_memories() == 20_000
    assert BenchSettings(memories=300).effective_peer_memories() == 300
    assert BenchSettings(memories=300, peer_memories=100).effective_peer_memories() == 100


# -- the command ------------------------------------------------------------------------------
def test_bench_cli_reports_every_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    work = tmp_path / "work"
    status = main(
        [
            "bench",
            "--memories",
            "300",
            "--queries",
            "20",
            "--no-peers",
            "--ack-samples",
            "40",
            "--json",
            "--out",
            str(out),
            "--workdir",
            str(work),
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    (run,) = json.loads(captured.out)["runs"]
    assert run["memories"] == 300 and run["live_rows"] == 340
    bulk = run["bulk_import"]
    for key in (
        "commit_s",
        "flushed_s",
        "commit_rows_per_s",
        "rows_per_s_until_flushed",
        "embedding_rows_per_s",
        "embedder_batch_rows_per_s",
        "until_flushed_over_embedder",
    ):
        assert bulk[key] > 0, key
    # the indexer embedded every row of the import once (single writes come after)
    assert bulk["rows_embedded_per_row"] == 1.0
    for kind in ("add_message", "remember", "all"):
        assert run["write_ack_ms"][kind]["n"] == (40 if kind == "all" else 20)
        assert run["write_ack_ms"][kind]["p95"] > 0
    rec = run["recall"]
    assert rec["queries"] == 20
    for key in ("uncached_ms", "cached_embedding_ms"):
        assert {"p50", "p95", "p99"} <= set(rec[key]) and rec[key]["p50"] > 0
    assert set(rec["recall@10"]) == {"all", "keyword", "paraphrase", "misses"}
    for miss in rec["recall@10"]["misses"]:
        assert {"kind", "query", "target", "top_hit"} <= set(miss)
    assert 0.0 <= rec["recall@10"]["all"] <= 1.0
    assert rec["recall@10"]["all"] >= 0.5  # the generated queries have findable answers
    assert run["embed_query_ms"]["p50"] > 0 and run["recall_p95_over_embed_p95"] > 0
    assert run["peak_rss_bytes"] > 10_000_000
    assert set(run["index_bytes"]) == {"records", "keywords", "chroma"}
    assert all(v > 0 for v in run["index_bytes"].values())
    assert "peers" not in run
    assert {p.name for p in out.iterdir()} == {
        "bench.json",
        "report.md",
        "latency.png",
        "throughput.png",
    }
    assert (out / "latency.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "report.md").read_text()
    assert "## 300 memories" in report and "![latency](latency.png)" in report
    assert json.loads((out / "bench.json").read_text())["runs"][0]["memories"] == 300
    assert not list(work.iterdir())  # data dirs removed without --keep


def test_bench_cli_table_and_several_sizes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status = main(
        [
            "bench",
            "--memories",
            "120,60",
            "--queries",
            "6",
            "--no-peers",
            "--ack-samples",
            "4",
            "--profile",
            "--out",
            str(tmp_path),
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "agentmem bench" in captured.out and "recall p50 / p95 / p99 ms" in captured.out
    assert "recall profile" in captured.out and "vector_wait" in captured.out
    runs = json.loads((tmp_path / "bench.json").read_text())["runs"]
    assert [r["memories"] for r in runs] == [60, 120]  # ascending
    for run in runs:
        profile = run["recall_profile"]
        assert profile["recalls"] == 6
        phases = profile["phases"]
        assert {"keyword_search", "embed_model", "vector_search", "score", "total"} <= set(phases)
        # the phases of the calling thread add up to the total (the others run beside them)
        main_mean = sum(v["mean"] for p, v in phases.items() if p not in BESIDE | {"total"})
        assert main_mean == pytest.approx(phases["total"]["mean"], rel=0.05)
    assert "Where recall's time goes" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "recall_vs_n.png").exists()


def test_bench_cli_rejects_bad_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--memories", "ten"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:  # refused as the command line is parsed
        main(["bench", "--memories", "10", "--queries", "0"])
    assert exc.value.code == 2
    assert "argument --queries: must be at least 1, got 0" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_with_peers(shared_embedder: CachedEmbedder, tmp_path: Path) -> None:
    status = peer_status()
    if any(why is not None for why in status.values()):
        pytest.skip(f"peers not installed (pip install 'agentmem-layer[bench]'): {status}")
    result = run_bench(
        BenchSettings(memories=200, queries=10, ack_samples=4, peer_memories=150, workdir=tmp_path),
        embedder=shared_embedder,
    )
    peers = result.summary["peers"]
    assert peers["corpus"] == 150 and peers["capped"] is True
    assert set(peers["systems"]) == {"agentmem", *peer_lib.PEERS}
    for name in peer_lib.PEERS:
        res = peers["systems"][name]
        assert 0.0 <= res["recall@10"]["all"] <= 1.0
        assert res["ratio_agentmem_over_peer"]["p95"] > 0
        assert res["writes_per_s"] > 0
        assert result.samples[f"{name}_ms"]
    # the console table shows every peer that ran, as report.md does
    console = Console(width=160, record=True)
    console.print(bench_cmd._table([result]))
    table = console.export_text()
    report = markdown([result])
    for name in peer_lib.PEERS:
        assert f"{name}: Recall@k, p95 ms (corpus)" in table, name
        assert f"| {name} | " in report, name


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every connection or name lookup off the loopback fails, and is recorded here."""
    tried: list[Any] = []
    loopback = ("127.", "::1", "localhost")
    real_connect, real_lookup = socket.socket.connect, socket.getaddrinfo

    def connect(sock: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else address
        if sock.family != socket.AF_UNIX and not str(host).startswith(loopback):
            tried.append(address)
            raise OSError(f"no network in this test ({address})")
        real_connect(sock, address)

    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not str(host).startswith(loopback):
            tried.append(host)
            raise socket.gaierror(f"no network in this test ({host})")
        return real_lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return tried


@pytest.mark.parametrize("name", ["mem0", "langgraph"])
def test_store_peers_find_what_they_stored_offline(
    name: str,
    shared_embedder: CachedEmbedder,
    tmp_path: Path,
    no_network: list[Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    why = peer_status()[name]
    if why is not None:
        pytest.skip(f"{name} not installed (pip install 'agentmem-layer[bench]'): {why}")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0-home"))  # where mem0 keeps its files
    texts = [m.text for m in iter_memories(40, seed=5)]
    inner = shared_embedder.inner
    shared = PrecomputedEmbedder(inner, texts, inner.embed_documents(texts))
    search, client = peer_lib.BUILDERS[name](tmp_path, texts, shared, 5)
    try:
        for i in (3, 17, 38):
            hits = search(texts[i])  # a stored text: itself is the nearest
            assert hits[0] == i and len(set(hits)) == 5
        assert len(search("when is the next deploy window?")) == 5
    finally:
        peer_lib.close_client(client)
    assert shared.misses == 0  # stored with the precomputed vectors, as the other peers
    assert no_network == []


def test_mem0_imported_with_telemetry_on_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if peer_status()["mem0"] is not None:
        pytest.skip("mem0 not installed (pip install 'agentmem-layer[bench]')")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0-home"))
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    import mem0.memory.telemetry

    monkeypatch.setattr(mem0.memory.telemetry, "MEM0_TELEMETRY", True)
    with pytest.raises(peer_lib.PeerUnavailable, match="telemetry"):
        peer_lib.build_mem0(
            tmp_path, ["a text"], PrecomputedEmbedder(None, [], np.zeros((0, 1))), 1
        )


def test_a_peer_that_cannot_run_is_reported_so(
    shared_embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cannot(*_args: Any) -> Any:
        raise peer_lib.PeerUnavailable("its service is out of reach")

    monkeypatch.setattr(peer_lib, "peer_status", lambda: {"mem0": None, "langgraph": "absent"})
    monkeypatch.setitem(peer_lib.BUILDERS, "mem0", cannot)
    result = run_bench(
        BenchSettings(memories=60, queries=4, ack_samples=2, warmup_queries=1),
        embedder=shared_embedder,
    )
    peers = result.summary["peers"]
    assert peers["status"] == {
        "mem0": "cannot run here: its service is out of reach",
        "langgraph": "skipped: absent",
    }
    assert set(peers["systems"]) == {"agentmem"}
    assert "mem0: cannot run here: its service is out of reach" in markdown([result])


def test_checkpoints_report_partial_figures(shared_embedder: CachedEmbedder) -> None:
    seen: list[dict[str, object]] = []
    result = run_bench(
        BenchSettings(memories=60, queries=4, ack_samples=2, warmup_queries=1, peers=False),
        embedder=shared_embedder,
        checkpoint=seen.append,
    )
    assert seen and all(s["partial"] is True for s in seen)
    assert "bulk_import" in seen[0] and "recall" not in seen[0]
    assert seen[-1]["recall"] == result.summary["recall"]
    assert "partial" not in result.summary
