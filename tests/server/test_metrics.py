"""Prometheus metrics: ``GET /metrics`` for an operator key only (or the loopback metrics
port, without a key), output that parses, numbers that move with the requests made, and
labels that never carry content, ids of tenants or users, or raw paths."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
from _served_app import Served, served
from prometheus_client.parser import text_string_to_metric_families

import agentmem
from agentmem import AgentMemory
from agentmem.config import ServerConfig, Settings
from agentmem.recall.profile import PHASES
from agentmem.server.keys import create_key

MakeMemory = Callable[..., AgentMemory]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _parse(text: str) -> Samples:
    """Every sample of a scrape by (name, labels); the parser raises on malformed output."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _scrape(srv: Served, key: str) -> tuple[str, Samples]:
    answer = httpx.get(f"{srv.url}/metrics", headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return answer.text, _parse(answer.text)


def _op(srv: Served, key: str, op: str, args: dict[str, Any], **identity: str) -> httpx.Response:
    return httpx.post(
        f"{srv.url}/v1/ops/{op}",
        headers={"Authorization": f"Bearer {key}"},
        json={"identity": identity, "args": args},
        timeout=60,
    )


def test_only_an_operator_key_reads_the_metrics(make_memory: MakeMemory) -> None:
    mem = make_memory(background=False)
    plain = create_key(mem.records, tenant_id="acme").key
    admin = create_key(mem.records, tenant_id="acme", admin=True).key
    operator = create_key(mem.records, tenant_id="ops", operator=True).key
    with served(mem) as srv:
        assert httpx.get(f"{srv.url}/metrics").status_code == 401
        for key in (plain, admin):
            refused = httpx.get(f"{srv.url}/metrics", headers={"Authorization": f"Bearer {key}"})
            assert refused.status_code == 403
            assert "operator" in refused.json()["error"]["message"]
        _scrape(srv, operator)
        whoami = httpx.get(f"{srv.url}/v1/whoami", headers={"Authorization": f"Bearer {operator}"})
        assert whoami.json()["operator"] is True


def test_the_numbers_move_with_the_requests_and_no_label_carries_ids_or_content(
    make_memory: MakeMemory,
) -> None:
    marker = f"zq{uuid.uuid4().hex[:12]}"
    tenant, user = f"tenant-{uuid.uuid4().hex[:8]}", f"user-{uuid.uuid4().hex[:8]}"
    mem = make_memory(background=False)  # the index backlog stays until flushed
    key = create_key(mem.records, tenant_id=tenant).key
    operator = create_key(mem.records, tenant_id="ops", operator=True).key
    with served(mem) as srv:
        _, before = _scrape(srv, operator)
        assert _value(before, "agentmem_ready") == 1
        wrote = _op(srv, key, "remember", {"content": f"The locker code is {marker}"}, user_id=user)
        assert wrote.status_code == 200
        _, pending = _scrape(srv, operator)
        assert _value(pending, "agentmem_index_pending_rows", index="keyword") == 1
        assert _value(pending, "agentmem_index_pending_rows", index="vector") == 1
        mem.flush()
        found = _op(srv, key, "recall", {"query": f"locker code {marker}"}, user_id=user)
        hits = len(found.json()["result"]["items"])
        assert hits >= 1
        assert _op(srv, key, "recall", {"query": ""}, user_id=user).status_code == 422
        assert httpx.get(f"{srv.url}/v1/{marker}").status_code == 404
        text, after = _scrape(srv, operator)

    def moved(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    recall = {"route": "/v1/ops/recall", "method": "POST"}
    assert moved("agentmem_http_requests_total", **recall, status="2xx") == 1
    assert moved("agentmem_http_requests_total", **recall, status="4xx") == 1
    assert moved("agentmem_http_request_duration_seconds_count", **recall, status="2xx") == 1
    assert moved("agentmem_http_requests_total", route="other", method="GET", status="4xx") == 1
    assert moved("agentmem_recalls_total", degraded="false") == 1
    assert moved("agentmem_recall_duration_seconds_count") == 1
    assert moved("agentmem_recall_results_count") == 1
    assert moved("agentmem_recall_results_sum") == hits
    assert moved("agentmem_recall_hit_score_count") == hits
    for phase in ("plan", "keyword_search", "score", "embed_model"):
        assert moved("agentmem_recall_phase_seconds_count", phase=phase) == 1
    assert _value(after, "agentmem_index_pending_rows", index="keyword") == 0
    assert _value(after, "agentmem_index_pending_rows", index="vector") == 0

    routes = {v for (_, pairs) in after for k, v in pairs if k == "route"}
    assert routes == {"/metrics", "/v1/ops/remember", "/v1/ops/recall", "other"}
    labels = {v for (_, pairs) in after for k, v in pairs if k not in ("route", "le")}
    allowed = {"2xx", "4xx", "GET", "POST", "true", "false", "keyword", "vector", *PHASES}
    assert labels <= allowed | {agentmem.__version__}
    for secret in (marker, tenant, user, "locker"):
        assert secret not in text


def test_rate_limited_requests_and_the_keyless_metrics_port(make_memory: MakeMemory) -> None:
    limits = ServerConfig(rate_limit=0.001, rate_burst=1, metrics_port=0)
    mem = make_memory(background=False, settings=Settings(server=limits))
    key = create_key(mem.records, tenant_id="acme").key
    with served(mem) as srv:
        url = srv.state.metrics_url
        assert url is not None and url.startswith("http://127.0.0.1:")
        before = _parse(httpx.get(url).text)  # no key asked
        headers = {"Authorization": f"Bearer {key}"}
        assert httpx.get(f"{srv.url}/v1/whoami", headers=headers).status_code == 200
        assert httpx.get(f"{srv.url}/v1/whoami", headers=headers).status_code == 429
        after = _parse(httpx.get(url).text)
    whoami = {"route": "/v1/whoami", "method": "GET"}
    assert _value(after, "agentmem_rate_limited_requests_total") == 1
    assert _value(before, "agentmem_rate_limited_requests_total") == 0
    assert _value(after, "agentmem_http_requests_total", **whoami, status="4xx") == 1
    assert _value(after, "agentmem_http_requests_total", **whoami, status="2xx") == 1
    try:  # the port closed with the server
        httpx.get(url, timeout=2)
    except httpx.TransportError:
        pass
    else:
        raise AssertionError("the metrics port still answers after the server stopped")


def test_background_job_outcomes(make_memory: MakeMemory) -> None:
    jobs = ServerConfig(judge_interval=3600, session_idle_seconds=0, retention_interval=0)
    mem = make_memory(background=False, settings=Settings(server=jobs))
    operator = create_key(mem.records, tenant_id="ops", operator=True).key
    with served(mem, run_jobs=True) as srv:
        (judge,) = srv.state.jobs.jobs  # due in an hour: run here, by hand
        srv.state.jobs.run_once(judge)
        _, ok = _scrape(srv, operator)

        def broken() -> str:
            raise RuntimeError("the judge is out")

        judge.run = broken
        srv.state.jobs.run_once(judge)
        _, failed = _scrape(srv, operator)
    assert _value(ok, "agentmem_job_runs_total", job="judge", outcome="ok") == 1
    assert _value(ok, "agentmem_job_runs_total", job="judge", outcome="failed") == 0
    assert _value(ok, "agentmem_job_last_run_ok", job="judge") == 1
    assert _value(ok, "agentmem_job_last_run_timestamp_seconds", job="judge") > 0
    assert _value(failed, "agentmem_job_runs_total", job="judge", outcome="failed") == 1
    assert _value(failed, "agentmem_job_last_run_ok", job="judge") == 0
