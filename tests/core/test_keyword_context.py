"""A chat message is indexed (keywords) with the messages before it in its session."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agentmem import AgentMemory
from agentmem.config import Settings
from agentmem.embeddings import Embedder
from agentmem.recall.request import recall_request


def _found_by_its_question(mem: AgentMemory, reply_id: str) -> bool:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    req = recall_request(mem.config, m.identity, "dentist appointment", min_score=0.0)
    keyword_only = dataclasses.replace(req, retrievers=("keyword",))
    ranked, _, _ = mem.engine.candidates(m.identity, keyword_only)
    return reply_id in {c.id for c in ranked}


def _conversation(mem: AgentMemory) -> str:
    m = mem.bind("acme", user_id="u1", session_id="s1")
    m.add_message("user", "When is my dentist appointment?")
    reply = m.add_message("assistant", "Thursday at 15:40.")
    m.add_message("user", "Thanks. Book the car service too.")
    assert mem.flush(timeout=30)
    return reply.id


@pytest.mark.parametrize(
    ("env", "found"),
    [
        ({}, True),
        ({"AGENTMEM_KEYWORD_CONTEXT": "1"}, True),
        ({"AGENTMEM_KEYWORD_CONTEXT": "0"}, False),
    ],
)
def test_a_reply_is_found_by_the_words_of_the_message_it_follows(
    tmp_path: Path, shared_embedder: Embedder, env: dict[str, str], found: bool
) -> None:
    with AgentMemory(tmp_path, embedder=shared_embedder, settings=Settings.from_env(env)) as mem:
        assert _found_by_its_question(mem, _conversation(mem)) is found


def test_reindex_applies_a_changed_setting_to_the_rows_already_indexed(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    with AgentMemory(tmp_path, embedder=shared_embedder) as mem:
        reply = _conversation(mem)
        assert _found_by_its_question(mem, reply)
    no_context = Settings.from_env({"AGENTMEM_KEYWORD_CONTEXT": "0"})
    with AgentMemory(tmp_path, embedder=shared_embedder, settings=no_context) as mem:
        assert _found_by_its_question(mem, reply)  # indexed before the change
        mem.reindex()
        assert not _found_by_its_question(mem, reply)


def test_the_context_setting_is_read_from_the_environment() -> None:
    assert Settings.from_env({"AGENTMEM_KEYWORD_CONTEXT": "0"}).memory.keyword_context == 0
    assert Settings.from_env({}).memory.keyword_context == 2
    assert Settings.from_env({"AGENTMEM_KEYWORD_CONTEXT": "-1"}).memory.keyword_context == 2


def test_the_topic_threshold_is_read_from_the_environment() -> None:
    def read(env: dict[str, str]) -> float:
        return Settings.from_env(env).memory.keyword_context_similarity

    assert read({}) == 0.2
    assert read({"AGENTMEM_KEYWORD_CONTEXT_SIMILARITY": "0"}) == 0.0
    assert read({"AGENTMEM_KEYWORD_CONTEXT_SIMILARITY": "0.45"}) == 0.45
    assert read({"AGENTMEM_KEYWORD_CONTEXT_SIMILARITY": "1.5"}) == 0.2  # not a cosine
    assert read({"AGENTMEM_KEYWORD_CONTEXT_SIMILARITY": "high"}) == 0.2


def test_a_keywords_only_reindex_applies_a_changed_setting_without_embedding(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    with AgentMemory(tmp_path, embedder=shared_embedder) as mem:
        reply = _conversation(mem)
    no_context = Settings.from_env({"AGENTMEM_KEYWORD_CONTEXT": "0"})
    with AgentMemory(tmp_path, embedder=shared_embedder, settings=no_context) as mem:
        assert _found_by_its_question(mem, reply)
        assert mem.reindex(keywords_only=True) == 3
        assert not _found_by_its_question(mem, reply)
        # nothing embedded again, nothing queued for it: the vectors stay as they were
        assert mem.indexer.embedded_total == 0 and mem.stats().vector_pending == 0
