"""LoCoMo peer modes (``--modes ...,langchain,llamaindex``): per-conversation peer indexes,
scored with the same turn-level scorer as agentmem's modes.

Most tests swap the real LangChain / LlamaIndex builders for a fake whose ranking is known
(the conversation's turns in reverse order), so the mapping from a peer's hits to dia ids
and the scoring are checked exactly and without the frameworks; one test runs the real
peers when the ``bench`` extra is installed. Runs on
``tests/data/synthetic_long_conversations.json``, never on benchmark data.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentmem.bench import peers as peer_lib
from agentmem.cli import main
from agentmem.config import MemoryConfig
from agentmem.embeddings import CachedEmbedder
from agentmem.errors import ValidationError
from agentmem.evaluation import locomo
from agentmem.evaluation.locomo import load_locomo, run_locomo, turn_documents
from agentmem.write.index_text import index_text
from agentmem.write.keys import restatement

DATA = Path(__file__).resolve().parents[1] / "data" / "synthetic_long_conversations.json"
SYN1 = ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D2:1", "D2:2", "D2:3", "D2:4", "D2:5", "D3:1"]


def inv_log2(rank: int) -> float:
    return 1 / math.log2(rank + 1)


class FakePeer:
    """A builder with a known ranking: every query gets the corpus in reverse order."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.corpora: list[list[str]] = []
        self.queries: list[str] = []
        self.ks: list[int] = []
        self.doc_misses: list[int] = []
        self.closed = 0

    def __call__(
        self, work: Path, texts: Sequence[str], embedder: Any, k: int
    ) -> tuple[Callable[[str], list[int]], Any]:
        if self.fail:
            raise RuntimeError("no index for you")
        self.corpora.append(list(texts))
        self.ks.append(k)
        before = embedder.misses
        embedder.embed_documents(list(texts))  # a real peer embeds its documents
        self.doc_misses.append(embedder.misses - before)
        n = len(texts)

        def search(query: str) -> list[int]:
            self.queries.append(query)
            return list(range(n - 1, -1, -1))[:k]

        fake = self

        class Client:
            def close(self) -> None:
                fake.closed += 1

        return search, Client()


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> dict[str, FakePeer]:
    """Both peers 'installed' and replaced by :class:`FakePeer` builders."""
    out = {"langchain": FakePeer(), "llamaindex": FakePeer()}
    for name, fake in out.items():
        monkeypatch.setitem(peer_lib.BUILDERS, name, fake)
    monkeypatch.setattr(peer_lib, "peer_status", lambda: dict.fromkeys(peer_lib.PEERS))
    return out


def test_peer_modes_match_the_bench_peers() -> None:
    # LoCoMo compares the fusion retrievers; the bench's store peers (mem0, LangGraph) too
    assert set(locomo.PEER_MODES) <= set(peer_lib.PEERS)
    assert tuple(peer_lib.PEERS) == tuple(peer_lib.BUILDERS)
    assert (*locomo.MODES, *locomo.PEER_MODES) == locomo.ALL_MODES
    assert set(peer_lib.RETRIEVERS) == set(peer_lib.PEERS)


def test_turn_documents_are_what_agentmem_indexes(
    shared_embedder: CachedEmbedder,
    make_memory: Any,
    tmp_path: Path,
) -> None:
    """One document per ingested turn: the stored message's speaker-prefixed text."""
    home = tmp_path / "store"
    run_locomo(DATA, modes=["keyword"], captions=True, home=home, embedder=shared_embedder)
    mem = make_memory(path=home)
    for conv in load_locomo(DATA):
        docs = turn_documents(conv, captions=True)
        stored = []
        for session in conv.sessions:
            m = mem.bind(
                locomo.TENANT,
                user_id=conv.sample_id,
                session_id=f"{conv.sample_id}:s{session.number}",
            )
            stored += [
                (i.metadata["dia_id"], index_text(i.content, i.metadata.get("speaker")))
                for i in m.messages()
            ]
        assert docs == stored
    syn1 = turn_documents(load_locomo(DATA)[0])
    assert [dia for dia, _ in syn1] == SYN1
    assert syn1[2] == ("D1:3", "Alice: I adopted a puppy last weekend and named him Pretzel.")
    # without --captions the image turn is its text alone; with it, the caption is appended
    assert "[shared an image:" not in syn1[3][1]
    assert turn_documents(load_locomo(DATA)[0], captions=True)[3][1].endswith(
        "[shared an image: a photo of a golden retriever on a sofa]"
    )


