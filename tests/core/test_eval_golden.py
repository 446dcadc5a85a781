"""Tests for the golden-dataset evaluation (``agentmem eval --dataset``).

Metric arithmetic is checked on hand-built results where the answer is known; the runner and
the CLI run end to end (real SQLite, Tantivy, Chroma and embedder) on small synthetic
datasets written to ``tmp_path``; the last test runs the project's own dataset against the
issue-2 quality bar.
"""

from __future__ import annotations

import json
import os
import sys
import types
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentmem.bench.stats import percentile
from agentmem.chunking import chunk_text
from agentmem.cli import build_parser, main
from agentmem.embeddings import CachedEmbedder
from agentmem.evaluation import (
    CaseResult,
    DatasetError,
    GoldenCase,
    GoldenDataset,
    ReturnedItem,
    SetupMemory,
    Thresholds,
    dataset_path,
    golden_dataset_path,
    load_dataset,
    parse_dataset,
    relation,
    run_golden,
    score_case,
    summarize,
)
from agentmem.evaluation.golden import markdown
from agentmem.models import MEMORY_TYPES, RecallHit, RecallResult

GOLDEN = golden_dataset_path()

TICKET = "Ticket ZQX-88412: replace the broken fan in rack 7"
TEA = "I like green tea without sugar"
LONG_DOC = " ".join(
    [
        f"Section {n}. The quarterly maintenance window for the storage cluster covers "
        f"firmware updates, disk scrubbing and a controlled failover drill number {n}."
        for n in range(1, 12)
    ]
    + ["The emergency contact for the datacentre is Vireo Okonkwo-Lindqvist on extension 5521."]
)


