"""Configuration: small frozen value objects, and the one place the environment is read.

Every ``AGENTMEM_*`` variable (and ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``) is read
here, by the ``from_env`` constructors, into frozen objects:

==================  =========================================================================
object              tunes
==================  =========================================================================
MemoryConfig        recall defaults (token budget, min_score, scope weights), indexing,
                    write durability
TierConfig          working memory and the session tiers
JudgeConfig         the supersession judge
RetentionPolicy     anonymization of retired rows
RerankConfig        the HTTP reranker (TEI)
LLMConfig           which LLM does extraction, summaries, the judge and answers
ServerConfig        ``agentmem serve``: request limits and its background jobs
Settings            all of the above, built once per ``AgentMemory``
==================  =========================================================================

An ``AgentMemory`` builds its :class:`Settings` once, at open (``Settings.from_env()`` unless
one is passed in), and never reads the environment again while serving a call. A malformed
value is logged and the default kept, except where a wrong value would be dangerous to guess
(the reranker URL): that raises ``ValidationError``. Booleans accept 1/0, true/false, yes/no,
on/off.

Example:
    >>> Settings.from_env({"AGENTMEM_MIN_SCORE": "0.25"}).memory.min_score
    0.25
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from .errors import ValidationError

log = logging.getLogger("agentmem.config")

#: Every ``AGENTMEM_*`` variable agentmem reads (``tests/core/test_config.py`` checks the
#: source names no other), beside ``AGENTMEM_RECALL_WEIGHT_<SCOPE>`` per scope: any other
#: set in the environment is a typo, which :meth:`Settings.from_env` reports.
VARIABLES = frozenset(
    """AGENT API_KEY CHROMA_URL CHUNK_MESSAGES DRAIN_SECONDS EMBEDDER EMBEDDER_NAME
    EXACT_SEARCH_MB HOME JOB_RETRY_SECONDS JUDGE_INTERVAL KEYWORD_CONTEXT
    KEYWORD_CONTEXT_SIMILARITY LLM LLM_MAX_RETRIES LLM_MODEL LLM_TIMEOUT MAX_BODY_BYTES
    MEMORY_ANONYMIZE_BATCH_SIZE MEMORY_ANONYMIZE_DRY_RUN MEMORY_ANONYMIZE_SOFT_TTL_DAYS
    MEMORY_ANONYMIZE_SUP_TTL_DAYS MEMORY_JUDGE_BATCH_SIZE MEMORY_JUDGE_ENABLED
    MEMORY_JUDGE_MODEL MEMORY_JUDGE_THRESHOLD MEMORY_JUDGE_TOPK METRICS_PORT MID_TERM_SESSIONS
    MIN_SCORE MODEL_WINDOW MODEL_WINDOW_OVERRIDE RATE_BURST RATE_LIMIT RECORDS_URL
    RERANKER_TIMEOUT RERANKER_URL RETENTION_INTERVAL SERVER_EMBED_THREADS SESSION
    SESSION_IDLE_SECONDS SUMMARY_TIMEOUT SYNC TENANT TOKEN_BUDGET URL USER WORKING_MAX_MESSAGES
    WORKING_TAIL""".split()
)
_said: set[str] = set()  # the warnings already logged, each said once per process


def _warn_once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        log.warning("%s", message)


Environ = Mapping[str, str]

#: Class priors for weighted RRF across recall scopes (a weight of 0 leaves the scope out of
#: ``scope="any"``).
DEFAULT_SCOPE_WEIGHTS: dict[str, float] = {
    "session": 1.3,
    "history": 1.0,
    "user": 1.1,
    "agent": 1.0,
    "tenant": 1.0,
    "knowledge": 1.0,
}

MAX_TOP_K = 20
MAX_QUERY_CHARS = 8192
#: The recallable copy of a chat message is capped at 16 KiB; the full text is kept as a
#: payload readable with ``read_tool_output``.
CHAT_COPY_MAX_BYTES = 16 * 1024
#: Largest single content accepted by any write (documents are chunked below this).
MAX_CONTENT_BYTES = 8 * 1024 * 1024
#: Tool outputs longer than this are indexed as an elided preview (full text kept).
TOOL_OUTPUT_PREVIEW_CHARS = 2000


# -- parsing (one spelling of every kind of value) -----------------------------------------------
def _raw(env: Environ, name: str) -> str | None:
    value = env.get(name)
    return None if value is None or not value.strip() else value.strip()


def _float(
    env: Environ, name: str, *, low: float | None = None, high: float | None = None
) -> float | None:
    raw = _raw(env, name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        _warn_once(f"ignoring {name}={raw!r}: not a number")
        return None
    if not math.isfinite(value):
        _warn_once(f"ignoring {name}={raw!r}: not finite")
        return None
    if (low is not None and value < low) or (high is not None and value > high):
        _warn_once(f"ignoring {name}={raw!r}: outside [{low}, {high}]")
        return None
    return value


def _int(env: Environ, name: str, *, low: int = 1) -> int | None:
    value = _float(env, name)
    if value is None:
        return None
    if value != int(value) or value < low:
        _warn_once(f"ignoring {name}={env.get(name)!r}: not an integer >= {low}")
        return None
    return int(value)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _flag(env: Environ, name: str) -> bool | None:
    raw = _raw(env, name)
    if raw is None:
        return None
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    _warn_once(f"ignoring {name}={raw!r}: use true or false")
    return None


def _set(kwargs: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        kwargs[key] = value


def _environ(environ: Environ | None) -> Environ:
    return os.environ if environ is None else environ


# -- the objects ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class MemoryConfig:
    """Recall defaults, indexing and durability of an :class:`~agentmem.AgentMemory`.

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
    """Class priors per scope (``AGENTMEM_RECALL_WEIGHT_<SCOPE>``); 0 leaves a scope out of
    ``scope="any"``."""
    candidates: int = 20
    """Candidates fetched from each index per scope before fusion. 40 cost a third more
    recall time for the same recall (LoCoMo dev R@10 at defaults 0.815 vs 0.812, R@5 and
    R@20 higher at 20; bench Recall@10 equal or higher at 10k and 100k)."""
    keyword_context: int = 2
    """Preceding chat messages of its session indexed (keywords) with each chat message
    (``AGENTMEM_KEYWORD_CONTEXT``), so a turn is found by the words of the turns it follows.
    In a conversation that is worth LoCoMo dev R@10 0.745 -> 0.814. Context off a message's
    topic is left out (:attr:`keyword_context_similarity`). A change of either applies to
    rows indexed from then on; ``agentmem reindex --keywords-only`` redoes the others without
    embedding anything (6.3 s for 100k rows)."""
    keyword_context_similarity: float = 0.2
    """Once a chat message is embedded, a preceding message stays in its keyword context
    only if it asks a question or its embedding's cosine similarity with the message's is at
    least this (``AGENTMEM_KEYWORD_CONTEXT_SIMILARITY``; 0: every preceding message does):
    after a change of subject, the old subject's words would make the message match queries
    about it. With every keyword entry written once, LoCoMo dev R@10 at default settings is
    0.812 with 0, 0.815 at 0.2, 0.811 at 0.3 (0.814 choosing the threshold on two
    conversations and scoring the third); the synthetic bench's Recall@10 at 100k memories,
    whose sessions are unrelated statements, is 0.957 with 0 (before the name-phrase
    search) and 0.997 at 0.2."""
    vector_context: int = 0
    """Preceding chat messages embedded as context of each chat message."""
    embed_batch_size: int = 256
    """Rows per embedding batch in the background indexer."""
    index_interval: float = 0.05
    """Seconds the background indexer waits to gather a batch."""
    pending_scan: int = 256
    """Rows not yet in an index that a recall reads and scores itself, so a write is
    recallable at once (read-your-writes); past this backlog, the newest are scored and the
    result is ``degraded``."""
    exact_search_mb: int = 256
    """Memory for in-process copies of small vector collections (up to 20,000 vectors each),
    searched exactly instead of through Chroma: ~0.1 ms instead of ~1 ms at 1,000 vectors
    (``AGENTMEM_EXACT_SEARCH_MB``; 0 turns it off). Only for an embedded store this process
    writes; idle collections make room for busy ones."""
    durable_writes: bool = False
    """SQLite ``synchronous=FULL``: an acknowledged write also survives power loss or an OS
    crash (``AGENTMEM_SYNC=full``). The default, WAL with ``synchronous=NORMAL``, survives any
    process crash; a power loss may roll back the last few acknowledged writes."""

    @classmethod
    def from_env(cls, environ: Environ | None = None, **overrides: Any) -> MemoryConfig:
        """Build from ``AGENTMEM_*`` variables; bad values fall back to defaults (logged)."""
        env = _environ(environ)
        kwargs: dict[str, Any] = {}
        _set(kwargs, "token_budget", _int(env, "AGENTMEM_TOKEN_BUDGET"))
        _set(kwargs, "min_score", _float(env, "AGENTMEM_MIN_SCORE", low=0.0, high=1.0))
        _set(kwargs, "exact_search_mb", _int(env, "AGENTMEM_EXACT_SEARCH_MB", low=0))
        _set(kwargs, "keyword_context", _int(env, "AGENTMEM_KEYWORD_CONTEXT", low=0))
        _set(
            kwargs,
            "keyword_context_similarity",
            _float(env, "AGENTMEM_KEYWORD_CONTEXT_SIMILARITY", low=0.0, high=1.0),
        )
        weights = dict(DEFAULT_SCOPE_WEIGHTS)
        for scope in weights:
            value = _float(env, f"AGENTMEM_RECALL_WEIGHT_{scope.upper()}", low=0.0)
            if value is not None:
                weights[scope] = value
        kwargs["scope_weights"] = weights
        sync = _raw(env, "AGENTMEM_SYNC")
        if sync is not None:
            if sync.lower() in ("full", "normal"):
                kwargs["durable_writes"] = sync.lower() == "full"
            else:
                _warn_once(f"ignoring AGENTMEM_SYNC={sync!r}: use 'full' or 'normal'")
        kwargs.update(overrides)
        return dataclasses.replace(cls(), **kwargs)


