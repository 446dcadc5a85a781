"""The implicit-recall families of the evaluation suite (``evaluation/data/suite/``) keep the
invariants their harness and their claims depend on.

``implicit.json`` is user-assistant chat, the family ranking weights may be fitted on;
``implicit_dialogue.json`` is a second set written independently, two named people talking
(either of them may say the cue or the trigger), kept for validation only.

The harness stores every conversation (each session a session, turns in order, a turn's
``speaker`` as its metadata), then recalls each case's query from a session bound to the
case's ``session`` with ``scope="history"``; a hit is an evidence turn in the top 10. So:
every id resolves, evidence lies in an earlier session of the same conversation, the query
is a turn of the case's session, and dates run forwards. The families' promise, that a
trigger shares at most one analysed content term with the turn it should bring back, is
measured with agentmem's own keyword analyzer on the text the index holds (through
``benchmarks/check_suite_overlap.py``, the script that reports it).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from _benchmark_scripts import load_script

from agentmem.evaluation import golden_dataset_path

SUITE = golden_dataset_path().parent / "suite"
MAX_SHARED_TERMS = 1
#: What links a dialogue trigger to its cue (the case's second tag).
LINK_TYPES = frozenset(
    {
        "health", "fear", "rule", "promise", "failure", "anniversary",
        "tension", "money", "lesson", "dislike", "secret", "move",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Family:
    name: str
    conversations: int
    cases: int
    expect_empty: int
    #: Two named people talking: every turn names its speaker, and a trigger may be said by
    #: either of them (in user-assistant chat it is always the user's).
    dialogue: bool


FAMILIES = (
    Family("implicit", conversations=14, cases=160, expect_empty=30, dialogue=False),
    Family("implicit_dialogue", conversations=12, cases=150, expect_empty=30, dialogue=True),
)


def _load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((SUITE / f"{name}.json").read_text(encoding="utf-8"))
    return doc


@pytest.fixture(scope="module", params=FAMILIES, ids=lambda f: f.name)
def family(request: pytest.FixtureRequest) -> tuple[Family, dict[str, Any]]:
    return request.param, _load(request.param.name)


@pytest.fixture(scope="module")
def dialogue() -> dict[str, Any]:
    return _load("implicit_dialogue")


def _turn_sessions(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Turn id -> (conversation id, session id)."""
    return {
        t["id"]: (c["id"], s["id"])
        for c in doc["conversations"]
        for s in c["sessions"]
        for t in s["turns"]
    }


def test_header_and_size(family: tuple[Family, dict[str, Any]]) -> None:
    fam, doc = family
    assert doc["version"] == "1" and doc["family"] == fam.name and doc["description"]
    cases = doc["cases"]
    assert len(doc["conversations"]) >= fam.conversations
    assert sum(not c["expect_empty"] for c in cases) >= fam.cases
    assert sum(c["expect_empty"] for c in cases) >= fam.expect_empty


def test_ids_are_unique(family: tuple[Family, dict[str, Any]]) -> None:
    _, doc = family
    convs = doc["conversations"]
    ids = [c["id"] for c in convs] + [c["id"] for c in doc["cases"]]
    ids += [s["id"] for c in convs for s in c["sessions"]]
    ids += [t["id"] for c in convs for s in c["sessions"] for t in s["turns"]]
    assert [i for i, n in Counter(ids).items() if n > 1] == []


def test_conversations_are_long_and_ordered(family: tuple[Family, dict[str, Any]]) -> None:
    _, doc = family
    for conv in doc["conversations"]:
        sessions = conv["sessions"]
        assert len(sessions) >= 8, conv["id"]
        dates = [datetime.fromisoformat(s["date"]) for s in sessions]
        assert dates == sorted(dates) and len(set(dates)) == len(dates), conv["id"]
        names = conv.get("speakers", [conv["user"]])
        for s in sessions:
            assert 25 <= len(s["turns"]) <= 60, s["id"]
            for t in s["turns"]:
                assert t["role"] in ("user", "assistant"), t["id"]
                assert t["text"].strip(), t["id"]
                # the speaker travels as metadata; a "Name:" prefix would index it twice
                assert not any(t["text"].startswith(f"{n}:") for n in names), t["id"]


