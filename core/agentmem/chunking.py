"""Text shaping for storage: byte caps, elided tool-output previews, document chunks."""

from __future__ import annotations

import re

from .tokens import count_tokens

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n{2,}")


def cap_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes, never inside a character."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")


def elide(text: str, key: str, max_chars: int) -> str:
    """A preview of an oversized payload: head, an elision marker naming ``key``, tail."""
    if len(text) <= max_chars:
        return text
    head = max_chars * 3 // 4
    tail = max_chars // 5
    hidden = len(text) - head - tail
    return (
        f"{text[:head]}\n[... {hidden} characters elided; "
        f"read_tool_output(key={key!r}) returns the full output ...]\n{text[-tail:]}"
    )


def chunk_text(text: str, max_tokens: int = 200, overlap_sentences: int = 1) -> list[str]:
    """Split ``text`` into chunks of at most about ``max_tokens`` tokens.

    Splits on sentence and paragraph boundaries; a chunk repeats the last
    ``overlap_sentences`` sentences of the previous one so a fact that straddles a boundary
    stays findable. A single sentence longer than the limit is split on words.
    """
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]
    pieces: list[tuple[str, int]] = []
    for sentence in sentences:
        n = count_tokens(sentence)
        if n <= max_tokens:
            pieces.append((sentence, n))
            continue
        words = sentence.split()
        current: list[str] = []
        for word in words:
            current.append(word)
            if count_tokens(" ".join(current)) > max_tokens and len(current) > 1:
                current.pop()
                piece = " ".join(current)
                pieces.append((piece, count_tokens(piece)))
                current = [word]
        if current:
            piece = " ".join(current)
            pieces.append((piece, count_tokens(piece)))
    chunks: list[str] = []
    current_pieces: list[tuple[str, int]] = []
    size = 0
    for piece, n in pieces:
        if current_pieces and size + n > max_tokens:
            chunks.append(" ".join(p for p, _ in current_pieces))
            keep = current_pieces[-overlap_sentences:] if overlap_sentences else []
            if sum(k for _, k in keep) + n > max_tokens:
                keep = []
            current_pieces = list(keep)
            size = sum(k for _, k in keep)
        current_pieces.append((piece, n))
        size += n
    if current_pieces:
        chunks.append(" ".join(p for p, _ in current_pieces))
    return chunks or [text.strip()]
