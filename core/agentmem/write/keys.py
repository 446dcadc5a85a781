"""Restatement keys: what a chat message states, self-contained, indexed beside its text.

People ask about a conversation with names and dates ("When did Caroline go to the support
group?"), while the turn itself says "I went to a support group yesterday". The offline
extractor restates a turn's statements self-contained: the speaker's name (or "the user")
for "I", relative dates resolved against the message time ("Caroline went to a LGBTQ
support group on 7 May 2023"), small talk, questions and remarks about the listener left
out. Both indexes see that restatement after the message's own text (the stored content is
unchanged, and so is every hit), so the turn is found by either wording: the fact-augmented
keys of the LongMemEval paper, computed per message by rules at index time, with no model
call.

Only chat messages get one (memories, tool outputs and documents are indexed as written),
and only messages up to :data:`RESTATE_MAX_CHARS`: a longer one is rarely a conversational
statement, and the embedder would cut the appended restatement off anyway. The extractor
handles one message at a time (over the LoCoMo dev split, restating each turn alone gives
exactly what restating its whole session gives), in about 0.5 ms per message.
"""

from __future__ import annotations

from datetime import datetime

from ..llm.base import ChatTurn
from ..llm.offline.extract import extract

#: Messages longer than this many characters get no restatement.
RESTATE_MAX_CHARS = 1000


def restatement(
    kind: str, role: str | None, content: str, speaker: str | None, when: datetime | None
) -> str:
    """The self-contained restatement of a chat message's statements ("" when it states
    nothing, or is not a chat message).

    Example:
        >>> restatement("chat_message", "user", "I moved to Lisbon last year", None, None)
        'The user lives in Lisbon (the user moved to Lisbon last year).'
    """
    if kind != "chat_message" or not content or len(content) > RESTATE_MAX_CHARS:
        return ""
    turn = ChatTurn(role or "user", content, id="m", speaker=speaker, time=when)
    key = " ".join(e.content for e in extract([turn]))
    # a turn already self-contained ("Nora runs every morning.") restates to itself: indexed
    # twice it would only double its terms and the tokens the embedder has to read
    return "" if key == content.strip() else key


def with_key(text: str, key: str) -> str:
    """An index text followed by its restatement key, if any."""
    return f"{text}\n{key}" if key else text
