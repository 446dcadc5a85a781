"""Tests for ``BoundMemory.ingest`` / ``answer`` and their CLI commands.

Real stores under ``tmp_path``, the shared real embedder and the offline LLM (the default
without an API key); a scripted LLM only where a failure has to be provoked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentmem import AgentMemory, BoundMemory
from agentmem.cli import main
from agentmem.config import CHAT_COPY_MAX_BYTES
from agentmem.derived.ingest import derive_session_id
from agentmem.errors import LLMError, ScopeError, ValidationError
from agentmem.llm import Answer, ChatTurn, Extracted, OfflineLLM, SummaryDelta, Verdict

pytestmark = pytest.mark.both_backends

MakeMemory = Callable[..., AgentMemory]


@pytest.fixture(autouse=True)
def _offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default LLM must be the offline one here, whatever the developer's shell has."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


SESSION_1 = [
    {"role": "user", "content": "Hi! I live in Berlin and work as a nurse."},
    {"role": "assistant", "content": "Nice to meet you! How can I help?"},
    {"role": "user", "content": "My favourite editor is vim."},
]
SESSION_2 = [
    {"role": "user", "content": "Can you recommend a book about gardening?"},
    {"role": "assistant", "content": "Try 'The Well-Tempered Garden' by Christopher Lloyd."},
]
SESSION_3 = [
    {"role": "user", "content": "Big news: I moved to Lisbon last month."},
    {"role": "assistant", "content": "Congratulations on the move!"},
    {"role": "user", "content": "Also, I switched to emacs."},
]


def memory_rows(mem: AgentMemory, where: str = "1=1") -> list[tuple[Any, ...]]:
    return mem.records.read(
        f"SELECT id, content, superseded_by, topic_key FROM memories WHERE kind = 'memory' "
        f"AND {where} ORDER BY seq"
    )


# -- the issue-3 acceptance scenario ----------------------------------------------------------


def test_berlin_then_lisbon_acceptance(make_memory: MakeMemory) -> None:
    mem = make_memory()
    for session, messages in (("s1", SESSION_1), ("s2", SESSION_2), ("s3", SESSION_3)):
        result = mem.bind("acme", user_id="u1", session_id=session).ingest(messages)
        assert result.ok, result.errors
    mem.flush()
    m = mem.bind("acme", user_id="u1", session_id="s4")
    berlin = [r for r in memory_rows(mem) if "Berlin" in r[1]]
    lisbon = [r for r in memory_rows(mem) if "Lisbon" in r[1]]
    assert len(berlin) == 1 and len(lisbon) == 1
    berlin_id, lisbon_id = berlin[0][0], lisbon[0][0]
    assert berlin[0][2] == lisbon_id  # superseded by the Lisbon memory

    hits = m.recall("where do I live").items
    assert hits[0].id == lisbon_id
    assert hits[0].kind == "memory" and "Lisbon" in hits[0].content
    assert berlin_id not in {h.id for h in m.recall("where do I live", top_k=20).items}
    for query in ("where do I live", "Berlin", "which city is my home"):
        memories = m.recall(query, top_k=20, kinds="memory").items
        assert all("Berlin" not in h.content for h in memories), query
        # nor the transcript line the outdated memory came from (any kind, any rank)
        everything = m.recall(query, top_k=20, min_score=0.0).items
        assert all("Berlin" not in h.content for h in everything), query
    # ... which stays in the transcript and reaches audit callers
    s1 = mem.bind("acme", user_id="u1", session_id="s1").messages()
    assert any("Berlin" in i.content and i.kind == "chat_message" for i in s1)
    audit = m.recall("Berlin", top_k=20, min_score=0.0, include_superseded=True).items
    assert any("Berlin" in h.content and h.kind == "chat_message" for h in audit)

    chain = m.history(lisbon_id)
    assert [i.id for i in chain] == [berlin_id, lisbon_id]  # oldest first
    assert [i.id for i in m.history(berlin_id)] == [berlin_id, lisbon_id]
    assert chain[0].superseded_by == lisbon_id and chain[1].superseded_by is None

    # audit callers still reach the retired memory
    assert berlin_id in {h.id for h in m.recall("Berlin", include_superseded=True).items}

    ans = m.answer("where do I live?")
    assert "Lisbon" in ans.text and "Berlin" not in ans.text
    assert ans.used_ids == (lisbon_id,)
    assert ans.answered_by == "offline-heuristic-v1"

    editor = m.recall("which editor do I use", kinds="memory").items
    assert "emacs" in editor[0].content
    assert all("vim" not in h.content for h in editor)


# -- messages: verbatim, content-addressed ------------------------------------------------------


def test_messages_are_stored_verbatim(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    result = m.ingest(
        [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "  I live in Berlin.  ", "metadata": {"channel": "web"}},
            {"role": "tool", "content": '{"temp": 21}'},
            {"role": "assistant", "content": "Noted.", "event_time": "2024-05-01T10:00:00Z"},
        ]
    )
    assert (result.messages_stored, result.messages_new) == (4, 4)
    stored = m.messages()
    assert [i.id for i in stored] == list(result.message_ids)
    assert [(i.role, i.kind, i.content) for i in stored] == [
        ("system", "chat_message", "You are helpful."),
        ("user", "chat_message", "  I live in Berlin.  "),
        ("tool", "tool_output", '{"temp": 21}'),
        ("assistant", "chat_message", "Noted."),
    ]
    assert stored[1].metadata == {"channel": "web"}
    assert stored[3].event_time.isoformat() == "2024-05-01T10:00:00+00:00"


def test_reingesting_creates_no_duplicates(make_memory: MakeMemory, rows: Any) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    first = m.ingest(SESSION_1)
    assert (first.messages_new, first.memories_created) == (3, 3)
    before = rows(mem)
    again = m.ingest(SESSION_1)
    assert again.message_ids == first.message_ids
    assert (again.messages_new, again.memories_created, again.memories_superseded) == (0, 0, 0)
    assert rows(mem) == before
    # the same memories stated again in another session are duplicates, not new rows
    other = mem.bind("acme", user_id="u1", session_id="s9").ingest(SESSION_1)
    assert other.messages_new == 3
    assert (other.memories_created, other.memories_duplicate) == (0, 3)


def test_duplicates_within_a_batch_and_against_remember(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    # extracted memories are self-contained ("The user ...", not "I ..."); a remembered memory
    # with the same content is the duplicate
    remembered = m.remember("The user works as a nurse.")
    result = m.ingest(
        [
            {"role": "user", "content": "I prefer tea over coffee."},
            {"role": "user", "content": "Honestly, I prefer tea over coffee!"},
            {"role": "user", "content": "I live in Berlin and work as a nurse."},
        ]
    )
    assert result.memories_created == 2  # tea (said twice, extracted once), Berlin
    assert result.memories_duplicate == 1  # the nurse fact stored by remember()
    assert m.get(remembered.id).superseded_by is None


def test_caller_message_ids_address_messages(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    first = m.ingest([{"role": "user", "content": "Hello", "id": "ext-1"}])
    edited = m.ingest([{"role": "user", "content": "Hello (edited)", "id": "ext-1"}])
    assert first.message_ids == edited.message_ids and edited.messages_new == 0
    assert m.messages()[0].metadata == {"message_id": "ext-1"}


def test_oversized_message_keeps_full_text(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    big = "I live in Berlin. " + "x" * (CHAT_COPY_MAX_BYTES + 100)
    result = m.ingest([{"role": "user", "content": big}])
    [item] = m.messages()
    assert item.source_ref == f"msg_{result.message_ids[0]}"
    assert m.read_tool_output(item.source_ref) == big
    assert result.memories_created == 1


def test_session_is_derived_when_none_is_bound(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    first = m.ingest(SESSION_1)
    assert first.session_id.startswith("ses_")
    assert m.ingest(SESSION_1).session_id == first.session_id
    grown = m.ingest([*SESSION_1, {"role": "user", "content": "I speak Portuguese."}])
    assert grown.session_id == first.session_id  # same conversation, grown
    assert grown.messages_new == 1 and grown.memories_created == 1
    assert m.ingest(SESSION_2).session_id != first.session_id
    other_user = mem.bind("acme", user_id="u2").ingest(SESSION_1)
    assert other_user.session_id != first.session_id
    bound = mem.bind("acme", user_id="u1", session_id=first.session_id)
    assert len(bound.messages()) == 4


def test_derive_session_id_is_deterministic(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1")
    from agentmem.derived.ingest import _validate

    msgs = _validate(SESSION_1)
    assert derive_session_id(m.identity, msgs) == derive_session_id(
        m.identity, _validate(list(SESSION_1))
    )
    assert derive_session_id(m.identity, msgs) != derive_session_id(
        mem.bind("other", "u1").identity, msgs
    )


# -- extraction, classification, storage --------------------------------------------------------


def test_memories_record_extractor_class_keywords_and_sources(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    result = m.ingest(
        [
            {"role": "user", "content": "I live in Berlin."},
            {"role": "user", "content": "We decided to use Postgres for the main database."},
            {"role": "user", "content": "Always answer in English."},
            {"role": "user", "content": "Remind me to call the dentist tomorrow."},
        ]
    )
    items = {i.memory_type: i for i in (m.get(x) for x in result.memory_ids)}
    assert set(items) == {"fact", "decision", "instruction", "task"}
    fact = items["fact"]
    assert fact.metadata["extractor"] == "offline-heuristic-v1"
    assert fact.metadata["class"] == "fact"
    assert "berlin" in fact.metadata["keywords"]
    assert "where do I live" in fact.metadata["queries"]
    assert fact.metadata["source_message_ids"] == [result.message_ids[0]]
    assert fact.scope == "user" and fact.session_id is None
    assert items["decision"].metadata["class"] == "event"
    assert items["instruction"].metadata["class"] == "instruction"
    assert items["task"].scope == "session" and items["task"].session_id == "s1"
    topics = dict(
        mem.records.read("SELECT memory_type, topic_key FROM memories WHERE kind = 'memory'")
    )
    assert topics == {
        "fact": "user.residence",
        "decision": None,
        "instruction": "instruction.language",
        "task": None,
    }


def test_topic_supersession_within_one_batch(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    result = m.ingest(
        [
            {"role": "user", "content": "My favourite editor is vim."},
            {"role": "user", "content": "Actually I switched to emacs."},
        ]
    )
    assert (result.memories_created, result.memories_superseded) == (2, 1)
    vim, emacs = result.memory_ids
    assert m.get(vim).superseded_by == emacs


def test_agent_only_identity_stores_agent_scope(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", agent_id="support", session_id="s1")
    result = m.ingest([{"role": "user", "content": "I live in Berlin."}])
    [item] = [m.get(i) for i in result.memory_ids]
    assert item.scope == "agent" and item.agent_id == "support"


def test_session_only_identity_stores_session_scope(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", session_id="s1")
    result = m.ingest([{"role": "user", "content": "I live in Berlin."}])
    assert m.get(result.memory_ids[0]).scope == "session"


def test_supersession_never_crosses_users(make_memory: MakeMemory) -> None:
    mem = make_memory()
    u1 = mem.bind("acme", user_id="u1", session_id="a")
    u2 = mem.bind("acme", user_id="u2", session_id="b")
    other_tenant = mem.bind("beta", user_id="u1", session_id="c")
    kept = [
        x.ingest([{"role": "user", "content": "I live in Berlin."}]) for x in (u2, other_tenant)
    ]
    u1.ingest([{"role": "user", "content": "I live in Berlin."}])
    moved = u1.ingest([{"role": "user", "content": "I moved to Lisbon."}])
    assert moved.memories_superseded == 1
    assert u2.get(kept[0].memory_ids[0]).superseded_by is None
    assert other_tenant.get(kept[1].memory_ids[0]).superseded_by is None


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ("I live in Berlin", "messages"),
        ({"role": "user", "content": "x"}, "messages"),
        ([], "messages"),
        ([{"role": "user"}], "messages[0]"),
        ([{"role": "robot", "content": "x"}], "messages[0].role"),
        ([{"role": "user", "content": "x", "colour": 1}], "messages[0]"),
        ([{"role": "user", "content": ""}], "messages[0].content"),
        (["I live in Berlin"], "messages[0]"),
        ([{"role": "user", "content": "x", "event_time": "yesterday"}], "messages[0].event_time"),
    ],
)
def test_invalid_input_writes_nothing(
    make_memory: MakeMemory, rows: Any, messages: Any, field: str
) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    with pytest.raises(ValidationError) as info:
        m.ingest(messages)
    assert info.value.field == field
    assert rows(mem) == 0


def test_chat_turns_are_accepted(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    result = m.ingest([ChatTurn("user", "I live in Berlin.", id="t1")])
    assert result.memories_created == 1
    assert m.messages()[0].metadata == {"message_id": "t1"}


def test_chat_turns_keep_their_speaker_and_time(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    when = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turn = ChatTurn("assistant", "I moved to Rome yesterday.", id="t1", speaker="Gina", time=when)
    result = m.ingest([turn])
    [message] = m.messages()
    assert message.metadata == {"speaker": "Gina", "message_id": "t1"}
    assert message.event_time == when
    [memory] = [m.get(i).content for i in result.memory_ids]
    assert memory.startswith("Gina lives in Rome") and "7 May 2023" in memory


def test_tenant_only_identity_cannot_ingest_into_nothing(make_memory: MakeMemory) -> None:
    mem = make_memory()
    result = mem.bind("acme").ingest([{"role": "user", "content": "I live in Berlin."}])
    # a derived session makes the conversation storable; the fact lands in that session
    assert result.session_id.startswith("ses_") and result.memories_created == 1


# -- reported problems (scripted LLMs) -----------------------------------------------------------


class ScriptedLLM:
    """An LLM whose extraction is scripted; the rest is the offline implementation."""

    def __init__(self, extract: Callable[[Sequence[ChatTurn]], list[Extracted]]) -> None:
        self._extract = extract
        self._offline = OfflineLLM()
        self.calls = 0

    @property
    def name(self) -> str:
        return "scripted-v0"

    def extract(self, turns: Sequence[ChatTurn]) -> list[Extracted]:
        self.calls += 1
        return self._extract(turns)

    def summarize(self, turns: Sequence[ChatTurn], *, max_words: int = 200) -> str:
        return self._offline.summarize(turns, max_words=max_words)

    def summary_delta(self, current: str, turns: Sequence[ChatTurn]) -> SummaryDelta:
        return self._offline.summary_delta(current, turns)

    def judge(self, new: str, candidates: Sequence[tuple[str, str]]) -> list[Verdict]:
        return self._offline.judge(new, candidates)

    def answer(self, question: str, memories: Sequence[tuple[str, str]]) -> Answer:
        return self._offline.answer(question, memories)


def test_invalid_items_are_reported_and_valid_ones_kept(make_memory: MakeMemory) -> None:
    def extract(turns: Sequence[ChatTurn]) -> list[Extracted]:
        src = (turns[0].id or "",)
        return [
            Extracted("I live in Berlin", "fact", "user.residence", source_ids=src),
            Extracted("gossip item", "gossip", source_ids=src),
            Extracted("", "fact", source_ids=src),
        ]

    mem = make_memory(llm=ScriptedLLM(extract))
    result = mem.bind("acme", user_id="u1", session_id="s1").ingest(
        [{"role": "user", "content": "hello"}]
    )
    assert result.memories_created == 1
    assert [e.stage for e in result.errors] == ["validate", "validate"]
    assert "gossip" in (result.errors[0].raw or "")
    assert result.extractor == "scripted-v0"


def test_extraction_failure_is_reported_and_retried_later(
    make_memory: MakeMemory, caplog: pytest.LogCaptureFixture
) -> None:
    state = {"fail": True}

    def extract(turns: Sequence[ChatTurn]) -> list[Extracted]:
        if state["fail"]:
            raise LLMError("extract: malformed", task="extract", raw='{"bad": true}')
        return [Extracted("I live in Berlin", "fact", source_ids=(turns[0].id or "",))]

    llm = ScriptedLLM(extract)
    mem = make_memory(llm=llm)
    m = mem.bind("acme", user_id="u1", session_id="s1")
    failed = m.ingest([{"role": "user", "content": "I live in Berlin."}])
    assert failed.memories_created == 0 and failed.messages_new == 1 and not failed.ok
    [err] = failed.errors
    assert (err.stage, err.raw, err.source_ids) == ("extract", '{"bad": true}', failed.message_ids)
    assert "ingest_extract_failed" in caplog.text
    state["fail"] = False
    retried = m.ingest([{"role": "user", "content": "I live in Berlin."}])
    assert retried.ok and retried.memories_created == 1 and retried.messages_new == 0
    calls = llm.calls
    m.ingest([{"role": "user", "content": "I live in Berlin."}])
    assert llm.calls == calls  # extracted messages are never sent to the model again


def test_batch_duplicates_from_the_model_are_counted(make_memory: MakeMemory) -> None:
    def extract(turns: Sequence[ChatTurn]) -> list[Extracted]:
        src = tuple(t.id or "" for t in turns)
        return [
            Extracted("I live in Berlin", "fact", "user.residence", source_ids=src[:1]),
            Extracted("I live in Berlin", "fact", "user.residence", source_ids=src[:1]),
            Extracted("I live in Berlin", "fact", "user.residence", source_ids=src[1:]),
        ]

    mem = make_memory(llm=ScriptedLLM(extract))
    result = mem.bind("acme", user_id="u1", session_id="s1").ingest(
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    )
    assert (result.memories_created, result.memories_duplicate) == (1, 2)
    assert result.memories_superseded == 0


def test_long_conversations_are_extracted_in_windows(make_memory: MakeMemory) -> None:
    seen: list[int] = []

    def extract(turns: Sequence[ChatTurn]) -> list[Extracted]:
        seen.append(len(turns))
        return []

    mem = make_memory(llm=ScriptedLLM(extract))
    messages = [{"role": "user", "content": f"message number {n}"} for n in range(95)]
    result = mem.bind("acme", user_id="u1", session_id="s1").ingest(messages)
    assert seen == [40, 40, 15] and result.ok


def test_scope_errors_are_validation_errors(make_memory: MakeMemory) -> None:
    mem = make_memory()
    with pytest.raises(ScopeError):
        mem.bind("acme", user_id="u1", session_id="s1").remember("x", scope="agent")


# -- answer ---------------------------------------------------------------------------------------


def test_answer_is_empty_when_nothing_relevant(make_memory: MakeMemory) -> None:
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    assert m.answer("where do I live?").text == ""  # nothing stored at all
    m.ingest([{"role": "user", "content": "I prefer tea over coffee."}])
    mem.flush()
    empty = m.answer("what is the boiling point of tungsten?")
    assert (empty.text, empty.used_ids) == ("", ())


def test_answer_skips_messages_with_outdated_statements(make_memory: MakeMemory) -> None:
    mem = make_memory()
    mem.bind("acme", user_id="u1", session_id="s1").ingest(
        [{"role": "user", "content": "I live in Berlin."}]
    )
    mem.bind("acme", user_id="u1", session_id="s2").ingest(
        [{"role": "user", "content": "I moved to Lisbon."}]
    )
    mem.flush()
    m = mem.bind("acme", user_id="u1", session_id="s3")
    result = m.answer("where do I live?", top_k=10)
    assert "Lisbon" in result.text
    assert all("Berlin" not in s.content for s in result.sources)


def test_the_question_being_answered_is_no_source_of_its_answer(make_memory: MakeMemory) -> None:
    """An agent stores the user's message, then answers it: that message (and the same words
    asked before) matches the question best, yet says nothing about the answer."""
    mem = make_memory()
    m = mem.bind("acme", user_id="u1", session_id="s1")
    m.remember("I use Helix as my code editor", memory_type="fact")
    mem.bind("acme", user_id="u1", session_id="s0").add_message("user", "Which editor do I use?")
    m.add_message("user", "Which editor do I use?")
    mem.flush()
    asked = [
        h for h in m.recall("Which editor do I use?", top_k=10).items if h.kind == "chat_message"
    ]
    assert asked  # recall itself returns them: the question's own words
    result = m.answer("Which editor do I use?")
    assert "Helix" in result.text
    assert all(s.content != "Which editor do I use?" for s in result.sources)


def test_answer_validates_the_question(make_memory: MakeMemory) -> None:
    mem = make_memory()
    with pytest.raises(ValidationError):
        mem.bind("acme", user_id="u1").answer("  ")


# -- CLI --------------------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], home: Path, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(["--home", str(home), *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_cli_ingest_history_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps(SESSION_1))
    jsonl = tmp_path / "conv3.jsonl"
    jsonl.write_text("\n".join(json.dumps(x) for x in SESSION_3) + "\n")

    status, out, _ = _cli(capsys, home, "--json", "--user", "u1", "ingest", str(conv))
    assert status == 0
    first = json.loads(out)
    assert first["memories_created"] == 3 and first["extractor"] == "offline-heuristic-v1"
    status, out, _ = _cli(capsys, home, "--json", "--user", "u1", "ingest", str(conv))
    assert json.loads(out)["memories_created"] == 0  # re-ingest: nothing new
    status, out, _ = _cli(capsys, home, "--user", "u1", "ingest", str(jsonl), "--llm", "offline")
    assert status == 0 and "2 superseded" in out  # Berlin -> Lisbon, vim -> emacs

    status, out, _ = _cli(capsys, home, "--json", "--user", "u1", "answer", "where do I live?")
    answer = json.loads(out)
    assert status == 0 and "Lisbon" in answer["text"] and len(answer["used_ids"]) == 1

    status, out, _ = _cli(capsys, home, "--json", "--user", "u1", "history", answer["used_ids"][0])
    chain = json.loads(out)["chain"]
    assert [("Berlin" in c["content"], "Lisbon" in c["content"]) for c in chain] == [
        (True, False),
        (False, True),
    ]
    status, out, _ = _cli(capsys, home, "--user", "u1", "history", answer["used_ids"][0])
    assert "[superseded by" in out and "[current]" in out

    status, _, err = _cli(capsys, home, "--user", "u2", "history", answer["used_ids"][0])
    assert status == 1 and "no memory" in err


def test_cli_ingest_object_form_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    conv = tmp_path / "conv.json"
    conv.write_text(json.dumps({"session_id": "chat-7", "messages": SESSION_1}))
    status, out, _ = _cli(capsys, home, "--json", "--user", "u1", "ingest", str(conv))
    assert status == 0 and json.loads(out)["session_id"] == "chat-7"

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\nnot json\n')
    status, _, err = _cli(capsys, home, "--user", "u1", "ingest", str(bad))
    assert status == 2 and "line 2" in err
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps([{"role": "robot", "content": "x"}]))
    status, _, err = _cli(capsys, home, "--user", "u1", "ingest", str(wrong))
    assert status == 2 and "messages[0].role" in err
    status, _, err = _cli(capsys, home, "--user", "u1", "ingest", str(tmp_path / "missing.json"))
    assert status == 2 and "cannot read" in err
    status, out, _ = _cli(capsys, home, "--user", "u1", "answer", "what is quantum chromodynamics?")
    assert status == 0 and "nothing relevant" in out


def test_models_results_are_frozen() -> None:
    from agentmem.models import IngestResult

    r = IngestResult("s", 1, 1, 0, 0, 0)
    assert r.ok
    with pytest.raises(AttributeError):
        r.session_id = "x"  # type: ignore[misc]


def test_bound_memory_methods_exist() -> None:
    for name in ("ingest", "history", "answer"):
        assert callable(getattr(BoundMemory, name))


def test_cli_ingest_reads_files_as_import_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file a Windows editor saved (byte-order mark), JSON Lines with a U+2028 left
    unescaped inside a string (json.dumps(ensure_ascii=False) writes it so), and a file that
    is not text: the first two are stored as import stores them, the third refused by name."""
    home = tmp_path / "home"
    lines = [
        {"role": "user", "content": "First line\u2028and the second, one message"},
        {"role": "assistant", "content": "Noted"},
    ]
    jsonl = tmp_path / "conv.jsonl"
    jsonl.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in lines), "utf-8")
    status, out, err = _cli(capsys, home, "--json", "--user", "u1", "ingest", str(jsonl))
    assert status == 0, err
    first = json.loads(out)
    assert first["messages_stored"] == 2
    bom = tmp_path / "notepad.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(SESSION_1).encode())
    status, out, err = _cli(capsys, home, "--json", "--user", "u1", "ingest", str(bom))
    assert status == 0, err
    binary = tmp_path / "photo.jpg"
    binary.write_bytes(b"\xff\xd8\xff\xe0" + bytes(range(256)))
    status, _, err = _cli(capsys, home, "--user", "u1", "ingest", str(binary))
    assert status == 2 and "photo.jpg: not UTF-8 text" in err and "Traceback" not in err
    with AgentMemory(home, background=False) as mem:
        m = mem.bind("default", user_id="u1", session_id=first["session_id"])
        assert [row.content for row in m.messages()] == [line["content"] for line in lines]
