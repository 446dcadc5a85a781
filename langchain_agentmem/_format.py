"""Rendering of recalled memories for LangChain tools: see :mod:`agentmem.tools.render`."""

from __future__ import annotations

from agentmem.tools.render import (
    ADVISORY_HEADER,
    DEGRADED_NOTE,
    NO_MEMORIES,
    escape_content,
    format_hits,
    memory_block,
)

__all__ = [
    "ADVISORY_HEADER",
    "DEGRADED_NOTE",
    "NO_MEMORIES",
    "escape_content",
    "format_hits",
    "memory_block",
]
