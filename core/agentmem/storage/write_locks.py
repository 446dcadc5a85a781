"""What each write of the records store locks on Postgres, and why (SQLite has one writer).

Several nodes write to one Postgres at the same time. A write that only inserts its own
rows, or changes one row with a single guarded statement, needs no lock of ours: Postgres's
row locks and unique indexes keep it right. A lock is needed where a transaction reads
something and then writes on what it read; each such step locks the narrowest key that
covers what it read, taken exclusively at the start of the transaction
(:meth:`~agentmem.storage.postgres.PostgresDatabase.write` with ``keys``):

======================  ==============================  =========================================
step                    key                             why
======================  ==============================  =========================================
topic supersession      (tenant, partition, topic)      reads the live rows of a topic and retires
                                                        them: two writers of one topic would each
                                                        miss the other's new row and leave two
                                                        current (serial supersession per topic)
dedup and idempotency   each dedup key, row id and      looks the key up, then inserts: the same
                        payload key of the batch        write through two nodes is stored once,
                                                        and both get the one id back
session close order     (tenant, partition)             reads MAX(close_order) and writes the
                        of the sessions                 next one
======================  ==============================  =========================================

Nothing else is read-then-written: a plain ``remember`` or ``add_message`` of one user
locks nothing of another user's, and two of the same user lock only their own ids. The
change sequence needs no lock either: each change carries the id of its transaction and a
node reads changes only below the oldest transaction still running
(:meth:`~agentmem.storage.index_queue.IndexQueue.pending_keyword`).

Every write that takes keys also takes the cluster lock in shared mode; a write that names
no keys takes it exclusively and runs alone (forgetting, erasure, retention, imports,
promotions, reindexing): those touch rows of many partitions in one transaction, and alone
they can neither interleave with the steps above nor wait in a cycle on row locks.

The background bookkeeping of many rows at once (the indexer marking rows done, recall
adding access counts) never waits for a row lock: :func:`update_rows` updates the rows no
other transaction holds and comes back for the rest, so it can never close a cycle of
waits with a user's write (which would make Postgres abort one of them). What is left: two
writes superseding different topics whose old rows were extracted from the same chat
messages mark those messages superseded too (``_retire_sources``); two such batches
running at once could wait on each other's message rows. Postgres then aborts one, whose
caller gets a :class:`~agentmem.errors.StorageError` (nothing of it was acknowledged or
stored) and may write again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from typing import Any

from .database import Database, Transaction, chunks, marks
from .rows import NewRecord

#: Seconds between two tries of :func:`update_rows` at rows another transaction holds.
RETRY_SECONDS = 0.005


def _key(kind: str, *parts: str | None) -> str:
    return "\x1f".join([kind, *("" if p is None else p for p in parts)])


def topic_key(tenant_id: str, partition: str, topic: str) -> str:
    """The key of a topic's supersession."""
    return _key("topic", tenant_id, partition, topic)


def row_key(memory_id: str) -> str:
    """The key of a row id being inserted."""
    return _key("row", memory_id)


def dedup_key(key: str) -> str:
    """The key of a dedup key being inserted."""
    return _key("dedup", key)


def close_order_key(tenant_id: str, partition: str) -> str:
    """The key of a conversation partition's session close order."""
    return _key("close", tenant_id, partition)


def payload_key(key: str) -> str:
    """The key of a full-text payload being written (an upsert by key)."""
    return _key("payload", key)


def insert_keys(records: Iterable[NewRecord]) -> set[str]:
    """The keys of inserting ``records``: each id, dedup key, payload key and topic."""
    out: set[str] = set()
    for rec in records:
        out.add(row_key(rec.id))
        if rec.dedup_key is not None:
            out.add(dedup_key(rec.dedup_key))
        if rec.payload_key is not None:
            out.add(payload_key(rec.payload_key))
        if rec.topic_key is not None:
            out.add(topic_key(rec.tenant_id, rec.partition, rec.topic_key))
    return out


def update_rows(
    db: Database,
    column: str,
    values: Collection[int] | Collection[str],
    apply: Callable[[Transaction, list[Any]], None],
) -> None:
    """Call ``apply(tx, some)`` until every stored row of ``memories`` whose ``column``
    (``seq`` or ``id``) is among ``values`` was passed in ``some``, each time in a write
    transaction holding the row locks of ``some``.

    On Postgres rows another transaction holds are skipped (``SKIP LOCKED``) and tried again
    in the next transaction, so these transactions never wait for a row lock; values of
    rows that no longer exist are dropped. On SQLite (one writer) one transaction does all.
    """
    if column not in ("seq", "id"):
        raise ValueError(f"update_rows: unknown column {column!r}")
    todo: list[Any] = sorted(set(values))
    while todo:
        left: list[Any] = []
        with db.write(keys=()) as tx:
            for chunk in chunks(todo):
                if db.dialect != "postgres":
                    apply(tx, chunk)
                    continue
                m = marks(len(chunk))
                got = {
                    r[0]
                    for r in tx.execute(
                        f"SELECT {column} FROM memories WHERE {column} IN ({m}) "
                        f"FOR UPDATE SKIP LOCKED",
                        chunk,
                    ).fetchall()
                }
                if got:
                    apply(tx, [v for v in chunk if v in got])
                if len(got) < len(chunk):
                    stored = {
                        r[0]
                        for r in tx.execute(
                            f"SELECT {column} FROM memories WHERE {column} IN ({m})", chunk
                        ).fetchall()
                    }
                    left += [v for v in chunk if v in stored and v not in got]
        todo = left
        if todo:
            time.sleep(RETRY_SECONDS)
