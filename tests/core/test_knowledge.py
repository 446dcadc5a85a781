"""Knowledge (the fourth tier): upsert by key, get, delete, list, recall, and access control.

The access rules: knowledge is written only by its own agent and read by any agent
(here: any identity) of the tenant; never across tenants.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentmem import AgentMemory, ScopeError, ValidationError
from agentmem.cli import main
from agentmem.tiers.knowledge import KEY_METADATA

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]


@pytest.fixture
def mem(make_memory: MakeMemory) -> AgentMemory:
    return make_memory(background=False)


def test_upsert_get_list_delete(mem: AgentMemory) -> None:
    kb = mem.bind("acme", agent_id="support").knowledge
    first = kb.upsert("Refunds are processed within 5 business days.", key="refund-sla")
    assert first.was_new and first.replaced is None and first.key == "refund-sla"
    note = kb.upsert("The office is closed on public holidays.")
    assert note.key is None
    again = kb.upsert("Refunds are processed within 5 business days.", key="refund-sla")
    assert again.id == first.id and not again.was_new  # same entry: no-op

    entry = kb.get("refund-sla")
    assert entry is not None and entry.id == first.id and entry.agent_id == "support"
    assert entry.metadata[KEY_METADATA] == "refund-sla" and entry.memory_type == "note"
    assert [e.id for e in kb.list()] == [first.id, note.id]

    assert kb.delete("refund-sla") is True
    assert kb.get("refund-sla") is None
    assert kb.delete("refund-sla") is False
    assert kb.delete(note.id) is True  # by id
    assert kb.list() == [] and kb.delete("no-such-thing") is False


def test_update_by_key_supersedes_the_previous_entry(mem: AgentMemory) -> None:
    kb = mem.bind("acme", agent_id="support").knowledge
    old = kb.upsert("Support hours are 9-17 CET.", key="hours", memory_type="fact")
    new = kb.upsert(
        "Support hours are 8-20 CET.", key="hours", memory_type="fact", metadata={"v": 2}
    )
    assert new.was_new and new.replaced == old.id
    entry = kb.get("hours")
    assert entry is not None and entry.content == "Support hours are 8-20 CET."
    assert entry.metadata == {"v": 2, KEY_METADATA: "hours"}
    stored = mem.records.memories.get(old.id)
    assert stored is not None and stored.item.superseded_by == new.id  # kept as history
    assert [e.key for e in kb.list()] == ["hours"]
    # the old version is out of recall; the new one is in
    mem.flush()
    hits = mem.bind("acme", agent_id="support").recall("support hours", min_score=0.0).items
    assert [h.id for h in hits if h.scope == "knowledge"] == [new.id]
    # another agent may use the same key independently
    other = mem.bind("acme", agent_id="sales").knowledge.upsert("Sales: 10-16.", key="hours")
    assert other.replaced is None
    assert kb.get("hours") is not None and kb.get("hours").id == new.id  # type: ignore[union-attr]


def test_readable_by_every_agent_writable_only_by_its_own(mem: AgentMemory) -> None:
    support = mem.bind("acme", agent_id="support").knowledge
    sales = mem.bind("acme", agent_id="sales").knowledge
    entry = support.upsert("Escalate outages to the on-call SRE.", key="escalation")
    sales.upsert("Discounts above 20% need approval.", key="discounts")

    # reads across agents
    other = sales.get("escalation", agent_id="support")
    assert other is not None and other.id == entry.id
    assert sales.get("escalation") is None  # the bound agent has no such key
    assert {e.key for e in sales.list(all_agents=True)} == {"escalation", "discounts"}
    assert [e.key for e in sales.list(agent_id="support")] == ["escalation"]
    user_only = mem.bind("acme", user_id="u1").knowledge
    assert {e.key for e in user_only.list()} == {"escalation", "discounts"}
    assert user_only.get("discounts", agent_id="sales") is not None
    with pytest.raises(ScopeError):
        user_only.get("discounts")  # no agent to default to

    # writes only by the owning agent
    with pytest.raises(ScopeError):
        sales.delete(entry.id)
    assert sales.delete("escalation") is False  # its own key space: nothing to delete
    assert support.get("escalation") is not None
    with pytest.raises(ScopeError):
        user_only.upsert("I am not an agent.")
    with pytest.raises(ScopeError):
        user_only.delete(entry.id)
    sales.upsert("Escalate outages to sales.", key="escalation")  # its own entry
    kept = support.get("escalation")
    assert kept is not None and kept.id == entry.id


def test_no_knowledge_crosses_tenants(mem: AgentMemory) -> None:
    mem.bind("acme", agent_id="support").knowledge.upsert("Acme secret: orchid.", key="code")
    mem.flush()
    globex = mem.bind("globex", agent_id="support")
    assert globex.knowledge.list(all_agents=True) == []
    assert globex.knowledge.get("code") is None
    assert globex.recall("orchid secret", min_score=0.0, top_k=20).items == []
    assert globex.recall("orchid", scope="knowledge", min_score=0.0).items == []
    acme_id = mem.bind("acme", agent_id="support").knowledge.get("code").id  # type: ignore[union-attr]
    assert globex.knowledge.delete(acme_id) is False


def test_knowledge_is_recallable(mem: AgentMemory) -> None:
    support = mem.bind("acme", agent_id="support")
    entry = support.knowledge.upsert("Password resets are done in the admin console.", key="pw")
    support.remember("The admin console is slow on Mondays.", scope="agent")
    mem.flush()
    reader = mem.bind("acme", user_id="u7", agent_id="billing", session_id="s1")
    default = reader.recall("how do I reset a password", min_score=0.0).items
    assert default[0].id == entry.id and default[0].scope == "knowledge"
    assert default[0].metadata[KEY_METADATA] == "pw"
    only = reader.recall("admin console", tiers="knowledge", min_score=0.0).items
    assert [h.id for h in only] == [entry.id]  # the agent-scope memory is not knowledge
    scoped = reader.knowledge.search("password reset")
    assert [h.id for h in scoped.items] == [entry.id]
    support.knowledge.delete("pw")
    mem.flush()
    assert reader.recall("reset password", scope="knowledge", min_score=0.0).items == []


def test_upsert_validates(mem: AgentMemory) -> None:
    kb = mem.bind("acme", agent_id="support").knowledge
    with pytest.raises(ValidationError):
        kb.upsert("")
    with pytest.raises(ValidationError):
        kb.upsert("x", key="  ")
    with pytest.raises(ValidationError):
        kb.upsert("x", memory_type="gossip")
    with pytest.raises(ValidationError):
        kb.upsert("x", importance=3)


def run(capsys: pytest.CaptureFixture[str], home: Path, *argv: str) -> tuple[int, Any, str]:
    capsys.readouterr()
    status = main(["--home", str(home), "--json", *argv])
    out = capsys.readouterr()
    return status, json.loads(out.out) if out.out.strip() else None, out.err


def test_cli_knowledge(
    make_memory: MakeMemory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    status, data, _ = run(
        capsys, home, "--agent", "support", "knowledge", "upsert", "VPN needs MFA.", "--key", "vpn"
    )
    assert status == 0 and data["was_new"] is True
    first = data["id"]
    status, data, _ = run(
        capsys, home, "--agent", "support", "knowledge", "upsert", "VPN needs MFA and a token.",
        "--key", "vpn", "--metadata", '{"team": "it"}',
    )  # fmt: skip
    assert status == 0 and data["replaced"] == first
    status, data, _ = run(
        capsys, home, "--agent", "sales", "knowledge", "get", "vpn", "--target-agent", "support"
    )
    assert status == 0 and data["content"] == "VPN needs MFA and a token."
    status, data, _ = run(capsys, home, "--agent", "sales", "knowledge", "list", "--all-agents")
    assert status == 0 and [e["key"] for e in data["entries"]] == ["vpn"]
    status, data, _ = run(capsys, home, "--agent", "sales", "knowledge", "search", "vpn token")
    assert status == 0 and data["items"][0]["metadata"]["knowledge_key"] == "vpn"
    status, _, err = run(
        capsys, home, "--agent", "sales", "knowledge", "delete", data["items"][0]["id"]
    )
    assert status == 2 and "own agent" in err
    status, _, err = run(capsys, home, "knowledge", "upsert", "no agent")
    assert status == 2 and "--agent" in err
    status, data, _ = run(capsys, home, "--agent", "support", "knowledge", "delete", "vpn")
    assert status == 0 and data["deleted"] is True
    status, _, err = run(capsys, home, "--agent", "support", "knowledge", "get", "vpn")
    assert status == 1 and "no knowledge entry" in err
    # nothing to delete: one JSON document on stdout, the error (run parses all of stdout)
    status, data, _ = run(capsys, home, "--agent", "support", "knowledge", "delete", "vpn")
    assert status == 1 and "no knowledge entry" in data["error"]["message"]


def test_an_agent_cannot_reach_anothers_entry_through_a_slash_in_its_key(
    make_memory: Callable[..., AgentMemory],
) -> None:
    mem = make_memory(background=False)
    victim = mem.bind("acme", agent_id="team/support")
    other = mem.bind("acme", agent_id="team")
    victim.knowledge.upsert("Refunds are answered within 2 days", key="refund-sla")
    victim.knowledge.upsert("Escalate to the on-call lead", key="escalation")
    result = other.knowledge.upsert("Refunds take 30 days", key="support/refund-sla")
    assert result.replaced is None
    assert other.knowledge.delete("support/escalation") is False
    kept = victim.knowledge.get("refund-sla")
    assert kept is not None and kept.content == "Refunds are answered within 2 days"
    assert {e.key for e in victim.knowledge.list()} == {"refund-sla", "escalation"}
