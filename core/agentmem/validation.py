"""Input validation shared by every write and read path.

Each check raises :class:`~agentmem.errors.ValidationError` naming the field; none of them
touches storage, so a rejected call changes nothing.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from .config import MAX_CONTENT_BYTES, MAX_QUERY_CHARS, MAX_TOP_K
from .errors import ValidationError

log = logging.getLogger("agentmem")

_IDENTITY_MAX = 256


def text(
    value: Any, field: str, *, max_bytes: int = MAX_CONTENT_BYTES, allow_empty: bool = False
) -> str:
    """A non-empty string without NUL bytes or lone surrogates, at most ``max_bytes``.

    With ``allow_empty``, an empty or whitespace-only string is accepted and returned as
    ``""``.
    """
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        if allow_empty:
            return ""
        raise ValidationError(field, "must not be empty or whitespace")
    _clean(value, field)
    size = len(value.encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(field, f"is {size} bytes; the limit is {max_bytes}")
    return value


def _clean(value: str, field: str) -> None:
    if "\x00" in value:
        raise ValidationError(field, "contains a NUL byte")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(field, "contains a lone surrogate (not valid Unicode)") from exc


def identity(value: Any, field: str, *, required: bool = False) -> str | None:
    """An identity component: a short printable string, or None when not required."""
    if value is None:
        if required:
            raise ValidationError(field, "is required")
        return None
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(field, "must not be empty or whitespace")
    _clean(value, field)
    if len(value) > _IDENTITY_MAX or any(ord(c) < 32 for c in value):
        raise ValidationError(field, f"must be at most {_IDENTITY_MAX} printable characters")
    return value


def query(value: Any, field: str = "query") -> str:
    """A search query; longer than 8192 characters is truncated with a warning."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(field, "must not be empty or whitespace")
    _clean(value, field)
    if len(value) > MAX_QUERY_CHARS:
        log.warning("query truncated from %d to %d characters", len(value), MAX_QUERY_CHARS)
        return value[:MAX_QUERY_CHARS]
    return value


def choice(value: Any, field: str, allowed: Iterable[str]) -> str:
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise ValidationError(field, f"must be one of {', '.join(allowed)}; got {value!r}")
    return value


def choices(value: Any, field: str, allowed: Iterable[str]) -> tuple[str, ...] | None:
    """None, a single allowed string, or an iterable of allowed strings (deduplicated)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Iterable) or isinstance(value, Mapping | bytes):
        raise ValidationError(field, f"must be a list of strings, got {type(value).__name__}")
    allowed = tuple(allowed)
    out: list[str] = []
    for item in value:
        choice(item, field, allowed)
        if item not in out:
            out.append(item)
    if not out:
        raise ValidationError(field, "must not be an empty list (pass None for all)")
    return tuple(out)


def top_k(value: Any, field: str = "top_k") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an integer, got {type(value).__name__}")
    if not 1 <= value <= MAX_TOP_K:
        raise ValidationError(field, f"must be between 1 and {MAX_TOP_K}; got {value}")
    return value


def unit_float(value: Any, field: str, *, allow_none: bool = True) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, f"must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValidationError(field, f"must be between 0 and 1; got {value}")
    return float(value)


#: The largest count a ``limit``-like argument takes.
MAX_COUNT = 2**62


def positive_int(value: Any, field: str, *, allow_none: bool = True) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(field, f"must be a positive integer; got {value!r}")
    if value > MAX_COUNT:  # SQL counts (LIMIT) are 64-bit
        raise ValidationError(field, f"must be at most {MAX_COUNT}; got {value}")
    return value


def metadata(value: Any, field: str = "metadata") -> dict[str, Any]:
    """A JSON-serialisable dict with string keys (deep-copied through JSON)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a dict, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise ValidationError(field, f"keys must be strings; got {key!r}")
    try:
        encoded = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(field, f"is not JSON-serialisable: {exc}") from exc
    _clean(encoded, field)
    if len(encoded.encode("utf-8")) > 64 * 1024:
        raise ValidationError(field, "is larger than 64 KiB when encoded as JSON")
    decoded: dict[str, Any] = json.loads(encoded)
    if (wide := _wide_int(decoded)) is not None:
        raise ValidationError(field, f"holds an integer outside 64 bits: {wide}")
    return decoded


def _wide_int(value: Any) -> int | None:
    """An integer of a JSON value that 64 bits (signed, or unsigned) cannot hold, if any: the
    server's JSON encoder, and most readers of JSON, cannot."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if not -(2**63) <= value < 2**64 else None
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    )
    for child in children:
        if (wide := _wide_int(child)) is not None:
            return wide
    return None


def event_time(value: Any, field: str = "event_time") -> datetime | None:
    """None, an aware or naive datetime (naive means UTC), or an ISO-8601 string."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError as exc:
            raise ValidationError(field, f"is not an ISO-8601 timestamp: {value!r}") from exc
    if not isinstance(value, datetime):
        raise ValidationError(field, f"must be a datetime or ISO string, got {type(value)}")
    when: datetime = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return when.astimezone(UTC)