# -- helpers --------------------------------------------------------------------------------------
def _write(tmp_path: Path, data: dict[str, Any], name: str = "golden.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _passing_dataset() -> dict[str, Any]:
    """Cases any sane hybrid recall gets right: exact rare ids, isolation, an unrelated query."""
    return {
        "version": "test",
        "description": "synthetic",
        "cases": [
            {
                "id": "keyword",
                "tags": ["keyword"],
                "setup_memories": [
                    {"content": TICKET, "type": "task"},
                    {"content": TEA, "type": "preference"},
                ],
                "query": "ZQX-88412",
                "expected_retrievals": [TICKET],
                "rubric": "exact id",
            },
            {
                "id": "cross-user",
                "tags": ["cross-user"],
                "setup_memories": [
                    {"content": "Bob's locker code is 93-71-44 (KRX-5521)", "user_id": "bob"},
                    {"content": TEA, "type": "preference"},
                ],
                "query": "KRX-5521 locker code",
                "expected_retrievals": [],
                "expect_empty": True,
                "forbidden": ["Bob's locker code is 93-71-44 (KRX-5521)"],
                "rubric": "another user's memory never comes back",
            },
            {
                "id": "cross-tenant",
                "tags": ["cross-tenant"],
                "setup_memories": [
                    {"content": "Globex build server is bld-qq-7781", "tenant_id": "globex"},
                    {"content": "Acme build server is bld-qq-7781", "scope": "tenant"},
                ],
                "query": "bld-qq-7781",
                "expected_retrievals": ["Acme build server is bld-qq-7781"],
                "forbidden": ["Globex build server is bld-qq-7781"],
                "rubric": "same text in another tenant",
            },
            {
                "id": "document-second-chunk",
                "tags": ["document"],
                "setup_memories": [
                    {"content": LONG_DOC, "kind": "document_chunk", "source_ref": "maint"},
                    {"content": TEA, "type": "preference"},
                ],
                "query": "Okonkwo-Lindqvist extension",
                "expected_retrievals": [LONG_DOC],
                "rubric": "a document matches any of its chunks",
            },
            {
                "id": "messages-and-tools",
                "tags": ["session"],
                "setup_memories": [
                    {
                        "content": "My parcel tracking number is JJD-0044-7712",
                        "kind": "chat_message",
                    },
                    {"content": "ok", "kind": "chat_message", "role": "assistant"},
                    {
                        "content": '{"tracking": "JJD-0044-7712", "status": "in customs"}',
                        "kind": "tool_output",
                        "tool_name": "track_parcel",
                    },
                ],
                "query": "JJD-0044-7712",
                "expected_retrievals": [
                    "My parcel tracking number is JJD-0044-7712",
                    '{"tracking": "JJD-0044-7712", "status": "in customs"}',
                ],
                "rubric": "messages and tool outputs",
            },
            {
                "id": "supersession",
                "tags": ["supersession"],
                "setup_memories": [
                    {"content": "Locker PIN for gym QVB-31 is 1111", "topic_key": "gym_pin"},
                    {"content": "Locker PIN for gym QVB-31 is 2222", "topic_key": "gym_pin"},
                ],
                "query": "QVB-31 locker PIN",
                "expected_retrievals": ["Locker PIN for gym QVB-31 is 2222"],
                "forbidden": ["Locker PIN for gym QVB-31 is 1111"],
                "rubric": "the newer memory supersedes the older",
            },
            {
                "id": "unrelated",
                "tags": ["expect-empty"],
                "setup_memories": [{"content": TICKET, "type": "task"}],
                "query": "what is the boiling point of ethanol?",
                "expected_retrievals": [],
                "expect_empty": True,
                "rubric": "nothing related",
            },
            {
                "id": "tiny-budget",
                "tags": ["budget"],
                "token_budget": 20,
                "setup_memories": [
                    {
                        "content": "Runbook VXP-9: "
                        + "restart the queue consumer, then drain the dead letter queue. " * 6,
                        "type": "instruction",
                    }
                ],
                "query": "VXP-9 runbook",
                "expected_retrievals": [
                    "Runbook VXP-9: "
                    + "restart the queue consumer, then drain the dead letter queue. " * 6
                ],
                "rubric": "the budget truncates the item but is respected",
            },
        ],
    }


def _failing_dataset() -> dict[str, Any]:
    return {
        "version": "test",
        "cases": [
            {
                "id": "wrong-expectation",
                "setup_memories": [{"content": TICKET, "type": "task"}, {"content": TEA}],
                "query": "ZQX-88412",
                "expected_retrievals": [TEA],
                "rubric": "deliberately unreachable: the tea memory has nothing to do with it",
            }
        ],
    }


def _hit(id_: str, content: str = "x", score: float = 0.9) -> RecallHit:
    return RecallHit(
        id=id_,
        kind="memory",
        memory_type="fact",
        scope="user",
        content=content,
        score=score,
        source_ref=None,
        event_time=datetime(2024, 1, 1, tzinfo=UTC),
        session_id=None,
    )


def _result(*hits: RecallHit, token_count: int = 3) -> RecallResult:
    return RecallResult(items=list(hits), total=len(hits), token_count=token_count)


def _case_result(
    id_: str,
    verdicts: list[str],
    *,
    expected: int = 1,
    found: int | None = None,
    expect_empty: bool = False,
    tokens: int = 5,
    budget: int = 1000,
    latency: float = 10.0,
) -> CaseResult:
    n_found = sum(1 for v in verdicts if v == "expected") if found is None else found
    exp = tuple(f"{id_}-e{n}" for n in range(expected))
    returned = tuple(ReturnedItem(f"{id_}-r{n}", "memory", 0.9, v) for n, v in enumerate(verdicts))
    return CaseResult(
        id=id_,
        tags=("t",),
        query="q",
        rubric="",
        expected=exp,
        expect_empty=expect_empty,
        returned=returned,
        found=exp[:n_found],
        missing=exp[n_found:],
        recall=(n_found / expected) if expected else None,
        precision=(sum(1 for v in verdicts if v == "expected") / len(verdicts))
        if verdicts
        else None,
        latency_ms=latency,
        token_count=tokens,
        counted_tokens=tokens,
        token_budget=budget,
        degraded=False,
    )


DATASET = GoldenDataset(cases=(), version="t", source="synthetic")


# -- dataset loading and validation ---------------------------------------------------------------
def test_seed_example_parses_with_defaults() -> None:
    ds = parse_dataset(
        {
            "version": "1.0.0",
            "description": "Memory retrieval quality evaluation",
            "cases": [
                {
                    "id": "recall-preference-001",
                    "setup_memories": [
                        {"content": "User prefers uv over pip", "type": "preference"}
                    ],
                    "query": "What package manager should I use?",
                    "expected_retrievals": ["User prefers uv over pip"],
                    "rubric": "Memory about uv preference MUST appear in top 3 results",
                }
            ],
        }
    )
    (case,) = ds.cases
    assert case.scope == "any" and case.types is None and not case.expect_empty
    assert (case.tenant_id, case.user_id, case.session_id) == ("acme", "alice", "s-current")
    (m,) = case.setup
    assert (m.kind, m.memory_type, m.home_scope) == ("memory", "preference", "user")


def test_validation_lists_every_problem_with_its_path() -> None:
    bad = {
        "version": 1,
        "cases": [
            {
                "id": "a",
                "setup_memories": [
                    {"content": "x", "kind": "email"},
                    {"content": "y", "kind": "chat_message", "type": "fact"},
                    {"content": "z", "type": "opinion"},
                    {"content": "", "user_id": "bob"},
                ],
                "query": "q",
                "expected_retrievals": ["not in setup"],
            },
            {"id": "a", "setup_memories": [], "query": "q", "expected_retrievals": []},
            {
                "id": "b",
                "setup_memories": [{"content": "w"}],
                "query": "  ",
                "expected_retrievals": ["w"],
                "expect_empty": True,
                "types": ["fact", "gossip"],
                "scope": "planet",
                "expectd": [],
            },
            "not a case",
        ],
    }
    with pytest.raises(DatasetError) as info:
        parse_dataset(bad, source="bad.json")
    err = info.value
    paths = {where for where, _ in err.problems}
    assert "version" in paths
    assert "cases[0](a).setup_memories[0].kind" in paths
    assert "cases[0](a).setup_memories[1].type" in paths
    assert "cases[0](a).setup_memories[2].type" in paths
    assert "cases[0](a).setup_memories[3].content" in paths
    assert "cases[1](a).expected_retrievals" in paths  # empty without expect_empty
    assert "cases[2](b).query" in paths
    assert "cases[2](b).expected_retrievals" in paths  # expected with expect_empty
    assert "cases[2](b).types" in paths
    assert "cases[2](b).scope" in paths
    assert "cases[2]" in paths  # unknown key 'expectd'
    assert "cases[3]" in paths
    message = str(err)
    assert message.startswith("dataset: bad.json is not a valid golden dataset")
    assert "unknown keys ['expectd']" in message
    assert "applies only to kind memory" in message


def test_unknown_top_level_keys_are_ignored_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = _passing_dataset()
    data["license"] = "CC-BY-4.0"
    data["generated_by"] = {"tool": "a newer agentmem"}
    with caplog.at_level("WARNING", logger="agentmem.evaluation"):
        ds = parse_dataset(data, source="grown.json")
    assert len(ds.cases) == len(_passing_dataset()["cases"])
    (warning,) = ds.warnings
    assert warning == "grown.json: ignoring unknown top-level keys ['generated_by', 'license']"
    assert warning in caplog.text
    # inside a case an unknown key is still a problem (most likely a misspelt field)
    data["cases"][0]["expected_retrieval"] = []
    with pytest.raises(DatasetError, match=r"unknown keys \['expected_retrieval'\]"):
        parse_dataset(data, source="grown.json")


def test_expect_empty_implies_no_expected_retrievals() -> None:
    case = {
        "id": "nothing-relevant",
        "setup_memories": [{"content": "The office plants are watered on Fridays"}],
        "query": "lattice quantum chromodynamics",
        "expect_empty": True,
    }
    (parsed,) = parse_dataset({"cases": [case]}).cases
    assert parsed.expect_empty and parsed.expected == ()
    # without expect_empty the list is still required
    del case["expect_empty"]
    with pytest.raises(DatasetError) as info:
        parse_dataset({"cases": [case]})
    assert (
        "cases[0](nothing-relevant).expected_retrievals",
        "is required (or expected_passages, or set expect_empty to true)",
    ) in info.value.problems


@pytest.mark.usefixtures("cli_embedder")
def test_cli_accepts_a_dataset_written_as_users_write_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _passing_dataset()
    data["maintainer"] = "qa-team"
    empty = next(c for c in data["cases"] if c.get("expect_empty"))
    empty.pop("expected_retrievals", None)
    path = _write(tmp_path, data)
    status = main(["eval", "--dataset", str(path), "--json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    report = json.loads(captured.out)
    assert any("ignoring unknown top-level keys ['maintainer']" in w for w in report["warnings"])
    assert main(["eval", "--dataset", str(path)]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # rich wraps it at the console width
    assert "ignoring unknown top-level keys ['maintainer']" in shown


def test_validation_checks_expected_and_forbidden_contents() -> None:
    base = {
        "id": "c",
        "setup_memories": [
            {"content": "mine"},
            {"content": "theirs", "tenant_id": "globex"},
        ],
        "query": "q",
    }
    for extra, fragment in [
        ({"expected_retrievals": ["missing"]}, "is not the content of any setup memory"),
        ({"expected_retrievals": ["theirs"]}, "belongs only to another tenant"),
        ({"expected_retrievals": ["mine"], "forbidden": ["mine"]}, "also listed in forbidden"),
        ({"expected_retrievals": ["mine"], "forbidden": ["nope"]}, "not the content of any"),
    ]:
        with pytest.raises(DatasetError, match=fragment):
            parse_dataset({"cases": [{**base, **extra}]})


def test_duplicate_case_ids_and_empty_cases_are_rejected() -> None:
    case = {"id": "x", "setup_memories": [], "query": "q", "expected_retrievals": []}
    case["expect_empty"] = True
    with pytest.raises(DatasetError, match="duplicate id 'x'"):
        parse_dataset({"cases": [case, case]})
    with pytest.raises(DatasetError, match="cases: must not be empty"):
        parse_dataset({"cases": []})
    with pytest.raises(DatasetError, match="must be a JSON object"):
        parse_dataset([case])


def test_family_and_distractors_are_read_and_cases_may_expect_a_distractor() -> None:
    doc = {"kind": "document_chunk", "content": LONG_DOC, "source_ref": "maintenance"}
    data = {
        "family": "documents",
        "distractors": [{"content": TICKET, "type": "note"}, doc],
        "cases": [
            {"id": "pool", "setup_memories": [], "query": "fan", "expected_retrievals": [TICKET]},
            {
                "id": "passage",
                "setup_memories": [{"content": TEA}],
                "query": "who is the emergency contact?",
                "expected_passages": ["Vireo Okonkwo-Lindqvist on extension 5521"],
            },
        ],
    }
    dataset = parse_dataset(data)
    assert dataset.family == "documents" and dataset.warnings == ()
    assert [m.kind for m in dataset.distractors] == ["memory", "document_chunk"]
    assert dataset.distractors[0].memory_type == "note"
    assert dataset.cases[0].expected == (TICKET,)
    passage = dataset.cases[1]
    assert passage.expected == () and passage.expected_passages == (
        "Vireo Okonkwo-Lindqvist on extension 5521",
    )


def test_expected_passages_must_lie_in_a_document_and_not_in_an_empty_case() -> None:
    doc = {"kind": "document_chunk", "content": LONG_DOC}
    base = {"id": "c", "setup_memories": [doc, {"content": TEA}], "query": "q"}
    problems = {
        "a passage of no document": {**base, "expected_passages": ["not in the document"]},
        "a fact is no document": {**base, "expected_passages": ["green tea"]},
        "blank": {**base, "expected_passages": [" "]},
        "empty case": {**base, "expected_passages": ["extension 5521"], "expect_empty": True},
    }
    for why, case in problems.items():
        with pytest.raises(DatasetError, match="expected_passages") as info:
            parse_dataset({"cases": [case]})
        assert len(info.value.problems) == 1, why
    with pytest.raises(DatasetError, match="distractors: must be a list"):
        parse_dataset({"distractors": {}, "cases": [{**base, "expect_empty": True}]})
    with pytest.raises(DatasetError, match=r"distractors\[0\]\.kind"):
        parse_dataset({"distractors": [{"content": "x", "kind": "nope"}], "cases": [base]})


def test_load_dataset_reports_file_and_json_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="No such file"):
        load_dataset(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"cases": [\n  {"id": "a",}\n]}', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"line 2 column \d+: invalid JSON"):
        load_dataset(broken)


# -- metric arithmetic on known answers ---------------------------------------------------------------
def test_score_case_judges_every_hit_by_its_owner() -> None:
    mine = SetupMemory("my salary is 67k")
    noise = SetupMemory("I get paid on the 25th")
    old = SetupMemory("my salary is 50k", topic_key="salary")
    bob_fact = SetupMemory("bob's salary is 92k", user_id="bob")
    bob_doc = SetupMemory("salary bands policy", kind="document_chunk", user_id="bob")
    bob_agent = SetupMemory("agent note on salaries", scope="agent", user_id="bob")
    globex = SetupMemory("globex salary", scope="tenant", tenant_id="globex")
    case = GoldenCase(
        id="c",
        query="salary",
        setup=(mine, noise, old, bob_fact, bob_doc, bob_agent, globex),
        expected=("my salary is 67k", "salary bands policy"),
        forbidden=("my salary is 50k",),
    )
    assert [relation(case, m) for m in case.setup] == [
        "own",
        "own",
        "own",
        "cross_user",
        "own",  # tenant-wide documents are shared within the tenant
        "own",  # agent facts are shared by every user of the agent
        "cross_tenant",
    ]
    owners = {
        "i-mine": mine,
        "i-noise": noise,
        "i-old": old,
        "i-bob": bob_fact,
        "i-doc1": bob_doc,
        "i-doc2": bob_doc,
        "i-globex": globex,
    }
    result = _result(
        _hit("i-mine"),
        _hit("i-doc1"),
        _hit("i-doc2"),
        _hit("i-old"),
        _hit("i-bob"),
        _hit("i-globex"),
        _hit("i-stranger"),
        _hit("i-noise"),
    )
    res = score_case(case, owners, result, latency_ms=12.5, token_budget=1000)
    assert [r.verdict for r in res.returned] == [
        "expected",
        "expected",
        "expected",  # a second chunk of the expected document is relevant too
        "forbidden",
        "cross_user",
        "cross_tenant",
        "unknown",
        "unexpected",
    ]
    assert res.recall == 1.0
    assert res.precision == pytest.approx(3 / 8)
    assert (res.cross_user, res.cross_tenant, res.forbidden_hits) == (1, 1, 1)
    assert res.problems[:2] == ["1 cross-tenant item(s)", "1 cross-user item(s)"]


def test_score_case_recall_precision_and_empty_cases() -> None:
    a, b, c = SetupMemory("a"), SetupMemory("b"), SetupMemory("c")
    case = GoldenCase(id="m", query="q", setup=(a, b, c), expected=("a", "b"))
    owners = {"1": a, "2": b, "3": c}
    half = score_case(case, owners, _result(_hit("1"), _hit("3")))
    assert (half.recall, half.precision) == (0.5, 0.5)
    assert half.missing == ("b",) and half.found == ("a",)
    nothing = score_case(case, owners, _result())
    assert (nothing.recall, nothing.precision) == (0.0, None)

    empty_case = GoldenCase(id="e", query="q", setup=(a,), expect_empty=True)
    ok = score_case(empty_case, {"1": a}, _result())
    assert (ok.recall, ok.precision, ok.empty_ok, ok.problems) == (None, None, True, [])
    leaked = score_case(empty_case, {"1": a}, _result(_hit("1")))
    assert (leaked.precision, leaked.empty_ok) == (0.0, False)
    assert leaked.problems == ["expected empty, got 1"]


def test_score_case_token_budget() -> None:
    a = SetupMemory("a")
    case = GoldenCase(id="b", query="q", setup=(a,), expected=("a",))
    within = score_case(
        case, {"1": a}, _result(_hit("1", "one two"), token_count=2), token_budget=2
    )
    assert within.budget_ok
    over = score_case(case, {"1": a}, _result(_hit("1", "one two"), token_count=3), token_budget=2)
    assert not over.budget_ok
    # The reported count is not trusted alone: the returned contents are counted too.
    lying = score_case(
        case, {"1": a}, _result(_hit("1", "one two three four"), token_count=1), token_budget=2
    )
    assert lying.counted_tokens == 4 and not lying.budget_ok


def test_summarize_averages_and_thresholds() -> None:
    results = [
        _case_result("perfect", ["expected"]),  # R 1, P 1
        _case_result("half", ["expected", "unexpected"], expected=2),  # R .5, P .5
        _case_result("missed", [], expected=1),  # R 0, P n/a
        _case_result("empty-ok", [], expected=0, expect_empty=True),  # R n/a, P n/a
        _case_result("empty-bad", ["unexpected"], expected=0, expect_empty=True),  # P 0
    ]
    report = summarize(results, dataset=DATASET, thresholds=Thresholds())
    assert report.recall_at_k == pytest.approx((1 + 0.5 + 0) / 3)
    assert report.precision_at_k == pytest.approx((1 + 0.5 + 0) / 3)
    assert report.expect_empty_pass_rate == 0.5
    assert report.budget_violations == 0 and report.token_budget_compliance == 1.0
    assert not report.passed
    assert report.reasons == ("Recall@5 0.500 < 0.8", "Precision@5 0.500 < 0.7")
    assert any("empty-bad" in w for w in report.warnings)
    misses = [c.id for c in report.misses]
    assert misses[0] == "missed" and sorted(misses[1:]) == ["empty-bad", "half"]
    tags = {t.tag: t for t in report.by_tag}
    assert tags["t"].cases == 5 and tags["t"].perfect == 2


def test_summarize_blocks_on_isolation_and_budget_but_only_warns_on_latency() -> None:
    results = [
        _case_result("leak-u", ["expected", "cross_user"], latency=300.0),
        _case_result("leak-t", ["expected", "cross_tenant"], latency=300.0),
        _case_result("fat", ["expected"], tokens=1200, budget=1000, latency=300.0),
    ]
    report = summarize(
        results, dataset=DATASET, thresholds=Thresholds(min_recall=0.0, min_precision=0.0)
    )
    assert (report.cross_user_violations, report.cross_tenant_violations) == (1, 1)
    assert report.budget_violations == 1
    assert report.token_budget_compliance == pytest.approx(2 / 3)
    assert report.reasons == (
        "1 cross-user item(s) returned in leak-u",
        "1 cross-tenant item(s) returned in leak-t",
        "1 recall(s) over their token budget: fat",
    )
    assert report.latency_p95_ms == 300.0
    assert any("latency p95 300.0 ms > 200 ms" in w for w in report.warnings)

    clean = summarize(
        [_case_result("ok", ["expected"], latency=300.0)], dataset=DATASET, thresholds=Thresholds()
    )
    assert clean.passed and clean.reasons == () and clean.warnings


def test_percentile_interpolates() -> None:
    assert percentile([], 0.95) == 0.0
    assert percentile([5.0], 0.95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.50) == 2.5
    assert percentile(list(map(float, range(1, 101))), 0.95) == pytest.approx(95.05)


# -- the runner, end to end ----------------------------------------------------------------------------
def test_run_golden_on_a_synthetic_dataset(tmp_path: Path, shared_embedder: CachedEmbedder) -> None:
    dataset = parse_dataset(_passing_dataset(), source="synthetic")
    phases: Counter[str] = Counter()
    report = run_golden(
        dataset,
        embedder=shared_embedder,
        workdir=tmp_path / "store",
        progress=lambda phase, done, total: phases.update([phase]),
    )
    by_id = {c.id: c for c in report.cases}
    assert phases == {"write": 8, "recall": 8}
    assert report.cross_user_violations == 0 and report.cross_tenant_violations == 0
    assert report.budget_violations == 0
    assert by_id["keyword"].recall == 1.0
    assert by_id["document-second-chunk"].recall == 1.0
    assert by_id["messages-and-tools"].recall == 1.0
    assert by_id["cross-tenant"].found == ("Acme build server is bld-qq-7781",)
    assert by_id["supersession"].found == ("Locker PIN for gym QVB-31 is 2222",)
    assert by_id["supersession"].forbidden_hits == 0
    assert by_id["cross-user"].returned == () and by_id["unrelated"].returned == ()
    budget = by_id["tiny-budget"]
    assert budget.token_budget == 20 and budget.counted_tokens <= 20 and budget.recall == 1.0
    assert report.passed, report.reasons
    assert report.embedder == shared_embedder.model_name
    # The kept store is a normal data dir: every case wrote into its own tenant.
    assert (tmp_path / "store" / "records.sqlite3").exists()
    # calibration per kind of content: what was expected of each kind, what came back
    kinds = {k.kind: k for k in report.by_kind}
    assert set(kinds) >= {"memory", "document_chunk", "chat_message", "tool_output"}
    assert kinds["document_chunk"].expected == 1 and kinds["document_chunk"].found == 1
    for k in kinds.values():
        assert k.found <= k.expected and k.relevant <= k.returned
        assert (k.mean_score is None) == (k.returned == 0)
        if k.returned:
            assert 0.0 < k.mean_score <= 1.0
    returned = sum(len(c.returned) for c in report.cases)
    assert sum(k.returned for k in kinds.values()) == returned
    assert report.to_dict()["by_kind"][0]["kind"] == report.by_kind[0].kind
    assert "## By kind of content" in markdown(report)


def test_run_golden_writes_the_distractors_into_each_case_and_finds_passages(
    shared_embedder: CachedEmbedder,
) -> None:
    """Every case gets the distractors in its own store (a case expecting one finds it), and
    a passage is found through whichever chunk of its document holds it."""
    doc = {"kind": "document_chunk", "content": LONG_DOC, "source_ref": "maintenance"}
    data = {
        "distractors": [doc, {"content": TICKET, "type": "note"}],
        "cases": [
            {
                "id": "passage",
                "setup_memories": [],
                "query": "Who is the emergency contact for the datacentre?",
                "expected_passages": ["Vireo Okonkwo-Lindqvist on extension 5521"],
            },
            {
                "id": "pool",
                "setup_memories": [{"content": TEA, "type": "preference"}],
                "query": "what about ticket ZQX-88412?",
                "expected_retrievals": [TICKET],
            },
        ],
    }
    report = run_golden(parse_dataset(data), embedder=shared_embedder)
    by_id = {c.id: c for c in report.cases}
    passage = by_id["passage"]
    assert passage.recall == 1.0 and passage.found == passage.expected
    assert passage.expected_kinds == ("document_chunk",)
    assert any(r.verdict == "expected" for r in passage.returned)
    # the passage is the document's last sentence: the chunk found is not its first one
    first_chunk = chunk_text(LONG_DOC)[0]
    assert "extension 5521" not in first_chunk
    assert all(r.content != first_chunk for r in passage.returned if r.verdict == "expected")
    assert by_id["pool"].recall == 1.0


def test_run_golden_refuses_a_non_empty_workdir(
    tmp_path: Path, shared_embedder: CachedEmbedder
) -> None:
    (tmp_path / "junk").write_text("x")
    with pytest.raises(ValueError, match="is not empty"):
        run_golden(parse_dataset(_failing_dataset()), embedder=shared_embedder, workdir=tmp_path)


# -- the command line ----------------------------------------------------------------------------------
@pytest.fixture
def cli_embedder(monkeypatch: pytest.MonkeyPatch, shared_embedder: CachedEmbedder) -> None:
    """Let the CLI use the session's already-loaded embedder."""
    monkeypatch.setattr("agentmem.cli.eval_cmd.shared_embedder", lambda *_: shared_embedder)


@pytest.mark.usefixtures("cli_embedder")
def test_cli_passing_dataset_json_and_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, _passing_dataset())
    out_dir = tmp_path / "report"
    status = main(["eval", "--dataset", str(path), "--json", "--out", str(out_dir)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    data = json.loads(captured.out)
    assert data["passed"] is True and data["reasons"] == []
    assert data["metrics"]["cases"] == 8
    assert data["metrics"]["cross_user_violations"] == 0
    assert {c["id"] for c in data["cases"]} >= {"keyword", "unrelated"}
    written = json.loads((out_dir / "report.json").read_text(encoding="utf-8"))
    assert written["metrics"] == data["metrics"]
    md = (out_dir / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# agentmem golden evaluation: PASSED")
    assert "| Recall@5 |" in md
    assert "wrote" in captured.err


@pytest.mark.usefixtures("cli_embedder")
def test_cli_global_json_flag_also_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, _failing_dataset())
    status = main(["--json", "eval", "--dataset", str(path)])
    captured = capsys.readouterr()
    assert status == 1
    data = json.loads(captured.out)
    assert data["passed"] is False
    assert data["misses"] == ["wrong-expectation"]
    assert "FAILED" in captured.err and "Recall@5 0.000 < 0.8" in captured.err


@pytest.mark.usefixtures("cli_embedder")
def test_cli_failing_dataset_exits_non_zero_with_a_breakdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, _failing_dataset())
    status = main(["eval", "--dataset", str(path)])
    out = capsys.readouterr().out
    assert status == 1
    assert "FAILED" in out
    assert "Blocking failures" in out
    assert "Recall@5 0.000 < 0.8" in out
    assert "Precision@5" in out
    assert "wrong-expectation" in out  # the misses table names the case
    assert "missing:" in out


@pytest.mark.usefixtures("cli_embedder")
def test_cli_invalid_dataset_exits_2_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _failing_dataset()
    data["cases"][0]["setup_memories"][0]["kind"] = "email"
    path = _write(tmp_path, data)
    status = main(["eval", "--dataset", str(path)])
    err = capsys.readouterr().err
    assert status == 2
    assert "not a valid golden dataset" in err
    assert "cases[0](wrong-expectation).setup_memories[0].kind" in err


@pytest.mark.usefixtures("cli_embedder")
def test_cli_mlflow_is_skipped_cleanly_without_mlflow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow -> ImportError
    path = _write(tmp_path, _passing_dataset())
    status = main(["eval", "--dataset", str(path), "--json", "--mlflow", str(tmp_path / "ml")])
    captured = capsys.readouterr()
    assert status == 0
    json.loads(captured.out)
    assert "mlflow is not installed" in captured.err
    assert not (tmp_path / "ml").exists()


class _FakeMlflow(types.ModuleType):
    """Stands in for mlflow at its module boundary (mlflow is not a dependency)."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__("mlflow")
        self.fail = fail
        self.calls: dict[str, Any] = {}

    def set_tracking_uri(self, uri: str) -> None:
        if self.fail:
            raise OSError("tracking store is read-only")
        self.calls["uri"] = uri
        self.calls["file_store_env"] = os.environ.get("MLFLOW_ALLOW_FILE_STORE")

    def set_experiment(self, name: str) -> None:
        self.calls["experiment"] = name

    @contextmanager
    def start_run(self, run_name: str) -> Iterator[Any]:
        self.calls["run_name"] = run_name
        yield types.SimpleNamespace(info=types.SimpleNamespace(run_id="run-123"))

    def log_params(self, params: dict[str, Any]) -> None:
        self.calls["params"] = params

    def log_metrics(self, metrics: dict[str, float]) -> None:
        self.calls["metrics"] = metrics

    def set_tag(self, key: str, value: str) -> None:
        self.calls[f"tag:{key}"] = value

    def log_dict(self, data: dict[str, Any], name: str) -> None:
        self.calls["artifact"] = (name, data)


@pytest.mark.usefixtures("cli_embedder")
def test_cli_mlflow_logs_metrics_to_a_local_tracking_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _FakeMlflow()
    monkeypatch.setitem(sys.modules, "mlflow", fake)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    path = _write(tmp_path, _passing_dataset())
    status = main(["eval", "--dataset", str(path), "--out", str(tmp_path / "o"), "--mlflow"])
    err = capsys.readouterr().err
    assert status == 0
    assert fake.calls["uri"] == (tmp_path / "o" / "mlruns").resolve().as_uri()
    assert fake.calls["file_store_env"] == "true"
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ  # restored afterwards
    metrics = fake.calls["metrics"]
    assert metrics["recall_at_5"] == 1.0 and metrics["cross_user_violations"] == 0.0
    assert {"precision_at_5", "latency_p50_ms", "latency_p95_ms", "token_budget_compliance"} <= set(
        metrics
    )
    assert fake.calls["params"]["cases"] == 8
    assert fake.calls["tag:passed"] == "True"
    assert fake.calls["artifact"][0] == "report.json"
    assert "run-123" in err


@pytest.mark.usefixtures("cli_embedder")
def test_cli_mlflow_failure_does_not_change_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", _FakeMlflow(fail=True))
    path = _write(tmp_path, _passing_dataset())
    status = main(["eval", "--dataset", str(path), "--json", "--mlflow", str(tmp_path / "ml")])
    captured = capsys.readouterr()
    assert status == 0
    assert json.loads(captured.out)["passed"] is True
    assert "MLflow logging to" in captured.err and "read-only" in captured.err


def test_cli_requires_a_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval"]) == 2
    err = capsys.readouterr().err
    assert "--dataset" in err and "--suite" in err
    # --locomo goes with --suite (as a family), never with another source
    with pytest.raises(SystemExit) as info:
        main(["eval", "--dataset", "golden", "--locomo", "x.json"])
    assert info.value.code == 2


# -- the project's own dataset ------------------------------------------------------------------------
def test_the_golden_set_ships_in_the_package_and_is_asked_for_by_name(tmp_path: Path) -> None:
    import agentmem

    assert GOLDEN.is_file()
    assert GOLDEN.is_relative_to(Path(agentmem.__file__).parent)  # package data, not eval/
    assert dataset_path("golden") == GOLDEN
    assert dataset_path("./golden") == Path("golden")  # a file of that name
    other = _write(tmp_path, _passing_dataset())
    assert dataset_path(other) == other and dataset_path(str(other)) == other
    args = build_parser().parse_args(["eval", "--dataset", "golden"])
    assert args.dataset == GOLDEN
    assert build_parser().parse_args(["eval", "--dataset", str(other)]).dataset == other


def test_project_dataset_composition() -> None:
    ds = load_dataset(GOLDEN)
    assert len(ds.cases) >= 110
    categories = Counter(c.tags[0] for c in ds.cases)
    for category, minimum in {
        "keyword": 10,
        "paraphrase": 10,
        "multi-answer": 8,
        "type-filter": 8,
        "expect-empty": 10,
        "cross-user": 6,
        "cross-tenant": 5,
        "supersession": 6,
        "tool-output": 5,
        "document": 5,
        "session": 5,
    }.items():
        assert categories[category] >= minimum, (category, categories[category])
    domains = Counter(t for c in ds.cases for t in c.tags[1:])
    for domain in ("coding", "support", "personal", "ops", "health", "travel", "finance"):
        assert domains[domain] >= 8, domain
    memories = [m for c in ds.cases for m in c.setup]
    assert len(memories) / len(ds.cases) >= 4.5
    assert {m.memory_type for m in memories if m.kind == "memory"} == set(MEMORY_TYPES)
    assert {m.kind for m in memories} == {"memory", "chat_message", "tool_output", "document_chunk"}
    assert sum(1 for c in ds.cases if len(c.expected) >= 2) >= 15
    assert sum(1 for c in ds.cases if c.expect_empty) >= 12
    assert sum(1 for c in ds.cases if c.types) >= 10
    assert sum(1 for c in ds.cases if c.forbidden) >= 30
    assert any(c.scope == "session" for c in ds.cases)
    assert any(c.scope == "history" for c in ds.cases)
    assert any(m.topic_key for m in memories)
    assert any(m.user_id not in (None, "alice") for m in memories)
    assert any(m.tenant_id not in (None, "acme") for m in memories)


@pytest.mark.slow
def test_project_dataset_meets_the_issue_2_bar(shared_embedder: CachedEmbedder) -> None:
    """The project's own bar (stricter than the dataset's blocking thresholds)."""
    report = run_golden(load_dataset(GOLDEN), embedder=shared_embedder)
    recall = report.recall_at_k or 0.0
    precision = report.precision_at_k or 0.0
    misses = ", ".join(c.id for c in report.misses if c.missing or c.cross_user or c.cross_tenant)
    summary = (
        f"Recall@5={recall:.3f} Precision@5={precision:.3f} "
        f"cross-user={report.cross_user_violations} cross-tenant={report.cross_tenant_violations} "
        f"budget violations={report.budget_violations}; cases missing expected items: {misses}"
    )
    assert report.cross_user_violations == 0, summary
    assert report.cross_tenant_violations == 0, summary
    assert report.budget_violations == 0, summary
    assert recall >= 0.9, summary
    assert precision >= 0.8, summary