def test_peer_hits_are_scored_with_the_same_scorer(
    shared_embedder: CachedEmbedder, fakes: dict[str, FakePeer]
) -> None:
    report = run_locomo(DATA, modes=["hybrid", "langchain"], embedder=shared_embedder)
    fake = fakes["langchain"]
    # one index per conversation, on that conversation's turns only, k=20 capped at its size
    assert [len(c) for c in fake.corpora] == [11, 2]
    assert fake.corpora[1] == [
        "Carol: My neighbour's puppy Pretzel chewed my shoes.",
        "Dan: We are planning a trip to Reykjavik in the spring.",
    ]
    assert fake.ks == [11, 2]
    assert fake.closed == 2
    assert fake.doc_misses == [0, 0]  # document vectors computed once, shared by the peers
    assert fakes["llamaindex"].corpora == []  # not asked for
    assert fake.queries == [q["question"] for q in report.questions]

    by_q = {q["question"]: q["modes"]["langchain"] for q in report.questions}
    reverse = SYN1[::-1]  # D3:1, D2:5, D2:4, D2:3, D2:2, D2:1, D1:5, D1:4, D1:3, D1:2, D1:1
    assert by_q["What is Pretzel?"]["turns"] == reverse
    assert by_q["What is Pretzel?"]["evidence_ranks"] == {"D1:3": 9}
    assert by_q["What is Pretzel?"]["recall@5"] == 0.0
    assert by_q["What is Pretzel?"]["recall@10"] == 1.0
    assert by_q["What is Pretzel?"]["ndcg@10"] == pytest.approx(inv_log2(9), abs=1e-6)
    assert by_q["Reykjavik"]["evidence_ranks"] == {"D2:2": 5, "D2:4": 3}
    assert by_q["Reykjavik"]["recall@5"] == 1.0
    assert by_q["Reykjavik"]["ndcg@10"] == pytest.approx(
        (inv_log2(3) + inv_log2(5)) / (1 + inv_log2(2)), abs=1e-6
    )
    assert by_q["Pretzel"]["evidence_ranks"] == {"D1:3": 9, "D2:1": 6}
    assert by_q["Who chewed Carol's shoes?"]["turns"] == ["D5:2", "D5:1"]
    assert by_q["Who chewed Carol's shoes?"]["ndcg@10"] == pytest.approx(inv_log2(2), abs=1e-6)

    s = report.summary
    assert list(s["modes"]) == ["hybrid", "langchain"]
    res = s["modes"]["langchain"]
    assert res["overall"]["n"] == 5
    assert res["overall"]["recall@5"] == pytest.approx(0.4)  # Reykjavik and Carol's shoes
    assert res["overall"]["recall@10"] == pytest.approx(1.0)
    cats = res["by_category"]
    assert {c: cats[c]["n"] for c in cats} == {"1": 1, "2": 1, "3": 1, "4": 2}
    assert cats["1"]["recall@5"] == 1.0 and cats["2"]["recall@5"] == 0.0
    assert cats["4"]["recall@5"] == pytest.approx(0.5) and cats["4"]["name"] == "single-hop"
    assert cats["4"]["ndcg@10"] == pytest.approx((inv_log2(9) + inv_log2(2)) / 2, abs=1e-4)
    # measured, not asserted: the fake peer answers in microseconds, which round to 0.00 ms
    assert set(res["latency_ms"]) == {"p50", "p95", "mean"}
    assert all(value >= 0 for value in res["latency_ms"].values())

    # hybrid minus peer Recall@10, overall and per category
    hybrid = s["modes"]["hybrid"]
    delta = s["hybrid_minus_peer_recall@10"]["langchain"]
    assert delta["overall"] == pytest.approx(hybrid["overall"]["recall@10"] - 1.0, abs=1e-4)
    assert delta["by_category"] == {
        c: pytest.approx(hybrid["by_category"][c]["recall@10"] - cats[c]["recall@10"], abs=1e-4)
        for c in cats
    }
    assert s["peers"]["langchain"]["status"] == "ok"
    assert s["peers"]["langchain"]["documents"] == 13
    assert "llamaindex" not in s["peers"]
    assert s["timing_s"]["peer_index"] >= 0


