"""What the inspector's pages show (Starlette's TestClient): every tier of a tenant with its
counts and times, a row's sources and access count, the store's health (index lag, degraded
state, disk use, background jobs), and a ranking feature the inspector has never heard of."""

from __future__ import annotations

import dataclasses
import html
import math
import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from agentmem import AgentMemory, TierConfig
from agentmem.config import ServerConfig, Settings
from agentmem.inspector.app import create_ui_app
from agentmem.models import FeatureTerm, Identity
from agentmem.recall import engine as engine_module
from agentmem.recall import ranking
from agentmem.recall.explain import recall_explain
from agentmem.server.app import create_app
from agentmem.server.keys import create_key

WHEN = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def _table(page: str, table_id: str) -> dict[str, list[str]]:
    """The rows of a table by the text of their first cell (tags stripped)."""
    body = page.split(f'id="{table_id}"')[1].split("</table>")[0]
    out = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        found = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in found]
        if cells:
            out[cells[0]] = cells[1:]
    return out


@pytest.fixture
def tiered(make_memory) -> AgentMemory:  # type: ignore[no-untyped-def]
    """A tenant with every tier: an old session promoted to long-term, a newer one in
    mid-term, an open one (working), knowledge, agent state and a fact."""
    mem: AgentMemory = make_memory(tier_config=TierConfig(mid_term_sessions=1))
    old = mem.bind("acme", user_id="u1", agent_id="bot", session_id="old")
    old.add_message("user", "The office opens at nine every weekday.")
    old.add_message("assistant", "Noted: nine on weekdays.")
    old.close_session(summary_timeout=10)
    newer = mem.bind("acme", user_id="u1", agent_id="bot", session_id="newer")
    newer.add_message("user", "The parking garage closes at eight.")
    assert newer.close_session(summary_timeout=10).promoted == ("old",)
    now = mem.bind("acme", user_id="u1", agent_id="bot", session_id="now")
    now.add_message("user", "What time does the office open?")
    now.knowledge.upsert("Deliveries go to the back door.", key="deliveries")
    now.state.set("step", {"done": 2})
    now.remember("Alice likes tea")
    mem.flush()
    return mem


def _count(mem: AgentMemory, where: str) -> int:
    rows = mem.records.read(
        f"SELECT COUNT(*) FROM memories WHERE tenant_id = 'acme' AND deleted_at IS NULL "
        f"AND superseded_by IS NULL AND {where}"
    )
    return int(rows[0][0])


def test_the_tenant_page_has_every_tier_with_counts_and_times(tiered: AgentMemory) -> None:
    mem = tiered
    c = TestClient(create_ui_app(mem, writable=False))
    page = c.get("/ui/tenants/acme").text
    tiers = _table(page, "tiers")
    expected = {
        "working": _count(mem, "tier IS NULL AND scope = 'session' AND kind = 'chat_message'"),
        "mid_term chunks": _count(mem, "tier = 'mid_term' AND kind = 'chat_message'"),
        "long_term summaries": _count(mem, "tier = 'long_term_summary'"),
        "knowledge": _count(mem, "scope = 'knowledge'"),
    }
    assert all(n > 0 for n in expected.values())
    for name, n in expected.items():
        assert tiers[name][0] == str(n), name
    assert tiers["agent state"][0] == "1"
    for name, (_, first, last) in tiers.items():
        assert WHEN.fullmatch(first) and WHEN.fullmatch(last) and first <= last, name
    # each tier's link lists its rows
    link = re.search(r'href="(/ui/rows\?[^"]*long_term_summary[^"]*)"', page)
    assert link is not None
    listed = c.get(link.group(1).replace("&amp;", "&")).text
    assert "office opens at nine" in listed and "parking garage" not in listed
    # users, agents and sessions, with their counts and how each session was closed
    assert _table(page, "users")["u1"][0] == str(_count(mem, "user_id = 'u1'"))
    assert "bot" in _table(page, "agents")
    sessions = _table(page, "sessions")
    assert sessions["old"][5].startswith("long_term")
    assert sessions["newer"][5].startswith("mid_term")
    assert sessions["now"][5] == "open"
    # the agent state's keys and values
    state = c.get("/ui/state?tenant=acme&agent=bot").text
    assert _table(state, "state")["step"][0] == '{"done": 2}'


def test_a_row_shows_its_source_messages_and_access_count(tiered: AgentMemory) -> None:
    mem = tiered
    c = TestClient(create_ui_app(mem, writable=False))
    summary_id = mem.records.read(
        "SELECT id FROM memories WHERE tier = 'long_term_summary' AND tenant_id = 'acme'"
    )[0][0]
    page = c.get(f"/ui/memories/{summary_id}").text
    sources = page.split('id="sources"')[1].split("</ul>")[0]
    assert "The office opens at nine every weekday." in sources
    assert 'id="access">0 time(s)' in page
    m = mem.bind("acme", user_id="u1", agent_id="bot", session_id="now")
    fact = m.remember("The staging database is db-7").id
    mem.flush()
    for _ in range(2):
        assert [h.id for h in m.recall("staging database").items][:1] == [fact]
    shown = c.get(f"/ui/memories/{fact}").text.split('id="access">')[1].split("<")[0]
    assert shown.startswith("2 time(s)"), shown  # the counts not flushed yet included