@dataclass(frozen=True)
class TierConfig:
    """Tunables of the memory tiers and of working memory.

    Example:
        >>> TierConfig(mid_term_sessions=3).mid_term_sessions
        3
    """

    mid_term_sessions: int = 10
    """Closed sessions kept mid-term per conversation (``AGENTMEM_MID_TERM_SESSIONS``)."""
    summary_timeout: float = 30.0
    """Seconds the session summary may take before it is skipped
    (``AGENTMEM_SUMMARY_TIMEOUT``; 0 skips it)."""
    summary_max_words: int = 200
    """Length of a session summary."""
    chunk_messages: int = 8
    """Messages per session chunk at most (``AGENTMEM_CHUNK_MESSAGES``)."""
    chunk_max_tokens: int = 400
    """Tokens per session chunk at most (a single longer message is its own chunk)."""
    working_max_messages: int = 50
    """Window size: past this many messages the oldest roll off into the reference summary
    until half remain (``AGENTMEM_WORKING_MAX_MESSAGES``)."""
    working_tail: int = 4
    """Messages kept after a budget trip or a manual compaction (``AGENTMEM_WORKING_TAIL``)."""
    model_window: int = 200_000
    """Model context window (tokens) when ``context_messages`` is given none
    (``AGENTMEM_MODEL_WINDOW``)."""
    model_window_override: int | None = None
    """Forces the model window, to trip compaction in short test conversations
    (``AGENTMEM_MODEL_WINDOW_OVERRIDE``; logs a warning; never set it in production)."""
    reference_max_words: int = 400
    """A reference summary longer than this is condensed by the LLM."""

    @classmethod
    def from_env(cls, environ: Environ | None = None, **overrides: Any) -> TierConfig:
        """Build from ``AGENTMEM_*`` variables; bad values fall back to defaults (logged)."""
        env = _environ(environ)
        kwargs: dict[str, Any] = {}
        for name, var in {
            "mid_term_sessions": "AGENTMEM_MID_TERM_SESSIONS",
            "chunk_messages": "AGENTMEM_CHUNK_MESSAGES",
            "working_max_messages": "AGENTMEM_WORKING_MAX_MESSAGES",
            "working_tail": "AGENTMEM_WORKING_TAIL",
            "model_window": "AGENTMEM_MODEL_WINDOW",
            "model_window_override": "AGENTMEM_MODEL_WINDOW_OVERRIDE",
        }.items():
            _set(kwargs, name, _int(env, var))
        _set(kwargs, "summary_timeout", _float(env, "AGENTMEM_SUMMARY_TIMEOUT", low=0.0))
        if "model_window_override" in kwargs:
            # said at every read, not once: an alarm each store opened with it should raise
            log.warning(
                "AGENTMEM_MODEL_WINDOW_OVERRIDE=%s is set: the model window is forced for "
                "working-memory compaction; production must not set it",
                kwargs["model_window_override"],
            )
        kwargs.update(overrides)
        return dataclasses.replace(cls(), **kwargs)


