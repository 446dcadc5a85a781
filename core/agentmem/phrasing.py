"""How a text is phrased, read without any index or model: whether it asks a question, and
its words as the keyword tokenizer cuts them. Recall reads both (:mod:`agentmem.recall.text`),
and so does the e5 embedder, which embeds a question and a remark differently."""

from __future__ import annotations

import re

#: A word as the keyword tokenizer cuts text: a run of letters and digits.
_WORD = re.compile(r"[^\W_]+")

#: What may follow a question mark at the end of a message: closing quotes and brackets.
_CLOSING = "\"')]}»”’」』"


def asks(text: str) -> bool:
    """Whether a message asks a question: it ends with a question mark (``?``, or the
    full-width ``？`` of Chinese and Japanese), closing quotes and brackets aside."""
    return text.rstrip().rstrip(_CLOSING).endswith(("?", "？"))


def words(text: str) -> list[str]:
    """The words of ``text`` as the keyword tokenizer cuts it, as written."""
    return _WORD.findall(text)
