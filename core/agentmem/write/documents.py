"""Documents: chunked into tenant-scope ``document_chunk`` rows, revised by ``source_ref``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import validation
from ..chunking import chunk_text
from ..context import StoreContext
from ..models import Identity, MemoryItem
from .commit import commit, retire
from .conversation import items
from .records import new_record, sha


def add_document(
    ctx: StoreContext,
    identity: Identity,
    text: str,
    *,
    source_ref: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> list[MemoryItem]:
    """Chunk a document into tenant-scope rows (see ``BoundMemory.add_document``).

    The same text under the same ``source_ref`` returns the existing chunks; a new revision
    under an existing ``source_ref`` retires the old revision's chunks.
    """
    body = validation.text(text, "text")
    ref = validation.identity(source_ref, "source_ref") or "doc_" + sha(body)[:16]
    meta = validation.metadata(metadata)
    chunks = chunk_text(body)
    revision = sha(body)[:16]
    records = [
        new_record(
            identity,
            kind="document_chunk",
            scope="tenant",
            content=chunk,
            source_ref=ref,
            metadata={**meta, "chunk_index": n, "chunk_count": len(chunks)},
            dedup_key=sha("doc", identity.tenant_id, ref, revision, str(n)),
        )
        for n, chunk in enumerate(chunks)
    ]
    ids = [i for i, _ in commit(ctx, records, "add_document")]
    keep = set(ids)
    stale = [
        i for i in ctx.records.memories.document_chunk_ids(identity.tenant_id, ref) if i not in keep
    ]
    retire(ctx, identity.tenant_id, stale)
    return items(ctx, identity.tenant_id, ids)
