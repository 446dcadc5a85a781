"""Erasure through a running server: an admin key erases within its own tenant only."""

from __future__ import annotations

import httpx
import pytest
from _agentmem_server import ServerProcess

import agentmem
from agentmem import AuthError
from langchain_agentmem import AgentMemStore


def test_admin_key_erases_a_user_of_its_tenant(server: ServerProcess, tenant: str) -> None:
    other_tenant = tenant + "-other"
    with (
        agentmem.connect(server.url, api_key=server.create_key(tenant, admin=True)) as admin,
        agentmem.connect(server.url, api_key=server.create_key(other_tenant)) as stranger,
    ):
        gone = admin.bind(user_id="erased", session_id="s1")
        kept = admin.bind(user_id="kept", session_id="s1")
        gone.remember("Canary-ERASE-4417 is the erased user's fact")
        gone.add_message("user", "Canary-ERASE-4417 also in a message")
        kept.remember("Canary-KEEP-9902 belongs to the other user")
        stranger.bind(user_id="erased").remember("Canary-FOREIGN in another tenant")
        pinned_key = server.create_key(tenant, user="erased")

        with pytest.raises(AuthError):
            stranger.erase(tenant_id=tenant, user_id="erased")  # not its tenant (or admin)
        receipt = admin.erase(tenant_id=tenant, user_id="erased")
        assert receipt.records["memories"] == 2 and receipt.user_id == "erased"
        assert receipt.records.get("api_keys") == 1  # the erased user's own key went too

        assert gone.recall("Canary-ERASE-4417", min_score=0.0).items == []
        assert kept.recall("Canary-KEEP-9902").items[0].content.startswith("Canary-KEEP-9902")
        hits = stranger.bind(user_id="erased").recall("Canary-FOREIGN").items
        assert hits  # the other tenant's user of the same name is untouched
        with pytest.raises(AuthError):
            agentmem.connect(server.url, api_key=pinned_key)
        again = admin.erase(tenant_id=tenant, user_id="erased")
        assert again.rows == 0  # nothing left to erase


@pytest.mark.parametrize("who", ["user", "agent"])
def test_erasing_a_user_or_agent_removes_its_langgraph_store_values(
    server: ServerProcess, tenant: str, who: str
) -> None:
    gone, kept = f"Canary-STORE-{who}-6071", f"Canary-STORE-{who}-3388"
    with agentmem.connect(server.url, api_key=server.create_key(tenant, admin=True)) as admin:
        store = AgentMemStore(admin, wait_for_index=True, **{f"{who}_position": 1})
        store.put(("memories", "erased"), "code", {"content": f"{gone} locker code"})
        store.put(("memories", "kept"), "code", {"content": f"{kept} locker code"})
        assert _served_files_with(server, gone.encode())

        receipt = admin.erase(tenant_id=tenant, **{f"{who}_id": "erased"})

        assert receipt.records["agent_state"] == 1
        assert store.get(("memories", "erased"), "code") is None
        assert store.search(("memories", "erased")) == []
        assert [i.key for i in store.search(("memories", "kept"), query="locker code")] == ["code"]
    # nothing of the erased owner's value is left in the server's files (records included)
    assert _served_files_with(server, gone.encode()) == []


def _served_files_with(server: ServerProcess, needle: bytes) -> list[str]:
    return [p.name for p in server.home.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_key_without_admin_cannot_erase(server: ServerProcess, tenant: str) -> None:
    with (
        agentmem.connect(server.url, api_key=server.create_key(tenant)) as client,
        pytest.raises(AuthError) as err,
    ):
        client.erase(tenant_id=tenant, user_id="u1")
    assert err.value.reason == "admin_required"


@pytest.mark.parametrize("body", [{"userId": "erased"}, {"user": "erased"}, {"tenant_id": "x"}])
def test_an_erase_naming_an_unknown_field_erases_nothing(
    server: ServerProcess, tenant: str, body: dict[str, str]
) -> None:
    # a misspelt field must not widen the erasure to the whole tenant
    key = server.create_key(tenant, admin=True)
    with agentmem.connect(server.url, api_key=key) as admin:
        kept = admin.bind(user_id="erased", session_id="s1")
        kept.remember("Canary-MISSPELT-5512 stays")
        answer = httpx.post(
            f"{server.url}/v1/admin/erase", json=body, headers={"Authorization": f"Bearer {key}"}
        )
        assert answer.status_code == 422
        assert next(iter(body)) in answer.text
        assert kept.recall("Canary-MISSPELT-5512").items  # nothing erased, the key still works
