"""The speaker of a message, read the same way by every consumer (:mod:`agentmem.speakers`).

A leading "Name: " in content names the speaker exactly as ``metadata["speaker"]`` does, for
extraction (who "I" is), session summaries and chunks, restatement keys and ranking; labels,
URLs, times and tool fields are no speakers. Chats written for these tests.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentmem import AgentMemory
from agentmem.llm import ChatTurn, OfflineLLM
from agentmem.speakers import metadata_speaker, resolve_speaker, speaker_prefix
from agentmem.write.keys import restatement

MakeMemory = Callable[..., AgentMemory]
MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


# -- the rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "name"),
    [
        ("Caroline: I went to a support group.", "Caroline"),
        ("Dr. Ada Lovelace: I wrote the first program.", "Dr. Ada Lovelace"),
        ("Jean-Luc: Tea, Earl Grey, hot.", "Jean-Luc"),
        ("O'Brien: I fixed the transporter.", "O'Brien"),
        ("Zoë: Ich wohne in Köln.", "Zoë"),
        ("Mel:  two spaces are fine", "Mel"),
    ],
)
def test_a_name_prefix_is_a_speaker(content: str, name: str) -> None:
    found = speaker_prefix(content)
    assert found is not None and found[0] == name
    assert not found[1].startswith((" ", ":"))


@pytest.mark.parametrize(
    "content",
    [
        "Note: the meeting moved to Friday.",
        "Error: connection refused",
        "TODO: renew the passport",
        "Re: our trip",
        "Fwd: tickets",
        "Status: delivered",
        "Update: I moved to Lisbon.",
        "Meeting Notes: budget approved",
        "http://example.com/a: b",
        "https://example.com",
        "10:30 works for me",
        "Monday: gym at 7",
        "Diet: vegetarian, no shellfish",
        "Ingredients: 2 eggs, 200 g flour",
        "Hello: is anyone there?",
        "FYI: the office is closed",
        "Caroline:no space after the colon",
        "caroline: lower case",
        "R2D2: beep",
        "A: yes",
        "The Plan: go north",
        "Ask me at 10:30: I am free",
        "Caroline went to the group: it was great",
        "A Very Long Name That Is Surely Not A Person: hello",
        "Caroline: ",
    ],
)
def test_labels_urls_times_and_fields_are_no_speakers(content: str) -> None:
    assert speaker_prefix(content) is None


def test_metadata_wins_and_a_repeated_prefix_is_dropped() -> None:
    assert resolve_speaker("user", "Caroline: I went.", "Caroline") == ("Caroline", "I went.")
    assert resolve_speaker("user", "caroline: I went.", "Caroline") == (
        "Caroline",
        "caroline: I went.",  # lower case is no name: the content is kept as written
    )
    assert resolve_speaker("user", "Melanie: I went.", "Caroline") == (
        "Caroline",
        "Melanie: I went.",
    )
    assert resolve_speaker("user", "I went.", "Caroline") == ("Caroline", "I went.")


def test_people_and_assistants_name_speakers_tools_and_the_system_do_not() -> None:
    assert resolve_speaker("user", "Jon: I quit.", None) == ("Jon", "I quit.")
    assert resolve_speaker("assistant", "Gina: I opened a store.", None) == (
        "Gina",
        "I opened a store.",
    )
    assert resolve_speaker(None, "Gina: I opened a store.", None) == ("Gina", "I opened a store.")
    assert resolve_speaker("tool", "Courier: parcel left at door", None) == (
        None,
        "Courier: parcel left at door",
    )
    assert resolve_speaker("system", "Jon: be brief", None) == (None, "Jon: be brief")


def test_metadata_speaker() -> None:
    assert metadata_speaker({"speaker": " Caroline "}) == "Caroline"
    assert metadata_speaker({"speaker": "  "}) is None
    assert metadata_speaker({"speaker": 3}) is None
    assert metadata_speaker({}) is None
    assert metadata_speaker(None) is None


# -- every consumer reads it ------------------------------------------------------------------

CHAT = [
    ("user", "Jon", "Hey Gina! Lost my job as a banker yesterday."),
    ("assistant", "Gina", "Oh no! I opened my own clothing store last week."),
    ("user", "Jon", "I'm starting a dance studio next month."),
    ("assistant", "Gina", "I live in Rome now, by the way."),
]


def _turns(form: str) -> list[ChatTurn]:
    out = []
    for i, (role, name, text) in enumerate(CHAT):
        when = MONDAY + timedelta(seconds=i)
        if form == "metadata":
            out.append(ChatTurn(role, text, f"t{i}", name, when))
        else:
            out.append(ChatTurn(role, f"{name}: {text}", f"t{i}", None, when))
    return out


def _messages(form: str) -> list[dict[str, Any]]:
    out = []
    for i, (role, name, text) in enumerate(CHAT):
        msg: dict[str, Any] = {"role": role, "event_time": MONDAY + timedelta(seconds=i)}
        if form == "metadata":
            msg.update(content=text, metadata={"speaker": name})
        else:
            msg["content"] = f"{name}: {text}"
        out.append(msg)
    return out


def test_extraction_names_the_speaker_of_either_form() -> None:
    llm = OfflineLLM()
    by_metadata = [(e.content, e.topic_key) for e in llm.extract(_turns("metadata"))]
    by_content = [(e.content, e.topic_key) for e in llm.extract(_turns("content"))]
    assert by_content == by_metadata
    assert ("Gina lives in Rome.", "gina.residence") in by_content
    assert any(c.startswith("Gina opened Gina's own clothing store") for c, _ in by_content)


def test_summaries_name_the_speakers_of_either_form() -> None:
    llm = OfflineLLM()
    summary = llm.summarize(_turns("content"))
    assert summary == llm.summarize(_turns("metadata"))
    assert summary.startswith("Jon and Gina talked on 8 May 2023.")
    assert "Gina" in summary.split(".", 1)[1]


def test_restatement_key_of_either_form() -> None:
    role, name, text = CHAT[1]
    by_metadata = restatement("chat_message", role, text, name, MONDAY)
    assert by_metadata.startswith("Gina opened")
    assert restatement("chat_message", role, f"{name}: {text}", None, MONDAY) == by_metadata
    tool = restatement("chat_message", "tool", "Status: I shipped the parcel.", None, MONDAY)
    assert "Status" not in tool


def _ingest(mem: AgentMemory, form: str) -> tuple[list[str], str, list[str]]:
    """(memories, session summary, chunk texts) of ``_messages(form)`` ingested and closed."""
    m = mem.bind("acme", user_id=f"u-{form}", session_id=f"s-{form}")
    result = m.ingest(_messages(form))
    assert result.ok, result.errors
    memories = sorted(m.get(i).content for i in result.memory_ids)
    closed = m.close_session()
    detail = m.session_detail(f"s-{form}")
    return memories, detail.summary or "", [m.get(i).content for i in closed.chunk_ids]


def test_ingest_reads_a_content_prefix_as_the_speaker(make_memory: MakeMemory) -> None:
    mem = make_memory()
    memories, summary, chunks = _ingest(mem, "content")
    expected_memories, expected_summary, expected_chunks = _ingest(mem, "metadata")
    assert memories == expected_memories
    assert any(c.startswith("Gina lives in Rome") for c in memories)
    assert summary == expected_summary and summary.startswith("Jon and Gina talked")
    assert chunks and chunks == expected_chunks
    assert "Gina: Oh no!" in chunks[0] and "assistant:" not in chunks[0]
