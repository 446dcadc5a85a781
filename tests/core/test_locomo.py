"""LoCoMo runner: parsing, turn-level metrics, agentmem's three retrieval modes, and the CLI.

The peer modes (LangChain, LlamaIndex) are tested in ``test_locomo_peers.py``.

Runs on ``tests/data/synthetic_long_conversations.json`` (two small conversations in the LoCoMo format
with malformed evidence, an image turn, an unparseable session date and an empty turn),
never on benchmark data.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentmem.cli import main
from agentmem.config import MemoryConfig
from agentmem.embeddings import CachedEmbedder
from agentmem.errors import ValidationError
from agentmem.evaluation import locomo
from agentmem.evaluation.locomo import (
    hit_dia_ids,
    load_locomo,
    ndcg_at_k,
    parse_evidence,
    parse_session_datetime,
    ranked_turns,
    recall_at_k,
    run_locomo,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "synthetic_long_conversations.json"
INV_LOG2_3 = 1 / math.log2(3)


# -- parsing ----------------------------------------------------------------------------------
def test_parse_evidence_splits_normalises_and_reports_garbage() -> None:
    assert parse_evidence(["D8:6; D9:17"]) == (["D8:6", "D9:17"], [])
    assert parse_evidence(["D:11:26", " d3 : 7 ", "D8:6"]) == (["D11:26", "D3:7", "D8:6"], [])
    assert parse_evidence("D1:2, D1:3") == (["D1:2", "D1:3"], [])
    assert parse_evidence(["D1:2", "D1:2"]) == (["D1:2"], [])
    assert parse_evidence(["see above", 7, None]) == ([], ["see above", "7", "None"])
    assert parse_evidence(None) == ([], [])
    assert parse_evidence([]) == ([], [])


def test_parse_session_datetime() -> None:
    assert parse_session_datetime("1:56 pm on 8 May, 2023") == datetime(
        2023, 5, 8, 13, 56, tzinfo=UTC
    )
    assert parse_session_datetime("10:37 am on 27 June, 2023") == datetime(
        2023, 6, 27, 10, 37, tzinfo=UTC
    )
    assert parse_session_datetime("12:05 am on 1 Jan, 2024") == datetime(
        2024, 1, 1, 0, 5, tzinfo=UTC
    )
    assert parse_session_datetime("sometime in July") is None
    assert parse_session_datetime(None) is None


def test_load_synthetic_file_counts_what_it_skips() -> None:
    convs = load_locomo(DATA)
    assert [c.sample_id for c in convs] == ["syn-1", "syn-2"]
    syn1, syn2 = convs
    assert syn1.turns == 11  # the empty turn D3:2 is left out
    assert [s.number for s in syn1.sessions] == [1, 2, 3]
    assert syn1.sessions[2].start is None  # "sometime in July"
    assert [q.evidence for q in syn1.questions] == [
        ("D1:3",),
        ("D2:2", "D2:4"),
        ("D1:3", "D2:1"),
        ("D1:5",),
    ]
    assert syn1.questions[3].dropped == ("see above", "D9:99")
    assert syn1.skipped == {
        "category_5": 1,
        "no_evidence": 2,  # an empty evidence list; evidence naming no turn (D7:7)
        "evidence_unresolved": 3,  # "see above", D9:99, D7:7
        "evidence_split": 1,  # "D2:2; D2:4"
        "turns_malformed": 1,
        "session_dates_unparsed": 1,
    }
    assert [q.question for q in syn2.questions] == ["Who chewed Carol's shoes?"]


@pytest.mark.parametrize(
    "payload",
    [[], {"no": "conversation"}, [{"sample_id": "x"}], [{"conversation": []}], "text"],
)
def test_load_rejects_files_that_are_not_locomo(payload: object) -> None:
    with pytest.raises(ValidationError):
        load_locomo(payload)  # type: ignore[arg-type]


def test_load_rejects_unreadable_and_non_json_files(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="cannot read"):
        load_locomo(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValidationError, match="not JSON"):
        load_locomo(bad)


# -- metrics ----------------------------------------------------------------------------------
def test_hit_dia_ids_reads_single_ids_and_lists() -> None:
    assert hit_dia_ids({"dia_id": "D1:2"}) == ["D1:2"]
    assert hit_dia_ids({"dia_ids": ["D1:2", "D1:3", 5]}) == ["D1:2", "D1:3"]
    assert hit_dia_ids({"dia_id": "D:2:1", "dia_ids": ["D2:2"]}) == ["D2:1", "D2:2"]
    assert hit_dia_ids({"speaker": "x"}) == []
    assert hit_dia_ids(None) == []


def test_ranked_turns_dedupes_and_cuts_at_k_turns() -> None:
    # a chunk carrying three turns fills three of the k slots: bigger hits earn nothing extra
    hits = [["D1:1"], ["D1:1", "D1:2", "D1:3"], [], ["D2:1"], ["D2:2"]]
    assert ranked_turns(hits) == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert ranked_turns(hits, limit=3) == ["D1:1", "D1:2", "D1:3"]


def test_recall_and_ndcg_on_a_known_ranking() -> None:
    ranked = ["a", "x", "b", "y", "z", "w", "v", "u", "t", "s", "c", "r"]
    evidence = ["a", "b", "c"]
    assert recall_at_k(ranked, evidence, 1) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, evidence, 5) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, evidence, 10) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, evidence, 20) == pytest.approx(1.0)
    # DCG@10 = 1/log2(2) + 1/log2(4); IDCG@10 = 1/log2(2) + 1/log2(3) + 1/log2(4)
    expected = (1 + 0.5) / (1 + INV_LOG2_3 + 0.5)
    assert ndcg_at_k(ranked, evidence, 10) == pytest.approx(expected)
    assert ndcg_at_k(["a", "b", "c"], evidence, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "y"], evidence, 10) == 0.0
    assert recall_at_k(ranked, [], 5) == 0.0
    assert ndcg_at_k(ranked, [], 10) == 0.0


def test_ndcg_ideal_is_capped_at_k() -> None:
    evidence = [f"e{i}" for i in range(15)]
    assert ndcg_at_k(evidence[:10], evidence, 10) == pytest.approx(1.0)


# -- end to end ------------------------------------------------------------------------------
def test_keyword_mode_scores_exactly(shared_embedder: CachedEmbedder) -> None:
    """Each question's terms match only known turns, so the keyword ranking is known.

    Turn context (preceding turns indexed with each turn) is switched off here: with it, the
    turns after a match would match too, which is what it is for but not what this pins.
    """
    no_context = MemoryConfig(keyword_context=0, vector_context=0)
    report = run_locomo(DATA, modes=["keyword"], embedder=shared_embedder, config=no_context)
    by_q = {q["question"]: q["modes"]["keyword"] for q in report.questions}
    assert by_q["What is Pretzel?"]["turns"] == ["D1:3"]  # not syn-2's Pretzel turn
    assert sorted(by_q["Reykjavik"]["turns"]) == ["D2:2", "D2:4"]  # not syn-2's D5:2
    assert by_q["Pretzel"]["turns"] == ["D1:3"]
    assert by_q["Pretzel"]["evidence_ranks"] == {"D1:3": 1, "D2:1": None}
    assert by_q["Pretzel"]["recall@5"] == 0.5
    assert by_q["Pretzel"]["ndcg@10"] == pytest.approx(1 / (1 + INV_LOG2_3), abs=1e-6)
    assert by_q["What class does Alice take?"]["turns"][0] == "D1:5"
    assert by_q["Who chewed Carol's shoes?"]["turns"] == ["D5:1"]

    s = report.summary
    assert s["conversations"] == 2 and s["turns"] == 13
    assert s["questions"]["scored"] == 5
    assert s["questions"]["by_category"] == {"1": 1, "2": 1, "3": 1, "4": 2}
    assert s["questions"]["skipped"]["no_evidence"] == 2
    assert s["questions"]["skipped"]["evidence_unresolved"] == 3
    overall = s["modes"]["keyword"]["overall"]
    assert overall["n"] == 5
    assert overall["recall@5"] == pytest.approx(0.9)
    assert overall["recall@20"] == pytest.approx(0.9)
    assert overall["ndcg@10"] == pytest.approx((4 + 1 / (1 + INV_LOG2_3)) / 5, abs=1e-4)
    cats = s["modes"]["keyword"]["by_category"]
    assert cats["2"]["recall@10"] == 0.5 and cats["2"]["name"] == "temporal"
    assert cats["4"]["recall@10"] == 1.0 and cats["4"]["n"] == 2
    assert list(s["modes"]) == ["keyword"]


def test_agentmems_modes_in_one_run(shared_embedder: CachedEmbedder, tmp_path: Path) -> None:
    report = run_locomo(DATA, modes=locomo.MODES, embedder=shared_embedder)
    s = report.summary
    assert list(s["modes"]) == ["hybrid", "defaults", "keyword", "vector"]
    for mode, res in s["modes"].items():
        assert res["overall"]["n"] == 5
        for metric in locomo.METRICS:
            assert 0.0 <= res["overall"][metric] <= 1.0
        assert set(res["by_category"]) == {"1", "2", "3", "4"}
        assert res["latency_ms"]["p50"] > 0
        for q in report.questions:
            turns = q["modes"][mode]["turns"]
            assert len(turns) == len(set(turns)) <= 20
            if q["sample_id"] == "syn-2":  # isolation: only syn-2's own turns
                assert all(t.startswith("D5:") for t in turns)
            else:
                assert not any(t.startswith("D5:") for t in turns)
    hybrid = {q["question"]: q["modes"]["hybrid"] for q in report.questions}
    assert hybrid["What is Pretzel?"]["evidence_ranks"]["D1:3"] is not None
    assert s["settings"]["top_k"] == 20 and s["settings"]["min_score"] == 0.0
    # hybrid returns every candidate up to top_k; at default settings the calibrated
    # min_score and the token budget decide, so it returns no more than hybrid, in its order
    for q in report.questions:
        at_defaults, full = q["modes"]["defaults"]["turns"], q["modes"]["hybrid"]["turns"]
        assert q["modes"]["hybrid"]["hits"] >= q["modes"]["defaults"]["hits"]
        assert at_defaults == [t for t in full if t in at_defaults]
    assert s["modes"]["defaults"]["overall"]["hits"] < s["modes"]["hybrid"]["overall"]["hits"]

    paths = report.write(tmp_path / "out")
    assert json.loads(paths[0].read_text())["questions"]["scored"] == 5
    assert "| hybrid |" in paths[1].read_text()
    lines = paths[2].read_text().splitlines()
    assert len(lines) == 5 and json.loads(lines[0])["modes"]["vector"]["turns"]


def test_ingestion_fidelity(shared_embedder: CachedEmbedder, make_memory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "store"
    run_locomo(
        DATA,
        modes=["keyword"],
        captions=True,
        limit_questions=1,
        home=home,
        embedder=shared_embedder,
    )
    mem = make_memory(path=home)
    m = mem.bind(locomo.TENANT, user_id="syn-1", session_id="syn-1:s1")
    items = m.messages()
    assert [i.metadata["dia_id"] for i in items] == ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5"]
    assert [i.role for i in items] == ["user", "assistant", "user", "assistant", "user"]
    assert items[2].metadata == {"dia_id": "D1:3", "speaker": "Alice", "session": 1}
    assert items[2].event_time == datetime(2023, 5, 8, 13, 56, 2, tzinfo=UTC)
    assert items[3].content.endswith("[shared an image: a photo of a golden retriever on a sofa]")
    # limit_questions=1 needs only syn-1, so syn-2 was not ingested
    other = mem.bind(locomo.TENANT, user_id="syn-2", session_id="syn-2:s5")
    assert other.messages() == []


def test_close_sessions_writes_summaries_as_an_application_would(
    shared_embedder: CachedEmbedder,
    make_memory,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    home = tmp_path / "store"
    report = run_locomo(
        DATA, modes=["hybrid"], close_sessions=True, home=home, embedder=shared_embedder
    )
    assert report.summary["settings"]["close_sessions"] is True
    mem = make_memory(path=home)
    m = mem.bind(locomo.TENANT, user_id="syn-1", session_id=locomo.QUERY_SESSION)
    details = [m.session_detail(sid) for sid in m.sessions()]
    assert details and all(d.tier is not None for d in details)  # every session was closed
    assert all(d.summary for d in details)  # the offline summariser wrote one each
    # without the option nothing is closed
    plain = run_locomo(DATA, modes=["hybrid"], home=tmp_path / "plain", embedder=shared_embedder)
    assert plain.summary["settings"]["close_sessions"] is False
    again = make_memory(path=tmp_path / "plain").bind(locomo.TENANT, user_id="syn-1")
    assert all(again.session_detail(sid).tier is None for sid in again.sessions())


def test_limit_and_samples(shared_embedder: CachedEmbedder) -> None:
    report = run_locomo(DATA, modes=["keyword"], samples=["syn-2"], embedder=shared_embedder)
    assert report.summary["questions"]["scored"] == 1 and report.summary["turns"] == 2
    with pytest.raises(ValidationError, match="not in the file"):
        run_locomo(DATA, samples=["nope"], embedder=shared_embedder)
    with pytest.raises(ValidationError):
        run_locomo(DATA, modes=["bm25"], embedder=shared_embedder)
    with pytest.raises(ValidationError):
        run_locomo(DATA, limit_questions=0, embedder=shared_embedder)


# -- CLI ------------------------------------------------------------------------------------
def test_cli_json_is_parseable_and_out_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "report"
    status = main(
        [
            "eval",
            "--locomo",
            str(DATA),
            "--json",
            "--out",
            str(out),
            "--limit-questions",
            "3",
            "--modes",
            "hybrid,keyword,vector",
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    data = json.loads(captured.out)
    assert data["questions"]["scored"] == 3
    assert data["questions"]["skipped"]["over_limit"] == 2
    assert set(data["modes"]) == {"hybrid", "keyword", "vector"}
    assert "peers" not in data
    assert {p.name for p in out.iterdir()} == {
        "locomo.json",
        "locomo.md",
        "locomo_questions.jsonl",
    }


def test_cli_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["eval", "--locomo", str(DATA), "--modes", "keyword,vector"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "LoCoMo evidence retrieval" in captured.out
    assert "keyword" in captured.out and "hybrid" not in captured.out


def test_cli_bad_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"not": "locomo"}))
    status = main(["eval", "--locomo", str(bad), "--json"])
    captured = capsys.readouterr()
    assert status == 2
    assert "locomo" in json.loads(captured.out)["error"]["message"]


def test_embed_cache_reuses_vectors_across_runs(
    shared_embedder: CachedEmbedder, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    first = run_locomo(DATA, modes=["vector"], embedder=shared_embedder, embed_cache=cache)
    second = run_locomo(DATA, modes=["vector"], embedder=shared_embedder, embed_cache=cache)
    s1 = first.summary["settings"]["embed_cache"]
    s2 = second.summary["settings"]["embed_cache"]
    assert s1["misses"] > 0
    assert s2["misses"] == 0 and s2["hits"] >= s1["misses"]
    assert first.summary["modes"] == {
        **second.summary["modes"],
        "vector": {
            **second.summary["modes"]["vector"],
            "latency_ms": first.summary["modes"]["vector"]["latency_ms"],
        },
    }
    assert [q["modes"]["vector"]["turns"] for q in first.questions] == [
        q["modes"]["vector"]["turns"] for q in second.questions
    ]