@dataclass(frozen=True)
class JudgeConfig:
    """Tunables of the supersession judge.

    Example:
        >>> JudgeConfig.from_env({"AGENTMEM_MEMORY_JUDGE_TOPK": "3"}).top_k
        3
    """

    enabled: bool = True
    """False: rows are marked judged without a judge call (``AGENTMEM_MEMORY_JUDGE_ENABLED``,
    or ``AGENTMEM_MEMORY_JUDGE_MODEL`` set to an empty string)."""
    threshold: float = 0.7
    """Cosine-distance cut-off: candidates have distance < threshold
    (``AGENTMEM_MEMORY_JUDGE_THRESHOLD``)."""
    top_k: int = 5
    """Candidates passed to the judge per new memory (``AGENTMEM_MEMORY_JUDGE_TOPK``)."""
    batch_size: int = 20
    """Unjudged rows processed per batch (``AGENTMEM_MEMORY_JUDGE_BATCH_SIZE``)."""

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> JudgeConfig:
        env = _environ(environ)
        kwargs: dict[str, Any] = {}
        _set(kwargs, "enabled", _flag(env, "AGENTMEM_MEMORY_JUDGE_ENABLED"))
        if "AGENTMEM_MEMORY_JUDGE_MODEL" in env and not env["AGENTMEM_MEMORY_JUDGE_MODEL"].strip():
            kwargs["enabled"] = False
        threshold = _float(env, "AGENTMEM_MEMORY_JUDGE_THRESHOLD")
        if threshold is not None:  # a distance: clamped into [0, 1]
            kwargs["threshold"] = min(max(threshold, 0.0), 1.0)
        _set(kwargs, "top_k", _int(env, "AGENTMEM_MEMORY_JUDGE_TOPK"))
        _set(kwargs, "batch_size", _int(env, "AGENTMEM_MEMORY_JUDGE_BATCH_SIZE"))
        return cls(**kwargs)


