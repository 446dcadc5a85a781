"""The implicit-recall family of the evaluation suite (``evaluation/data/suite/implicit.json``)
keeps the invariants its harness and its claims depend on.

The harness stores every conversation (each session a session, turns in order), then recalls
each case's query from a session bound to the case's ``session`` with ``scope="history"``;
a hit is an evidence turn in the top 10. So: every id resolves, evidence lies in an earlier
session of the same conversation, the query is what the user said in the case's session,
and dates run forwards. The family's promise, that a trigger shares at most one analysed
content term with the turn it should bring back, is measured with agentmem's own keyword
analyzer (through ``benchmarks/check_suite_overlap.py``, the script that reports it).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

import pytest
from _benchmark_scripts import load_script

from agentmem.evaluation import golden_dataset_path

IMPLICIT = golden_dataset_path().parent / "suite" / "implicit.json"
MAX_SHARED_TERMS = 1


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(IMPLICIT.read_text(encoding="utf-8"))
    return data


def _turn_sessions(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Turn id -> (conversation id, session id)."""
    return {
        t["id"]: (c["id"], s["id"])
        for c in doc["conversations"]
        for s in c["sessions"]
        for t in s["turns"]
    }


def test_header_and_size(doc: dict[str, Any]) -> None:
    assert doc["version"] == "1" and doc["family"] == "implicit" and doc["description"]
    cases = doc["cases"]
    assert len(doc["conversations"]) >= 14
    assert sum(not c["expect_empty"] for c in cases) >= 160
    assert sum(c["expect_empty"] for c in cases) >= 30


def test_ids_are_unique(doc: dict[str, Any]) -> None:
    convs = doc["conversations"]
    ids = [c["id"] for c in convs] + [c["id"] for c in doc["cases"]]
    ids += [s["id"] for c in convs for s in c["sessions"]]
    ids += [t["id"] for c in convs for s in c["sessions"] for t in s["turns"]]
    assert [i for i, n in Counter(ids).items() if n > 1] == []


def test_conversations_are_long_and_ordered(doc: dict[str, Any]) -> None:
    for conv in doc["conversations"]:
        sessions = conv["sessions"]
        assert len(sessions) >= 8, conv["id"]
        dates = [datetime.fromisoformat(s["date"]) for s in sessions]
        assert dates == sorted(dates) and len(set(dates)) == len(dates), conv["id"]
        for s in sessions:
            assert 25 <= len(s["turns"]) <= 60, s["id"]
            for t in s["turns"]:
                assert t["role"] in ("user", "assistant"), t["id"]
                assert t["text"].strip(), t["id"]
                assert not t["text"].startswith(f"{conv['user']}:"), t["id"]


def test_cases_resolve_to_earlier_evidence(doc: dict[str, Any]) -> None:
    turns = _turn_sessions(doc)
    sessions = {
        s["id"]: (c["id"], datetime.fromisoformat(s["date"]), s)
        for c in doc["conversations"]
        for s in c["sessions"]
    }
    for case in doc["cases"]:
        conv, date, session = sessions[case["session"]]
        assert conv == case["conversation"], case["id"]
        # the trigger is what the user said in the case's own session
        assert any(t["role"] == "user" and t["text"] == case["query"] for t in session["turns"]), (
            case["id"]
        )
        assert case["expect_empty"] == (not case["evidence"]), case["id"]
        assert len(case["evidence"]) <= 3, case["id"]
        for ev in case["evidence"]:
            ev_conv, ev_session = turns[ev]
            assert ev_conv == conv, (case["id"], ev)
            assert sessions[ev_session][1] < date, (case["id"], ev)
        assert case["tags"][0] == "implicit", case["id"]


def test_triggers_share_at_most_one_analysed_term_with_their_evidence(
    doc: dict[str, Any],
) -> None:
    shared = load_script("check_suite_overlap").shared_terms(doc)
    assert len(shared) == sum(not c["expect_empty"] for c in doc["cases"])
    too_many = {cid: terms for cid, terms in shared.items() if len(terms) > MAX_SHARED_TERMS}
    assert too_many == {}
