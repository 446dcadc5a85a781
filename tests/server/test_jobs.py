"""Background jobs: the runner (failures logged, retried, never fatal), idle-session closing,
and all three jobs running inside a live server, visible in its stats."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from _agentmem_server import ServerProcess

import agentmem
from agentmem.config import ServerConfig, Settings
from agentmem.server.jobs import RETENTION_LAST_RUN, IdleSessions, Job, JobRunner, default_jobs
from agentmem.storage.records import RecordStore


def _wait(predicate: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_a_failing_job_is_logged_retried_and_does_not_stop_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = {"bad": 0, "good": 0}

    def bad() -> str:
        calls["bad"] += 1
        if calls["bad"] < 3:
            raise RuntimeError("disk on fire")
        return "recovered"

    def good() -> str:
        calls["good"] += 1
        return "fine"

    runner = JobRunner([Job("bad", 60.0, bad), Job("good", 0.05, good)], retry_delay=0.1)
    with caplog.at_level(logging.ERROR, logger="agentmem.server.jobs"):
        runner.start()
        try:
            _wait(lambda: calls["bad"] >= 3 and calls["good"] >= 5)
        finally:
            runner.stop()
    status = {s.name: s for s in runner.status()}
    assert status["bad"].failures == 2 and status["bad"].last_ok is True
    assert status["bad"].last_outcome == "recovered" and status["bad"].runs == 3
    assert status["good"].failures == 0 and status["good"].last_outcome == "fine"
    assert sum("disk on fire" in r.getMessage() for r in caplog.records) == 2


def test_idle_sessions_are_closed_once_and_again_after_new_messages(make_memory: Any) -> None:
    mem = make_memory(background=False)
    a = mem.bind("acme", user_id="u1", session_id="s1")
    b = mem.bind("acme", agent_id="bot", session_id="s2")
    a.add_message("user", "first session talk")
    b.add_message("user", "second session talk")
    mem.bind("acme", user_id="u1", session_id="s0").add_message("user", "closed by hand")
    mem.bind("acme", user_id="u1", session_id="s0").close_session()

    closer = IdleSessions(mem.context, idle_seconds=3600)
    assert closer.run() == "closed 0 idle session(s), 2 open"  # s0 was closed already
    closer.idle = timedelta(0)
    assert closer.run() == "closed 2 idle session(s), 0 open"
    assert a.session_detail("s1").tier == "mid_term"
    assert b.session_detail("s2").tier == "mid_term"
    assert closer.run() == "closed 0 idle session(s), 0 open"
    a.add_message("user", "back again")
    assert closer.run() == "closed 1 idle session(s), 0 open"
    assert a.session_detail("s1").events[-1].content == "back again"


def test_jobs_follow_the_settings() -> None:
    cfg = Settings.from_env(
        {"AGENTMEM_SESSION_IDLE_SECONDS": "0", "AGENTMEM_JUDGE_INTERVAL": "5"}
    ).server
    assert cfg == ServerConfig(session_idle_seconds=0.0, judge_interval=5.0)


def test_jobs_in_disabled_settings_are_left_out(make_memory: Any) -> None:
    mem = make_memory(background=False)
    jobs = default_jobs(mem.context, ServerConfig(session_idle_seconds=0, retention_interval=0))
    assert [j.name for j in jobs] == ["judge"]


@pytest.fixture(scope="module")
def busy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    env = {
        "AGENTMEM_SESSION_IDLE_SECONDS": "1",
        "AGENTMEM_JUDGE_INTERVAL": "0.5",
        "AGENTMEM_RETENTION_INTERVAL": "1",
        "AGENTMEM_RATE_LIMIT": "0",
    }
    srv = ServerProcess(tmp_path_factory.mktemp("jobs"), env=env)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_the_server_runs_its_jobs_and_reports_them(busy_server: ServerProcess) -> None:
    # the jobs are the whole store's: an operator key reads them
    admin = agentmem.connect(busy_server.url, api_key=busy_server.create_key("acme", operator=True))
    client = agentmem.connect(busy_server.url, api_key=busy_server.create_key("acme"))
    try:
        m = client.bind(user_id="u1", session_id="idle-1")
        m.add_message("user", "I will go quiet now")
        m.remember("The user's favourite colour is blue")

        def jobs() -> dict[str, Any]:
            return {j["name"]: j for j in admin.stats()["jobs"]}

        # the session is closed by the server once idle (summary, chunks)
        detail = _wait(lambda: m.session_detail("idle-1").tier and m.session_detail("idle-1"))
        assert detail.tier == "mid_term" and detail.summary
        idle = jobs()["idle_sessions"]
        assert idle["runs"] >= 1 and idle["failures"] == 0 and idle["last_run"]
        # the judge has seen the remembered fact
        _wait(lambda: jobs()["judge"]["runs"] >= 1 and jobs()["judge"]["last_ok"])
        assert jobs()["judge"]["failures"] == 0
        # retention ran and recorded its last run in the data dir
        _wait(lambda: jobs()["retention"]["last_ok"] is True)
        assert jobs()["retention"]["last_outcome"].startswith("anonymized")
    finally:
        admin.close()
        client.close()
    records = RecordStore(Path(busy_server.home) / "records.sqlite3")
    try:
        assert records.meta.get(RETENTION_LAST_RUN)
        assert records.count("kind = 'memory' AND judged_at IS NULL") == 0
    finally:
        records.close()
