"""Writing LoCoMo conversations into a store through the public API, one message per turn."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ...memory import AgentMemory
from ...write.index_text import index_text
from .data import Conversation, Turn

#: The tenant every conversation is written to (one user per conversation).
TENANT = "locomo"


def turn_text(turn: Turn, captions: bool) -> str:
    """The content a turn is ingested with (its text, plus its image caption if asked)."""
    if captions and turn.caption:
        return f"{turn.text} [shared an image: {turn.caption}]".strip()
    return turn.text


def turn_documents(conv: Conversation, captions: bool = False) -> list[tuple[str, str]]:
    """``(dia_id, text)`` per ingested turn, in order: what the peers index for a turn.

    The text is what agentmem's indexes see for the turn's chat message
    (:func:`agentmem.write.index_text.index_text`: ``"Speaker: content"``), without the
    preceding-turn context agentmem adds to its own keyword index.
    """
    return [
        (turn.dia_id, index_text(text, turn.speaker or None))
        for session in conv.sessions
        for turn in session.turns
        if (text := turn_text(turn, captions))
    ]


def ingest_conversation(
    mem: AgentMemory, conv: Conversation, captions: bool, close_sessions: bool = False
) -> int:
    """Write ``conv``, one session at a time (closed after writing it with
    ``close_sessions``); returns the number of messages written."""
    n = 0
    for session in conv.sessions:
        if not session.turns:
            continue
        m = mem.bind(
            TENANT, user_id=conv.sample_id, session_id=f"{conv.sample_id}:s{session.number}"
        )
        messages = []
        for i, turn in enumerate(session.turns):
            text = turn_text(turn, captions)
            if not text:
                continue
            role = "assistant" if turn.speaker and turn.speaker == conv.speaker_b else "user"
            meta: dict[str, Any] = {"dia_id": turn.dia_id, "session": session.number}
            if turn.speaker:
                meta["speaker"] = turn.speaker
            messages.append(
                {
                    "role": role,
                    "content": text,
                    "metadata": meta,
                    "event_time": None
                    if session.start is None
                    else session.start + timedelta(seconds=i),
                }
            )
        m.add_messages(messages)
        if close_sessions:
            m.close_session()
        n += len(messages)
    return n
