"""Recall searches each index for a fixed number of candidates and then drops the rows this
request may not see. When most of a full list is dropped (superseded versions of a fact
upserted many times, rows a metadata filter leaves out), it searches that index again,
deeper: what the request may see must not be crowded out by what it may not."""

from __future__ import annotations

from collections.abc import Callable

from agentmem import AgentMemory

MakeMemory = Callable[..., AgentMemory]


def test_the_live_version_of_a_fact_upserted_many_times_is_found(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    agent = mem.bind("acme", agent_id="ops")
    for week in range(30):
        agent.knowledge.upsert(f"Deploy freeze window is now week {week} of the quarter", key="fz")
    m = mem.bind("acme", user_id="u1")
    for n in range(30):
        m.remember(f"The wifi password is now hunter{n}", topic_key="wifi")
    mem.flush()
    hits = agent.recall("deploy freeze window", scope="knowledge", min_score=0.0).items
    assert [h.content for h in hits[:1]] == ["Deploy freeze window is now week 29 of the quarter"]
    wifi = m.recall("wifi password", min_score=0.0).items
    assert [h.content for h in wifi[:1]] == ["The wifi password is now hunter29"]
    # the versions are still there for whoever asks for them
    assert (
        len(m.recall("wifi password", top_k=20, include_superseded=True, min_score=0.0).items) == 20
    )


def test_the_one_row_a_filter_keeps_is_found_among_many_it_leaves_out(
    make_memory: MakeMemory,
) -> None:
    mem = make_memory(background=False)
    m = mem.bind("acme", user_id="u1")
    m.remember_many(
        [
            {"content": f"The staging database config item {n} is set", "metadata": {"env": "prod"}}
            for n in range(300)
        ]
    )
    dev = m.remember("Staging DB refreshes from a snapshot weekly", metadata={"env": "dev"})
    mem.flush()
    hits = m.recall("staging database", filters={"env": "dev"}, min_score=0.0).items
    assert [h.id for h in hits] == [dev.id]