@dataclass(frozen=True)
class RetentionPolicy:
    """TTLs and batch size of the retention (anonymization) run.

    Example:
        >>> RetentionPolicy.from_env({"AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN": "true"}).dry_run
        True
    """

    soft_ttl_days: float = 30
    """Days after a soft delete before the row is anonymized
    (``AGENTMEM_MEMORY_ANONYMIZE_SOFT_TTL_DAYS``)."""
    sup_ttl_days: float = 90
    """Days after a supersede before the row is anonymized
    (``AGENTMEM_MEMORY_ANONYMIZE_SUP_TTL_DAYS``)."""
    batch_size: int = 100
    """Rows per transaction (``AGENTMEM_MEMORY_ANONYMIZE_BATCH_SIZE``)."""
    dry_run: bool = False
    """Report only; change nothing (``AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN``)."""

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> RetentionPolicy:
        env = _environ(environ)
        kwargs: dict[str, Any] = {}
        _set(
            kwargs, "soft_ttl_days", _float(env, "AGENTMEM_MEMORY_ANONYMIZE_SOFT_TTL_DAYS", low=0.0)
        )
        _set(kwargs, "sup_ttl_days", _float(env, "AGENTMEM_MEMORY_ANONYMIZE_SUP_TTL_DAYS", low=0.0))
        _set(kwargs, "batch_size", _int(env, "AGENTMEM_MEMORY_ANONYMIZE_BATCH_SIZE"))
        _set(kwargs, "dry_run", _flag(env, "AGENTMEM_MEMORY_ANONYMIZE_DRY_RUN"))
        return cls(**kwargs)


