"""The wire format shared by server and client: the operation table follows BoundMemory, the
codec rebuilds every result type, errors keep their class and fields."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from agentmem import (
    AgentMemError,
    AnswerResult,
    AuthError,
    BoundMemory,
    BoundMemoryProtocol,
    IngestResult,
    JudgeResult,
    MemoryItem,
    NotFoundError,
    RateLimitError,
    RecallHit,
    RecallResult,
    ScopeError,
    StorageError,
    ValidationError,
)
from agentmem.client import RemoteBoundMemory
from agentmem.models import IngestError
from agentmem.server.routes import args_model
from agentmem.tiers.working import CompactionResult, PromptView, ReferenceFact, ReferenceSummary
from agentmem.wire import OPS, decode, encode, error_body, error_from, status_of
from agentmem.wire.codec import orjson_default

NOW = datetime(2025, 5, 1, 12, 30, 15, 123456, tzinfo=UTC)
HIT = RecallHit("h1", "memory", "fact", "user", "tea", 0.9, None, NOW, None, {"a": [1, {"b": 2}]})


def _item(**kw: Any) -> MemoryItem:
    base: dict[str, Any] = dict(
        id="m1", tenant_id="t", user_id="u", agent_id=None, session_id="s", kind="chat_message",
        memory_type=None, scope="session", content="hi", content_hash="x", source_ref=None,
        metadata={"k": "v"}, importance=None, event_time=NOW, created_at=NOW, updated_at=NOW,
    )  # fmt: skip
    base.update(kw)
    return MemoryItem(**base)


@pytest.mark.parametrize(
    "tp, value",
    [
        (MemoryItem, _item(last_accessed=NOW, role="user")),
        (RecallResult, RecallResult(items=[HIT], total=1, degraded=True, token_count=3)),
        (AnswerResult, AnswerResult("x", used_ids=("h1",), sources=(HIT,), answered_by="o")),
        (IngestResult, IngestResult("s", 1, 1, 0, 0, 0, ("m",), (), (IngestError("x", "y"),))),
        (JudgeResult, JudgeResult(2, (("a", "b"),), 0)),
        (
            CompactionResult,
            CompactionResult(
                True, "manual", ("a",), 3, ReferenceSummary("s", (ReferenceFact("k", "v", "e"),))
            ),
        ),
        (
            PromptView,
            PromptView(
                (_item(role="system"),),
                ReferenceSummary("s"),
                (_item(id="m2", role="user"),),
                left_out=1,
                compaction=CompactionResult(True, "budget", ("a",), 1, ReferenceSummary("s")),
            ),
        ),
        (list[MemoryItem], [_item(), _item(id="m2")]),
        (list[dict[str, str]], [{"role": "user", "content": "x"}]),
        (MemoryItem | None, None),
    ],
)
def test_results_round_trip_through_json(tp: Any, value: Any) -> None:
    for wire in (orjson.dumps(value, default=orjson_default), orjson.dumps(encode(value))):
        assert decode(tp, orjson.loads(wire)) == value


def test_decode_refuses_the_wrong_shape() -> None:
    with pytest.raises(TypeError):
        decode(RecallResult, {"items": "nope", "total": 1})
    with pytest.raises(TypeError):
        decode(int, True)
    with pytest.raises(TypeError):
        decode(list[str], {"a": 1})


def test_the_op_table_covers_the_bound_memory_api() -> None:
    public = {
        name
        for name, member in vars(BoundMemory).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }
    assert public == {name for name in OPS if "." not in name}
    assert {"knowledge.upsert", "knowledge.list", "state.set", "state.list"} <= set(OPS)
    for op in OPS.values():  # every parameter has a JSON form
        args_model(op).model_json_schema()


def test_both_bound_memories_satisfy_the_protocol() -> None:
    for cls in (BoundMemory, RemoteBoundMemory):
        missing = [
            name
            for name in dir(BoundMemoryProtocol)
            if not name.startswith("_") and not hasattr(cls, name) and name != "identity"
        ]
        assert missing == [], cls


@pytest.mark.parametrize(
    "exc, status",
    [
        (ValidationError("top_k", "must be at most 20", got=50), 422),
        (ScopeError("scope", "needs a user"), 422),
        (NotFoundError("no memory", memory_id="m1"), 404),
        (AuthError("bad key", reason="invalid"), 401),
        (AuthError("other tenant", reason="forbidden", key_id="k"), 403),
        (RateLimitError("slow down", retry_after=2.5), 429),
        (StorageError("disk full", path="/x"), 503),
        (AgentMemError("boom"), 500),
    ],
)
def test_errors_keep_class_and_fields_over_the_wire(exc: AgentMemError, status: int) -> None:
    assert status_of(exc) == status
    back = error_from(status, orjson.loads(orjson.dumps(error_body(exc))))
    assert type(back) is type(exc) and str(back) == str(exc)
    assert back.context == exc.context
    if isinstance(exc, ValidationError):
        assert isinstance(back, ValidationError)
        assert (back.field, back.reason) == (exc.field, exc.reason)


def test_a_non_agentmem_error_page_becomes_a_remote_error() -> None:
    err = error_from(502, None)
    assert type(err).__name__ == "RemoteError" and err.context["status"] == 502


def test_client_all_is_pinned() -> None:
    import agentmem.client

    assert agentmem.client.__all__ == [
        "AsyncClient",
        "AsyncConnection",
        "AsyncRemoteBoundMemory",
        "AsyncRemoteKnowledge",
        "AsyncRemoteState",
        "AsyncRemoteWorking",
        "Client",
        "RemoteBoundMemory",
        "RemoteKnowledge",
        "RemoteState",
        "RemoteWorking",
        "connect",
        "connect_async",
    ]
    assert agentmem.connect is agentmem.client.connect
    assert agentmem.connect_async is agentmem.client.connect_async
