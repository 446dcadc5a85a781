"""Tests for retention anonymization (``agentmem.derived.retention``), agent state, and their CLI.

Real stores, indexes and embedder under ``tmp_path``; time is moved by passing ``now``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agentmem import AgentMemory
from agentmem.cli import main
from agentmem.config import RetentionPolicy
from agentmem.derived.retention import REDACTED, run_retention
from agentmem.errors import ScopeError, ValidationError
from agentmem.storage.rows import now_utc
from agentmem.storage.vector_index import collection_name

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]
LATER = timedelta(days=120)


@pytest.fixture(autouse=True)
def _offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default LLM must be the offline one here, whatever the developer's shell has."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def row(mem: AgentMemory, memory_id: str) -> dict[str, Any]:
    cols = (
        "id, tenant_id, user_id, agent_id, session_id, content, content_hash, metadata, "
        "topic_key, source_ref, superseded_by, deleted_at, anonymized_at, partition, "
        "kw_pending, vec_pending, embedded, dedup_key"
    )
    values = mem.records.read(f"SELECT {cols} FROM memories WHERE id = ?", (memory_id,))[0]
    return dict(zip([c.strip() for c in cols.split(",")], values, strict=True))


def populate(mem: AgentMemory) -> dict[str, str]:
    """A soft-deleted message and tool output (with a payload), a superseded fact, and live
    rows; indexed. (``forget`` is no soft delete: it leaves a tombstone at once.)"""
    m = mem.bind("acme", user_id="u1", session_id="s1")
    ids = {
        "tool": m.add_tool_output("call-1", "secret payload " * 300).id,
        "berlin": m.remember("I live in Berlin", topic_key="user.residence").id,
        "lisbon": m.remember("I live in Lisbon", topic_key="user.residence").id,
        "live": m.remember("I like tea").id,
        "msg": m.add_message("user", "my passport number is X123").id,
    }
    assert m.clear_session() == 2  # soft-deletes the tool output and the message
    mem.flush()
    return ids


def test_anonymizes_retired_rows_past_their_ttls(make_memory: MakeMemory) -> None:
    mem = make_memory()
    ids = populate(mem)
    m = mem.bind("acme", user_id="u1", session_id="s2")
    keyword_ids = mem.keywords.all_ids()
    assert ids["berlin"] in keyword_ids  # superseded rows stay indexed (audit recall)

    result = mem.retention(now=now_utc() + LATER)
    assert not result.dry_run
    assert (result.soft_deleted, result.superseded, result.anonymized) == (2, 1, 3)
    assert set(result.ids) == {ids["tool"], ids["msg"], ids["berlin"]}
    for key in ("tool", "msg", "berlin"):
        r = row(mem, ids[key])
        assert r["content"] == REDACTED and r["content_hash"] == ""
        assert (r["user_id"], r["agent_id"], r["session_id"]) == (None, None, None)
        assert r["metadata"] == "{}" and r["topic_key"] is None and r["dedup_key"] is None
        assert r["source_ref"].endswith("|anonymized") and r["anonymized_at"]
        assert r["partition"] == "anonymized"  # owner label cleared once de-indexed
        assert (r["kw_pending"], r["embedded"]) == (0, 0)
    assert row(mem, ids["berlin"])["superseded_by"] == ids["lisbon"]  # chain intact
    assert row(mem, ids["tool"])["source_ref"].startswith("tout_")
    assert mem.records.read("SELECT COUNT(*) FROM payloads")[0][0] == 0
    # index entries are gone
    assert not {ids["tool"], ids["msg"], ids["berlin"]} & mem.keywords.all_ids()
    for partition in ("user:u1", "conv:u:u1"):
        assert ids["berlin"] not in mem.vectors.ids(collection_name("acme", partition))
    # live rows untouched
    assert m.get(ids["lisbon"]).content == "I live in Lisbon"
    assert m.get(ids["live"]).content == "I like tea"
    # audit entries: ids and reasons only
    entries = mem.records.read(
        "SELECT memory_id, detail FROM audit_log WHERE event = 'memory.anonymize'"
    )
    reasons = {mid: json.loads(detail) for mid, detail in entries}
    assert reasons == {
        ids["tool"]: {"reason": "soft_deleted"},
        ids["msg"]: {"reason": "soft_deleted"},
        ids["berlin"]: {"reason": "superseded"},
    }
    # a second run finds nothing
    assert mem.retention(now=now_utc() + LATER).anonymized == 0


def test_anonymized_rows_never_come_back(make_memory: MakeMemory) -> None:
    mem = make_memory()
    ids = populate(mem)
    m = mem.bind("acme", user_id="u1", session_id="s2")
    assert ids["berlin"] in {h.id for h in m.recall("Berlin", include_superseded=True).items}
    mem.retention(now=now_utc() + LATER)
    for query in ("Berlin", "where do I live", "REDACTED", "passport number", "secret payload"):
        for audit_mode in (False, True):
            hits = m.recall(query, top_k=20, include_superseded=audit_mode).items
            assert not {ids["berlin"], ids["msg"], ids["tool"]} & {h.id for h in hits}
            assert all(h.content != REDACTED for h in hits)
    assert [i.id for i in m.history(ids["lisbon"])] == [ids["lisbon"]]
    assert all(row["content"] != REDACTED for row in mem.export())
    mem.reindex()  # a rebuild does not resurrect them either
    assert not {ids["berlin"], ids["msg"]} & mem.keywords.all_ids()


def test_nothing_happens_before_the_ttls(make_memory: MakeMemory) -> None:
    mem = make_memory()
    ids = populate(mem)
    assert mem.retention().ids == ()
    # 40 days: past the soft-delete TTL (30) but not the supersede TTL (90)
    result = mem.retention(now=now_utc() + timedelta(days=40))
    assert set(result.ids) == {ids["tool"], ids["msg"]}
    assert row(mem, ids["berlin"])["anonymized_at"] is None


def test_dry_run_changes_nothing(make_memory: MakeMemory, snapshot: Any) -> None:
    mem = make_memory()
    ids = populate(mem)
    before = snapshot(mem)
    result = mem.retention(dry_run=True, now=now_utc() + LATER)
    assert result.dry_run and result.anonymized == 0
    assert (result.soft_deleted, result.superseded) == (2, 1)
    assert ids["berlin"] in result.ids
    assert snapshot(mem) == before


def test_env_policy(
    make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch, snapshot: Any
) -> None:
    monkeypatch.setenv("AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN", "true")  # read once, at open
    mem = make_memory()
    populate(mem)
    before = snapshot(mem)
    assert mem.retention(now=now_utc() + LATER).dry_run
    assert snapshot(mem) == before
    monkeypatch.setenv("AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN", "false")
    monkeypatch.setenv("AGENTMEM_MEMORY_ANONYMIZE_SOFT_TTL_DAYS", "0")
    monkeypatch.setenv("AGENTMEM_MEMORY_ANONYMIZE_SUP_TTL_DAYS", "1000")
    monkeypatch.setenv("AGENTMEM_MEMORY_ANONYMIZE_BATCH_SIZE", "1")
    assert mem.retention(now=now_utc() + LATER).dry_run  # not re-read while open
    mem.close()
    reopened = make_memory(path=mem.home)
    result = reopened.retention(now=now_utc() + timedelta(seconds=1))
    assert (result.soft_deleted, result.superseded) == (2, 0)


def test_policy_from_env() -> None:
    assert RetentionPolicy.from_env({}) == RetentionPolicy(30, 90, 100, False)
    p = RetentionPolicy.from_env(
        {
            "AGENTMEM_MEMORY_ANONYMIZE_SOFT_TTL_DAYS": "7",
            "AGENTMEM_MEMORY_ANONYMIZE_SUP_TTL_DAYS": "-3",
            "AGENTMEM_MEMORY_ANONYMIZE_BATCH_SIZE": "oops",
            "AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN": "1",
        }
    )
    assert p == RetentionPolicy(7, 90, 100, True)


def test_batches_and_tenant_filter(make_memory: MakeMemory, rows: Callable[..., int]) -> None:
    mem = make_memory()
    for tenant in ("acme", "beta"):
        kb = mem.bind(tenant, agent_id="a1").knowledge
        for i in range(5):
            assert kb.delete(kb.upsert(f"fact {i}").id)  # a soft delete
    policy = RetentionPolicy(batch_size=2)
    result = run_retention(mem.context, policy, now=now_utc() + LATER, tenant_id="acme")
    assert result.soft_deleted == 5
    assert rows(mem, "anonymized_at IS NOT NULL AND tenant_id = 'acme'") == 5
    assert rows(mem, "anonymized_at IS NOT NULL AND tenant_id = 'beta'") == 0
    assert run_retention(mem.context, policy, now=now_utc() + LATER).soft_deleted == 5


def test_retention_without_waiting_scrubs_later(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    kb = mem.bind("acme", agent_id="a1").knowledge
    gone = kb.upsert("Our office is in Berlin")
    mem.flush()
    assert kb.delete(gone.id)  # a soft delete
    result = run_retention(mem.context, RetentionPolicy(), now=now_utc() + LATER, wait=False)
    assert result.scrubbed == 0
    assert row(mem, gone.id)["partition"] == "knowledge"  # index entries not yet removed
    mem.flush()
    assert mem.retention(now=now_utc() + LATER).scrubbed == 1
    assert row(mem, gone.id)["partition"] == "anonymized"


# -- agent state -------------------------------------------------------------------------------


def test_agent_state_roundtrip(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", agent_id="planner")
    assert m.state.get("task") is None and m.state.list() == []
    entry = m.state.set("task", {"name": "Q4 analysis", "step": 2, "tags": ["finance"]})
    assert entry.value == {"name": "Q4 analysis", "step": 2, "tags": ["finance"]}
    got = m.state.get("task")
    assert got is not None and got.value == entry.value and got.updated_at.tzinfo is not None
    m.state.set("task", "done")
    m.state.set("another", 1)
    assert [(e.key, e.value) for e in m.state.list()] == [("another", 1), ("task", "done")]
    assert m.state.delete("task") and not m.state.delete("task")
    assert [e.key for e in m.state.list()] == ["another"]


def test_agent_state_is_scoped_by_tenant_and_agent(make_memory: MakeMemory) -> None:
    mem = make_memory()
    a = mem.bind("acme", agent_id="planner")
    a.state.set("k", "planner-acme")
    assert mem.bind("acme", agent_id="writer").state.get("k") is None
    assert mem.bind("beta", agent_id="planner").state.get("k") is None
    # shared by the agent's sessions and users
    assert mem.bind("acme", user_id="u9", agent_id="planner", session_id="s").state.get("k")
    with pytest.raises(ScopeError):
        mem.bind("acme", user_id="u1").state.get("k")


def test_agent_state_validation_and_persistence(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", agent_id="planner")
    with pytest.raises(ValidationError):
        m.state.set("", 1)
    with pytest.raises(ValidationError):
        m.state.set("k", object())
    m.state.set("k", [1, 2, 3])
    home = mem.home
    mem.close()
    again = make_memory(path=home)
    entry = again.bind("acme", agent_id="planner").state.get("k")
    assert entry is not None and entry.value == [1, 2, 3]


# -- CLI --------------------------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], home: Path, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    status = main(["--home", str(home), *argv])
    return status, capsys.readouterr().out


def test_cli_retention_and_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _cli(capsys, home, "--user", "u1", "remember", "I live in Berlin")
    _cli(capsys, home, "--user", "u1", "remember", "I moved to Lisbon")
    status, out = _cli(capsys, home, "--json", "judge")
    assert status == 0 and json.loads(out)["judged"] == 2
    assert len(json.loads(out)["superseded"]) == 1
    status, out = _cli(capsys, home, "retention", "--dry-run")
    assert status == 0 and "would anonymize 0 rows" in out
    monkeypatch.setenv("AGENTMEM_MEMORY_ANONYMIZE_SUP_TTL_DAYS", "0")
    status, out = _cli(capsys, home, "--json", "retention", "--dry-run")
    dry = json.loads(out)
    assert dry["dry_run"] and dry["superseded"] == 1
    status, out = _cli(capsys, home, "--tenant", "other", "retention", "--tenant-only")
    assert "anonymized 0 rows" in out
    status, out = _cli(capsys, home, "retention")
    assert status == 0 and "anonymized 1 rows" in out and "1 owner labels cleared" in out


def test_transcript_lines_of_superseded_memories_are_kept(make_memory: MakeMemory) -> None:
    """A message hidden from recall because its memory was superseded is not a retired row."""
    mem = make_memory()
    mem.bind("acme", user_id="u1", session_id="s1").ingest(
        [{"role": "user", "content": "I live in Berlin."}]
    )
    mem.bind("acme", user_id="u1", session_id="s2").ingest(
        [{"role": "user", "content": "I moved to Lisbon last month."}]
    )
    s1 = mem.bind("acme", user_id="u1", session_id="s1").messages()
    assert s1[0].superseded_by is not None  # out of default recall
    mem.retention(now=now_utc() + LATER)
    (row,) = mem.bind("acme", user_id="u1", session_id="s1").messages()
    assert row.content == "I live in Berlin." and row.anonymized_at is None
