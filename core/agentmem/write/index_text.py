"""What the indexes see of a row: its text (with speaker, key and context) and filter fields.

Both indexes index :func:`index_text` (the content, prefixed by the speaker a chat message's
metadata names) followed by a chat message's restatement key (:mod:`.keys`: what it states,
in the third person with resolved dates); the keyword index also gets camelCase words split
apart and, for a chat message, a few preceding messages of its session as context, so a
reply like "Yes, last Tuesday!" is findable by what it answers. Once the messages are
embedded, a preceding message stays context only if it asks something or is on the same
topic (:func:`on_topic`): after a change of subject the words of the old one would make the
new message match queries about it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..speakers import metadata_speaker
from ..storage.keyword_index import KeywordDoc
from ..storage.rows import Row, TextFeatures
from ..tokens import count_tokens
from .keys import restatement, with_key

#: Characters of each preceding message included as context of a chat message.
CONTEXT_CHARS = 300


def keyword_doc(row: Row, context: str = "") -> KeywordDoc:
    item = row.item
    text = with_key(keyword_text(item.content, metadata_speaker(item.metadata)), row_key(row))
    return KeywordDoc(
        id=item.id,
        tenant=item.tenant_id,
        partition=row.partition,
        session=item.session_id or "",
        kind=item.kind,
        memory_type=item.memory_type or "",
        scope=item.scope,
        content=f"{context}\n{text}" if context else text,
    )


_CAMEL = re.compile(r"\b[A-Za-z]*[a-z][A-Z][A-Za-z]*\b")
_CAMEL_SPLIT = re.compile(r"(?<=[a-z])(?=[A-Z])")


def index_text(content: str, speaker: str | None) -> str:
    """The text both indexes see for a row (content plus its speaker, if any)."""
    return f"{speaker}: {content}" if speaker else content


def row_text(row: Row) -> str:
    """:func:`index_text` of a stored row."""
    return index_text(row.item.content, metadata_speaker(row.item.metadata))


def row_key(row: Row) -> str:
    """The restatement key of a stored row ("" for none; see :mod:`.keys`)."""
    item = row.item
    return restatement(
        item.kind, item.role, item.content, metadata_speaker(item.metadata), item.event_time
    )


def context_text(before: Sequence[Row]) -> str:
    """The context a chat message is indexed with: the preceding messages it keeps."""
    return "\n".join(row_text(r)[:CONTEXT_CHARS] for r in before)


def on_topic(
    row: Row,
    before: Sequence[Row],
    vectors: Mapping[str, np.ndarray],
    min_similarity: float,
) -> list[Row]:
    """The messages of ``before`` (preceding ``row`` in its session) that are its context: a
    question ("?": the message may be its answer), or a message whose embedding has cosine
    similarity ``min_similarity`` or more with the row's. Until both are embedded, or with
    ``min_similarity`` 0 or less, every one is.
    """
    own = vectors.get(row.item.id)
    if own is None or min_similarity <= 0:
        return list(before)
    kept = []
    for prev in before:
        vec = vectors.get(prev.item.id)
        if vec is None or "?" in prev.item.content or float(own @ vec) >= min_similarity:
            kept.append(prev)
    return kept


def vector_text(row: Row) -> str:
    """What the vector index embeds for a row: :func:`row_text` and its restatement key."""
    return with_key(row_text(row), row_key(row))


def keyword_text(content: str, speaker: str | None) -> str:
    """What the keyword index sees: :func:`index_text` plus camelCase words split apart
    (``CrashLoopBackOff`` also indexes as ``Crash Loop Back Off``)."""
    text = index_text(content, speaker)
    if not _CAMEL_SPLIT.search(text):  # cheap test first: most texts have no camelCase
        return text
    parts = {" ".join(_CAMEL_SPLIT.split(m.group(0))) for m in _CAMEL.finditer(text)}
    return f"{text}\n{' '.join(sorted(parts))}" if parts else text


def analysed_terms(
    analyze: Callable[[str], list[str]], content: str, speaker: str | None
) -> list[str]:
    """The analysed terms of a row's keyword text without its context (what recall scores:
    the context only helps a reply be found, it is not what the reply says)."""
    return analyze(keyword_text(content, speaker))


def text_features(
    analyze: Callable[[str], list[str]], content: str, speaker: str | None
) -> TextFeatures:
    """The :class:`~agentmem.storage.rows.TextFeatures` stored with an indexed row."""
    terms = analysed_terms(analyze, content, speaker)
    return TextFeatures(" ".join(dict.fromkeys(terms)), len(terms), count_tokens(content))


def vector_metadata(row: Row) -> dict[str, str]:
    item = row.item
    return {
        "session_id": item.session_id or "",
        "kind": item.kind,
        "memory_type": item.memory_type or "",
        "scope": item.scope,
    }