def test_peers_reuse_agentmem_document_vectors(
    shared_embedder: CachedEmbedder,
    fakes: dict[str, FakePeer],
    tmp_path: Path,
    make_memory: Callable[..., Any],
) -> None:
    """With --embed-cache, a peer's document is read back from the vectors agentmem's index
    computed, unless agentmem embedded the turn with its restatement key (peers index the turn
    text alone, as a user assembling them would)."""
    no_context = MemoryConfig(vector_context=0)
    alone = run_locomo(
        DATA,
        modes=["vector"],
        embedder=shared_embedder,
        config=no_context,
        embed_cache=tmp_path / "a",
    )
    home = tmp_path / "store"
    with_peers = run_locomo(
        DATA,
        modes=["vector", "langchain", "llamaindex"],
        embedder=shared_embedder,
        config=no_context,
        embed_cache=tmp_path / "b",
        home=home,
    )
    mem = make_memory(path=home)
    keyed = 0
    for conv in load_locomo(DATA):
        for session in conv.sessions:
            m = mem.bind(
                locomo.TENANT,
                user_id=conv.sample_id,
                session_id=f"{conv.sample_id}:s{session.number}",
            )
            keyed += sum(
                1
                for i in m.messages()
                if restatement(i.kind, i.role, i.content, i.metadata.get("speaker"), i.event_time)
            )
    assert 0 < keyed < 13
    a = alone.summary["settings"]["embed_cache"]
    b = with_peers.summary["settings"]["embed_cache"]
    assert a["misses"] > 0
    assert b["misses"] == a["misses"] + keyed  # turns agentmem embedded with their key
    assert b["hits"] == a["hits"] + 13 - keyed  # the other turn documents, read back once
    assert fakes["llamaindex"].doc_misses == [0, 0]


