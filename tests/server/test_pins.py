"""Unit cases of server/pins.py: which results a pinned key's rows are walked in, and what of
each row it is shown."""

from __future__ import annotations

from datetime import UTC, datetime

from agentmem.models import MemoryItem
from agentmem.results import ApiKey
from agentmem.server.pins import carries_rows, hide_others_activity

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _row(id_: str, *, user_id: str | None, scope: str) -> MemoryItem:
    return MemoryItem(
        id=id_,
        tenant_id="t",
        user_id=user_id,
        agent_id=None,
        session_id=None,
        kind="memory",
        memory_type="fact",
        scope=scope,
        content="x",
        content_hash="h",
        source_ref=None,
        metadata={},
        importance=None,
        event_time=NOW,
        created_at=NOW,
        updated_at=NOW,
        access_count=3,
        last_accessed=NOW,
    )


def test_rows_in_every_container_a_result_may_declare_are_hidden() -> None:
    """Whatever container carries_rows says may hold rows is walked, a dict of rows too."""
    key = ApiKey("k", "t", user_id="u1", agent_id=None, name=None, admin=False, created_at=NOW)
    own = _row("a", user_id="u1", scope="user")
    shared = _row("b", user_id="u2", scope="tenant")
    assert carries_rows(dict[str, MemoryItem]) and carries_rows(list[MemoryItem])
    for value in ({"x": shared, "y": own}, [shared, own], (shared, own)):
        shown = hide_others_activity(value, key)
        rows = list(shown.values()) if isinstance(shown, dict) else list(shown)
        assert [(r.access_count, r.user_id) for r in rows] == [(0, None), (3, "u1")]
    assert hide_others_activity({"y": own}, key) == {"y": own}