@dataclass(frozen=True)
class RerankConfig:
    """The HTTP reranker (a Hugging Face TEI server) recall uses, if any.

    Example:
        >>> RerankConfig.from_env({}).url is None
        True
    """

    url: str | None = None
    """Root URL of the TEI server (``AGENTMEM_RERANKER_URL``); None disables reranking."""
    timeout: float = 2.0
    """Seconds allowed for one rerank call (``AGENTMEM_RERANKER_TIMEOUT``)."""

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> RerankConfig:
        """Raises ValidationError for a malformed timeout: recall would silently go without
        the reranker the operator asked for."""
        env = _environ(environ)
        url = _raw(env, "AGENTMEM_RERANKER_URL")
        raw_timeout = _raw(env, "AGENTMEM_RERANKER_TIMEOUT")
        if raw_timeout is None:
            return cls(url=url)
        try:
            timeout = float(raw_timeout)
        except ValueError:
            raise ValidationError(
                "AGENTMEM_RERANKER_TIMEOUT", f"not a number of seconds: {raw_timeout!r}"
            ) from None
        if not math.isfinite(timeout) or timeout <= 0:
            raise ValidationError("AGENTMEM_RERANKER_TIMEOUT", "must be positive and finite")
        return cls(url=url, timeout=timeout)


@dataclass(frozen=True)
class LLMConfig:
    """Which LLM does extraction, summaries, the judge and answers, and how it is reached.

    Example:
        >>> LLMConfig.from_env({}).provider
        'offline'
    """

    provider: Literal["offline", "anthropic"] = "offline"
    """``AGENTMEM_LLM=offline|anthropic``; by default Anthropic when ``ANTHROPIC_API_KEY`` is
    set, else the deterministic offline implementation."""
    api_key: str | None = field(default=None, repr=False)
    """``ANTHROPIC_API_KEY`` (None: the SDK's own lookup)."""
    model: str | None = None
    """Model id (``AGENTMEM_LLM_MODEL``; default the Anthropic LLM's own)."""
    judge_model: str | None = None
    """Model of the supersession judge (``AGENTMEM_MEMORY_JUDGE_MODEL``; default ``model``)."""
    base_url: str | None = None
    """API base URL (``ANTHROPIC_BASE_URL``: a proxy, or a loopback server in tests)."""
    timeout: float | None = None
    """Seconds per request attempt (``AGENTMEM_LLM_TIMEOUT``)."""
    max_retries: int | None = None
    """SDK retries of 429/5xx/connection errors (``AGENTMEM_LLM_MAX_RETRIES``)."""

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> LLMConfig:
        env = _environ(environ)
        api_key = _raw(env, "ANTHROPIC_API_KEY")
        choice = (_raw(env, "AGENTMEM_LLM") or "").lower()
        if choice not in ("", "offline", "anthropic"):
            _warn_once(f"ignoring AGENTMEM_LLM={choice!r}: use 'offline' or 'anthropic'")
            choice = ""
        provider: Literal["offline", "anthropic"] = (
            "anthropic" if choice == "anthropic" or (not choice and api_key) else "offline"
        )
        return cls(
            provider=provider,
            api_key=api_key,
            model=_raw(env, "AGENTMEM_LLM_MODEL"),
            judge_model=_raw(env, "AGENTMEM_MEMORY_JUDGE_MODEL"),
            base_url=_raw(env, "ANTHROPIC_BASE_URL"),
            timeout=_float(env, "AGENTMEM_LLM_TIMEOUT", low=0.0),
            max_retries=_int(env, "AGENTMEM_LLM_MAX_RETRIES", low=0),
        )


