"""``POST /v1/flush`` with a tenant's key waits for that tenant's rows only: another tenant's
rows that cannot be indexed yet neither hold it up nor show in its answer. An operator key
still waits for every row.

Tenant A's row is held inside the embedder (the real one, behind a gate the test opens), so
it stays pending for exactly as long as the test says: no timing decides an outcome.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from _served_app import served

import agentmem
from agentmem import AgentMemory
from agentmem.embeddings import CachedEmbedder, FloatArray
from agentmem.server.keys import create_key

MakeMemory = Callable[..., AgentMemory]
HELD = "zqheld7731"


class _GatedEmbedder:
    """The real embedder; a batch with a text containing :data:`HELD` waits in it until
    ``release`` is set (``holding`` tells it arrived)."""

    def __init__(self, inner: CachedEmbedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimensions = inner.dimensions
        self.holding = threading.Event()
        self.release = threading.Event()

    def embed_query(self, text: str) -> FloatArray:
        return self.inner.embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        if any(HELD in t for t in texts):
            self.holding.set()
            self.release.wait()
        return self.inner.embed_documents(texts)


def test_a_tenants_flush_waits_for_its_own_rows_only(
    make_memory: MakeMemory, shared_embedder: CachedEmbedder
) -> None:
    gate = _GatedEmbedder(shared_embedder)
    mem = make_memory(embedder=gate)
    key_a = create_key(mem.records, tenant_id="tenant-a").key
    key_b = create_key(mem.records, tenant_id="tenant-b").key
    operator = create_key(mem.records, tenant_id="ops", operator=True).key
    try:
        with (
            served(mem) as srv,
            agentmem.connect(srv.url, api_key=key_a) as a,
            agentmem.connect(srv.url, api_key=key_b) as b,
            agentmem.connect(srv.url, api_key=operator) as ops,
        ):
            b.bind(user_id="u1").remember("Tenant B keeps its invoices in the blue binder")
            assert b.flush(timeout=60) is True  # its own row, indexed
            a.bind(user_id="u1").remember(f"Tenant A's row {HELD} is held in the embedder")
            assert gate.holding.wait(60)  # the embedder has it and keeps it

            # B has nothing pending: it neither waits for A's row nor learns of it
            assert b.flush(timeout=10) is True
            # A's row cannot be indexed until the gate opens, whatever the wait
            assert a.flush(timeout=0.2) is False
            assert ops.flush(timeout=0.2) is False  # an operator waits for every row

            gate.release.set()
            assert a.flush(timeout=60) is True
            assert ops.flush(timeout=60) is True
            pending = mem.context.records.index.pending_counts
            assert pending("tenant-a")[:2] == pending("tenant-b")[:2] == (0, 0)
    finally:
        gate.release.set()  # the embedder worker must not stay inside the gate at close
