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

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..config import LLMConfig
from .anthropic import DEFAULT_MODEL, AnthropicLLM
from .base import LLM, Answer, ChatTurn, Extracted, SummaryDelta, Verdict
from .offline import OFFLINE_NAME, OfflineLLM

if TYPE_CHECKING:
    from ..embeddings import Embedder


def default_llm(
    config: LLMConfig | None = None,
    *,
    embedder: Embedder | None = None,
    environ: Mapping[str, str] | None = None,
) -> LLM:
    """The LLM a :class:`~agentmem.config.LLMConfig` asks for (default: read from
    ``environ``, else ``os.environ``): :class:`AnthropicLLM` when its provider is
    ``anthropic``, else :class:`OfflineLLM`. Nothing touches the network here.

    Args:
        config: Which LLM and how to reach it.
        embedder: Given to the offline LLM (ranks answer sentences by similarity).
        environ: Environment to read when no ``config`` is given.
    """
    cfg = config if config is not None else LLMConfig.from_env(environ)
    if cfg.provider == "anthropic":
        return AnthropicLLM.from_config(cfg)
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
