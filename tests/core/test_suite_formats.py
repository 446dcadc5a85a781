"""The evaluation suite's formats: the conversation format's parser, the rules of a
golden-format family (one shared store), LoCoMo's expect-empty templates and the choice of
families to run. Every bad input is refused with a message naming where the problem is."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agentmem.errors import ValidationError
from agentmem.evaluation.golden import DatasetError
from agentmem.evaluation.suite import (
    FAMILIES,
    load_conversations,
    load_locomo_empty,
    parse_conversations,
    plan,
)
from agentmem.evaluation.suite.conversations import session_messages
from agentmem.evaluation.suite.golden_family import load_golden_family

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "suite"


def _conversations() -> dict[str, Any]:
    """Two sessions a week apart and a question asked in the second about the first."""
    return {
        "version": "1",
        "family": "temporal",
        "conversations": [
            {
                "id": "c1",
                "user": "Ana",
                "sessions": [
                    {
                        "id": "c1-s1",
                        "date": "2024-03-01T10:00:00",
                        "turns": [
                            {"id": "c1-s1-t1", "role": "user", "text": "I booked the dentist."},
                            {"id": "c1-s1-t2", "role": "assistant", "text": "Noted."},
                        ],
                    },
                    {
                        "id": "c1-s2",
                        "date": "2024-03-08T09:30:00+01:00",
                        "turns": [{"id": "c1-s2-t1", "role": "user", "text": "Hi again."}],
                    },
                ],
            }
        ],
        "cases": [
            {
                "id": "q1",
                "conversation": "c1",
                "session": "c1-s2",
                "query": "what did I book?",
                "evidence": ["c1-s1-t1"],
                "tags": ["temporal"],
            },
            {
                "id": "q2",
                "conversation": "c1",
                "session": "c1-s2",
                "query": "what about my car?",
                "evidence": [],
                "expect_empty": True,
            },
        ],
    }


def test_a_conversation_file_parses_with_turn_times_a_minute_apart() -> None:
    data = parse_conversations(_conversations(), source="mem")
    assert data.family == "temporal" and data.turns == 3
    conv = data.conversation("c1")
    first, second = conv.sessions
    assert first.date.tzinfo is not None and first.date.utcoffset().total_seconds() == 0
    assert second.date.utcoffset().total_seconds() == 3600  # an offset given is kept
    assert [t.time.minute for t in first.turns] == [0, 1]
    assert [t.role for t in first.turns] == ["user", "assistant"]
    q1, q2 = data.cases
    assert q1.evidence == ("c1-s1-t1",) and not q1.expect_empty and q1.tags == ("temporal",)
    assert q2.evidence == () and q2.expect_empty


def test_a_question_may_be_asked_in_a_new_session() -> None:
    raw = _conversations()
    raw["cases"][0]["session"] = "c1-s9"  # no such session: a new one, after all of them
    raw["cases"][0]["evidence"] = ["c1-s2-t1"]
    assert parse_conversations(raw).cases[0].session == "c1-s9"


def _dialogue() -> dict[str, Any]:
    """:func:`_conversations` between two named people, Ana (the user) and Ben."""
    raw = _conversations()
    conv = raw["conversations"][0]
    conv["speakers"] = ["Ana", "Ben"]
    for session in conv["sessions"]:
        for turn in session["turns"]:
            turn["speaker"] = "Ana" if turn["role"] == "user" else "Ben"
    return raw


def test_a_dialogue_names_its_speakers_and_stores_who_said_each_turn() -> None:
    data = parse_conversations(_dialogue(), source="mem")
    conv = data.conversation("c1")
    assert conv.speakers == ("Ana", "Ben")
    first = conv.sessions[0]
    assert [t.speaker for t in first.turns] == ["Ana", "Ben"]
    # what add_messages gets: the speaker as metadata, which the indexes read
    assert [m["metadata"] for m in session_messages(first)] == [
        {"turn_id": "c1-s1-t1", "speaker": "Ana"},
        {"turn_id": "c1-s1-t2", "speaker": "Ben"},
    ]
    # user-assistant chat names nobody
    plain = parse_conversations(_conversations()).conversation("c1")
    assert plain.speakers == () and plain.sessions[0].turns[0].speaker is None
    assert session_messages(plain.sessions[0])[0]["metadata"] == {"turn_id": "c1-s1-t1"}


def _turn(raw: dict[str, Any], session: int, turn: int) -> dict[str, Any]:
    found: dict[str, Any] = raw["conversations"][0]["sessions"][session]["turns"][turn]
    return found


@pytest.mark.parametrize(
    ("edit", "where", "what"),
    [
        (
            lambda r: r["conversations"][0].update(speakers=["Ana"]),
            "conversations[0].speakers",
            "must be two different non-empty names",
        ),
        (
            lambda r: r["conversations"][0].update(speakers=["Ana", "Ana"]),
            "conversations[0].speakers",
            "must be two different non-empty names",
        ),
        (
            lambda r: r["conversations"][0].update(speakers=["Ben", "Ana"]),
            "conversations[0].speakers",
            "the first must be the user 'Ana'",
        ),
        (
            lambda r: _turn(r, 1, 0).update(speaker="Cleo"),
            "conversations[0].sessions[1].turns[0].speaker",
            "must be one of ['Ana', 'Ben']",
        ),
        (
            lambda r: _turn(r, 0, 1).pop("speaker"),
            "conversations[0].sessions[0].turns[1].speaker",
            "must be one of ['Ana', 'Ben']",
        ),
        (
            lambda r: _turn(r, 0, 1).update(speaker="Ana"),
            "conversations[0].sessions[0].turns[1].speaker",
            "'Ana' does not hold the role 'assistant'",
        ),
        (
            lambda r: r["conversations"][0].pop("speakers"),
            "conversations[0].sessions[0].turns[0].speaker",
            "only a conversation with speakers names one",
        ),
    ],
)
def test_every_problem_of_a_dialogue_is_named(edit: Any, where: str, what: str) -> None:
    raw = _dialogue()
    edit(raw)
    with pytest.raises(DatasetError) as info:
        parse_conversations(raw, source="mem")
    assert any(w == where and what in m for w, m in info.value.problems), info.value.problems


def _problems(edit: Any) -> list[tuple[str, str]]:
    raw = _conversations()
    edit(raw)
    with pytest.raises(DatasetError) as info:
        parse_conversations(raw, source="mem")
    return info.value.problems


@pytest.mark.parametrize(
    ("edit", "where", "what"),
    [
        (
            lambda r: r["conversations"][0]["sessions"][1]["turns"][0].update(id="c1-s1-t1"),
            "conversations[0].sessions[1].turns[0].id",
            "duplicate id 'c1-s1-t1'",
        ),
        (
            lambda r: r["conversations"][0]["sessions"][0]["turns"][1].update(role="bot"),
            "conversations[0].sessions[0].turns[1].role",
            "must be one of",
        ),
        (
            lambda r: r["conversations"][0]["sessions"][0].update(date="last Tuesday"),
            "conversations[0].sessions[0].date",
            "ISO 8601",
        ),
        (
            lambda r: r["conversations"][0]["sessions"][1].update(date="2024-02-01T00:00:00"),
            "conversations[0].sessions[1].date",
            "later than the session before",
        ),
        (
            lambda r: r["cases"][0].update(evidence=["c1-s1-t9"]),
            "cases[0].evidence[0]",
            "no turn 'c1-s1-t9'",
        ),
        (
            lambda r: r["cases"][0].update(evidence=["c1-s2-t1"]),
            "cases[0].evidence[0]",
            "not in a session before 'c1-s2'",
        ),
        (
            lambda r: r["cases"][0].update(conversation="c9"),
            "cases[0].conversation",
            "no conversation 'c9'",
        ),
        (
            lambda r: r["cases"][1].update(evidence=["c1-s1-t1"]),
            "cases[1].evidence",
            "must be empty when expect_empty is true",
        ),
        (
            lambda r: r["cases"][0].update(evidence=[]),
            "cases[0].evidence",
            "must name a turn",
        ),
        (
            lambda r: r["cases"][0].update(session="c1-s1-t1"),
            "cases[0].session",
            "is not a session of 'c1'",
        ),
        (lambda r: r["cases"][0].update(colour="red"), "cases[0]", "unknown keys ['colour']"),
        (lambda r: r.pop("family"), "$.family", "must be a non-empty string"),
        (lambda r: r.update(cases=[]), "$.cases", "must be a non-empty list"),
    ],
)
def test_every_problem_of_a_conversation_file_is_named(edit: Any, where: str, what: str) -> None:
    problems = _problems(edit)
    assert any(w == where and what in m for w, m in problems), problems


def test_load_conversations_reports_file_and_json_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="No such file"):
        load_conversations(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"family": "x",\n}', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"line 2 column \d+: invalid JSON"):
        load_conversations(broken)
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(_conversations()), encoding="utf-8")
    assert load_conversations(path).source == str(path)


# -- golden-format families: one shared store ---------------------------------------------------
def _family(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "family.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_shared_store_has_one_owner_and_each_content_once(tmp_path: Path) -> None:
    case = {
        "id": "a",
        "query": "q",
        "setup_memories": [{"content": "x"}],
        "expected_retrievals": ["x"],
    }
    ok = {"family": "paraphrase", "distractors": [{"content": "y"}], "cases": [case]}
    assert load_golden_family(_family(tmp_path, ok)).family == "paraphrase"

    other_user = copy.deepcopy(ok)
    other_user["cases"][0]["setup_memories"][0]["user_id"] = "bob"
    with pytest.raises(DatasetError, match="a shared store has one tenant, user, agent"):
        load_golden_family(_family(tmp_path, other_user))
    asked_as = copy.deepcopy(ok)
    asked_as["cases"][0]["tenant_id"] = "globex"
    with pytest.raises(DatasetError, match="a shared store has one tenant, user, agent"):
        load_golden_family(_family(tmp_path, asked_as))
    owned = copy.deepcopy(ok)
    owned["distractors"][0]["agent_id"] = "helper"
    with pytest.raises(DatasetError, match=r"distractors\[0\]: a shared store"):
        load_golden_family(_family(tmp_path, owned))
    # the same content twice makes a label ambiguous: which row did the case mean?
    twice = copy.deepcopy(ok)
    twice["distractors"].append({"content": "x"})
    with pytest.raises(DatasetError, match="content also written by distractors"):
        load_golden_family(_family(tmp_path, twice))


# -- LoCoMo's expect-empty templates ------------------------------------------------------------
def test_locomo_templates_name_a_speaker_and_expect_nothing(tmp_path: Path) -> None:
    bundled = load_locomo_empty()
    assert len(bundled) >= 10
    assert all("{speaker_a}" in t.query or "{speaker_b}" in t.query for t in bundled)

    def write(cases: list[dict[str, Any]]) -> Path:
        path = tmp_path / "locomo_empty.json"
        path.write_text(json.dumps({"cases": cases}), encoding="utf-8")
        return path

    good = {"id": "t1", "query": "When did {speaker_a} fly?", "expect_empty": True}
    assert load_locomo_empty(write([good]))[0].id == "t1"
    for bad, match in [
        ({**good, "query": "When did Bob fly?"}, r"cases\[0\]\.query"),
        ({**good, "query": "When did {speaker_c} fly with {speaker_a}?"}, "other than"),
        ({**good, "expect_empty": False}, "must be true"),
    ]:
        with pytest.raises(DatasetError, match=match):
            load_locomo_empty(write([bad]))
    with pytest.raises(DatasetError, match="unique"):
        load_locomo_empty(write([good, good]))


# -- which families run -------------------------------------------------------------------------
def test_plan_runs_what_is_there_and_refuses_what_is_asked_for_but_missing(
    tmp_path: Path,
) -> None:
    names, skipped = plan(None, directory=FIXTURE)
    assert names == ["implicit", "identifiers"]  # report order, not file order
    assert skipped["locomo"].startswith("no LoCoMo file")
    assert set(skipped) == set(FAMILIES) - set(names)
    names, _ = plan(None, locomo=tmp_path / "l.json", directory=FIXTURE)
    assert names[0] == "locomo"
    with pytest.raises(ValidationError, match="unknown \\['nope'\\]"):
        plan(["nope"])
    with pytest.raises(ValidationError, match="paraphrase: no data file"):
        plan(["paraphrase"], directory=FIXTURE)
    with pytest.raises(ValidationError, match="locomo: no LoCoMo file"):
        plan(["locomo"])


def test_a_chunk_carries_its_passages_in_file_order() -> None:
    """The units of a row are the same, in the same order, on every run (a set's order
    changes with the interpreter's hash seed)."""
    from agentmem.evaluation.golden import parse_dataset
    from agentmem.evaluation.suite.golden_family import _golden_units

    words = [f"passage number {n} says {w}" for n, w in enumerate("abcdefgh")]
    doc = {"kind": "document_chunk", "content": ". ".join(words) + "."}
    cases = [
        {"id": f"c{n}", "query": "q", "setup_memories": [], "expected_passages": [w]}
        for n, w in enumerate(reversed(words))
    ]
    dataset = parse_dataset({"distractors": [doc], "cases": cases})
    (owner,) = dataset.distractors
    units = _golden_units({"row": owner}, dataset)
    assert units("row", owner.content, {}) == (owner.content, *reversed(words))
    assert units("other", "x", {}) == ()