class _DownEmbedder:
    """The shared embedder whose model server stopped embedding documents."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("embedding model unavailable (HTTP 503)")


def test_health_shows_index_lag_degraded_state_and_disk_use(make_memory, shared_embedder) -> None:  # type: ignore[no-untyped-def]
    mem: AgentMemory = make_memory(embedder=_DownEmbedder(shared_embedder), background=False)
    mem.indexer.backoff = 0.0
    mem.indexer._sleep = lambda _: None  # no backoff between the retries of a dead model
    m = mem.bind("acme", user_id="u1")
    m.remember("The staging database is db-7")
    c = TestClient(create_ui_app(mem, writable=False))
    start = c.get("/ui").text
    lag = start.split('id="lag">')[1].split("</td>")[0]
    assert "keyword index: 1 row(s) pending" in lag and "vector index: 1 pending" in lag
    assert '"warn"' not in start.split('id="degraded">')[1].split("</td>")[0]
    disk = _table(start.replace("<th>", "<td>").replace("</th>", "</td>"), "health-facts")
    for part in ("records", "keywords", "vectors"):
        assert re.fullmatch(r"\d+(\.\d)? (B|KiB|MiB|GiB)", disk[f"disk: {part}"][0])
    mem.flush()  # every embedding attempt fails: the row is flagged, not lost
    start = c.get("/ui").text
    state = start.split('id="degraded">')[1].split("</td>")[0]
    assert '<span class="warn">degraded</span>' in state and "1 row(s) failed to embed" in state
    assert "vector index: 0 pending, 1 failed" in start


def test_the_servers_background_jobs_show_their_last_run(make_memory) -> None:  # type: ignore[no-untyped-def]
    # the judge's first pass comes one interval after the start
    mem: AgentMemory = make_memory(settings=Settings(server=ServerConfig(judge_interval=0.5)))
    mem.bind("acme", user_id="u1").remember("Alice likes tea")
    operator = create_key(mem.records, tenant_id="ops", operator=True).key
    with TestClient(create_app(mem), follow_redirects=False) as c:
        c.headers["Authorization"] = f"Bearer {operator}"
        deadline = time.monotonic() + 120
        while True:
            jobs = _table(c.get("/ui").text, "jobs")
            if WHEN.fullmatch(jobs["judge"][0]) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    last_run, outcome, runs, failures, next_run = jobs["judge"]
    assert WHEN.fullmatch(last_run) and outcome.startswith("judged") and int(runs) >= 1
    assert failures == "0" and WHEN.fullmatch(next_run)
    assert {"judge", "idle_sessions", "retention"} <= set(jobs)


def test_a_feature_the_ranking_gains_is_explained_without_a_change_here(
    monkeypatch: pytest.MonkeyPatch, tiered: AgentMemory
) -> None:
    """The inspector keeps no list of features: names come from the ranking module, values
    from the candidates, weights from the engine's scoring."""
    mem = tiered
    features = engine_module.features
    monkeypatch.setattr(ranking, "FEATURE_NAMES", (*ranking.FEATURE_NAMES, "probe_feature"))
    monkeypatch.setattr(engine_module, "features", lambda *a, **k: (*features(*a, **k), 0.5))
    engine = mem.context.engine
    scoring = engine.scoring
    assert scoring.weights is not None and scoring.rank_weights is not None
    monkeypatch.setattr(
        engine,
        "scoring",
        dataclasses.replace(
            scoring,
            weights=(*scoring.weights, 2.0),
            rank_weights=(*scoring.rank_weights, -1.0),
        ),
    )
    who = Identity("acme", user_id="u1", agent_id="bot")
    why = recall_explain(mem.context, who, "when does the office open", min_score=0.0)
    assert why.candidates
    for cand in why.candidates:
        assert cand.calibration[-1] == FeatureTerm("probe_feature", 0.5, 2.0)
        assert cand.ordering[-1] == FeatureTerm("probe_feature", 0.5, -1.0)
        z = cand.calibration_bias + sum(t.contribution for t in cand.calibration)
        assert cand.calibrated_score == pytest.approx(1 / (1 + math.exp(-z)))
    page = TestClient(create_ui_app(mem, writable=False)).get(
        "/ui/search?q=when+does+the+office+open&tenant=acme&user=u1&agent=bot&min_score=0"
    )
    terms = _table(page.text, "calibration-1")
    assert list(terms) == list(ranking.FEATURE_NAMES)
    assert terms["probe_feature"] == ["0.500", "2.000", "1.000"]
