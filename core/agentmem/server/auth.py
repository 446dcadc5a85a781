"""Who a request acts for: the API key it presents, the identity that key allows, its rate.

Every request but ``/health`` presents a key (``Authorization: Bearer <key>``, or
``X-API-Key: <key>``). The key decides the tenant; a request may name a user, agent and
session within it, but never another tenant, and never another user or agent than the key is
pinned to. Nothing in a request body, header, filter or metadata can widen that.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import AuthError, RateLimitError
from ..storage.records import RecordStore
from .keys import ApiKey, authenticate


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request presents (``Authorization: Bearer``, else ``X-API-Key``)."""
    auth = headers.get("authorization")
    if auth:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    key = headers.get("x-api-key")
    return key.strip() if key and key.strip() else None


def check_key(records: RecordStore, headers: Mapping[str, str]) -> ApiKey:
    """The live key of a request (read from the records on every request, so a key created or
    revoked by another process counts at once).

    Raises:
        AuthError: missing, invalid or revoked key.
    """
    return authenticate(records, presented_key(headers))


def require_admin(key: ApiKey) -> None:
    if not key.admin:
        raise AuthError(
            "this needs an admin key (`agentmem keys create --tenant T --admin`)",
            reason="admin_required",
            key_id=key.id,
        )


def require_operator(key: ApiKey) -> None:
    if not key.operator:
        raise AuthError(
            "this needs a server-operator key (`agentmem keys create --tenant T --operator`)",
            reason="operator_required",
            key_id=key.id,
        )


@dataclass
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    """A token bucket per key: ``rate`` requests per second on average, ``burst`` at once.

    Args:
        rate: Average requests per second per key; 0 turns limiting off.
        burst: Bucket size (requests a key may make at once).

    Example:
        >>> limiter = RateLimiter(rate=1, burst=1)
        >>> limiter.check("k1")
        >>> limiter.check("k1")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        agentmem.errors.RateLimitError: ...
    """

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = float(rate)
        self.burst = max(1, int(burst))
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def check(self, key_id: str) -> None:
        """Take one request from ``key_id``'s bucket.

        Raises:
            RateLimitError: the bucket is empty; ``retry_after`` says when one token is back.
        """
        if not self.enabled:
            return
        now = time.monotonic()
        with self._lock:
            bucket = self._buckets.get(key_id)
            if bucket is None:
                bucket = self._buckets[key_id] = _Bucket(float(self.burst), now)
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.rate)
            bucket.at = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return
            wait = (1.0 - bucket.tokens) / self.rate
        raise RateLimitError(
            f"rate limit of {self.rate:g} requests/s for this key exceeded; retry in "
            f"{math.ceil(wait)} s",
            retry_after=wait,
        )


__all__ = [
    "RateLimiter",
    "check_key",
    "presented_key",
    "require_admin",
    "require_operator",
]
