"""Tests for the offline LLM (``agentmem.llm.offline``) and ``default_llm``.

The extractor is measured on the labelled sets in ``eval/``: the tuning set and a held-out
set written after tuning (``benchmarks/offline_extraction.py`` prints the figures). The
floors asserted here sit a little below the measured values, so a regression fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _benchmark_scripts import load_script

from agentmem.embeddings import CachedEmbedder
from agentmem.llm import (
    LLM,
    OFFLINE_NAME,
    AnthropicLLM,
    ChatTurn,
    Extracted,
    OfflineLLM,
    default_llm,
)
from agentmem.llm.offline.rules import frames

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default LLM must be the offline one here, whatever the developer's shell has."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def extract(text: str, role: str = "user") -> list[Extracted]:
    return OfflineLLM().extract([ChatTurn(role, text, id="m1")])


def keys(text: str) -> list[str | None]:
    return [e.topic_key for e in extract(text)]


# -- protocol, name, selection --------------------------------------------------------------------


def test_offline_llm_implements_the_protocol() -> None:
    llm = OfflineLLM()
    assert isinstance(llm, LLM)
    assert llm.name == OFFLINE_NAME == "offline-heuristic-v1"


def test_default_llm_is_offline_without_a_key() -> None:
    assert isinstance(default_llm(environ={}), OfflineLLM)


def test_default_llm_is_anthropic_with_a_key() -> None:
    llm = default_llm(environ={"ANTHROPIC_API_KEY": "sk-test", "AGENTMEM_LLM_MODEL": "m-1"})
    assert isinstance(llm, AnthropicLLM)
    assert llm.model == "m-1"
    assert llm.name == "anthropic:m-1"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"ANTHROPIC_API_KEY": "sk-test", "AGENTMEM_LLM": "offline"}, OfflineLLM),
        ({"AGENTMEM_LLM": "anthropic"}, AnthropicLLM),
        ({"AGENTMEM_LLM": "bogus"}, OfflineLLM),
        ({"ANTHROPIC_API_KEY": "  "}, OfflineLLM),
    ],
)
def test_default_llm_env_override(env: dict[str, str], expected: type) -> None:
    assert isinstance(default_llm(environ=env), expected)


def test_default_llm_uses_process_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert isinstance(default_llm(), OfflineLLM)


# -- extraction -------------------------------------------------------------------------------


def test_residence_statements_share_a_topic() -> None:
    assert keys("I live in Berlin.") == ["user.residence"]
    assert keys("I moved to Lisbon last month.") == ["user.residence"]
    moved = extract("I moved to Lisbon last month.")[0]
    assert moved.memory_type == "fact"
    # self-contained: the user, not "I" (no message time here, so "last month" stays)
    assert moved.content.startswith("The user lives in Lisbon")
    assert "the user moved to Lisbon last month" in moved.content


def test_editor_statements_share_a_topic() -> None:
    assert keys("My favourite editor is vim.") == ["user.editor"]
    assert keys("I switched to emacs.") == ["user.editor"]
    assert keys("I've been using Neovim for years.") == ["user.editor"]


def test_generic_noun_phrase_fallback() -> None:
    assert keys("My budget is 500 EUR.") == ["user.budget"]
    assert keys("My budget is now 800 EUR.") == ["user.budget"]
    assert keys("My favorite band is Radiohead.") == ["user.favorite.band"]


def test_polarity_flip_shares_the_topic() -> None:
    [like] = extract("I love coffee.")
    [dislike] = extract("I don't like coffee anymore.")
    assert like.topic_key == dislike.topic_key == "user.likes.coffee"
    assert like.memory_type == dislike.memory_type == "preference"


@pytest.mark.parametrize(
    ("text", "memory_type", "topic_key", "scope"),
    [
        ("We decided to use Postgres for the main database.", "decision", None, "user"),
        ("Always answer in English.", "instruction", "instruction.language", "user"),
        ("From now on, answer in German.", "instruction", "instruction.language", "user"),
        ("Remind me to call the dentist tomorrow.", "task", None, "session"),
        ("I got promoted yesterday!", "event", None, "user"),
        ("I have two kids.", "fact", None, "user"),
        ("I'm vegetarian.", "preference", "user.diet", "user"),
    ],
)
def test_classification(text: str, memory_type: str, topic_key: str | None, scope: str) -> None:
    [item] = extract(text)
    assert (item.memory_type, item.topic_key, item.scope) == (memory_type, topic_key, scope)
    assert item.source_ids == ("m1",)
    assert item.keywords and item.queries


def test_compound_sentence_gives_two_memories() -> None:
    got = extract("Hi! I live in Berlin and work as a nurse.")
    assert [(e.topic_key, e.content) for e in got] == [
        ("user.residence", "The user lives in Berlin."),
        ("user.occupation", "The user works as a nurse."),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "What's the weather like in Berlin?",
        "Write a haiku about autumn.",
        "I think it might rain later.",
        "If I lived in Paris, I'd cycle everywhere.",
        "Please call me tomorrow.",
        "Thanks, that's really helpful!",
    ],
)
def test_non_statements_are_not_extracted(text: str) -> None:
    assert extract(text) == []


def test_only_user_turns_are_sources() -> None:
    assert extract("I live in Berlin.", role="assistant") == []
    assert extract("I live in Berlin.", role="system") == []


def test_extraction_is_deterministic_and_deduplicated() -> None:
    turns = [
        ChatTurn("user", "I live in Berlin.", id="a"),
        ChatTurn("assistant", "Noted.", id="b"),
        ChatTurn("user", "I live in Berlin.", id="c"),
    ]
    llm = OfflineLLM()
    first = llm.extract(turns)
    assert first == llm.extract(turns)
    assert [e.source_ids for e in first] == [("a",)]


def _load_benchmark() -> Any:
    return load_script("offline_extraction")


@pytest.mark.parametrize(
    ("dataset", "min_precision", "min_recall", "min_topic"),
    [
        # measured: P 0.98, R 1.00, topic keys 0.99 (the set the rules were tuned on)
        ("offline_extraction_labelled.json", 0.95, 0.95, 0.95),
        # measured: P 0.98, R 0.98, topic keys 0.89 (held out when written; statements that
        # used to be missed are now extracted, some without the expected key)
        ("offline_extraction_heldout.json", 0.95, 0.95, 0.85),
    ],
)
def test_labelled_set_floors(
    dataset: str, min_precision: float, min_recall: float, min_topic: float
) -> None:
    bench = _load_benchmark()
    figures = bench.evaluate(ROOT / "eval" / dataset)
    assert figures["precision"] >= min_precision, figures
    assert figures["recall"] >= min_recall, figures
    assert figures["topic_key_exact"] >= min_topic, figures


def test_labelled_sets_are_well_formed() -> None:
    for name in ("offline_extraction_labelled.json", "offline_extraction_heldout.json"):
        data = json.loads((ROOT / "eval" / name).read_text())
        assert data["cases"]
        for case in data["cases"]:
            assert isinstance(case["text"], str)
            for memory_type, topic in case["expect"]:
                assert memory_type in {
                    "fact",
                    "preference",
                    "decision",
                    "event",
                    "instruction",
                    "task",
                    "note",
                }
                assert topic is None or isinstance(topic, str)


# -- judge -----------------------------------------------------------------------------------


def test_judge_supersedes_the_same_single_valued_attribute() -> None:
    verdicts = OfflineLLM().judge(
        "I moved to Lisbon last month",
        [("berlin", "I live in Berlin"), ("job", "I work at Siemens"), ("kids", "I have two kids")],
    )
    assert [(v.candidate_id, v.decision) for v in verdicts] == [
        ("berlin", "SUPERSEDE"),
        ("job", "KEEP"),
        ("kids", "KEEP"),
    ]


def test_judge_keeps_things_one_can_have_many_of() -> None:
    verdicts = OfflineLLM().judge("I have a cat", [("dog", "I have a dog")])
    assert verdicts[0].decision == "KEEP"


def test_judge_numeric_attribute_change() -> None:
    llm = OfflineLLM()
    [v] = llm.judge(
        "The API rate limit is 500 requests per minute",
        [("old", "The API rate limit is 100 requests per minute")],
    )
    assert v.decision == "SUPERSEDE"
    [same] = llm.judge(
        "The API rate limit is 100 requests per minute",
        [("old", "The deploy window is 100 minutes")],
    )
    assert same.decision == "KEEP"


def test_judge_editor_switch_and_instruction_change() -> None:
    llm = OfflineLLM()
    assert llm.judge("I switched to emacs", [("v", "My favourite editor is vim")])[0].decision == (
        "SUPERSEDE"
    )
    assert (
        llm.judge("From now on answer in German", [("e", "Always answer in English")])[0].decision
        == "SUPERSEDE"
    )


def test_judge_without_candidates() -> None:
    assert OfflineLLM().judge("I live in Berlin", []) == []


# -- answers ---------------------------------------------------------------------------------


def test_answer_is_grounded_and_extractive(shared_embedder: CachedEmbedder) -> None:
    llm = OfflineLLM(shared_embedder)
    memories = [
        ("job", "I work at Siemens as a nurse"),
        ("home", "I live in Lisbon (I moved to Lisbon last month)"),
        ("tea", "I prefer tea over coffee"),
    ]
    ans = llm.answer("where do I live?", memories)
    assert ans.used_ids == ("home",)
    assert "Lisbon" in ans.text


def test_answer_is_empty_when_nothing_is_relevant(shared_embedder: CachedEmbedder) -> None:
    llm = OfflineLLM(shared_embedder)
    ans = llm.answer("what is the capital of Mongolia?", [("tea", "I prefer tea over coffee")])
    assert ans.text == "" and ans.used_ids == ()
    assert llm.answer("where do I live?", []).text == ""


def test_answer_without_embedder_uses_word_overlap() -> None:
    llm = OfflineLLM()
    ans = llm.answer("which editor do I use?", [("e", "I use emacs as my editor")])
    assert ans.used_ids == ("e",)
    assert llm.answer("capital of Mongolia?", [("e", "I use emacs as my editor")]).text == ""


# -- summaries -------------------------------------------------------------------------------

CONVERSATION = [
    ChatTurn("system", "You are a helpful assistant.", id="s"),
    ChatTurn("user", "Hi! I live in Berlin and work as a nurse at the Charité.", id="u1"),
    ChatTurn("assistant", "Nice to meet you. Nursing at the Charité must be demanding.", id="a1"),
    ChatTurn("user", "It is. By the way, the weather is awful today. Anyway.", id="u2"),
    ChatTurn("user", "I need to renew my passport before June.", id="u3"),
    ChatTurn("assistant", "I can help you find the Berlin passport office hours.", id="a2"),
    ChatTurn("tool", '{"office": "Bürgeramt Mitte", "hours": "8-18"}', id="t1"),
]


def test_summarize_respects_the_word_budget() -> None:
    llm = OfflineLLM()
    for budget in (10, 25, 60):
        summary = llm.summarize(CONVERSATION, max_words=budget)
        assert summary
        assert len(summary.split()) <= budget + 4  # role prefixes ("User:") are extra


def test_summarize_prefers_statements_and_is_deterministic() -> None:
    llm = OfflineLLM()
    summary = llm.summarize(CONVERSATION, max_words=25)
    assert "The user lives in Berlin" in summary
    assert "helpful assistant" not in summary  # system turns are not summarised
    assert summary == llm.summarize(CONVERSATION, max_words=25)


def test_summarize_short_input_is_summarised_not_concatenated() -> None:
    turns = [ChatTurn("user", "Hi! I live in Berlin."), ChatTurn("assistant", "Noted.")]
    assert OfflineLLM().summarize(turns) == "The user lives in Berlin."
    assert OfflineLLM().summarize([]) == ""


def test_summarize_without_statements_falls_back_to_sentences_in_budget() -> None:
    turns = [
        ChatTurn("assistant", "The deployment finished. All health checks are green."),
        ChatTurn("tool", '{"status": "ok", "checks": 12}'),
    ]
    summary = OfflineLLM().summarize(turns, max_words=8)
    assert summary.startswith("Assistant: ")
    assert len(summary.split()) <= 8


def test_summary_delta_appends_summary_facts_and_references() -> None:
    delta = OfflineLLM().summary_delta("Earlier summary.", CONVERSATION)
    assert delta.mode == "append"
    assert delta.summary_update
    facts = {f["key"]: f for f in delta.add_facts}
    assert facts["user.residence"]["value"] == "The user lives in Berlin."
    assert facts["user.residence"]["source_event"] == "u1"
    assert delta.add_references == ("s", "u1", "a1", "u2", "u3", "a2", "t1")
    assert delta.remove_fact_keys == ()


def test_rule_frames_expose_values_and_polarity() -> None:
    [(_, frame)] = list(frames("I no longer enjoy running."))
    assert (frame.topic_key, frame.value, frame.polarity) == (
        "user.likes.running",
        "running",
        False,
    )
