"""Values JSON cannot carry as they are: a NaN or infinite float (JSON encoders write null)
and an integer beyond 64 bits (the server's encoder cannot write it back). Remote calls refuse
them as the embedded API does, with the argument named, and store nothing."""

from __future__ import annotations

from datetime import datetime

import httpx
import pytest
from _agentmem_server import ServerProcess

import agentmem
from agentmem import ValidationError


@pytest.mark.parametrize(
    ("field", "call"),
    [
        ("importance", lambda m: m.remember("x", importance=float("nan"))),
        ("importance", lambda m: m.remember("x", importance=float("inf"))),
        ("min_score", lambda m: m.recall("x", min_score=float("nan"))),
        ("metadata", lambda m: m.add_message("user", "x", metadata={"v": float("nan")})),
        ("items", lambda m: m.remember_many([{"content": "x", "importance": float("nan")}])),
        # what the embedded API refuses and JSON would quietly turn into something else
        ("metadata", lambda m: m.remember("x", metadata={1: "a"})),
        ("metadata", lambda m: m.remember("x", metadata={"when": datetime(2024, 1, 1)})),
        ("metadata", lambda m: m.remember("x", metadata={"tags": {"a", "b"}})),
        ("filters", lambda m: m.recall("x", filters={1: "x"})),
        ("value", lambda m: m.state.set("k", datetime(2024, 1, 1))),
        (
            "messages[0].metadata",
            lambda m: m.add_messages([{"role": "user", "content": "x", "metadata": {2: 3}}]),
        ),
    ],
)
def test_a_value_json_would_turn_to_null_is_refused_before_sending(
    server: ServerProcess, tenant: str, field: str, call: object
) -> None:
    with agentmem.connect(server.url, api_key=server.create_key(tenant)) as client:
        m = client.bind(user_id="u1", session_id="s1")
        with pytest.raises(ValidationError) as err:
            call(m)  # type: ignore[operator]
        assert err.value.field == field
        assert m.messages() == [] and m.recall("x", min_score=0.0).items == []


def test_an_integer_beyond_64_bits_is_refused_and_nothing_is_stored(
    server: ServerProcess, tenant: str
) -> None:
    key = server.create_key(tenant)
    body = (
        b'{"identity": {"user_id": "u1", "session_id": "s1"}, '
        b'"args": {"role": "user", "content": "x", "metadata": {"n": 18446744073709551616}}}'
    )
    answer = httpx.post(
        f"{server.url}/v1/ops/add_message",
        content=body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    assert answer.status_code == 422 and "metadata" in answer.text
    with agentmem.connect(server.url, api_key=key) as client:
        m = client.bind(user_id="u1", session_id="s1")
        assert m.messages() == []  # and what is there still reads
        m.add_message("user", "a normal message", metadata={"n": 2**63 - 1})
        assert m.messages()[0].metadata == {"n": 2**63 - 1}


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.remember("caf\ud800"),
        lambda m: m.add_message("user", "caf\ud800"),
        lambda m: m.add_messages([{"role": "user", "content": "caf\ud800"}]),
        lambda m: m.recall("caf\ud800"),
    ],
)
def test_a_lone_surrogate_is_reported_on_its_argument_as_embedded(
    server: ServerProcess, tenant: str, make_memory: object, call: object
) -> None:
    embedded = make_memory().bind(tenant, user_id="u1", session_id="s1")  # type: ignore[operator]
    with pytest.raises(ValidationError) as local:
        call(embedded)  # type: ignore[operator]
    with (
        agentmem.connect(server.url, api_key=server.create_key(tenant)) as client,
        pytest.raises(ValidationError) as remote,
    ):
        call(client.bind(user_id="u1", session_id="s1"))  # type: ignore[operator]
    assert (remote.value.field, str(remote.value)) == (local.value.field, str(local.value))
    assert "lone surrogate" in str(remote.value)


def test_a_missing_api_key_is_an_auth_error(server: ServerProcess) -> None:
    for key in ("", "   "):
        with pytest.raises(agentmem.AuthError) as err:
            agentmem.connect(server.url, api_key=key)
        assert err.value.reason == "missing"
