"""Configuration as small frozen value objects.

Environment variables are read only here, at the edge (``MemoryConfig.from_env``); nothing
mutates a config while a call is being served.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field, replace
from typing import Any

log = logging.getLogger("agentmem")

#: Seed-000 class priors for weighted RRF across scopes.
DEFAULT_SCOPE_WEIGHTS: dict[str, float] = {
    "session": 1.3,
    "history": 1.0,
    "user": 1.1,
    "agent": 1.0,
    "tenant": 1.0,
}

MAX_TOP_K = 20
MAX_QUERY_CHARS = 8192
#: Chat copies are capped at 16 KiB (seed 000); the full text is kept where the seed keeps it.
CHAT_COPY_MAX_BYTES = 16 * 1024
#: Largest single content accepted by any write (documents are chunked below this).
MAX_CONTENT_BYTES = 8 * 1024 * 1024
#: Tool outputs longer than this are indexed as an elided preview (full text kept).
TOOL_OUTPUT_PREVIEW_CHARS = 2000


@dataclass(frozen=True)
class MemoryConfig:
    """Tunables of an :class:`~agentmem.AgentMemory`.

    Example:
        >>> MemoryConfig(token_budget=500).token_budget
        500
    """

    token_budget: int = 1000
    """Default token budget of a recall (``AGENTMEM_TOKEN_BUDGET``)."""
    min_score: float = 0.3
    """Default calibrated-score cut-off (``AGENTMEM_MIN_SCORE``)."""
    rrf_k: int = 60
    """Reciprocal Rank Fusion constant."""
    scope_weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_SCOPE_WEIGHTS))
    """Class priors per scope (``AGENTMEM_RECALL_WEIGHT_<SCOPE>``)."""
    candidates: int = 40
    """Candidates fetched from each index per scope before fusion."""
    keyword_context: int = 2
    """Preceding chat messages indexed (keywords) as context of each chat message."""
    vector_context: int = 0
    """Preceding chat messages embedded as context of each chat message."""
    embed_batch_size: int = 256
    """Rows per embedding batch in the background indexer."""
    index_interval: float = 0.05
    """Seconds the background indexer waits to gather a batch."""
    durable_writes: bool = False
    """SQLite ``synchronous=FULL``: an acknowledged write also survives power loss or an OS
    crash (``AGENTMEM_SYNC=full``). The default, WAL with ``synchronous=NORMAL``, survives any
    process crash; a power loss may roll back the last few acknowledged writes."""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> MemoryConfig:
        """Build a config from ``AGENTMEM_*`` variables; bad values fall back to defaults."""
        env = os.environ if environ is None else environ
        kwargs: dict[str, Any] = {}
        budget = _positive_int(env.get("AGENTMEM_TOKEN_BUDGET"), "AGENTMEM_TOKEN_BUDGET")
        if budget is not None:
            kwargs["token_budget"] = budget
        min_score = _unit_float(env.get("AGENTMEM_MIN_SCORE"), "AGENTMEM_MIN_SCORE")
        if min_score is not None:
            kwargs["min_score"] = min_score
        weights = dict(DEFAULT_SCOPE_WEIGHTS)
        for scope in weights:
            name = f"AGENTMEM_RECALL_WEIGHT_{scope.upper()}"
            value = _non_negative_float(env.get(name), name)
            if value is not None:
                weights[scope] = value
        kwargs["scope_weights"] = weights
        sync = env.get("AGENTMEM_SYNC", "").strip().lower()
        if sync in ("full", "normal"):
            kwargs["durable_writes"] = sync == "full"
        elif sync:
            log.warning("ignoring AGENTMEM_SYNC=%r: use 'full' or 'normal'", sync)
        kwargs.update(overrides)
        return replace(cls(), **kwargs)


def _parse_float(raw: str | None, name: str) -> float | None:
    if raw is None or raw.strip() == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        log.warning("ignoring %s=%r: not a number", name, raw)
        return None
    if value != value or value in (float("inf"), float("-inf")):
        log.warning("ignoring %s=%r: not finite", name, raw)
        return None
    return value


def _non_negative_float(raw: str | None, name: str) -> float | None:
    value = _parse_float(raw, name)
    if value is not None and value < 0:
        log.warning("ignoring %s=%r: negative", name, raw)
        return None
    return value


def _unit_float(raw: str | None, name: str) -> float | None:
    value = _parse_float(raw, name)
    if value is not None and not 0.0 <= value <= 1.0:
        log.warning("ignoring %s=%r: outside [0, 1]", name, raw)
        return None
    return value


def _positive_int(raw: str | None, name: str) -> int | None:
    value = _parse_float(raw, name)
    if value is None:
        return None
    if value < 1 or value != int(value):
        log.warning("ignoring %s=%r: not a positive integer", name, raw)
        return None
    return int(value)
