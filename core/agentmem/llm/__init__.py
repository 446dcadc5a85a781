"""Language-model tasks (extraction, summaries, judge, answers): protocol and implementations.

- :class:`LLM`: the protocol (``extract``, ``summarize``, ``summary_delta``, ``judge``,
  ``answer``).
- :class:`OfflineLLM`: deterministic rules and embeddings, no network (the default).
- :class:`AnthropicLLM`: Claude through the official ``anthropic`` SDK, structured output via
  tool use.
- :func:`default_llm`: Anthropic when ``ANTHROPIC_API_KEY`` is set, else offline;
  ``AGENTMEM_LLM=offline|anthropic`` forces one.

Example:
    >>> from agentmem.llm import default_llm
    >>> default_llm(environ={}).name
    'offline-heuristic-v1'
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .anthropic import DEFAULT_MODEL, AnthropicLLM
from .base import LLM, Answer, ChatTurn, Extracted, SummaryDelta, Verdict
from .offline import OFFLINE_NAME, OfflineLLM

if TYPE_CHECKING:
    from ..embeddings import Embedder

log = logging.getLogger("agentmem.llm")


def default_llm(
    *, embedder: Embedder | None = None, environ: Mapping[str, str] | None = None
) -> LLM:
    """The LLM to use when none is passed in.

    ``AGENTMEM_LLM=offline`` or ``anthropic`` decides explicitly; otherwise
    :class:`AnthropicLLM` (configured by :meth:`AnthropicLLM.from_env`) when
    ``ANTHROPIC_API_KEY`` is set, else :class:`OfflineLLM`. Nothing touches the network here.

    Args:
        embedder: Given to the offline LLM (ranks answer sentences by similarity).
        environ: Environment to read (default ``os.environ``).
    """
    env = os.environ if environ is None else environ
    choice = env.get("AGENTMEM_LLM", "").strip().lower()
    if choice not in ("", "offline", "anthropic"):
        log.warning("ignoring AGENTMEM_LLM=%r: use 'offline' or 'anthropic'", choice)
        choice = ""
    if choice == "anthropic" or (not choice and env.get("ANTHROPIC_API_KEY", "").strip()):
        return AnthropicLLM.from_env(env)
    return OfflineLLM(embedder)


__all__ = [
    "DEFAULT_MODEL",
    "LLM",
    "OFFLINE_NAME",
    "Answer",
    "AnthropicLLM",
    "ChatTurn",
    "Extracted",
    "OfflineLLM",
    "SummaryDelta",
    "Verdict",
    "default_llm",
]
