"""What a key pinned to a user or an agent is not shown: what other users or agents did.

The identity a request acts for is :func:`~agentmem.key_identity.resolve_identity`'s; within
it every operation answers as it does embedded, but for what would show a pinned key the
activity of other users or agents of its tenant:

- agent state (the ``state.*`` operations, the agent-state tools over MCP) is refused to a
  key pinned to a user (:func:`~agentmem.key_identity.reaches_agent_state` says why);
- a row that others recall too (:func:`~agentmem.scopes.recalled_only_by`) comes back with
  ``access_count`` 0 and ``last_accessed`` None, whatever operation returns it: both move
  when another user or agent recalls the row;
- a row another user (for a key pinned to a user) or another agent (for a key pinned to an
  agent) wrote and shared with the key comes back without that user's or agent's id
  (:func:`~agentmem.scopes.as_seen_by`).

Example:
    >>> check_operation(key, "state")  # doctest: +SKIP
    Traceback (most recent call last):
    agentmem.errors.AuthError: this API key is pinned to user_id='u1'; ...
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, TypeVar

from ..key_identity import reaches_agent_state, require_agent_state
from ..models import MemoryItem
from ..results import ApiKey
from ..scopes import as_seen_by
from ..tools.specs import AGENT_STATE_TOOLS, Include, tool_names

_T = TypeVar("_T")


def check_operation(key: ApiKey, part: str | None) -> None:
    """Refuse an operation of ``part`` (``Op.part``: None, ``knowledge``, ``state``,
    ``working``) the key may not call whatever identity it names.

    Raises:
        AuthError: agent state for a key pinned to a user.
    """
    if part == "state":
        require_agent_state(key.user_id, key_id=key.id)


def mcp_tools(key: ApiKey, include: Include = "all") -> Include:
    """The MCP tools of ``include`` offered to ``key``: all of them, but the agent-state tools
    for a key that may not reach agent state (a model is not offered a tool that can only
    fail). Over HTTP and over stdio to a server (``agentmem --url ... mcp``) alike."""
    if reaches_agent_state(key.user_id):
        return include
    return [n for n in tool_names(include, agent_bound=True) if n not in AGENT_STATE_TOOLS]


def carries_rows(tp: Any) -> bool:
    """Whether a value of type ``tp`` (an operation's declared result) may hold a
    :class:`MemoryItem`: only those results are walked by :func:`hide_others_activity`
    (a recall's hits carry no access count or owner, and walking them would cost every
    recall)."""
    if tp is MemoryItem:
        return True
    if args := typing.get_args(tp):
        return any(carries_rows(arg) for arg in args)
    if dataclasses.is_dataclass(tp):
        return any(carries_rows(hint) for hint in typing.get_type_hints(tp).values())
    return False


def hide_others_activity(value: _T, key: ApiKey) -> _T:
    """``value`` (an operation's result) with each row as a pinned key is shown it
    (:func:`~agentmem.scopes.as_seen_by`); unchanged for a key that is not pinned."""
    if key.user_id is None and key.agent_id is None:
        return value
    return _hidden(value, key.user_id, key.agent_id)  # type: ignore[no-any-return]


def _hidden(value: Any, user_id: str | None, agent_id: str | None) -> Any:
    """``value`` with every :class:`MemoryItem` in it (in lists, tuples, dicts and the fields
    of result dataclasses) as the pinned key is shown it."""
    if isinstance(value, MemoryItem):
        return as_seen_by(value, user_id, agent_id)
    if isinstance(value, dict):
        shown = {k: _hidden(v, user_id, agent_id) for k, v in value.items()}
        return value if all(shown[k] is v for k, v in value.items()) else shown
    if isinstance(value, list | tuple):
        items = [_hidden(v, user_id, agent_id) for v in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {}
        for f in dataclasses.fields(value):
            old = getattr(value, f.name)
            new = _hidden(old, user_id, agent_id)
            if new is not old:
                changed[f.name] = new
        return dataclasses.replace(value, **changed) if changed else value
    return value


__all__ = ["carries_rows", "check_operation", "hide_others_activity", "mcp_tools"]
