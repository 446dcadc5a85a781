"""Tests for ``AnthropicLLM``: the real ``anthropic`` SDK against a loopback Messages API.

A stdlib ``http.server`` speaks ``POST /v1/messages``: each test scripts its replies (a
``tool_use`` content block, malformed tool input, text without a tool call, 429 / 500 / 400
errors, slow replies for timeouts). The SDK's own retry and timeout machinery runs for real;
only the network peer is fake.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentmem import AgentMemory
from agentmem.embeddings import CachedEmbedder
from agentmem.errors import LLMError
from agentmem.llm import DEFAULT_MODEL, LLM, AnthropicLLM, ChatTurn, Extracted, OfflineLLM
from agentmem.llm.anthropic import TOOLS
from agentmem.models import MEMORY_TYPES

pytest.importorskip("anthropic")


@dataclass
class Reply:
    """One scripted HTTP reply."""

    status: int = 200
    body: Any = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


Responder = Callable[[dict[str, Any]], Reply]


@dataclass
class ServerState:
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    responder: Responder | None = None
    stop: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        state.requests.append({"path": self.path, **body})
        state.headers.append({k.lower(): v for k, v in self.headers.items()})
        assert state.responder is not None
        reply = state.responder(body)
        if reply.delay:
            state.stop.wait(reply.delay)
        payload = json.dumps(reply.body).encode()
        try:
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: ServerState


@dataclass
class Loopback:
    url: str
    state: ServerState

    def respond(self, responder: Responder) -> None:
        self.state.responder = responder

    def script(self, *replies: Reply) -> None:
        """Reply with these in order; the last one repeats."""
        queue = list(replies)

        def next_reply(_: dict[str, Any]) -> Reply:
            return queue.pop(0) if len(queue) > 1 else queue[0]

        self.state.responder = next_reply

    def llm(self, **kw: Any) -> AnthropicLLM:
        kw.setdefault("timeout", 5.0)
        kw.setdefault("max_retries", 2)
        return AnthropicLLM(base_url=self.url, api_key="test", **kw)


@pytest.fixture
def api() -> Iterator[Loopback]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = ServerState()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield Loopback(f"http://127.0.0.1:{server.server_address[1]}", server.state)
    finally:
        server.state.stop.set()
        server.shutdown()
        server.server_close()


def tool_reply(name: str, data: Any, *, stop_reason: str = "tool_use") -> Reply:
    return Reply(
        body={
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": DEFAULT_MODEL,
            "content": [{"type": "tool_use", "id": "toolu_1", "name": name, "input": data}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
    )


def text_reply(text: str) -> Reply:
    return Reply(
        body={
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": DEFAULT_MODEL,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10},
        }
    )


def error_reply(status: int, kind: str, **headers: str) -> Reply:
    return Reply(
        status=status,
        body={"type": "error", "error": {"type": kind, "message": f"simulated {status}"}},
        headers={"retry-after-ms": "5", **headers},
    )


def tool_name(request: dict[str, Any]) -> str:
    return str(request["tools"][0]["name"])


TURNS = [
    ChatTurn("user", "I live in Berlin and work as a nurse.", id="m1"),
    ChatTurn("assistant", "Nice!", id="m2"),
]
MEMORIES = {
    "memories": [
        {
            "content": "I live in Berlin",
            "memory_type": "fact",
            "topic_key": "User.Residence",
            "keywords": ["berlin", "home"],
            "queries": ["where do I live"],
            "source_ids": ["m1", "not-a-turn"],
            "scope": "user",
        },
        {"content": "I work as a nurse", "memory_type": "fact"},
    ]
}


# -- requests and structured output ---------------------------------------------------------------


def test_implements_the_protocol_without_network() -> None:
    llm = AnthropicLLM(base_url="http://127.0.0.1:9", api_key="test")  # nothing listens
    assert isinstance(llm, LLM)
    assert llm.name == f"anthropic:{DEFAULT_MODEL}" == "anthropic:claude-haiku-4-5"


def test_extract_forces_the_tool_and_parses_the_reply(api: Loopback) -> None:
    api.script(tool_reply("record_memories", MEMORIES))
    got = api.llm().extract(TURNS)
    [req] = api.state.requests
    assert req["path"] == "/v1/messages"
    assert req["model"] == "claude-haiku-4-5"
    assert req["tools"] == [TOOLS["extract"]]
    assert req["tool_choice"] == {"type": "tool", "name": "record_memories"}
    assert "[m1] user: I live in Berlin" in req["messages"][0]["content"]
    assert "long-term memories" in req["system"]
    sent = api.state.headers[0]
    assert sent.get("x-api-key") == "test" or sent.get("authorization") == "Bearer test"
    assert [(e.content, e.memory_type, e.topic_key, e.source_ids) for e in got] == [
        ("I live in Berlin", "fact", "user.residence", ("m1",)),
        ("I work as a nurse", "fact", None, ()),
    ]
    assert got[0].keywords == ("berlin", "home") and got[0].queries == ("where do I live",)


def test_model_is_configurable(api: Loopback, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMEM_LLM_MODEL", "claude-sonnet-4-5")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("AGENTMEM_LLM_TIMEOUT", "3")
    monkeypatch.setenv("AGENTMEM_LLM_MAX_RETRIES", "not-a-number")
    llm = AnthropicLLM.from_env()
    assert (llm.model, llm.timeout, llm.max_retries) == ("claude-sonnet-4-5", 3.0, 3)
    api.script(tool_reply("write_summary", {"summary": "ok"}))
    assert llm.summarize(TURNS) == "ok"
    assert api.state.requests[0]["model"] == "claude-sonnet-4-5"


def test_summarize_and_summary_delta(api: Loopback) -> None:
    def respond(req: dict[str, Any]) -> Reply:
        if tool_name(req) == "write_summary":
            return tool_reply("write_summary", {"summary": "  The user lives in Berlin. "})
        return tool_reply(
            "update_summary",
            {
                "mode": "append",
                "summary_update": "User lives in Berlin.",
                "add_facts": [{"key": "user.residence", "value": "Berlin", "source_event": "m1"}],
                "add_references": ["m1"],
            },
        )

    api.respond(respond)
    llm = api.llm()
    assert llm.summarize(TURNS, max_words=50) == "The user lives in Berlin."
    assert "at most 50 words" in api.state.requests[0]["system"]
    delta = llm.summary_delta("", TURNS)
    assert delta.mode == "append"
    assert delta.add_facts == ({"key": "user.residence", "value": "Berlin", "source_event": "m1"},)
    assert delta.add_references == ("m1",)
    assert delta.remove_fact_keys == () and delta.remove_references == ()


def test_judge_parses_verdicts_and_keeps_undecided(api: Loopback) -> None:
    api.script(
        tool_reply(
            "judge_supersession", {"verdicts": [{"candidate_id": "a", "decision": "SUPERSEDE"}]}
        )
    )
    llm = api.llm(judge_model="claude-judge")
    verdicts = llm.judge("I moved to Lisbon", [("a", "I live in Berlin"), ("b", "I am a nurse")])
    assert [(v.candidate_id, v.decision) for v in verdicts] == [("a", "SUPERSEDE"), ("b", "KEEP")]
    assert api.state.requests[0]["model"] == "claude-judge"
    assert llm.judge("x", []) == []
    assert len(api.state.requests) == 1  # no call without candidates


def test_answer_requires_grounding(api: Loopback) -> None:
    api.script(tool_reply("answer_question", {"answer": "Lisbon.", "used_ids": ["m1", "zz"]}))
    llm = api.llm()
    ans = llm.answer("where do I live?", [("m1", "I live in Lisbon")])
    assert (ans.text, ans.used_ids) == ("Lisbon.", ("m1",))
    api.script(tool_reply("answer_question", {"answer": "", "used_ids": []}))
    assert llm.answer("capital of Mongolia?", [("m1", "I live in Lisbon")]).text == ""
    assert llm.answer("anything", []).text == ""


# -- malformed replies ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        tool_reply("record_memories", {"items": []}),  # wrong field
        tool_reply("record_memories", {"memories": [{"content": "x"}]}),  # missing memory_type
        tool_reply("record_memories", {"memories": [{"content": "x", "memory_type": "gossip"}]}),
        tool_reply("record_memories", {"memories": [{"content": 42, "memory_type": "fact"}]}),
        tool_reply("record_memories", {"memories": "I live in Berlin"}),
        tool_reply(
            "record_memories",
            {"memories": [{"content": "x", "memory_type": "fact", "keywords": "berlin"}]},
        ),
        tool_reply("record_memories", {"memories": [{"content": " ", "memory_type": "fact"}]}),
        tool_reply("some_other_tool", {"memories": []}),
        text_reply("Sure! The user lives in Berlin."),
    ],
)
def test_malformed_extraction_is_an_error_with_the_raw_reply(api: Loopback, bad: Reply) -> None:
    api.script(bad)
    with pytest.raises(LLMError) as info:
        api.llm(malformed_retries=1).extract(TURNS)
    assert len(api.state.requests) == 2  # asked once more, then reported
    raw = json.loads(info.value.context["raw"])
    assert raw["stop_reason"] == bad.body["stop_reason"]
    sent = bad.body["content"][0]
    assert raw["content"][0]["type"] == sent["type"]
    assert raw["content"][0].get("input") == sent.get("input")
    assert raw["content"][0].get("text") == sent.get("text")
    assert info.value.context["task"] == "extract"
    assert "schema" in str(info.value)


def test_malformed_then_valid_reply_succeeds(api: Loopback) -> None:
    api.script(text_reply("oops"), tool_reply("record_memories", MEMORIES))
    got = api.llm().extract(TURNS)
    assert len(got) == 2 and len(api.state.requests) == 2


def test_judge_naming_an_unknown_candidate_is_malformed(api: Loopback) -> None:
    api.script(
        tool_reply(
            "judge_supersession", {"verdicts": [{"candidate_id": "ghost", "decision": "SUPERSEDE"}]}
        )
    )
    with pytest.raises(LLMError, match="was not a candidate"):
        api.llm(malformed_retries=0).judge("new", [("a", "old")])


def test_ungrounded_answer_is_malformed(api: Loopback) -> None:
    api.script(tool_reply("answer_question", {"answer": "Paris.", "used_ids": []}))
    with pytest.raises(LLMError, match="cites none"):
        api.llm(malformed_retries=0).answer("where?", [("m1", "I live in Lisbon")])


# -- transport failures -----------------------------------------------------------------------------


def test_429_is_retried_then_succeeds(api: Loopback) -> None:
    api.script(
        error_reply(429, "rate_limit_error"),
        error_reply(429, "rate_limit_error"),
        tool_reply("write_summary", {"summary": "ok"}),
    )
    assert api.llm(max_retries=2).summarize(TURNS) == "ok"
    assert len(api.state.requests) == 3


@pytest.mark.parametrize(
    ("status", "kind"), [(429, "rate_limit_error"), (500, "api_error"), (529, "overloaded_error")]
)
def test_persistent_retryable_errors_become_llm_error(
    api: Loopback, status: int, kind: str
) -> None:
    api.script(error_reply(status, kind))
    with pytest.raises(LLMError) as info:
        api.llm(max_retries=2).extract(TURNS)
    assert len(api.state.requests) == 3  # first try + 2 retries
    assert info.value.context["status"] == status
    assert f"HTTP {status} after retries" in str(info.value)


def test_client_errors_are_not_retried(api: Loopback) -> None:
    api.script(error_reply(400, "invalid_request_error"))
    with pytest.raises(LLMError) as info:
        api.llm(max_retries=3).extract(TURNS)
    assert len(api.state.requests) == 1
    assert info.value.context["status"] == 400


def test_timeouts_are_retried_then_reported(api: Loopback) -> None:
    api.script(Reply(delay=3.0, body={}))
    llm = api.llm(timeout=0.3, max_retries=1)
    with pytest.raises(LLMError, match="timed out"):  # a reply would come after 3 s
        llm.extract(TURNS)
    assert len(api.state.requests) == 2


def test_unreachable_server_is_an_llm_error() -> None:
    llm = AnthropicLLM(base_url="http://127.0.0.1:9", api_key="test", max_retries=0, timeout=1)
    with pytest.raises(LLMError, match="cannot reach"):
        llm.summarize(TURNS)


# -- realistic payloads: the same shapes as the offline path ------------------------------------

TRAVEL = [
    ChatTurn("user", "Hi! I'm Nadia. Planning a rail trip through Austria with my brother.", "t1"),
    ChatTurn("assistant", "Lovely! Any constraints I should know about?", "t2"),
    ChatTurn("user", "I'm vegan, and I have a severe peanut allergy.", "t3"),
    ChatTurn("assistant", "Noted, I'll flag restaurants accordingly.", "t4"),
    ChatTurn("user", "Always book aisle seats for me, I get claustrophobic at the window.", "t5"),
    ChatTurn("assistant", "Aisle seats every time.", "t6"),
    ChatTurn("user", "We decided on the OEBB Klimaticket instead of single tickets.", "t7"),
    ChatTurn("user", "Our hotel in Salzburg is booked, reference SB-20931.", "t8"),
]
WHEN = datetime(2024, 5, 2, 9, 30, tzinfo=UTC)
FRIENDS = [
    ChatTurn("user", "I went to a pottery class yesterday!", "D1:1", speaker="Mia", time=WHEN),
    ChatTurn("assistant", "Oh fun! I adopted a cat last week.", "D1:2", speaker="Leo", time=WHEN),
]
#: What Claude returns for TRAVEL: self-contained third-person memories, typed, keyed, sourced.
CLAUDE_TRAVEL = {
    "memories": [
        {
            "content": "The user is planning a rail trip through Austria with the user's brother.",
            "memory_type": "fact",
            "topic_key": None,
            "keywords": ["rail trip", "austria", "brother"],
            "queries": ["what trip is the user planning"],
            "source_ids": ["t1"],
            "scope": "user",
        },
        {
            "content": "The user is vegan.",
            "memory_type": "preference",
            "topic_key": "user.diet",
            "keywords": ["vegan", "diet"],
            "queries": ["what does the user eat"],
            "source_ids": ["t3"],
            "scope": "user",
        },
        {
            "content": "The user has a severe peanut allergy.",
            "memory_type": "fact",
            "topic_key": "user.allergy.peanut",
            "keywords": ["peanut", "allergy"],
            "queries": ["what is the user allergic to"],
            "source_ids": ["t3"],
            "scope": "user",
        },
        {
            "content": "Always book aisle seats for the user (the user gets claustrophobic at the "
            "window).",
            "memory_type": "instruction",
            "topic_key": "instruction.seats",
            "keywords": ["aisle", "seat"],
            "queries": ["which seats should be booked"],
            "source_ids": ["t5"],
            "scope": "user",
        },
        {
            "content": "The user and the user's brother decided on the OEBB Klimaticket instead "
            "of single tickets.",
            "memory_type": "decision",
            "topic_key": None,
            "keywords": ["klimaticket", "tickets"],
            "queries": ["which ticket did they choose"],
            "source_ids": ["t7"],
            "scope": "user",
        },
        {
            "content": "The user's hotel in Salzburg is booked with reference SB-20931.",
            "memory_type": "fact",
            "topic_key": None,
            "keywords": ["hotel", "salzburg", "SB-20931"],
            "queries": ["what is the hotel booking reference"],
            "source_ids": ["t8"],
            "scope": "user",
        },
    ]
}
CLAUDE_FRIENDS = {
    "memories": [
        {
            "content": "Mia went to a pottery class on 1 May 2024.",
            "memory_type": "event",
            "topic_key": None,
            "source_ids": ["D1:1"],
        },
        {
            "content": "Leo adopted a cat in the week before 2 May 2024.",
            "memory_type": "event",
            "topic_key": None,
            "source_ids": ["D1:2"],
        },
    ]
}
_FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself|I'm|I've)\b")


def assert_memory_shapes(items: list[Extracted], turns: list[ChatTurn]) -> None:
    """What both LLM paths promise for a memory: self-contained (no first person, the
    person named), a known type, a dotted lowercase topic key led by the person (or
    ``instruction.``), and source ids naming turns of the conversation."""
    ids = {t.id for t in turns}
    people = {(t.speaker or "the user").lower() for t in turns if t.role == "user" or t.speaker}
    assert items
    for e in items:
        assert not _FIRST_PERSON.search(e.content), e.content
        assert any(p in e.content.lower() for p in people) or e.memory_type == "instruction"
        assert e.memory_type in MEMORY_TYPES
        if e.topic_key is not None:
            assert e.topic_key == e.topic_key.lower() and "." in e.topic_key
            head = e.topic_key.split(".")[0]
            assert head == "instruction" or head in {p.replace("the ", "") for p in people}
        assert e.source_ids and set(e.source_ids) <= ids
        assert e.scope in ("user", "agent", "session")


def test_extract_request_names_speakers_and_times(api: Loopback) -> None:
    api.script(tool_reply("record_memories", CLAUDE_FRIENDS))
    got = api.llm().extract(FRIENDS)
    prompt = api.state.requests[0]["messages"][0]["content"]
    assert "[D1:1] 2024-05-02 09:30 UTC Mia (user): I went to a pottery class" in prompt
    assert "[D1:2] 2024-05-02 09:30 UTC Leo (assistant): Oh fun!" in prompt
    system = api.state.requests[0]["system"]
    assert "third person" in system and "resolved against the message time" in system
    assert_memory_shapes(got, FRIENDS)
    offline = OfflineLLM().extract(FRIENDS)
    assert_memory_shapes(offline, FRIENDS)
    assert [e.content for e in offline] == [
        "Mia went to a pottery class on 1 May 2024.",
        "Leo adopted a cat in the week before 2 May 2024.",
    ]


def test_extract_request_reads_a_speaker_named_in_content(api: Loopback) -> None:
    api.script(tool_reply("record_memories", CLAUDE_FRIENDS))
    inline = [replace(t, content=f"{t.speaker}: {t.content}", speaker=None) for t in FRIENDS]
    api.llm().extract(inline)
    prompt = api.state.requests[0]["messages"][0]["content"]
    assert "[D1:1] 2024-05-02 09:30 UTC Mia (user): I went to a pottery class" in prompt
    assert "[D1:2] 2024-05-02 09:30 UTC Leo (assistant): Oh fun!" in prompt


def test_realistic_extraction_has_the_offline_shapes(api: Loopback) -> None:
    api.script(tool_reply("record_memories", CLAUDE_TRAVEL))
    claude = api.llm().extract(TRAVEL)
    offline = OfflineLLM().extract(TRAVEL)
    assert_memory_shapes(claude, TRAVEL)
    assert_memory_shapes(offline, TRAVEL)
    # the same constraints, typed and keyed alike on both paths
    for items in (claude, offline):
        keyed = {e.topic_key: e for e in items if e.topic_key}
        assert keyed["user.diet"].memory_type == "preference"
        assert "peanut" in keyed["user.allergy.peanut"].content
        assert any(e.memory_type == "instruction" and "aisle" in e.content for e in items)
        assert any(e.memory_type == "decision" and "Klimaticket" in e.content for e in items)
        assert any("SB-20931" in e.content for e in items)


def test_realistic_summary_and_answer(api: Loopback, shared_embedder: CachedEmbedder) -> None:
    def respond(req: dict[str, Any]) -> Reply:
        if tool_name(req) == "write_summary":
            return tool_reply(
                "write_summary",
                {
                    "summary": "The user talked with the assistant on 2 May 2024 about a rail "
                    "trip through Austria. The user is vegan and has a severe peanut allergy; "
                    "aisle seats only. They chose the OEBB Klimaticket; the Salzburg hotel "
                    "reference is SB-20931."
                },
            )
        return tool_reply(
            "answer_question",
            {"answer": "The user has a severe peanut allergy.", "used_ids": ["m3"]},
        )

    api.respond(respond)
    llm = api.llm()
    summary = llm.summarize(TRAVEL, max_words=60)
    system = api.state.requests[0]["system"]
    assert "at most 60 words" in system and "constraints" in system and "latest value" in system
    offline = OfflineLLM().summarize(TRAVEL, max_words=60)
    for text in (summary, offline):  # one shape: third-person prose within the limit
        assert len(text.split()) <= 60 and not _FIRST_PERSON.search(text)
        assert "peanut" in text and "SB-20931" in text
    memories = [(f"m{i}", m["content"]) for i, m in enumerate(CLAUDE_TRAVEL["memories"], 1)]
    ans = llm.answer("What am I allergic to?", memories)
    assert (ans.text, ans.used_ids) == ("The user has a severe peanut allergy.", ("m3",))
    assert "first person" in api.state.requests[-1]["system"]
    off = OfflineLLM(shared_embedder).answer("What am I allergic to?", memories)
    assert off.used_ids == ("m3",) and "peanut" in off.text


# -- ingest end to end through the SDK ---------------------------------------------------------------


def _conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "I live in Berlin and work as a nurse.", "id": "c1"},
        {"role": "assistant", "content": "Nice to meet you!", "id": "c2"},
    ]


def _memories_for(req: dict[str, Any]) -> dict[str, Any]:
    """Extraction reply citing the message id the prompt gave for the first turn."""
    # "[id] <time> UTC user: text": ingest passes each message's time along
    first_id = re.findall(r"\[([^\]]+)\] (?:\S+ \S+ UTC )?user:", req["messages"][0]["content"])[0]
    return {
        "memories": [
            {
                "content": "I live in Berlin",
                "memory_type": "fact",
                "topic_key": "user.residence",
                "source_ids": [first_id],
            },
            {"content": "I work as a nurse", "memory_type": "fact", "source_ids": [first_id]},
        ]
    }


def test_ingest_through_the_sdk(api: Loopback, make_memory: Callable[..., AgentMemory]) -> None:
    def respond(req: dict[str, Any]) -> Reply:
        if tool_name(req) == "record_memories":
            return tool_reply("record_memories", _memories_for(req))
        return tool_reply("judge_supersession", {"verdicts": []})

    api.respond(respond)
    mem = make_memory(llm=api.llm())
    m = mem.bind("acme", user_id="u1", session_id="s1")
    result = m.ingest(_conversation())
    assert result.ok, result.errors
    assert (result.memories_created, result.extractor) == (2, "anthropic:claude-haiku-4-5")
    items = [m.get(i) for i in result.memory_ids]
    assert {i.metadata["extractor"] for i in items} == {"anthropic:claude-haiku-4-5"}
    assert items[0].metadata["source_message_ids"] == [result.message_ids[0]]


def test_malformed_extraction_is_reported_never_silent(
    api: Loopback, make_memory: Callable[..., AgentMemory], caplog: pytest.LogCaptureFixture
) -> None:
    api.script(tool_reply("record_memories", {"memories": [{"content": "I live in Berlin"}]}))
    mem = make_memory(llm=api.llm(malformed_retries=0))
    m = mem.bind("acme", user_id="u1", session_id="s1")
    result = m.ingest(_conversation())
    assert not result.ok
    assert result.memories_created == 0
    assert result.messages_new == 2  # the transcript is stored regardless
    [err] = result.errors
    assert err.stage == "extract"
    assert err.source_ids == result.message_ids
    assert err.raw is not None and "I live in Berlin" in err.raw  # raw reply kept
    assert "memory_type" in err.message
    assert any("ingest_extract_failed" in r.getMessage() for r in caplog.records)

    # once the model behaves, ingesting again extracts what failed before (no duplicates)
    def respond(req: dict[str, Any]) -> Reply:
        if tool_name(req) == "record_memories":
            return tool_reply("record_memories", _memories_for(req))
        return tool_reply("judge_supersession", {"verdicts": []})

    api.respond(respond)
    again = m.ingest(_conversation())
    assert again.ok and again.messages_new == 0 and again.memories_created == 2
    calls = len(api.state.requests)
    third = m.ingest(_conversation())
    assert third.memories_created == 0
    assert len(api.state.requests) == calls  # already extracted: no model call at all


def test_transport_failure_during_ingest_is_reported(
    api: Loopback, make_memory: Callable[..., AgentMemory]
) -> None:
    api.script(error_reply(500, "api_error"))
    mem = make_memory(llm=api.llm(max_retries=1))
    result = mem.bind("acme", user_id="u1", session_id="s1").ingest(_conversation())
    [err] = result.errors
    assert err.stage == "extract" and "HTTP 500" in err.message and err.raw is None
    assert result.messages_stored == 2


def test_judge_failure_is_fail_open(api: Loopback, make_memory: Callable[..., AgentMemory]) -> None:
    def respond(req: dict[str, Any]) -> Reply:
        if tool_name(req) == "record_memories":
            return tool_reply(
                "record_memories",
                {"memories": [{"content": "I moved to Lisbon last month", "memory_type": "fact"}]},
            )
        return error_reply(500, "api_error")

    api.respond(respond)
    mem = make_memory(llm=api.llm(max_retries=0))
    m = mem.bind("acme", user_id="u1", session_id="s2")
    old = m.remember("I live in Berlin")
    result = m.ingest([{"role": "user", "content": "I moved to Lisbon last month."}])
    assert result.memories_created == 1 and result.memories_superseded == 0
    [err] = result.errors
    assert err.stage == "judge" and "HTTP 500" in err.message
    assert m.get(old.id).superseded_by is None  # nothing retired on a judge failure
    judge_calls = [r for r in api.state.requests if tool_name(r) == "judge_supersession"]
    assert len(judge_calls) == 1
    assert "I live in Berlin" in judge_calls[0]["messages"][0]["content"]


def test_judge_supersede_through_the_sdk(
    api: Loopback, make_memory: Callable[..., AgentMemory]
) -> None:
    mem = make_memory(llm=api.llm())
    m = mem.bind("acme", user_id="u1", session_id="s2")
    old = m.remember("I live in Berlin")

    def respond(req: dict[str, Any]) -> Reply:
        if tool_name(req) == "record_memories":
            return tool_reply(
                "record_memories",
                {"memories": [{"content": "I moved to Lisbon last month", "memory_type": "fact"}]},
            )
        return tool_reply(
            "judge_supersession", {"verdicts": [{"candidate_id": old.id, "decision": "SUPERSEDE"}]}
        )

    api.respond(respond)
    result = m.ingest([{"role": "user", "content": "I moved to Lisbon last month."}])
    assert result.ok and result.memories_superseded == 1
    assert m.get(old.id).superseded_by == result.memory_ids[0]