def test_missing_peer_is_reported_not_fatal(
    shared_embedder: CachedEmbedder,
    fakes: dict[str, FakePeer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    why = "langchain_chroma: ModuleNotFoundError: No module named 'langchain_chroma'"
    monkeypatch.setattr(peer_lib, "peer_status", lambda: {"langchain": why, "llamaindex": None})
    report = run_locomo(DATA, embedder=shared_embedder)  # default: every mode
    s = report.summary
    assert list(s["modes"]) == ["hybrid", "defaults", "keyword", "vector", "llamaindex"]
    assert s["peers"]["langchain"]["status"] == f"skipped: {why}"
    assert s["peers"]["llamaindex"]["status"] == "ok"
    assert list(s["hybrid_minus_peer_recall@10"]) == ["llamaindex"]
    assert fakes["langchain"].corpora == []
    assert all("langchain" not in q["modes"] for q in report.questions)
    assert "skipped: langchain_chroma" in report.markdown()

    # asking only for peers that cannot run is an error: nothing would be measured
    monkeypatch.setattr(peer_lib, "peer_status", lambda: {"langchain": why, "llamaindex": why})
    with pytest.raises(ValidationError, match="none of the requested modes can run"):
        run_locomo(DATA, modes=["langchain"], embedder=shared_embedder)


def test_peer_that_fails_to_build_is_dropped_and_reported(
    shared_embedder: CachedEmbedder, fakes: dict[str, FakePeer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(peer_lib.BUILDERS, "llamaindex", FakePeer(fail=True))
    report = run_locomo(
        DATA, modes=["keyword", "langchain", "llamaindex"], embedder=shared_embedder
    )
    s = report.summary
    assert list(s["modes"]) == ["keyword", "langchain"]
    assert s["peers"]["llamaindex"]["status"].startswith("failed to build: RuntimeError")
    assert all(set(q["modes"]) == {"keyword", "langchain"} for q in report.questions)
    assert "hybrid_minus_peer_recall@10" not in s  # no hybrid in this run


def test_real_peers_on_the_synthetic_file(shared_embedder: CachedEmbedder, tmp_path: Path) -> None:
    status = peer_lib.peer_status()
    if any(status[name] is not None for name in locomo.PEER_MODES):
        pytest.skip(f"peers not installed (pip install 'agentmem-layer[bench]'): {status}")
    report = run_locomo(DATA, modes=["hybrid", "langchain", "llamaindex"], embedder=shared_embedder)
    s = report.summary
    assert list(s["modes"]) == ["hybrid", "langchain", "llamaindex"]
    for name in ("langchain", "llamaindex"):
        res = s["modes"][name]
        assert s["peers"][name]["status"] == "ok"
        assert set(res["by_category"]) == {"1", "2", "3", "4"}
        assert res["overall"]["n"] == 5
        for q in report.questions:
            turns = q["modes"][name]["turns"]
            assert len(turns) == len(set(turns)) <= 20
            if q["sample_id"] == "syn-2":  # one index per conversation: only its own turns
                assert turns and all(t.startswith("D5:") for t in turns)
            else:
                assert turns and not any(t.startswith("D5:") for t in turns)
        by_q = {q["question"]: q["modes"][name] for q in report.questions}
        assert by_q["What is Pretzel?"]["evidence_ranks"]["D1:3"] is not None
        assert by_q["Who chewed Carol's shoes?"]["evidence_ranks"]["D5:1"] is not None
        delta = s["hybrid_minus_peer_recall@10"][name]["overall"]
        assert delta == pytest.approx(
            s["modes"]["hybrid"]["overall"]["recall@10"] - res["overall"]["recall@10"], abs=1e-4
        )
    paths = report.write(tmp_path / "out")
    md = paths[1].read_text()
    assert "| langchain |" in md and "hybrid Recall@10 minus peer Recall@10" in md
    assert json.loads(paths[2].read_text().splitlines()[0])["modes"]["llamaindex"]["turns"]


# -- CLI ------------------------------------------------------------------------------------
def test_cli_modes_flag_runs_peers(
    fakes: dict[str, FakePeer], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    status = main(
        [
            "eval",
            "--locomo",
            str(DATA),
            "--modes",
            "hybrid,llamaindex",
            "--json",
            "--out",
            str(out),
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    data = json.loads(captured.out)
    assert list(data["modes"]) == ["hybrid", "llamaindex"]
    assert list(data["peers"]) == ["llamaindex"]
    assert set(data["hybrid_minus_peer_recall@10"]) == {"llamaindex"}
    assert fakes["langchain"].corpora == []
    written = json.loads((out / "locomo.json").read_text())
    assert written["hybrid_minus_peer_recall@10"] == data["hybrid_minus_peer_recall@10"]
    assert "| llamaindex |" in (out / "locomo.md").read_text()
    rows = [json.loads(line) for line in (out / "locomo_questions.jsonl").read_text().splitlines()]
    assert all(set(r["modes"]) == {"hybrid", "llamaindex"} for r in rows)


def test_cli_default_table_lists_peers_and_notes_missing_ones(
    fakes: dict[str, FakePeer],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        peer_lib,
        "peer_status",
        lambda: {"langchain": None, "llamaindex": "llama_index.core: ImportError: nope"},
    )
    status = main(["eval", "--locomo", str(DATA)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "langchain" in captured.out and "llamaindex" not in captured.out
    assert "hybrid R@10 minus peer R@10" in captured.out
    assert "peer llamaindex: skipped: llama_index.core: ImportError: nope" in captured.err


def test_cli_rejects_unknown_modes(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["eval", "--locomo", str(DATA), "--modes", "hybrid,haystack", "--json"])
    captured = capsys.readouterr()
    assert status == 2
    assert "langchain" in json.loads(captured.out)["error"]["message"]
