"""Tenant administration stays inside the tenant; the whole store needs an operator key.

A served data dir holds two tenants, each with an erased user, and both indexes drift for
both (keyword entries missing, ghost entries and vectors, a collection of no partition).
A tenant's admin key gets its own tenant's stats and doctor report: its counts, partitions,
sample ids and erasures, and not one id, partition, user, count or erased subject of the
other tenant, nor the server's home path, jobs or orphan collections. An operator key gets
the whole store (every tenant, the home path, the jobs); a key without either role gets 403.
The CLI's ``--url`` commands show the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from _agentmem_server import ServerProcess

import agentmem
from agentmem import AgentMemory
from agentmem.cli import main
from agentmem.storage.keyword_index import KeywordDoc
from agentmem.storage.vector_index import collection_name

TENANTS = ("tenant-amber", "tenant-birch")
META = {"session_id": "", "kind": "memory", "memory_type": "fact", "scope": "user"}


def _drifted_store(home: Path, embedder: Any) -> dict[str, dict[str, Any]]:
    """Two tenants' rows, an erased user in each, and drift in both indexes for both."""
    seen: dict[str, dict[str, Any]] = {}
    with AgentMemory(home, embedder=embedder, background=False) as mem:
        for tenant in TENANTS:
            short = tenant.split("-")[1]
            kept = mem.bind(tenant, user_id=f"{short}-user", session_id=f"{short}-s1")
            ids = [r.id for r in kept.remember_many([f"{short} fact {n}" for n in range(4)])]
            mem.bind(tenant, user_id=f"{short}-leaver").remember(f"{short} leaver fact")
            mem.flush()
            mem.erase(tenant_id=tenant, user_id=f"{short}-leaver")
            seen[tenant] = {"ids": ids, "partition": f"user:{short}-user", "short": short}
        vector = np.asarray(mem.embedder.embed_documents(["ghost"]))
        for tenant, found in seen.items():  # after the erasures, which rewrite the index
            mem.keywords.delete(found["ids"][:2])  # missing keyword entries
            ghost, partition = f"ghost-{found['short']}", found["partition"]
            doc = KeywordDoc(ghost, tenant, partition, "", "memory", "fact", "user", "ghost")
            mem.keywords.add([doc])
            mem.vectors.upsert(collection_name(tenant, partition), [f"{ghost}-vec"], vector, [META])
        mem.keywords.commit()
        mem.vectors.upsert("am_" + "0" * 40, ["orphan"], vector, [META])
    return seen


@pytest.fixture(scope="module")
def drifted(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: Any
) -> Iterator[tuple[ServerProcess, dict[str, dict[str, Any]]]]:
    home = tmp_path_factory.mktemp("drifted")
    seen = _drifted_store(home, shared_embedder)
    srv = ServerProcess(home, env={"AGENTMEM_RATE_LIMIT": "0"})
    srv.start()
    try:
        yield srv, seen
    finally:
        srv.stop()


def _get(server: ServerProcess, key: str, path: str) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=60)


def _traces(text: str, tenant: dict[str, Any], name: str) -> list[str]:
    """Everything of ``tenant`` found in ``text``."""
    marks = [name, tenant["short"], tenant["partition"], *tenant["ids"]]
    return [m for m in marks if m in text]


@pytest.mark.parametrize("mine", TENANTS)
def test_a_tenant_admin_sees_only_its_tenant(drifted, mine: str) -> None:
    server, seen = drifted
    other = next(t for t in TENANTS if t != mine)
    key = server.create_key(mine, admin=True)

    answer = _get(server, key, "/v1/admin/stats")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["tenant_id"] == mine and "home" not in body and "jobs" not in body
    stats = body["stats"]
    assert stats["live"] == 4 and stats["tenants"] == 1 and stats["disk_bytes"] == {}
    assert _traces(answer.text, seen[other], other) == []
    assert str(server.home) not in answer.text

    answer = _get(server, key, "/v1/admin/doctor")
    assert answer.status_code == 200, answer.text
    report = answer.json()["report"]
    assert report["ok"] is False and report["live_rows"] == 4
    assert report["missing_keyword"] == 2 and report["extra_keyword"] == 1
    assert report["samples"]["extra_keyword"] == [f"ghost-{seen[mine]['short']}"]
    assert report["extra_vectors"] == 1
    assert {p["tenant_id"] for p in report["partitions"]} == {mine}
    assert report["erasures_checked"] == 1  # its own erasure, checked: nothing came back
    assert report["orphan_collections"] == [] and report["model_files"] is None
    assert _traces(answer.text, seen[other], other) == []
    assert f"{seen[other]['short']}-leaver" not in answer.text
    assert str(server.home) not in answer.text

    with agentmem.connect(server.url, api_key=key) as client:  # the client reads the same
        assert client.stats()["stats"].live == 4
        assert client.doctor().missing_keyword == 2


def test_the_whole_store_needs_an_operator_key(drifted) -> None:
    server, _seen = drifted
    key = server.create_key("ops", operator=True)
    body = _get(server, key, "/v1/admin/stats").json()
    assert body["home"] == str(server.home) and body["stats"]["tenants"] == 2
    assert {j["name"] for j in body["jobs"]} == {"judge", "idle_sessions", "retention"}
    report = _get(server, key, "/v1/admin/doctor").json()["report"]
    assert {p["tenant_id"] for p in report["partitions"]} == set(TENANTS)
    assert report["missing_keyword"] == 4 and report["erasures_checked"] == 2
    assert report["orphan_collections"] == ["am_" + "0" * 40]

    member = server.create_key(TENANTS[0])
    for path in ("/v1/admin/stats", "/v1/admin/doctor"):
        answer = _get(server, member, path)
        assert answer.status_code == 403 and "admin" in answer.text


def test_the_remote_cli_shows_the_same(drifted, capsys: pytest.CaptureFixture[str]) -> None:
    server, seen = drifted
    mine, other = TENANTS
    admin = ["--url", server.url, "--api-key", server.create_key(mine, admin=True)]
    for command in ("stats", "doctor"):
        capsys.readouterr()
        main([*admin, "--json", command])
        out = capsys.readouterr().out
        assert _traces(out, seen[other], other) == [] and str(server.home) not in out
    operator = ["--url", server.url, "--api-key", server.create_key("ops", operator=True)]
    assert main([*operator, "--json", "stats"]) == 0
    assert json.loads(capsys.readouterr().out)["stats"]["tenants"] == 2
