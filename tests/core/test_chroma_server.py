"""The core contract against a real Chroma server (``chroma run``, the session's
``chroma_server`` fixture), each test on a Chroma database of its own, with the records in
SQLite and in Postgres."""

from __future__ import annotations

from typing import Any

import pytest

from agentmem import NotFoundError
from agentmem.storage.vector_index import collection_name

pytestmark = pytest.mark.both_backends  # SQLite or Postgres records, vectors on the server

FACTS = [
    "The customer is allergic to peanuts and shellfish",
    "The deploy key for staging is KX-93-ZQ-771",
    "My daughter plays the violin every evening",
]


def test_core_contract_through_a_chroma_server(make_memory, chroma_client: Any) -> None:
    client = chroma_client
    mem = make_memory(chroma_client=client)
    acme = mem.bind("acme", user_id="u1", agent_id="support", session_id="s1")
    globex = mem.bind("globex", user_id="u1", agent_id="support", session_id="s1")

    # write
    facts = acme.remember_many(FACTS)
    msg = acme.add_message("user", "Can you book me a flight to Tokyo next Tuesday?")
    doc = acme.add_document("Refunds are accepted within 30 days of delivery.", source_ref="r.md")
    secret = globex.remember("Globex keeps its violin collection in vault KX-93")
    assert mem.flush(timeout=120) is True

    # the vectors live on the server, partitioned, not in the local data dir
    assert not (mem.home / "chroma").exists()
    names = {c.name for c in client.list_collections()}
    user_part = collection_name("acme", "user:u1")
    assert user_part in names
    assert collection_name("globex", "user:u1") in names
    assert client.get_collection(user_part).count() == len(FACTS)

    # hybrid recall: paraphrase (vector half) and exact token (keyword half)
    result = acme.recall("musical instrument child")
    assert result.degraded is False
    assert result.items[0].id == facts[2].id
    assert acme.recall("KX-93-ZQ-771").items[0].id == facts[1].id
    assert acme.recall("airplane trip to Japan").items[0].id == msg.id
    assert acme.recall("return an item for a refund").items[0].id == doc[0].id
    assert not acme.recall("quantum chromodynamics lattice gauge theory").items

    # isolation: the other tenant's vectors are on the same server, never in its results
    for query in ("violin", "musical instrument child", "KX-93", "vault"):
        seen = {h.id for h in acme.recall(query, top_k=20, min_score=0.0).items}
        assert secret.id not in seen
        seen = {h.id for h in globex.recall(query, top_k=20, min_score=0.0).items}
        assert seen <= {secret.id}
    assert globex.recall("violin collection").items[0].id == secret.id

    # forget: gone from recall at once, and from the server's collection after indexing
    assert acme.forget(facts[2].id) is True
    assert facts[2].id not in {h.id for h in acme.recall("violin", min_score=0.0).items}
    assert mem.flush(timeout=120)
    assert client.get_collection(user_part).get(ids=[facts[2].id])["ids"] == []
    assert client.get_collection(user_part).count() == len(FACTS) - 1
    with pytest.raises(NotFoundError):
        acme.get(facts[2].id)

    # persistence: a new process-local store over the same records and server
    home = mem.home
    mem.close()
    again = make_memory(path=home, chroma_client=client)
    m = again.bind("acme", user_id="u1", agent_id="support", session_id="s1")
    assert m.recall("food intolerance nuts").items[0].id == facts[0].id

    # reindex rebuilds the server-side collections from the records
    client.delete_collection(user_part)
    assert not m.recall("food intolerance nuts").items
    assert again.reindex() == 5  # live rows: 2 facts, the message, the chunk, globex's fact
    assert client.get_collection(user_part).count() == len(FACTS) - 1
    assert m.recall("food intolerance nuts").items[0].id == facts[0].id
