"""``agentmem eval --extraction FILE``: derived memories scored against gold observations.

A tiny LoCoMo-shaped file is written per test (two conversations: two friends, and a user
with an assistant), never benchmark data; plus a check that the labelled sets in ``eval/``
load.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from agentmem.cli import main
from agentmem.embeddings import CachedEmbedder
from agentmem.errors import ValidationError
from agentmem.evaluation.derived import (
    Counts,
    load_gold,
    measure_extraction,
    measure_summaries,
    session_turns,
)
from agentmem.evaluation.derived.measure import judge_answer
from agentmem.evaluation.derived.retrieval import session_messages
from agentmem.llm import OfflineLLM

ROOT = Path(__file__).resolve().parents[2]


def _turns(n: int, turns: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"speaker": s, "dia_id": f"D{n}:{i}", "text": t} for i, (s, t) in enumerate(turns, 1)]


TINY: list[dict[str, Any]] = [
    {
        "sample_id": "friends",
        "conversation": {
            "speaker_a": "Ada",
            "speaker_b": "Ben",
            "session_1_date_time": "2:00 pm on 8 May, 2023",
            "session_1": _turns(
                1,
                [
                    ("Ada", "Hi Ben! I adopted a beagle called Toby yesterday."),
                    ("Ben", "Wow, congrats! I started learning the cello last week."),
                    ("Ada", "That's so cool!"),
                    ("Ben", "I practise every evening after work."),
                ],
            ),
            "session_2_date_time": "6:00 pm on 20 June, 2023",
            "session_2": _turns(
                2,
                [
                    ("Ada", "Toby and I ran our first 10k race on Sunday."),
                    ("Ben", "Amazing! I'm moving to Porto in August for a new job."),
                ],
            ),
        },
        "observation": {
            "session_1_observation": {
                "Ada": [["Ada adopted a beagle named Toby.", "D1:1"]],
                "Ben": [
                    ["Ben started learning the cello.", "D1:2"],
                    ["Ben practises the cello every evening after work.", "D1:4"],
                ],
            },
            "session_2_observation": {
                "Ada": [["Ada and her dog Toby ran a 10k race.", "D2:1"]],
                "Ben": [["Ben is moving to Porto in August for a new job.", "D2:2"]],
            },
        },
        "session_summary": {"session_1_summary": "Ada adopted Toby; Ben learns the cello."},
        "qa": [
            {
                "question": "What is the name of Ada's dog?",
                "answer": "Toby",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where is Ben moving?",
                "answer": "Porto",
                "evidence": ["D2:2"],
                "category": 4,
            },
        ],
    },
    {
        "sample_id": "assistant-chat",
        "conversation": {
            "speaker_a": "Kim",
            "speaker_b": "Assistant",
            "assistant": "Assistant",
            "session_1_date_time": "9:00 am on 3 March, 2024",
            "session_1": _turns(
                1,
                [
                    ("Kim", "I'm vegetarian and I have a severe peanut allergy."),
                    ("Assistant", "Noted, I will flag restaurants."),
                    ("Kim", "Our budget for the trip is 2000 euros."),
                    ("Kim", "We raised the budget to 2500 euros."),
                ],
            ),
        },
        "observation": {
            "session_1_observation": {
                "Kim": [
                    ["Kim is vegetarian.", "D1:1"],
                    ["Kim has a severe peanut allergy.", "D1:1"],
                    ["Kim raised the trip budget to 2500 euros.", "D1:4"],
                ]
            }
        },
        "summary_must": {"session_1": ["vegetarian", "peanut", "2500"]},
        "summary_must_not": {"session_1": ["2000 euros"]},
        "answers": [
            {"question": "What is Kim allergic to?", "expect": ["peanut"], "evidence": ["D1:1"]},
            {
                "question": "What is the trip budget?",
                "expect": ["2500"],
                "avoid": ["2000"],
                "evidence": ["D1:4"],
            },
            {"question": "Which airline does Kim prefer?", "none": True},
        ],
        "qa": [],
    },
]


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    return path


def test_load_gold_reads_observations_constraints_and_roles(tiny: Path) -> None:
    friends, chat = load_gold(tiny)
    assert [len(s.observations) for s in friends.sessions] == [3, 2]
    assert friends.sessions[0].observations[0].dia_ids == ("D1:1",)
    assert friends.sessions[0].summary is not None
    assert chat.assistant == "Assistant" and chat.sessions[0].must == (
        "vegetarian",
        "peanut",
        "2500",
    )
    turns = session_turns(chat, chat.sessions[0])
    assert [(t.role, t.speaker) for t in turns[:2]] == [("user", "Kim"), ("assistant", None)]
    friends_turns = session_turns(friends, friends.sessions[0])
    assert [(t.role, t.speaker) for t in friends_turns[:2]] == [
        ("user", "Ada"),
        ("assistant", "Ben"),
    ]
    assert friends_turns[1].time is not None and friends_turns[1].time.day == 8


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"observation": {"session_1_observation": {"Ada": [[7, "D1:1"]]}}}, "observation"),
        ({"observation": {"weird": {}}}, "observation.weird"),
        ({"answers": [{"question": "q?"}]}, "answers[0]"),
        ({"summary_must": {"session_1": "vegetarian"}}, "summary_must"),
    ],
)
def test_malformed_annotations_name_the_problem(patch: dict[str, Any], field: str) -> None:
    sample = {**TINY[0], **patch}
    with pytest.raises(ValidationError) as err:
        load_gold([sample])
    assert field in str(err.value)


def test_extraction_and_summaries_are_scored_against_the_gold(
    tiny: Path, shared_embedder: CachedEmbedder
) -> None:
    convs = load_gold(tiny)
    figures = measure_extraction(convs, OfflineLLM(), shared_embedder)
    assert figures.total.gold == 8 and figures.messages == 10
    assert figures.recall >= 0.75 and figures.precision >= 0.75, figures.total
    assert figures.shape()["first_person"] == 0.0
    assert all(m["source_ids"] for m in figures.memories)
    summaries = measure_summaries(convs, OfflineLLM(), shared_embedder, max_words=40)
    assert max(summaries.words) <= 40
    assert (summaries.must_kept, summaries.must) == (3, 3)
    assert (summaries.must_not_dropped, summaries.must_not) == (1, 1)
    # a model that extracts nothing scores zero, not an error
    empty = measure_extraction(convs, _Silent(), shared_embedder)
    assert empty.total == Counts(8, 0, 0, 0) and empty.recall == empty.precision == 0.0


class _Silent(OfflineLLM):
    def extract(self, turns: Any) -> list[Any]:
        return []


def test_judge_answer() -> None:
    assert judge_answer("q?", "Kim is allergic to peanuts.", ["peanut"], [], False) is None
    assert judge_answer("What is Kim allergic to?", "What is Kim allergic to?", ["x"], [], False)
    assert judge_answer("q?", "The budget is 2000.", ["2000"], ["2000"], False) is not None
    assert judge_answer("q?", "", [], [], True) is None
    assert judge_answer("q?", "Something.", [], [], True) is not None


def test_cli_runs_every_measurement(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "out"
    status = main(["--json", "eval", "--extraction", str(tiny), "--out", str(out_dir)])
    report = json.loads(capsys.readouterr().out)
    assert status == 0
    assert report["conversations"] == 2 and report["observations"] == 8
    e = report["extraction"]
    assert e["recall"] >= 0.75 and e["precision"] >= 0.75 and e["ms_per_message"] > 0
    assert e["grounded"]["recall"] <= e["recall"]
    assert set(report["controls"]) == {"raw_turns_as_memories", "memories_vs_next_session"}
    loo = report["extraction_leave_one_out"]
    assert [f["held_out"] for f in loo["folds"]] == ["friends", "assistant-chat"]
    assert all(f["chosen"] in loo["grid"] for f in loo["folds"])
    assert report["summaries"]["within_limit"] == 1.0
    modes = report["retrieval"]["modes"]
    assert set(modes) == {"add_messages", "ingest"}
    assert modes["add_messages"]["memories_created"] == 0 < modes["ingest"]["memories_created"]
    assert modes["ingest"]["questions"] == 4  # two LoCoMo questions, two labelled with evidence
    assert modes["ingest"]["recall@10"] == 1.0
    assert modes["ingest"]["labelled_answers"] == 3
    assert all(report["goals"].values()), report["goals"]
    written = sorted(p.name for p in out_dir.iterdir())
    assert written == [
        "extraction.json",
        "extraction_memories.jsonl",
        "extraction_missed.jsonl",
        "extraction_questions.jsonl",
        "extraction_summaries.jsonl",
    ]


def test_cli_text_output_without_retrieval(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["eval", "--extraction", str(tiny), "--no-retrieval"])
    out = capsys.readouterr().out
    assert status == 0
    assert "extraction: recall" in out and "leave one conversation out" in out
    assert "retrieval" not in out


def test_speakers_named_in_content_score_as_in_metadata(
    tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    friends = dataclasses.replace(load_gold(tiny)[0], speaker_in="content")
    turns = session_turns(friends, friends.sessions[0])
    assert [(t.role, t.speaker, t.content[:9]) for t in turns[:2]] == [
        ("user", None, "Ada: Hi B"),
        ("assistant", None, "Ben: Wow,"),
    ]
    [message, *_] = session_messages(friends, 0)
    assert message["content"].startswith("Ada: Hi Ben!") and "speaker" not in message["metadata"]
    figures = {}
    for form in ("metadata", "content"):
        args = ["--json", "eval", "--extraction", str(tiny), "--no-retrieval"]
        assert main([*args, "--speaker-in", form]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["speaker_in"] == form
        figures[form] = (
            report["extraction"]["recall"],
            report["extraction"]["precision"],
            report["summaries"]["coverage"],
        )
    assert figures["content"] == figures["metadata"]
    assert figures["content"][0] >= 0.75


def test_cli_rejects_a_file_that_is_not_locomo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a sample"}')
    status = main(["eval", "--extraction", str(bad), "--no-retrieval"])
    assert status == 2 and "conversation" in capsys.readouterr().err


def test_labelled_sets_in_eval_load() -> None:
    convs = load_gold(ROOT / "eval" / "derived_heldout.json")
    assert [c.sample_id for c in convs] == ["travel-priya", "coding-marco", "friends-lena-tomas"]
    travel = convs[0]
    assert len(travel.sessions[0].session.turns) == 40
    assert travel.assistant == "Assistant"
    assert sum(len(s.observations) for c in convs for s in c.sessions) == 50
    assert any(a.none for c in convs for a in c.answers)
