"""What a key pinned to a user or an agent is not shown: what other users or agents did.

The identity a request acts for is :func:`~agentmem.key_identity.resolve_identity`'s; within
it every operation answers as it does embedded, but for what would show a pinned key the
activity of other users or agents of its tenant:

- agent state (the ``state.*`` operations, the agent-state tools over MCP) is refused to a
  key pinned to a user (:func:`~agentmem.key_identity.reaches_agent_state` says why).

Example:
    >>> check_operation(key, "state")  # doctest: +SKIP
    Traceback (most recent call last):
    agentmem.errors.AuthError: this API key is pinned to user_id='u1'; ...
"""

from __future__ import annotations

from ..key_identity import reaches_agent_state, require_agent_state
from ..results import ApiKey
from ..tools.specs import AGENT_STATE_TOOLS, ALL_TOOLS, Include


def check_operation(key: ApiKey, part: str | None) -> None:
    """Refuse an operation of ``part`` (``Op.part``: None, ``knowledge``, ``state``,
    ``working``) the key may not call whatever identity it names.

    Raises:
        AuthError: agent state for a key pinned to a user.
    """
    if part == "state":
        require_agent_state(key.user_id, key_id=key.id)


def mcp_tools(key: ApiKey) -> Include:
    """The MCP tools offered to ``key``: all of them, but the agent-state tools for a key that
    may not reach agent state (a model is not offered a tool that can only fail)."""
    if reaches_agent_state(key.user_id):
        return "all"
    return [name for name in ALL_TOOLS if name not in AGENT_STATE_TOOLS]


__all__ = ["check_operation", "mcp_tools"]
