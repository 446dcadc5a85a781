"""The operations' fast path (``OpsFastPath``) answers exactly as FastAPI's route did.

Every request below goes to two apps over one store: the server's app, and the same app
without the fast path (FastAPI's routing, dependency solving and body validation, as every
operation was served before). Status, body bytes and content type must be the same.

The store and both apps are made once for the module: no request here writes (each is a read
or a refused call), so no test sees another's, and a test's own key is its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from agentmem import AgentMemory
from agentmem.embeddings import CachedEmbedder
from agentmem.server.app import create_app
from agentmem.server.keys import create_key, revoke_key
from agentmem.server.routes import OpsFastPath

Apps = tuple[AgentMemory, TestClient, TestClient]


@pytest.fixture(scope="module")
def apps(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: CachedEmbedder
) -> Iterator[Apps]:
    """(a store holding one message of u1 in acme, its app with the fast path, its app
    without)."""
    store = AgentMemory(Path(tmp_path_factory.mktemp("fast-ops")), embedder=shared_embedder)
    try:
        store.bind("acme", user_id="u1", session_id="s1").add_message("user", "I like green tea")
        assert store.flush(30)
        fast = create_app(store, run_jobs=False)
        slow = create_app(store, run_jobs=False)
        slow.user_middleware = [m for m in slow.user_middleware if m.cls is not OpsFastPath]
        assert len(slow.user_middleware) == len(fast.user_middleware) - 1
        yield store, TestClient(fast), TestClient(slow)
    finally:
        store.close()


def _json(identity: dict[str, Any] | None = None, **args: Any) -> bytes:
    return orjson.dumps({"identity": identity or {"user_id": "u1"}, "args": args})


JSON = {"Content-Type": "application/json"}

#: (path, body, headers): valid calls, then every way a request can be refused.
CASES: list[tuple[str, bytes, dict[str, str]]] = [
    ("/v1/ops/recall", _json(query="which tea do I like?", top_k=3), JSON),
    ("/v1/ops/knowledge.get", _json(key="nope", agent_id="a1"), JSON),
    ("/v1/ops/messages", _json({"user_id": "u1", "session_id": "s1"}), JSON),
    ("/v1/ops/get", _json(memory_id="no-such-id"), JSON),  # 404
    ("/v1/ops/recall", _json(query="tea", top_k="3"), JSON),  # wrong type (strict)
    ("/v1/ops/recall", _json(query="tea", colour="red"), JSON),  # unknown argument
    ("/v1/ops/recall", _json(), JSON),  # missing argument
    ("/v1/ops/recall", _json(query="tea", top_k=0), JSON),  # refused by the operation
    ("/v1/ops/recall", _json({"tenant_id": "other", "user_id": "u1"}, query="tea"), JSON),
    ("/v1/ops/recall", orjson.dumps({"identity": {"user": "u1"}, "args": {}}), JSON),
    ("/v1/ops/recall", b'{"identity": {"user_id": "u1"}, "args": {"query": "te', JSON),
    ("/v1/ops/recall", b"", JSON),  # no body
    ("/v1/ops/recall", b"[1, 2]", JSON),  # not an object
    ("/v1/ops/recall", _json(query="tea"), {"Content-Type": "text/plain"}),
    ("/v1/ops/recall", _json(query="tea"), {}),  # no content type
    ("/v1/ops/recall", _json(query="tea"), {"Content-Type": "application/json; charset=utf-8"}),
    ("/v1/ops/sessions", b"{}", {"Content-Type": "application/vnd.api+json"}),
]


@pytest.mark.parametrize(("path", "body", "headers"), CASES)
def test_the_fast_path_answers_as_fastapi_did(
    apps: Apps, path: str, body: bytes, headers: dict[str, str]
) -> None:
    store, fast, slow = apps
    key = create_key(store.records, tenant_id="acme").key
    sent = {**headers, "Authorization": f"Bearer {key}"}
    a = fast.post(path, content=body, headers=sent)
    b = slow.post(path, content=body, headers=sent)
    assert (a.status_code, a.content) == (b.status_code, b.content)
    assert a.headers["content-type"] == b.headers["content-type"]
    assert ("server-timing" in a.headers) == ("server-timing" in b.headers)


@pytest.mark.parametrize("auth", ["none", "wrong", "revoked"])
def test_keys_are_checked_on_the_fast_path(apps: Apps, auth: str) -> None:
    store, fast, slow = apps
    created = create_key(store.records, tenant_id="acme")
    if auth == "revoked":
        revoke_key(store.records, created.api_key.id)
    headers = {
        "none": {},
        "wrong": {"Authorization": "Bearer amk_000000000000_nope"},
        "revoked": {"Authorization": f"Bearer {created.key}"},
    }[auth]
    body = _json(query="tea")
    a = fast.post("/v1/ops/recall", content=body, headers={**JSON, **headers})
    b = slow.post("/v1/ops/recall", content=body, headers={**JSON, **headers})
    assert a.status_code == 401
    assert (a.status_code, a.content) == (b.status_code, b.content)


def test_other_methods_and_paths_still_reach_fastapi(apps: Apps) -> None:
    _, fast, _ = apps
    assert fast.get("/v1/ops/recall").status_code == 405
    assert fast.post("/v1/ops/no-such-op", content=b"{}").status_code == 404


def test_a_body_that_is_not_utf8_is_named(apps: Apps) -> None:
    store, fast, _ = apps
    key = create_key(store.records, tenant_id="acme").key
    r = fast.post(
        "/v1/ops/recall",
        content=b'{"args": {"query": "\xff"}}',
        headers={**JSON, "Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "body"
