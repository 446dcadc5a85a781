"""Agent state: small named JSON values per (tenant, agent), shared by the agent's sessions.

Example:
    >>> m.state.set("current_task", "Q4 revenue analysis")  # doctest: +SKIP
    >>> m.state.get("current_task").value  # doctest: +SKIP
    'Q4 revenue analysis'
"""

from __future__ import annotations

from typing import Any

from .. import validation
from ..errors import ScopeError
from ..models import Identity
from ..results import StateEntry as StateEntry  # re-exported: it lived here
from ..storage.agent_state import AgentStateTable
from ..storage.rows import now_utc


class AgentState:
    """Key-value state of the bound agent (``m.state``); needs an ``agent_id`` bound.

    Example:
        >>> m.state.set("plan", {"step": 2})  # doctest: +SKIP
        >>> [e.key for e in m.state.list()]  # doctest: +SKIP
        ['plan']
    """

    def __init__(self, table: AgentStateTable, identity: Identity) -> None:
        self._table = table
        self._identity = identity

    def _agent(self) -> str:
        if self._identity.agent_id is None:
            raise ScopeError("agent_id", "agent state needs an agent_id bound")
        return self._identity.agent_id

    def get(self, key: str) -> StateEntry | None:
        """The entry under ``key``, or None."""
        k = validation.identity(key, "key", required=True)
        assert k is not None
        found = self._table.get(self._identity.tenant_id, self._agent(), k)
        return None if found is None else StateEntry(k, *found)

    def set(
        self,
        key: str,
        value: Any,
        *,
        user_id: str | None = None,
        about_agent_id: str | None = None,
    ) -> StateEntry:
        """Store a JSON-serialisable value under ``key`` (replacing any previous one).

        Args:
            key: The entry's name.
            value: Any JSON value.
            user_id: The user the value is about, when it is kept for one user (an item of
                that user's namespace in a LangGraph store): erasing that user deletes the
                entry. None: the agent's own value, which erasing a user leaves.
            about_agent_id: The agent the value is about, when it is kept for another agent
                than the bound one (an item of that agent's namespace in a LangGraph store):
                erasing that agent deletes the entry, as erasing the bound agent does.
        """
        k = validation.identity(key, "key", required=True)
        assert k is not None
        user = validation.identity(user_id, "user_id")
        about = validation.identity(about_agent_id, "about_agent_id")
        encoded = validation.metadata({"value": value}, "value")["value"]
        now = now_utc()
        self._table.set(
            self._identity.tenant_id,
            self._agent(),
            k,
            encoded,
            now,
            user_id=user,
            about_agent_id=about,
        )
        return StateEntry(k, encoded, now, user, about)

    def delete(self, key: str) -> bool:
        """Remove the entry under ``key``; False if there was none."""
        k = validation.identity(key, "key", required=True)
        assert k is not None
        return self._table.delete(self._identity.tenant_id, self._agent(), k)

    def list(self, *, prefix: str | None = None) -> list[StateEntry]:
        """Every entry of the bound agent, by key; with ``prefix``, only those whose key
        starts with it (read as one range of keys, however many other entries there are)."""
        start = validation.identity(prefix, "prefix")
        return [
            StateEntry(*found)
            for found in self._table.list(self._identity.tenant_id, self._agent(), start)
        ]