@dataclass(frozen=True)
class ServerConfig:
    """Limits and background jobs of ``agentmem serve`` (unused by an embedded memory).

    Example:
        >>> ServerConfig.from_env({"AGENTMEM_SESSION_IDLE_SECONDS": "600"}).session_idle_seconds
        600.0
    """

    session_idle_seconds: float = 1800.0
    """A session with no new message for this long is closed by the server (summary, chunks,
    promotion) (``AGENTMEM_SESSION_IDLE_SECONDS``; 0 never closes one)."""
    judge_interval: float = 10.0
    """Seconds between passes of the supersession judge over memories written since the
    last pass (``AGENTMEM_JUDGE_INTERVAL``; 0 disables the job)."""
    retention_interval: float = 86400.0
    """Seconds between retention (anonymization) runs (``AGENTMEM_RETENTION_INTERVAL``,
    default daily; 0 disables the job)."""
    retry_delay: float = 60.0
    """Seconds before a failed job runs again (``AGENTMEM_JOB_RETRY_SECONDS``)."""
    rate_limit: float = 200.0
    """Requests per second allowed per API key, on average (``AGENTMEM_RATE_LIMIT``; 0 turns
    the limit off). Past it the server answers 429 with ``Retry-After``."""
    rate_burst: int = 400
    """Requests a key may make at once above the average rate (``AGENTMEM_RATE_BURST``)."""
    max_body_bytes: int = 32 * 1024 * 1024
    """Largest request body accepted; a larger one is answered 413
    (``AGENTMEM_MAX_BODY_BYTES``)."""
    embed_threads: int = 1
    """onnxruntime threads per embedding call of the server's default embedder
    (``AGENTMEM_SERVER_EMBED_THREADS``). One thread per call lets concurrent requests use
    the cores side by side instead of contending (and spin-waiting) in one shared pool."""
    drain_seconds: float = 30.0
    """On SIGTERM/SIGINT, seconds in-flight requests get to finish, and then the indexer to
    catch up, before the server exits (``AGENTMEM_DRAIN_SECONDS``)."""
    metrics_port: int | None = None
    """Also serve ``/metrics`` on this port of 127.0.0.1, without a key, for a scraper on the
    same host (``AGENTMEM_METRICS_PORT``; 0 picks a free port; None: only ``GET /metrics``
    on the main port, with an operator key)."""

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> ServerConfig:
        """Build from ``AGENTMEM_*`` variables; bad values fall back to defaults (logged)."""
        env = _environ(environ)
        kwargs: dict[str, Any] = {}
        for name, var in {
            "session_idle_seconds": "AGENTMEM_SESSION_IDLE_SECONDS",
            "judge_interval": "AGENTMEM_JUDGE_INTERVAL",
            "retention_interval": "AGENTMEM_RETENTION_INTERVAL",
            "retry_delay": "AGENTMEM_JOB_RETRY_SECONDS",
            "rate_limit": "AGENTMEM_RATE_LIMIT",
            "drain_seconds": "AGENTMEM_DRAIN_SECONDS",
        }.items():
            _set(kwargs, name, _float(env, var, low=0.0))
        _set(kwargs, "rate_burst", _int(env, "AGENTMEM_RATE_BURST"))
        _set(kwargs, "embed_threads", _int(env, "AGENTMEM_SERVER_EMBED_THREADS"))
        _set(kwargs, "max_body_bytes", _int(env, "AGENTMEM_MAX_BODY_BYTES"))
        _set(kwargs, "metrics_port", _int(env, "AGENTMEM_METRICS_PORT", low=0))
        return cls(**kwargs)


@dataclass(frozen=True)
class ChromaAddress:
    """A Chroma server and the tenant/database of this store on it, parsed from a URL.

    ``http(s)://HOST[:PORT][?database=NAME&tenant=NAME]``; the port defaults to 8000 (http)
    or 443 (https), the tenant and database to Chroma's defaults.

    Example:
        >>> ChromaAddress.parse("http://chroma:9000?database=prod").port
        9000
    """

    host: str
    port: int
    ssl: bool = False
    tenant: str = "default_tenant"
    database: str = "default_database"

    @classmethod
    def parse(cls, url: str) -> ChromaAddress:
        """Raises ValidationError naming what is wrong with ``url``."""
        field_name = "chroma_url"
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError as exc:
            raise ValidationError(field_name, f"not a URL: {url!r} ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError(
                field_name, f"expected http(s)://HOST[:PORT][?database=NAME], got {url!r}"
            )
        if parts.path not in ("", "/") or parts.fragment or parts.username:
            raise ValidationError(
                field_name, f"{url!r}: only a host, a port and ?database=/&tenant= are accepted"
            )
        query: dict[str, str] = {}
        for key, values in parse_qs(parts.query, keep_blank_values=True).items():
            if key not in ("database", "tenant") or len(values) != 1 or not values[0].strip():
                raise ValidationError(
                    field_name, f"{url!r}: unknown or empty query parameter {key!r}"
                )
            query[key] = values[0].strip()
        ssl = parts.scheme == "https"
        return cls(
            host=parts.hostname,
            port=port if port is not None else (443 if ssl else 8000),
            ssl=ssl,
            **query,
        )


