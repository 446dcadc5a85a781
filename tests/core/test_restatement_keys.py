"""Restatement keys: a chat message is indexed with what it states, self-contained."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from agentmem import AgentMemory
from agentmem.evaluation.halves import uncut_request
from agentmem.write.keys import RESTATE_MAX_CHARS, restatement

MakeMemory = Callable[..., AgentMemory]
MARCH = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
MOVED = "I moved to Lisbon last year, best decision ever"


def test_a_turn_is_restated_with_its_speaker_and_resolved_dates() -> None:
    key = restatement("chat_message", "assistant", MOVED, "Caroline", MARCH)
    assert "Caroline" in key and "2023" in key and "I " not in key
    # an unnamed user is "the user"; an unnamed assistant states nothing about a person
    assert restatement("chat_message", "user", MOVED, None, MARCH).startswith("The user")
    assert restatement("chat_message", "assistant", MOVED, None, MARCH) == ""
    assert restatement("chat_message", "user", "Hey! How are you?", "Jon", MARCH) == ""
    # only chat messages, and only conversational ones
    assert restatement("memory", "user", MOVED, None, MARCH) == ""
    long = MOVED + " " + "and the tram is great " * (RESTATE_MAX_CHARS // 20)
    assert restatement("chat_message", "user", long, None, MARCH) == ""


def test_a_turn_already_self_contained_gets_no_key() -> None:
    # it would restate to itself: indexed twice, embedded with twice its tokens
    said = "Nora Okonkwo runs 23 km every morning."
    assert restatement("chat_message", "user", said, None, MARCH) == ""
    assert restatement("chat_message", "user", f" {said}\n", "Nora", MARCH) == ""
    # a restatement that changes the wording is still a key
    assert restatement("chat_message", "user", "I run every morning.", "Nora", MARCH) != ""


def _keyword_candidates(mem: AgentMemory, bound: Any, query: str) -> dict[str, float]:
    req = uncut_request(query, retrievers=("keyword",))
    ranked, visible, _ = mem.engine.candidates(bound.identity, req)
    return {visible[c.id][1].content: c.bm25 for c in ranked}


def _cosines(mem: AgentMemory, bound: Any, query: str) -> dict[str, float]:
    req = uncut_request(query, retrievers=("vector",))
    ranked, visible, _ = mem.engine.candidates(bound.identity, req)
    return {visible[c.id][1].content: c.cos or 0.0 for c in ranked}


def test_the_key_finds_a_turn_by_a_date_it_only_implies(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    m.add_message("assistant", MOVED, metadata={"speaker": "Caroline"}, event_time=MARCH)
    m.add_message("user", "The tram line 28 is lovely in spring", event_time=MARCH)
    # not indexed yet: the pending rows are scored on the same text the indexes will hold
    pending = _keyword_candidates(mem, m, "2023")
    assert MOVED in pending
    pending_cos = _cosines(mem, m, "Caroline 2023")
    mem.flush()
    indexed = _keyword_candidates(mem, m, "2023")
    assert MOVED in indexed
    assert abs(_cosines(mem, m, "Caroline 2023")[MOVED] - pending_cos[MOVED]) < 1e-4
    hits = m.recall("where did Caroline move in 2023?", min_score=0.0).items
    assert hits[0].content == MOVED  # the stored content is unchanged