def test_every_dialogue_turn_names_one_of_its_two_speakers(dialogue: dict[str, Any]) -> None:
    for conv in dialogue["conversations"]:
        first, second = conv["speakers"]
        assert first != second and conv["user"] == first, conv["id"]
        for s in conv["sessions"]:
            for t in s["turns"]:
                assert t["speaker"] in (first, second), t["id"]
                # the first speaker is the user, the second the assistant, in every turn
                assert (t["role"] == "user") == (t["speaker"] == first), t["id"]
        said = Counter(t["speaker"] for s in conv["sessions"] for t in s["turns"])
        assert min(said[first], said[second]) >= sum(said.values()) / 3, conv["id"]


def test_cases_resolve_to_earlier_evidence(family: tuple[Family, dict[str, Any]]) -> None:
    fam, doc = family
    turns = _turn_sessions(doc)
    sessions = {
        s["id"]: (c["id"], datetime.fromisoformat(s["date"]), s)
        for c in doc["conversations"]
        for s in c["sessions"]
    }
    for case in doc["cases"]:
        conv, date, session = sessions[case["session"]]
        assert conv == case["conversation"], case["id"]
        # the trigger is a turn of the case's own session: the user's in user-assistant
        # chat, either person's in a dialogue
        roles = ("user", "assistant") if fam.dialogue else ("user",)
        assert any(t["role"] in roles and t["text"] == case["query"] for t in session["turns"]), (
            case["id"]
        )
        assert case["expect_empty"] == (not case["evidence"]), case["id"]
        assert len(case["evidence"]) <= 3, case["id"]
        for ev in case["evidence"]:
            ev_conv, ev_session = turns[ev]
            assert ev_conv == conv, (case["id"], ev)
            assert sessions[ev_session][1] < date, (case["id"], ev)
        assert case["tags"][0] == "implicit", case["id"]


def test_dialogue_cases_vary_their_links_and_speakers(dialogue: dict[str, Any]) -> None:
    cues = [c for c in dialogue["cases"] if not c["expect_empty"]]
    links = Counter(c["tags"][1] for c in cues)
    assert set(links) == LINK_TYPES and min(links.values()) >= 10, links
    turns = [
        (s["id"], t) for c in dialogue["conversations"] for s in c["sessions"] for t in s["turns"]
    ]
    said = {(session, t["text"]): t for session, t in turns}
    speaker_of = {t["id"]: t["speaker"] for _, t in turns}
    triggers = [said[(c["session"], c["query"])] for c in cues]
    cue_speakers = [speaker_of[c["evidence"][0]] for c in cues]
    crossed = [t["speaker"] != cue for t, cue in zip(triggers, cue_speakers, strict=True)]
    # the tag says who said the trigger: the other person than the one who said the cue
    assert [("other_speaker" in c["tags"]) for c in cues] == crossed
    # triggers come from both people, and both from the cue's speaker and from the other
    by_role = Counter(t["role"] for t in triggers)
    quarter = len(cues) / 4
    assert min(by_role["user"], by_role["assistant"], sum(crossed), crossed.count(False)) >= quarter


def test_triggers_share_at_most_one_analysed_term_with_their_evidence(
    family: tuple[Family, dict[str, Any]],
) -> None:
    _, doc = family
    shared = load_script("check_suite_overlap").shared_terms(doc)
    assert len(shared) == sum(not c["expect_empty"] for c in doc["cases"])
    too_many = {cid: terms for cid, terms in shared.items() if len(terms) > MAX_SHARED_TERMS}
    assert too_many == {}


def test_the_validation_family_was_written_apart_from_the_fitted_one() -> None:
    """No sentence of the dialogue family comes from the family weights are fitted on."""
    texts = {}
    for name in ("implicit", "implicit_dialogue"):
        doc = _load(name)
        texts[name] = {
            t["text"].lower()
            for c in doc["conversations"]
            for s in c["sessions"]
            for t in s["turns"]
            if len(t["text"]) >= 40  # short replies ("ok see you then") repeat anywhere
        }
    assert texts["implicit"] & texts["implicit_dialogue"] == set()