@dataclass(frozen=True)
class Settings:
    """Every setting of an :class:`~agentmem.AgentMemory`, read once.

    Example:
        >>> s = Settings(memory=MemoryConfig(min_score=0.2))
        >>> s.memory.min_score, s.tiers.mid_term_sessions
        (0.2, 10)
    """

    memory: MemoryConfig = field(default_factory=MemoryConfig)
    tiers: TierConfig = field(default_factory=TierConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    retention: RetentionPolicy = field(default_factory=RetentionPolicy)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    records_url: str | None = None
    """A ``postgresql://`` URL: the records (and every other piece of state) live in that
    database, shared by every agentmem node opened on it; the data dir then holds only the
    node's keyword index and local state (``AGENTMEM_RECORDS_URL``, ``--records-url``).
    None: the records are a SQLite file in the data dir."""
    chroma_url: str | None = None
    """A Chroma server holding the vectors (``AGENTMEM_CHROMA_URL``, ``--chroma-url``), e.g.
    ``http://chroma:8000?database=NAME`` (see :class:`ChromaAddress`); the data dir then holds
    nothing of the vectors. None keeps an embedded Chroma store in the data dir. A
    ``chroma_client`` given to :class:`~agentmem.AgentMemory` wins over it."""
    embedder: str | None = None
    """The embedder of a store opened without one (``AGENTMEM_EMBEDDER``, ``--embedder``):
    ``minilm`` (the default), ``e5`` (``agentmem-layer[e5]``), or ``package.module:attribute``
    naming an embedder, a LangChain ``Embeddings`` or a LlamaIndex ``BaseEmbedding`` object,
    or a factory returning one (see :func:`agentmem.embedding_adapters.from_spec`). An
    ``embedder`` given to :class:`~agentmem.AgentMemory` wins over it."""
    embedder_name: str | None = None
    """The model name of that embedder when it names none itself
    (``AGENTMEM_EMBEDDER_NAME``, ``--embedder-name``)."""

    def __post_init__(self) -> None:
        if self.chroma_url is not None:
            # a malformed address must not silently fall back to vectors in the data dir
            ChromaAddress.parse(self.chroma_url)

    @classmethod
    def from_env(cls, environ: Environ | None = None) -> Settings:
        """All settings from the environment (``os.environ`` when omitted).

        Raises:
            ValidationError: a malformed ``AGENTMEM_CHROMA_URL`` or reranker timeout.
        """
        env = _environ(environ)
        for name in unknown_variables(env):
            near = difflib.get_close_matches(name, _known_variables(), n=1, cutoff=0.8)
            hint = f" (did you mean {near[0]}?)" if near else ""
            _warn_once(f"ignoring {name}: agentmem reads no such variable{hint}")
        return cls(
            records_url=_raw(env, "AGENTMEM_RECORDS_URL") or None,
            memory=MemoryConfig.from_env(env),
            tiers=TierConfig.from_env(env),
            judge=JudgeConfig.from_env(env),
            retention=RetentionPolicy.from_env(env),
            rerank=RerankConfig.from_env(env),
            llm=LLMConfig.from_env(env),
            server=ServerConfig.from_env(env),
            chroma_url=_raw(env, "AGENTMEM_CHROMA_URL"),
            embedder=_raw(env, "AGENTMEM_EMBEDDER") or None,
            embedder_name=_raw(env, "AGENTMEM_EMBEDDER_NAME") or None,
        )

    def replace(self, **parts: Any) -> Settings:
        """A copy with some parts replaced (``None`` values keep the current part)."""
        return dataclasses.replace(self, **{k: v for k, v in parts.items() if v is not None})


def _known_variables() -> list[str]:
    scopes = [f"RECALL_WEIGHT_{scope.upper()}" for scope in DEFAULT_SCOPE_WEIGHTS]
    return sorted(f"AGENTMEM_{name}" for name in (*VARIABLES, *scopes))


def unknown_variables(environ: Environ | None = None) -> list[str]:
    """The ``AGENTMEM_*`` variables set in ``environ`` that agentmem does not read (typos, such
    as a scope in the plural), sorted; ``AGENTMEM_TEST_*`` are the test suite's."""
    known = set(_known_variables())
    return sorted(
        k
        for k in _environ(environ)
        if k.startswith("AGENTMEM_") and k not in known and not k.startswith("AGENTMEM_TEST_")
    )


def default_home(environ: Environ | None = None) -> Path:
    """``$AGENTMEM_HOME``, else ``$XDG_DATA_HOME/agentmem``, else ``~/.local/share/agentmem``."""
    env = _environ(environ)
    home = _raw(env, "AGENTMEM_HOME")
    if home:
        return Path(home).expanduser()
    xdg = _raw(env, "XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "agentmem"
