"""Per-key rate limit (429 with Retry-After) and the request body limit (413)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from _agentmem_server import ServerProcess

import agentmem
from agentmem import RateLimitError, ValidationError
from agentmem.client import Client


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    env = {
        "AGENTMEM_RATE_LIMIT": "1",
        "AGENTMEM_RATE_BURST": "3",
        "AGENTMEM_MAX_BODY_BYTES": "4000",
    }
    srv = ServerProcess(tmp_path_factory.mktemp("limited"), env=env)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_a_key_over_its_rate_gets_429_with_retry_after(server: ServerProcess) -> None:
    key = server.create_key("acme")
    headers = {"Authorization": f"Bearer {key}"}
    statuses = [httpx.get(server.url + "/v1/whoami", headers=headers) for _ in range(5)]
    assert [r.status_code for r in statuses[:3]] == [200, 200, 200]
    limited = statuses[-1]
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    assert limited.json()["error"]["type"] == "RateLimitError"
    # another key has its own budget
    other = server.create_key("acme")
    assert httpx.get(
        server.url + "/v1/whoami", headers={"Authorization": f"Bearer {other}"}
    ).is_success
    # /health is not limited
    assert all(httpx.get(server.url + "/health").is_success for _ in range(5))


def test_the_client_waits_out_a_429_or_raises_rate_limit_error(server: ServerProcess) -> None:
    key = server.create_key("acme")
    with Client(server.url, api_key=key, max_retries=0) as strict:
        m = strict.bind(user_id="u1", session_id="s1")
        with pytest.raises(RateLimitError) as raised:
            for _ in range(6):
                m.messages()
        assert raised.value.retry_after > 0
    patient_key = server.create_key("acme")
    with agentmem.connect(server.url, api_key=patient_key) as patient:
        m = patient.bind(user_id="u1", session_id="s1")
        for _ in range(5):  # past the burst: the client sleeps Retry-After and retries
            m.messages()


def test_a_body_over_the_limit_is_413(server: ServerProcess) -> None:
    key = server.create_key("acme")
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    big = b'{"identity": {"session_id": "s1"}, "args": {"role": "user", "content": "%s"}}' % (
        b"x" * 5000
    )
    response = httpx.post(server.url + "/v1/ops/add_message", content=big, headers=headers)
    assert response.status_code == 413
    assert response.json()["error"]["field"] == "body"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server counts what it reads
        yield big[:3000]
        yield big[3000:]

    streamed = httpx.post(server.url + "/v1/ops/add_message", content=chunks(), headers=headers)
    assert streamed.status_code == 413

    with Client(server.url, api_key=server.create_key("acme")) as client:
        m = client.bind(session_id="s1")
        with pytest.raises(ValidationError) as too_big:
            m.add_message("user", "y" * 5000)
        assert too_big.value.field == "body"
        assert m.messages() == []  # nothing stored
        assert m.add_message("user", "a small one fits").content == "a small one fits"
