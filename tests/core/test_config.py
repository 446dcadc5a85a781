"""Configuration: read once from the environment, into frozen objects; weights act on recall."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from agentmem import AgentMemory, Settings
from agentmem.config import (
    DEFAULT_SCOPE_WEIGHTS,
    VARIABLES,
    JudgeConfig,
    LLMConfig,
    MemoryConfig,
    RerankConfig,
    RetentionPolicy,
    TierConfig,
)
from agentmem.errors import ValidationError

MakeMemory = Callable[..., AgentMemory]


def test_settings_from_env_reads_every_part() -> None:
    env = {
        "AGENTMEM_MIN_SCORE": "0.2",
        "AGENTMEM_TOKEN_BUDGET": "500",
        "AGENTMEM_RECALL_WEIGHT_KNOWLEDGE": "0.5",
        "AGENTMEM_SYNC": "full",
        "AGENTMEM_MID_TERM_SESSIONS": "3",
        "AGENTMEM_MEMORY_JUDGE_ENABLED": "no",
        "AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN": "on",
        "AGENTMEM_RERANKER_URL": "http://tei:80",
        "AGENTMEM_LLM": "anthropic",
        "AGENTMEM_LLM_MODEL": "claude-x",
    }
    s = Settings.from_env(env)
    assert (s.memory.min_score, s.memory.token_budget, s.memory.durable_writes) == (0.2, 500, True)
    assert s.memory.scope_weights["knowledge"] == 0.5
    assert s.tiers.mid_term_sessions == 3
    assert s.judge.enabled is False and s.retention.dry_run is True
    assert s.rerank == RerankConfig(url="http://tei:80", timeout=2.0)
    assert (s.llm.provider, s.llm.model) == ("anthropic", "claude-x")
    assert Settings.from_env({}) == Settings()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("TRUE", True), ("yes", True), ("on", True), ("0", False), ("off", False)],
)
def test_one_boolean_spelling_everywhere(raw: str, expected: bool) -> None:
    assert JudgeConfig.from_env({"AGENTMEM_MEMORY_JUDGE_ENABLED": raw}).enabled is expected
    assert RetentionPolicy.from_env({"AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN": raw}).dry_run is expected


def test_bad_values_keep_defaults() -> None:
    env = {
        "AGENTMEM_MIN_SCORE": "1.5",
        "AGENTMEM_TOKEN_BUDGET": "-3",
        "AGENTMEM_RECALL_WEIGHT_USER": "heavy",
        "AGENTMEM_MID_TERM_SESSIONS": "2.5",
        "AGENTMEM_MEMORY_JUDGE_ENABLED": "perhaps",
        "AGENTMEM_SYNC": "sometimes",
    }
    s = Settings.from_env(env)
    assert s.memory == MemoryConfig()
    assert s.tiers == TierConfig()
    assert s.judge == JudgeConfig()
    with pytest.raises(ValidationError, match="AGENTMEM_RERANKER_TIMEOUT"):
        RerankConfig.from_env(
            {"AGENTMEM_RERANKER_URL": "http://x", "AGENTMEM_RERANKER_TIMEOUT": "0"}
        )


def test_a_variable_agentmem_does_not_read_is_named_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A typo in a variable's name would otherwise leave a setting at its default silently."""
    env = {
        "AGENTMEM_RECALL_WEIGHT_USERS": "2",
        "AGENTMEM_COMPLETELY_UNHEARD_OF": "1",
        "AGENTMEM_TEST_PG_BIN": "/usr/lib/postgresql/15/bin",  # the test suite's own
        "AGENTMEM_MIN_SCORE": "0.2",
    }
    with caplog.at_level(logging.WARNING, logger="agentmem.config"):
        first = Settings.from_env(env)
        Settings.from_env(env)  # the CLI and a store each read the settings: said once
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "ignoring AGENTMEM_COMPLETELY_UNHEARD_OF: agentmem reads no such variable",
        "ignoring AGENTMEM_RECALL_WEIGHT_USERS: agentmem reads no such variable "
        "(did you mean AGENTMEM_RECALL_WEIGHT_USER?)",
    ]
    assert first.memory.min_score == 0.2 and first.memory.scope_weights == DEFAULT_SCOPE_WEIGHTS


