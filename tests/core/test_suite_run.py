"""The evaluation suite end to end on small fixtures (real SQLite, Tantivy, Chroma and the
bundled embedder): the halves and naive RRF, the four systems and their metrics, the labelled
candidates, the report and the command line.

Fixtures: ``tests/data/suite`` (an ``implicit`` family of three cases in the conversation
format and an ``identifiers`` family of four in the golden format) and
``tests/data/synthetic_long_conversations.json`` (two small LoCoMo-shaped conversations),
never benchmark data. Nothing here asserts how good recall is; only what holds by
construction and what the figures must agree with.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agentmem import AgentMemory, UncalibratedEmbedderWarning
from agentmem.cli import main
from agentmem.embeddings import CachedEmbedder
from agentmem.evaluation.halves import naive_rrf, retriever_rows
from agentmem.evaluation.locomo import load_locomo
from agentmem.evaluation.suite import (
    METRICS,
    SYSTEMS,
    SuiteCase,
    SuiteReport,
    candidate_request,
    collect_golden,
    collect_locomo,
    collect_suite,
    family_store,
    load_candidates,
    load_conversations,
    plan,
    run_suite,
    save_candidates,
)
from agentmem.evaluation.suite.conversations import session_messages
from agentmem.evaluation.suite.metrics import ece, evidence_ranks, hit_at, recall_at
from agentmem.evaluation.suite.stores import settle
from agentmem.models import Identity
from agentmem.recall.ranking import FEATURE_NAMES
from agentmem.storage.keyword_index import KeywordDoc, build_analyzer

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURE = DATA / "suite"
LOCOMO = DATA / "synthetic_long_conversations.json"


# -- the halves and naive RRF -------------------------------------------------------------------
def test_naive_rrf_sums_reciprocal_ranks() -> None:
    assert naive_rrf([["a", "b", "c"], ["b", "c"]]) == ["b", "c", "a"]
    # second in both lists beats first in one
    assert naive_rrf([["x", "y"], ["z", "y"]])[0] == "y"
    assert naive_rrf([["a"], []]) == ["a"]
    assert naive_rrf([["a"], ["b"]]) == ["a", "b"]  # ties: first seen first
    assert naive_rrf([[], []]) == []


def test_the_vector_half_orders_by_plain_cosine_even_beside_another_identifier(
    make_memory: Any,
) -> None:
    """Ranking zeroes the cosine of a row naming another identifier (``id_miss``); the vector
    half alone is plain cosine, so that row keeps its place."""
    mem = make_memory()
    bound = mem.bind("t", "u", session_id="s")
    bound.remember("Invoice INV-2024-0412 from Brightline was paid on 28 April.")
    bound.remember("The office plants need watering twice a week.")
    mem.flush()
    query = "Has invoice INV-2024-0498 been paid?"
    rows = retriever_rows(mem, bound.identity, query, "vector")
    assert next(r.content for r in rows).startswith("Invoice INV-2024-0412")
    ranked, visible, _ = mem.engine.candidates(
        bound.identity, candidate_request(_case(bound.identity, query))
    )
    invoice = next(c for c in ranked if visible[c.id][1].content.startswith("Invoice"))
    assert invoice.cos == 0.0 and invoice.vec_cos is not None and invoice.vec_cos > 0.3
    keyword = retriever_rows(mem, bound.identity, query, "keyword")
    assert [r.content[:7] for r in keyword] == ["Invoice"]  # the plants share no term
    with pytest.raises(ValueError, match="retriever must be one of"):
        retriever_rows(mem, bound.identity, query, "bm25")


def _case(identity: Identity, query: str) -> SuiteCase:
    return SuiteCase(
        family="t",
        id="c",
        group="c",
        query=query,
        evidence=frozenset(),
        expect_empty=False,
        identity=identity,
        scope="any",
    )


# -- metrics ------------------------------------------------------------------------------------
def test_evidence_ranks_recall_and_hit() -> None:
    ranks = evidence_ranks([("x",), ("a", "b"), ("a",), ("c",)], frozenset({"a", "c", "z"}))
    assert ranks == {"a": 2, "c": 4, "z": None}
    assert recall_at(ranks, 1) == 0.0 and recall_at(ranks, 2) == pytest.approx(1 / 3)
    assert recall_at(ranks, 10) == pytest.approx(2 / 3)
    assert hit_at(ranks, 1) == 0.0 and hit_at(ranks, 2) == 1.0
    # only the first k hits count
    assert evidence_ranks([("x",), ("a",)], frozenset({"a"}), k=1) == {"a": None}
    assert recall_at({}, 5) == 0.0


def test_ece_is_the_weighted_gap_between_score_and_share_relevant() -> None:
    scores = np.array([0.05, 0.05, 0.95, 0.95])
    assert ece(scores, np.array([0.0, 0.0, 1.0, 1.0])) == pytest.approx(0.05)
    assert ece(scores, np.array([1.0, 1.0, 0.0, 0.0])) == pytest.approx(0.95)
    assert ece(np.array([1.0]), np.array([1.0])) == 0.0  # a score of 1 falls in the top bin
    assert ece(np.zeros(0), np.zeros(0)) == 0.0


# -- settling a store ---------------------------------------------------------------------------
def test_settle_leaves_no_replaced_entry_in_the_keyword_statistics(make_memory: Any) -> None:
    """The indexer replaces a chat message's keyword entry when its context is worked out;
    until a merge drops it, the old entry counts in BM25 and IDF, and when that merge happens
    differs from run to run. A settled store counts only live entries."""
    data = load_conversations(FIXTURE / "implicit.json")
    mem: AgentMemory = make_memory()
    conv = data.conversations[0]
    for s in conv.sessions:
        mem.bind("t", conv.id, session_id=s.id).add_messages(session_messages(s))
    mem.flush()
    partition = f"conv:u:{conv.id}"
    item = mem.bind("t", conv.id, session_id=conv.sessions[0].id).messages()[0]
    # replace one entry, as the indexer does when a message's context changes
    mem.keywords.add(
        [
            KeywordDoc(
                id=item.id,
                tenant="t",
                partition=partition,
                session=conv.sessions[0].id,
                kind="chat_message",
                memory_type="",
                scope="session",
                content=item.content,
            )
        ]
    )
    mem.keywords.commit()

    def replaced() -> int:
        return mem.keywords.stored_entries(partition) - mem.keywords.live_entries(partition)

    assert replaced() == 1
    settle(mem)
    assert replaced() == 0
    assert mem.keywords.live_entries(partition) == sum(len(s.turns) for s in conv.sessions)


# -- the suite on the fixtures ------------------------------------------------------------------
@pytest.fixture(scope="module")
def report(shared_embedder: CachedEmbedder) -> SuiteReport:
    return run_suite(directory=FIXTURE, embedder=shared_embedder)


def test_the_fixture_families_run_and_the_others_are_skipped(report: SuiteReport) -> None:
    fams = report.families
    assert list(fams) == ["implicit", "identifiers"]
    assert fams["implicit"]["cases"] == 2 and fams["implicit"]["expect_empty_cases"] == 1
    assert fams["identifiers"]["cases"] == 3 and fams["identifiers"]["expect_empty_cases"] == 1
    assert fams["implicit"]["rows"] == 15
    assert "locomo" in report.summary["skipped"] and "paraphrase" in report.summary["skipped"]
    assert [c.family for c in report.cases] == ["implicit"] * 3 + ["identifiers"] * 4


def test_every_figure_agrees_with_the_cases(report: SuiteReport) -> None:
    for name, fam in report.families.items():
        mine = [c for c in report.cases if c.family == name]
        judged = [c for c in mine if not c.expect_empty]
        empty = [c for c in mine if c.expect_empty]
        for system in SYSTEMS:
            got = fam["systems"][system]
            ranks = [c.systems[system].ranks for c in judged]
            assert got["R@5"] == pytest.approx(np.mean([recall_at(r, 5) for r in ranks]))
            assert got["R@10"] == pytest.approx(np.mean([recall_at(r, 10) for r in ranks]))
            assert got["hit@10"] == pytest.approx(np.mean([hit_at(r, 10) for r in ranks]))
            passed = [c.systems[system].returned == 0 for c in empty]
            assert got["expect_empty"] == pytest.approx(np.mean(passed))
            assert all(0.0 <= v <= 1.0 for v in got.values() if v is not None)


def test_what_holds_by_construction(report: SuiteReport) -> None:
    by_id = {c.id: c for c in report.cases}
    for case in report.cases:
        s = case.systems
        # naive RRF fuses every row either half found; the vector half finds rows for any query
        assert s["rrf"].returned >= max(s["keyword"].returned, s["vector"].returned)
        assert s["rrf"].returned <= s["keyword"].returned + s["vector"].returned
        assert s["vector"].returned > 0
        # at defaults agentmem returns at most top_k=10
        assert s["agentmem"].returned <= 10
    # the violin question shares no analysed term with the implicit store: the keyword half
    # finds nothing, while the halves without a threshold never pass an expect-empty case
    analyzer = build_analyzer()
    violin = by_id["fx-imp-02-q02"]
    texts = [
        t.text
        for c in load_conversations(FIXTURE / "implicit.json").conversations
        for s in c.sessions
        for t in s.turns
    ]
    stored = set().union(*(set(analyzer.analyze(t)) for t in texts))
    assert not set(analyzer.analyze(violin.query)) & stored
    assert violin.systems["keyword"].returned == 0
    assert report.families["implicit"]["systems"]["vector"]["expect_empty"] == 0.0
    # every row of the tiny identifiers store that shares a term with the query is among the
    # keyword half's first 10: the ticket is found
    assert by_id["fx-id-01"].systems["keyword"].ranks == {
        "OPS-4471: payment webhook retries exhausted for merchant Lumen; escalated to on-call.": 1
    }
    # a passage is found through its document's chunk
    assert (
        by_id["fx-id-03"]
        .systems["keyword"]
        .ranks["promote the replica with the lowest replication lag"]
        is not None
    )


def test_the_candidates_are_labelled_for_every_case(report: SuiteReport) -> None:
    queries = {q.case_id: q for q in report.candidates}
    assert list(queries) == [c.id for c in report.cases]
    for q in queries.values():
        n = len(q)
        assert q.features.shape == (n, len(FEATURE_NAMES))
        assert q.scores.shape == q.labels.shape == q.tokens.shape == (n,)
        assert len(q.kinds) == len(q.units) == n
        assert np.all((q.scores >= 0.0) & (q.scores <= 1.0))
        assert [bool(set(u) & set(q.evidence)) for u in q.units] == list(q.labels.astype(bool))
        if q.expect_empty:
            assert q.evidence == () and not q.labels.any() and q.ceiling is None
        else:
            # every store partition is smaller than recall's pool: all the evidence is there
            assert q.ceiling == 1.0 and q.labels.any()
    assert queries["fx-imp-01-q01"].group == "fx-imp-01"
    assert set(queries["fx-imp-01-q01"].kinds) == {"chat_message"}
    assert "document_chunk" in queries["fx-id-03"].kinds
    # no candidate says SEC-9902: recall (and its simulation) returns nothing
    assert queries["fx-id-04"].unknown_code and not queries["fx-id-01"].unknown_code
    cal = report.families["identifiers"]["calibration"]
    assert cal["candidates"] == sum(len(q) for q in report.candidates if q.family == "identifiers")
    assert 0.0 <= cal["ece"] <= 1.0 and cal["ceiling"] == 1.0
    assert (
        cal["expect_empty"] == report.families["identifiers"]["systems"]["agentmem"]["expect_empty"]
    )


def test_the_report_has_a_table_per_metric_and_the_worst_family(
    report: SuiteReport, tmp_path: Path
) -> None:
    md = report.markdown()
    assert md.count("| worst family |") == len(METRICS)
    assert "## calibration of agentmem's scores" in md
    assert "| family | cases | agentmem (defaults) | keyword half | vector half | naive RRF |" in md
    worst = report.to_dict()["worst_family"]
    for metric in METRICS:
        for system in SYSTEMS:
            name, value = worst[metric][system]
            assert value == min(f["systems"][system][metric] for f in report.families.values())
            assert report.families[name]["systems"][system][metric] == value
    paths = report.write(tmp_path / "out")
    assert [p.name for p in paths] == [
        "suite.json",
        "suite.md",
        "suite_cases.jsonl",
        "candidates.jsonl.gz",
    ]
    assert json.loads(paths[0].read_text())["families"].keys() == report.families.keys()
    lines = paths[2].read_text().splitlines()
    assert len(lines) == len(report.cases) and json.loads(lines[0])["systems"].keys() == set(
        SYSTEMS
    )
    again = load_candidates(paths[3])
    assert [q.case_id for q in again] == [q.case_id for q in report.candidates]
    for a, b in zip(again, report.candidates, strict=True):
        assert np.allclose(a.features, b.features, atol=1e-6) and a.units == b.units
        assert np.array_equal(a.labels, b.labels) and a.kinds == b.kinds
        assert a.unknown_code == b.unknown_code
        assert a.asks == b.asks and len(a.asks) == len(a.kinds)


def test_a_candidates_file_of_other_features_is_refused(
    tmp_path: Path, report: SuiteReport
) -> None:
    path = save_candidates(tmp_path / "c.jsonl", report.candidates[:2])
    assert len(load_candidates(path)) == 2
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["features"] = ["cos"]
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match="collect them again"):
        load_candidates(path)
    other = tmp_path / "other.jsonl.gz"
    with gzip.open(other, "wt") as fh:
        fh.write("{}\n")
    with pytest.raises(ValueError, match="not a candidates file"):
        load_candidates(other)


# -- LoCoMo and the golden sets -----------------------------------------------------------------
def test_the_locomo_family_adds_the_suites_empty_questions(shared_embedder: CachedEmbedder) -> None:
    report = run_suite(["locomo"], locomo=LOCOMO, embedder=shared_embedder)
    cases = [c for c in report.cases if c.family == "locomo"]
    empty = [c for c in cases if c.expect_empty]
    assert len(empty) == 2 * 12  # every template, asked of both conversations
    assert any("Alice" in c.query for c in empty) and any("Dan" in c.query for c in empty)
    assert not any("{speaker" in c.query for c in empty)
    scored = [c for c in cases if not c.expect_empty]
    questions = sum(len(c.questions) for c in load_locomo(LOCOMO))
    assert report.families["locomo"]["cases"] == len(scored) == questions
    for q in report.candidates:
        assert all(u and all(d.startswith("D") for d in u) for u in q.units)
    # the candidates alone, as benchmarks/fit_calibration.py collects them
    only = collect_locomo(LOCOMO, embedder=shared_embedder)
    assert [q.case_id for q in only] == [c.id for c in scored]
    assert {q.tags[0] for q in only} <= {"multi-hop", "temporal", "open-domain", "single-hop"}


def test_a_validation_family_is_reported_and_fitted_on_only_when_named(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    """``implicit_dialogue`` validates what is fitted on the other families: the suite runs
    it, a fit (``collect_suite``) leaves it out unless it is named, and its turns are stored
    with who said them."""
    raw = json.loads((FIXTURE / "implicit.json").read_text(encoding="utf-8"))
    shutil.copy(FIXTURE / "implicit.json", tmp_path / "implicit.json")
    raw["family"] = "implicit_dialogue"
    for conv in raw["conversations"]:
        conv["speakers"] = [conv["user"], "Ola"]
        for session in conv["sessions"]:
            for turn in session["turns"]:
                turn["speaker"] = conv["user"] if turn["role"] == "user" else "Ola"
    (tmp_path / "implicit_dialogue.json").write_text(json.dumps(raw), encoding="utf-8")
    assert plan(None, directory=tmp_path)[0] == ["implicit", "implicit_dialogue"]
    fitted = collect_suite(directory=tmp_path, embedder=shared_embedder)
    assert {q.family for q in fitted} == {"implicit"}
    named = collect_suite(["implicit_dialogue"], directory=tmp_path, embedder=shared_embedder)
    assert [q.case_id for q in named] == [c["id"] for c in raw["cases"]]
    with family_store("implicit_dialogue", directory=tmp_path, embedder=shared_embedder) as (
        mem,
        _,
    ):
        conv = raw["conversations"][0]
        session = conv["sessions"][0]
        stored = mem.bind("suite.implicit_dialogue", conv["id"], session_id=session["id"])
        assert [m.metadata["speaker"] for m in stored.messages()] == [
            t["speaker"] for t in session["turns"]
        ]


def test_collect_golden_isolates_every_case(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    doc = "Step one: confirm the outage. " * 40 + "The spare key is in the red box under the desk."
    data = {
        "distractors": [{"content": "Parking is on level -2."}],
        "cases": [
            {
                "id": "doc",
                "query": "where is the spare key?",
                "setup_memories": [{"kind": "document_chunk", "content": doc}],
                "expected_retrievals": [doc],
            },
            {
                "id": "fact",
                "query": "where do I park?",
                "setup_memories": [{"content": "I cycle to work."}],
                "expected_retrievals": ["Parking is on level -2."],
            },
        ],
    }
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    queries = collect_golden(path, embedder=shared_embedder)
    assert [q.case_id for q in queries] == ["doc", "fact"]
    assert all(q.family == "golden" for q in queries)  # a file without a family: its name
    docq, factq = queries
    # a document's content is the unit of each of its chunks
    assert docq.kinds.count("document_chunk") >= 2
    assert all(docq.labels[i] == 1.0 for i, k in enumerate(docq.kinds) if k == "document_chunk")
    # each case's own store: its setup and the distractors, nobody else's rows
    assert {u for units in factq.units for u in units} == {
        "I cycle to work.",
        "Parking is on level -2.",
    }


# -- the command line ---------------------------------------------------------------------------
@pytest.fixture
def cli_embedder(monkeypatch: pytest.MonkeyPatch, shared_embedder: CachedEmbedder) -> None:
    monkeypatch.setattr("agentmem.cli.eval_suite.shared_embedder", lambda _args: shared_embedder)


@pytest.mark.usefixtures("cli_embedder")
def test_cli_suite_json_out_and_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "eval",
            "--suite",
            "--suite-dir",
            str(FIXTURE),
            "--families",
            "identifiers",
            "--json",
            "--out",
            str(out),
            "--embed-cache",
            str(tmp_path / "cache"),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    data = json.loads(captured.out)
    assert list(data["families"]) == ["identifiers"]
    assert data["settings"]["embed_cache"]["misses"] > 0
    assert data["worst_family"]["R@10"]["agentmem"][0] == "identifiers"
    assert (out / "suite.md").is_file() and (out / "candidates.jsonl.gz").is_file()
    assert "wrote" in captured.err
    # text mode: the tables, whole lines whatever the terminal's width
    assert (
        main(
            [
                "eval",
                "--suite",
                "--suite-dir",
                str(FIXTURE),
                "--families",
                "identifiers",
                "--embed-cache",
                str(tmp_path / "cache"),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "| worst family |" in text and "| identifiers | 3 |" in text
    row = next(line for line in text.splitlines() if line.startswith("| family |"))
    assert row.endswith("naive RRF |")


def test_cli_suite_runs_the_embedder_the_command_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agentmem --embedder SPEC eval --suite`` measures that embedder, not the default."""
    argv = ["--embedder", "_embedding_service:renamed_minilm", "eval", "--suite"]
    argv += ["--suite-dir", str(FIXTURE), "--families", "identifiers", "--json"]
    with pytest.warns(UncalibratedEmbedderWarning):
        assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["embedder"] == "minilm-renamed"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--families", "nope"], "unknown ['nope']"),
        (["--families", "paraphrase"], "paraphrase: no data file"),
        (["--families", "locomo"], "locomo: no LoCoMo file"),
        (["--dataset", "golden"], "--suite cannot be combined with --dataset"),
    ],
)
def test_cli_suite_refuses_what_cannot_run(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "--suite", "--suite-dir", str(FIXTURE), *argv]) == 2
    assert message in capsys.readouterr().err


def test_cli_help_documents_the_suite(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = capsys.readouterr().out
    for flag in ("--suite", "--families", "--suite-dir", "--embed-cache", "--locomo"):
        assert flag in text