def test_every_variable_the_source_reads_is_known() -> None:
    """The list of variables the typo check knows is the one the code reads."""
    root = Path(__file__).resolve().parents[2]
    named: set[str] = set()
    for package in ("core/agentmem", "langchain_agentmem", "llamaindex_agentmem"):
        for path in (root / package).rglob("*.py"):
            named |= set(re.findall(r"AGENTMEM_([A-Z][A-Z_]*[A-Z])\b", path.read_text()))
    per_scope = {"RECALL_WEIGHT"} | {f"RECALL_WEIGHT_{s.upper()}" for s in DEFAULT_SCOPE_WEIGHTS}
    assert named - per_scope == set(VARIABLES)


def test_llm_provider_follows_the_key_unless_forced() -> None:
    assert LLMConfig.from_env({}).provider == "offline"
    assert LLMConfig.from_env({"ANTHROPIC_API_KEY": "k"}).provider == "anthropic"
    assert LLMConfig.from_env({"ANTHROPIC_API_KEY": "k", "AGENTMEM_LLM": "offline"}).provider == (
        "offline"
    )
    assert "k" not in repr(LLMConfig.from_env({"ANTHROPIC_API_KEY": "k"}))  # no key in logs


def test_settings_are_frozen_and_read_once(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTMEM_MIN_SCORE", "0.25")
    mem = make_memory()
    assert mem.settings.memory.min_score == 0.25
    monkeypatch.setenv("AGENTMEM_MIN_SCORE", "0.9")  # too late: read at open
    assert mem.config.min_score == 0.25
    with pytest.raises(dataclasses.FrozenInstanceError):
        mem.settings.memory.min_score = 0.5  # type: ignore[misc]
    passed = make_memory(settings=Settings(tiers=TierConfig(mid_term_sessions=2)))
    assert passed.tier_config.mid_term_sessions == 2
    assert passed.config.min_score == MemoryConfig().min_score  # not the environment


def _seed(mem: AgentMemory) -> None:
    m = mem.bind("acme", user_id="u1", agent_id="kb-bot", session_id="s1")
    m.add_document("The office wifi password is printed on the kitchen fridge.", source_ref="kb")
    m.remember("The user's wifi at home is called Heron", memory_type="fact")
    m.knowledge.upsert("Guest wifi is open from 8:00 to 18:00", key="guest-wifi")


@pytest.mark.parametrize("scope", ["tenant", "user", "knowledge"])
def test_weight_zero_leaves_a_scope_out_of_any(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    monkeypatch.setenv(f"AGENTMEM_RECALL_WEIGHT_{scope.upper()}", "0")
    mem = make_memory()
    _seed(mem)
    m = mem.bind("acme", user_id="u1", agent_id="kb-bot", session_id="s2")
    fused = m.recall("wifi", top_k=10, min_score=0.0).items
    assert fused and scope not in {h.scope for h in fused}
    assert {h.scope for h in fused} >= ({"tenant", "user", "knowledge"} - {scope})
    direct = m.recall("wifi", scope=scope, min_score=0.0).items
    assert direct and {h.scope for h in direct} == {scope}  # still there when asked for


def test_weights_change_the_fused_order(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def top_scope(weights: dict[str, str]) -> str:
        for name in DEFAULT_SCOPE_WEIGHTS:
            monkeypatch.delenv(f"AGENTMEM_RECALL_WEIGHT_{name.upper()}", raising=False)
        for name, value in weights.items():
            monkeypatch.setenv(f"AGENTMEM_RECALL_WEIGHT_{name.upper()}", value)
        mem = make_memory()
        _seed(mem)
        m = mem.bind("acme", user_id="u1", agent_id="kb-bot", session_id="s2")
        hits = m.recall("wifi", top_k=10, min_score=0.0).items
        return hits[0].scope

    scopes = {top_scope({"tenant": "5", "user": "0.1", "knowledge": "0.1"})}
    scopes.add(top_scope({"tenant": "0.1", "user": "5", "knowledge": "0.1"}))
    assert scopes == {"tenant", "user"}
