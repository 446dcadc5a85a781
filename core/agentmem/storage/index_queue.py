"""Index state of the records: what the background indexer still has to do.

Every row carries two flags: ``kw_pending`` (its keyword-index entry must be added or removed)
and ``vec_pending`` (:data:`~agentmem.storage.rows.VEC_PENDING`: its vector must be written or
removed; ``VEC_FAILED``: embedding failed after retries; ``VEC_SKIP``: never embedded). A
write sets them in its own transaction; the indexer clears them after the index write, so a
crash at any point only means the work is done again.

On Postgres, where several nodes share the records and each keeps its own keyword index, the
keyword state is per node instead: a write's ``kw_pending = 1`` becomes the row's next
number in the change sequence (``change_seq``, see the Postgres schema) together with the id
of the transaction that made the change (``change_xid``), and each node records how far
along the changes its keyword index is (``index_progress``, one row per node): a position
(transaction id, change number), changes ordered the same way.

Writes commit in any order (they do not wait for each other), so change 11 may commit while
change 10 is still being written; a node that read 11 and moved past it would skip 10
forever. So a node reads only the changes of transactions below the oldest one still
running (``pg_snapshot_xmin``, the visibility horizon): every transaction there has ended,
and any change made from now on belongs to a transaction at or above it, after the
position. A change waiting behind the horizon is still recallable: recall reads the rows
after this node's position from the records (read-your-writes). A transaction left open
anywhere in the Postgres cluster holds the horizon back, and with it every node's keyword
index (not recall), until it ends.

The vector index is shared, so ``vec_pending`` stays per row; a node takes rows to embed by
claiming them (``FOR UPDATE SKIP LOCKED`` and a lease), so each row is embedded once
cluster-wide.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..errors import StorageError
from .database import Database, Transaction, chunks, marks
from .rows import (
    COLUMNS,
    LIVE,
    VEC_FAILED,
    VEC_PENDING,
    VEC_SKIP,
    VEC_SYNCED,
    VECTOR_LIVE,
    Row,
    TextFeatures,
    iso,
    now_utc,
    row_to_item,
)
from .write_locks import update_rows

#: ``meta`` key set once every indexed row has its text features stored (migration 8 sets
#: it for a data dir created empty; the indexer's backfill for an older one).
TEXT_FEATURES_DONE = "text_features_complete"

#: Seconds a node holds the rows it claimed to embed; a node that dies holding them delays
#: their embedding by at most this long (another node then claims them).
CLAIM_SECONDS = 60
#: The most identifiers one backlog lookup matches (each scans the backlog; SQLite also
#: limits how deep a WHERE clause may nest).
MAX_NEEDLES = 16


class IndexQueue:
    """The pending flags of the ``memories`` table (``records.index``).

    Args:
        db: The records database.
        node_id: This node's name in ``index_progress`` (Postgres only; a node's keyword
            progress belongs to its keyword index, so a new home gets a new name). None
            (a command that keeps no index, e.g. ``agentmem keys``): position 0, not saved.
    """

    def __init__(self, db: Database, node_id: str | None = None) -> None:
        self._db = db
        self.node_id = node_id
        #: True when keyword progress is this node's position in the change sequence.
        self.follows_changes = db.dialect == "postgres"
        self._cursor: tuple[int, int] = (0, 0)
        self._read_through: tuple[int, int] = (0, 0)
        self._removed: list[str] = []
        #: True when the last :meth:`pending_keyword` found changes it may not read yet
        #: (committed above the visibility horizon): the indexer should look again soon.
        self.held_back = False
        if self.follows_changes and node_id is not None:
            rows = db.read(
                "SELECT keyword_xid, keyword_seq FROM index_progress WHERE node_id = ?",
                (node_id,),
            )
            self._cursor = (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    @property
    def keyword_position(self) -> tuple[int, int]:
        """How far along the changes this node's keyword index is (Postgres): every change
        up to (transaction id, change number) is in it."""
        return self._cursor

    def _kw_stale(self) -> str:
        """The condition of a row whose keyword entry this node has still to update."""
        if self.follows_changes:
            xid, seq = self._cursor
            return f"(change_xid, change_seq) > ({int(xid)}, {int(seq)})"
        return "kw_pending = 1"

    def pending_keyword(self, limit: int) -> list[tuple[int, Row, bool]]:
        """Rows whose keyword-index state is stale: (seq, row, live), oldest first.

        On Postgres these are the changes after this node's position made by transactions
        that have ended (below the visibility horizon, see the module docstring); call
        :meth:`keyword_read_done` once they are in the keyword index.
        """
        if self.follows_changes:
            return self._pending_changes(limit)
        rows = self._db.read(
            f"SELECT seq, {COLUMNS}, ({LIVE}) FROM memories WHERE kw_pending = 1 "
            f"ORDER BY seq LIMIT ?",
            (limit,),
        )
        return [(r[0], row_to_item(r[1:-1]), bool(r[-1])) for r in rows]

    def _pending_changes(self, limit: int) -> list[tuple[int, Row, bool]]:
        # the horizon first: every transaction below it has ended before the reads below
        # start, so they see all of its changes
        horizon = int(
            self._db.read("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")[0][0]
        )
        after = (*self._cursor, horizon, limit)
        found = self._db.read(
            f"SELECT seq, {COLUMNS}, ({LIVE}), change_xid, change_seq FROM memories "
            f"WHERE (change_xid, change_seq) > (?, ?) AND change_xid < ? "
            f"ORDER BY change_xid, change_seq LIMIT ?",
            after,
        )
        gone = self._db.read(
            "SELECT change_xid, change_seq, id FROM memory_deletions "
            "WHERE (change_xid, change_seq) > (?, ?) AND change_xid < ? "
            "ORDER BY change_xid, change_seq LIMIT ?",
            after,
        )
        # read as far as both lists are complete (a full list may go on past its end); when
        # neither is full, every change below the horizon is read
        full = [(int(found[-1][-2]), int(found[-1][-1]))] if len(found) == limit else []
        full += [(int(gone[-1][0]), int(gone[-1][1]))] if len(gone) == limit else []
        through = min(full) if full else max((horizon, 0), self._cursor)
        self._read_through = through
        self._removed = [str(r[2]) for r in gone if (int(r[0]), int(r[1])) <= through]
        read = [
            (r[0], row_to_item(r[1:-3]), bool(r[-3]))
            for r in found
            if (int(r[-2]), int(r[-1])) <= through
        ]
        self.held_back = (
            not read
            and not self._removed
            and bool(
                self._db.read(
                    "SELECT EXISTS (SELECT 1 FROM memories WHERE change_xid >= ?) "
                    "OR EXISTS (SELECT 1 FROM memory_deletions WHERE change_xid >= ?)",
                    (horizon, horizon),
                )[0][0]
            )
        )
        return read

    def keyword_removals(self) -> list[str]:
        """Ids of rows deleted outright (erased) within what :meth:`pending_keyword` read
        last: their keyword entries go too (Postgres; SQLite's indexer owns the only keyword
        index, and the erasure rewrites it)."""
        return list(self._removed)

    def keyword_read_done(self) -> None:
        """The rows :meth:`pending_keyword` returned last are in this node's keyword index:
        move its position in the change sequence past them (Postgres; no-op on SQLite).

        The changes read were all below the visibility horizon: no change at or before the
        new position can commit after this.
        """
        if not self.follows_changes or self._read_through <= self._cursor:
            return
        self._set_position(self._read_through)

    def _set_position(self, position: tuple[int, int]) -> None:
        if self.node_id is None:
            raise StorageError("this records store was opened without a node id")
        with self._db.write(serial=False) as tx:
            tx.execute(
                "INSERT INTO index_progress (node_id, keyword_xid, keyword_seq, updated_at) "
                "VALUES (?,?,?,?) ON CONFLICT (node_id) DO UPDATE SET "
                "keyword_xid = excluded.keyword_xid, keyword_seq = excluded.keyword_seq, "
                "updated_at = excluded.updated_at",
                (self.node_id, *position, iso(now_utc())),
            )
        self._cursor = self._read_through = position

    def pending_vector(
        self, limit: int, *, retry_failed: bool = False
    ) -> list[tuple[int, Row, bool]]:
        """Rows whose vector state is stale: (seq, row, belongs in the vector index).

        On Postgres the rows are claimed for this node (the others skip them until the
        claim is cleared by :meth:`mark_vector_done` or its lease runs out).
        """
        state = "" if retry_failed else f" AND vec_pending = {VEC_PENDING}"
        return _vector_rows(self._db, self, state, (), limit, "INDEXED BY memories_vec_todo")

    def pending_vector_of(self, ids: Sequence[str]) -> list[tuple[int, Row, bool]]:
        """The rows among ``ids`` waiting to be embedded (not those whose embedding failed),
        as :meth:`pending_vector` gives them (claimed on Postgres), oldest first."""
        out: list[tuple[int, Row, bool]] = []
        for chunk in chunks(ids):
            where = f" AND vec_pending = {VEC_PENDING} AND id IN ({marks(len(chunk))})"
            out += _vector_rows(self._db, self, where, chunk, len(chunk))
        return sorted(out, key=lambda t: t[0])

    def pending_in_partitions(
        self, tenant_id: str, partitions: Sequence[str], limit: int
    ) -> list[tuple[int, Row, bool, bool]]:
        """Live rows of ``partitions`` missing from an index, newest first:
        (seq, row, keyword entry pending, vector pending or failed).

        Recall reads these so a write is recallable before the indexer has caught up.
        """
        if not partitions:
            return []
        where = f"partition IN ({marks(len(partitions))}) AND tenant_id = ? AND {LIVE}"
        params = (*partitions, tenant_id)
        # two reads, each on its partial index (the queues are short; a partition is not)
        found: dict[int, tuple[int, Row, bool, bool]] = {}
        for r in self._db.read(
            f"SELECT seq, {COLUMNS}, ({VECTOR_LIVE}) FROM memories INDEXED BY "
            f"memories_vec_todo_partition WHERE vec_pending IN ({VEC_PENDING}, {VEC_FAILED}) "
            f"AND {where} ORDER BY seq DESC LIMIT ?",
            (*params, limit),
        ):
            if r[-1]:  # rows leaving the vector index are pending too; they are not missing
                found[r[0]] = (r[0], row_to_item(r[1:-1]), False, True)
        for stale in self._keyword_stale(tenant_id, partitions, limit):
            found[stale[0]] = stale
        return [found[seq] for seq in sorted(found, reverse=True)[:limit]]

    def keyword_pending_naming(
        self, tenant_id: str, partitions: Sequence[str], needles: Sequence[str], limit: int
    ) -> list[tuple[int, Row, bool, bool]]:
        """Live rows of ``partitions`` not yet in this node's keyword index whose content
        has one of ``needles`` as a whole word (case aside; at most the first
        :data:`MAX_NEEDLES`), newest first, shaped as :meth:`pending_in_partitions` returns
        them.

        For a backlog too long to read whole (a bulk import, a node catching up): the rows
        naming a query's identifier, which the vector index rarely finds by meaning. A whole
        word, so that "4711" is not crowded out by rows naming "471100". It scans the
        backlog's rows (on Postgres without an index to narrow them)."""
        needles = list(dict.fromkeys(needles))[:MAX_NEEDLES]
        if not partitions or not needles:
            return []
        # a substring first (LIKE: SQLite ignores ASCII case, Postgres's ILIKE any case),
        # then the whole word (SQLite: the regexp function Database registers)
        like, regexp = ("ILIKE", "~*") if self.follows_changes else ("LIKE", "REGEXP")
        word = _pg_word if self.follows_changes else _py_word
        match = f"(content {like} ? ESCAPE '!' AND content {regexp} ?)"
        params = [p for n in needles for p in (f"%{_like_escaped(n)}%", word(n))]
        condition = f" AND ({' OR '.join([match] * len(needles))})"
        return self._keyword_stale(tenant_id, partitions, limit, condition, params)

    def _keyword_stale(
        self,
        tenant_id: str,
        partitions: Sequence[str],
        limit: int,
        condition: str = "",
        params: Sequence[str] = (),
    ) -> list[tuple[int, Row, bool, bool]]:
        """Live rows of ``partitions`` not yet in this node's keyword index (and meeting
        ``condition``), newest first: (seq, row, True, vector pending or failed)."""
        return [
            (int(r[0]), row_to_item(r[1:-1]), True, bool(r[-1]))
            for r in self._db.read(
                f"SELECT seq, {COLUMNS}, vec_pending IN ({VEC_PENDING}, {VEC_FAILED}) "
                f"AND ({VECTOR_LIVE}) FROM memories{self._kw_hint()} "
                f"WHERE {self._kw_stale()} AND partition IN ({marks(len(partitions))}) "
                f"AND tenant_id = ? AND {LIVE}{condition} ORDER BY seq DESC LIMIT ?",
                (*partitions, tenant_id, *params, limit),
            )
        ]

    def state_of(self, ids: Sequence[str]) -> list[tuple[int, Row, bool, bool, bool, bool]]:
        """(seq, row, live, keyword pending, vector pending, belongs in the vector index) of
        the stored rows among ``ids``, oldest first (a synchronous index update)."""
        out: list[tuple[int, Row, bool, bool, bool, bool]] = []
        for chunk in chunks(ids):
            for r in self._db.read(
                f"SELECT seq, {COLUMNS}, ({LIVE}), {self._kw_stale()}, "
                f"vec_pending IN ({VEC_PENDING}, {VEC_FAILED}), ({VECTOR_LIVE}) FROM memories "
                f"WHERE id IN ({marks(len(chunk))})",
                chunk,
            ):
                out.append(
                    (
                        int(r[0]),
                        row_to_item(r[1:-4]),
                        bool(r[-4]),
                        bool(r[-3]),
                        bool(r[-2]),
                        bool(r[-1]),
                    )
                )
        out.sort(key=lambda t: t[0])
        return out

    def vector_ids(self, tenant_id: str, partition: str) -> set[str]:
        """Rows of a partition that belong in its vector collection."""
        rows = self._db.read(
            f"SELECT id FROM memories WHERE tenant_id = ? AND partition = ? AND {VECTOR_LIVE}",
            (tenant_id, partition),
        )
        return {r[0] for r in rows}

    def embedded_partitions(self) -> list[tuple[str, str]]:
        """(tenant, partition) of every partition with a row whose vector the index holds
        (by the records: embedded, live, nothing queued), so whose collection must exist."""
        return [
            (str(r[0]), str(r[1]))
            for r in self._db.read(
                "SELECT p.tenant_id, p.partition FROM partitions p WHERE EXISTS (SELECT 1 "
                "FROM memories m WHERE m.tenant_id = p.tenant_id AND m.partition = p.partition "
                f"AND m.embedded = 1 AND m.vec_pending = {VEC_SYNCED} AND {VECTOR_LIVE})"
            )
        ]

    def requeue_embedded(self, partitions: Sequence[tuple[str, str]]) -> int:
        """Queue again every embedded row of these (tenant, partition) pairs (their vectors
        were lost); returns how many rows were queued."""
        n = 0
        with self._db.write() as tx:
            for tenant_id, partition in partitions:
                n += tx.execute(
                    f"UPDATE memories SET vec_pending = {VEC_PENDING}, embedded = 0 "
                    f"WHERE tenant_id = ? AND partition = ? AND embedded = 1",
                    (tenant_id, partition),
                ).rowcount
        return n

    def requeue(self, ids: Sequence[str], *, vectors: bool) -> None:
        """Flag live rows among ``ids`` for the keyword index (and, with ``vectors``, for the
        vector index): their indexed text changes (e.g. a message they carry as context was
        forgotten)."""

        def flag(tx: Transaction, some: list[str]) -> None:
            m = marks(len(some))
            tx.execute(f"UPDATE memories SET kw_pending = 1 WHERE id IN ({m}) AND {LIVE}", some)
            if vectors:
                tx.execute(
                    f"UPDATE memories SET vec_pending = {VEC_PENDING} WHERE id IN ({m}) "
                    f"AND {LIVE} AND vec_pending != {VEC_SKIP}",
                    some,
                )

        update_rows(self._db, "id", ids, flag)

    def mark_keyword_done(
        self,
        done: Sequence[tuple[int, bool]],
        features: Mapping[int, TextFeatures] | None = None,
    ) -> None:
        """(seq, indexed) pairs: clear kw_pending; keyword_indexed = indexed.

        ``indexed`` is the liveness the indexer saw; a row deleted or anonymized since then
        stays pending, so the next pass removes it from the index. ``features`` (by seq) are
        stored with the indexed rows; a row leaving the index loses its stored features.
        """
        feats = features or {}
        indexed_of = dict(done)

        def mark(tx: Transaction, seqs: list[int]) -> None:
            tx.executemany(
                f"UPDATE memories SET kw_pending = 0, keyword_indexed = ?, kw_terms = ?, "
                f"kw_term_count = ?, content_tokens = ? WHERE seq = ? AND ({LIVE}) = ?",
                [
                    (
                        int(indexed_of[seq]),
                        *_feature_values(feats.get(seq) if indexed_of[seq] else None),
                        seq,
                        bool(indexed_of[seq]),
                    )
                    for seq in seqs
                ],
            )

        update_rows(self._db, "seq", list(indexed_of), mark)

    def missing_text_features(
        self, after_seq: int, limit: int
    ) -> tuple[int | None, list[tuple[int, str, str]]]:
        """Rows indexed without stored text features (a data dir from before they were
        stored), scanning ``limit`` rows in write order after ``after_seq``.

        Returns (the last seq scanned, or None at the end; (seq, content, metadata JSON) of
        the scanned rows that need their features).
        """
        todo = f"kw_terms IS NULL AND keyword_indexed = 1 AND kw_pending = 0 AND {LIVE}"
        rows = self._db.read(
            f"SELECT seq, {todo}, CASE WHEN {todo} THEN content END, "
            f"CASE WHEN {todo} THEN metadata END FROM memories WHERE seq > ? "
            f"ORDER BY seq LIMIT ?",
            (after_seq, limit),
        )
        if not rows:
            return None, []
        return int(rows[-1][0]), [(int(r[0]), r[2], r[3]) for r in rows if r[1]]

    def set_text_features(self, features: Mapping[int, TextFeatures]) -> None:
        """Store text features of indexed live rows (by seq); rows that changed state since
        they were read are left alone."""

        def store(tx: Transaction, seqs: list[int]) -> None:
            tx.executemany(
                f"UPDATE memories SET kw_terms = ?, kw_term_count = ?, content_tokens = ? "
                f"WHERE seq = ? AND keyword_indexed = 1 AND kw_pending = 0 AND {LIVE}",
                [(*_feature_values(features[seq]), seq) for seq in seqs],
            )

        update_rows(self._db, "seq", list(features), store)

    def mark_vector_done(self, done: Sequence[tuple[int, bool]]) -> None:
        """(seq, embedded) pairs; like :meth:`mark_keyword_done`, guarded by liveness.

        A row whose liveness changed after it was read, and whose flag was cleared meanwhile
        (a synchronous removal ran between the read and this write), is flagged again: the
        vector just written for it is removed by the next pass.
        """
        embedded_of = dict(done)

        def mark(tx: Transaction, seqs: list[int]) -> None:
            tx.executemany(
                f"UPDATE memories SET vec_pending = {VEC_SYNCED}, embedded = ?, "
                f"embed_error = NULL WHERE seq = ? AND ({VECTOR_LIVE}) = ?",
                [(int(embedded_of[seq]), seq, bool(embedded_of[seq])) for seq in seqs],
            )
            tx.executemany(
                f"UPDATE memories SET vec_pending = {VEC_PENDING} WHERE seq = ? "
                f"AND ({VECTOR_LIVE}) != ? AND vec_pending = {VEC_SYNCED}",
                [(seq, True) for seq in seqs if embedded_of[seq]],
            )
            _unclaim(tx, self, seqs)  # this node is done with them, whatever their state now

        update_rows(self._db, "seq", list(embedded_of), mark)

    def mark_vector_failed(self, seqs: Sequence[int], error: str) -> None:
        def mark(tx: Transaction, some: list[int]) -> None:
            tx.executemany(
                f"UPDATE memories SET vec_pending = {VEC_FAILED}, embedded = 0, "
                f"embed_attempts = embed_attempts + 1, embed_error = ?{self._unclaim()} "
                f"WHERE seq = ?",
                [(error[:500], seq) for seq in some],
            )

        update_rows(self._db, "seq", seqs, mark)

    def release_claims(self, seqs: Sequence[int]) -> None:
        """Give back the claims on rows this node did not embed: another takes them now."""
        update_rows(self._db, "seq", seqs, lambda tx, some: _unclaim(tx, self, some))

    def mark_all_pending(self) -> None:
        """Flag every row for both indexes (``reindex``); on Postgres this node's keyword
        index starts the change sequence again (the other nodes' are not touched)."""
        if self.follows_changes:
            self._set_position((0, 0))
        with self._db.write() as tx:
            if not self.follows_changes:
                tx.execute("UPDATE memories SET kw_pending = 1, keyword_indexed = 0")
            tx.execute(
                f"UPDATE memories SET vec_pending = {VEC_PENDING}, embedded = 0 "
                f"WHERE vec_pending != {VEC_SKIP}"
            )

    def keyword_indexed_count(self) -> int:
        """Live rows the records say this node's keyword index holds (lost if it is empty)."""
        return _count(self._db, f"NOT ({self._kw_stale()}) AND {LIVE}")

    def mark_keywords_pending(self) -> None:
        """Flag every row for the keyword index (a rebuilt keyword index)."""
        if self.follows_changes:
            self._set_position((0, 0))
            return
        with self._db.write() as tx:
            tx.execute("UPDATE memories SET kw_pending = 1, keyword_indexed = 0")

    def mark_vectors_pending(self) -> None:
        """Flag every embeddable row for the vector index (vectors dropped)."""
        with self._db.write() as tx:
            tx.execute(
                f"UPDATE memories SET vec_pending = {VEC_PENDING}, embedded = 0 "
                f"WHERE vec_pending != {VEC_SKIP}"
            )

    def requeue_failed_vectors(self) -> None:
        """Flag the rows whose embedding failed for another try."""
        with self._db.write() as tx:
            tx.execute(
                f"UPDATE memories SET vec_pending = {VEC_PENDING} WHERE vec_pending = {VEC_FAILED}"
            )

    def pending_counts(self, tenant_id: str | None = None) -> tuple[int, int, int]:
        """(keyword pending, vector pending, vector failed), of ``tenant_id`` or of all."""
        where, params = _of_tenant(tenant_id)
        kw = _count(self._db, f"{self._kw_stale()}{where}", params)
        rows = self._db.read(
            f"SELECT vec_pending, COUNT(*) FROM memories INDEXED BY memories_vec_todo "
            f"WHERE vec_pending IN ({VEC_PENDING}, {VEC_FAILED}){where} GROUP BY vec_pending",
            params,
        )
        counts = dict(rows)
        return kw, int(counts.get(VEC_PENDING, 0)), int(counts.get(VEC_FAILED, 0))

    def has_unembedded(self, tenant_id: str, partitions: Sequence[str]) -> bool:
        """True if a live row of ``partitions`` is waiting for (or failed) its vector."""
        if not partitions:
            return False
        rows = self._db.read(
            f"SELECT 1 FROM memories INDEXED BY memories_vec_todo_partition "
            f"WHERE vec_pending IN ({VEC_PENDING}, {VEC_FAILED}) "
            f"AND partition IN ({marks(len(partitions))}) AND tenant_id = ? AND {LIVE} LIMIT 1",
            (*partitions, tenant_id),
        )
        return bool(rows)

    def state(
        self, tenant_id: str | None = None
    ) -> list[tuple[str, str, str, int, int, int, int, int]]:
        """(id, tenant, partition, kw_pending, keyword_indexed, vec_pending, embedded,
        belongs in the vector index) of every live row (of ``tenant_id``; ``doctor``)."""
        indexed = f"NOT ({self._kw_stale()})" if self.follows_changes else "keyword_indexed"
        where, params = _of_tenant(tenant_id)
        return [
            tuple(r)
            for r in self._db.read(
                f"SELECT id, tenant_id, partition, {self._kw_stale()}, {indexed}, "
                f"vec_pending, embedded, ({VECTOR_LIVE}) FROM memories WHERE {LIVE}{where}",
                params,
            )
        ]

    def queued_keyword_removals(self) -> set[str]:
        """Retired rows whose keyword entry is still to be removed."""
        return {
            r[0]
            for r in self._db.read(
                f"SELECT id FROM memories WHERE {self._kw_stale()} AND NOT ({LIVE})"
            )
        }

    def queued_vector_ids(self) -> set[str]:
        """Rows whose vector is still to be written, removed or retried."""
        return {
            r[0]
            for r in self._db.read(
                f"SELECT id FROM memories WHERE vec_pending IN ({VEC_PENDING}, {VEC_FAILED})"
            )
        }

    def failed_vector_ids(self, limit: int, tenant_id: str | None = None) -> list[str]:
        """The oldest rows (of ``tenant_id``) whose embedding failed."""
        where, params = _of_tenant(tenant_id)
        return [
            r[0]
            for r in self._db.read(
                f"SELECT id FROM memories WHERE vec_pending = {VEC_FAILED}{where} "
                "ORDER BY seq LIMIT ?",
                (*params, limit),
            )
        ]

    def _kw_hint(self) -> str:
        return "" if self.follows_changes else " INDEXED BY memories_kw_pending"

    def _unclaim(self) -> str:
        """Clears a row's embedding claim (Postgres; SQLite has one embedding process)."""
        return ", vec_claim_node = NULL, vec_claim_until = NULL" if self.follows_changes else ""


def _count(db: Database, where: str, params: Sequence[str] = ()) -> int:
    """Rows of ``memories`` matching the condition ``where``."""
    return int(db.read(f"SELECT COUNT(*) FROM memories WHERE {where}", params)[0][0])


def _of_tenant(tenant_id: str | None) -> tuple[str, tuple[str, ...]]:
    """An ``AND tenant_id = ?`` condition and its parameter (nothing for every tenant)."""
    return ("", ()) if tenant_id is None else (" AND tenant_id = ?", (tenant_id,))


def _feature_values(f: TextFeatures | None) -> tuple[str | None, int | None, int | None]:
    return (None, None, None) if f is None else (f.terms, f.term_count, f.tokens)


def _py_word(text: str) -> str:
    """A Python regular expression matching ``text`` as a whole word, in any case."""
    return rf"(?i)(?<![^\W_]){re.escape(text)}(?![^\W_])"


def _pg_word(text: str) -> str:
    """A PostgreSQL regular expression matching ``text`` as a whole word (with ``~*``)."""
    literal = "".join(c if c.isalnum() else f"\\{c}" for c in text)
    return f"(^|[^[:alnum:]]){literal}([^[:alnum:]]|$)"


def _like_escaped(text: str) -> str:
    """``text`` matched literally in a ``LIKE ... ESCAPE '!'`` pattern."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def _unclaim(tx: Transaction, queue: IndexQueue, seqs: Sequence[int]) -> None:
    """Drop ``queue``'s node's claims to embed the rows ``seqs`` (Postgres: SQLite's single
    writer claims nothing)."""
    if queue.follows_changes:
        tx.executemany(
            "UPDATE memories SET vec_claim_node = NULL, vec_claim_until = NULL "
            "WHERE seq = ? AND vec_claim_node = ?",
            [(seq, queue.node_id) for seq in seqs],
        )


def _vector_rows(
    db: Database, queue: IndexQueue, where: str, params: Sequence[str], limit: int, index: str = ""
) -> list[tuple[int, Row, bool]]:
    """(seq, row, belongs in the vector index) of the rows waiting for the vector index that
    match ``where``, oldest first, at most ``limit``; on Postgres claimed for ``queue``'s node
    (rows another node holds are skipped). ``index``: an SQLite ``INDEXED BY`` clause."""
    if queue.follows_changes:
        with db.write(serial=False) as tx:
            claimed = tx.execute(
                f"UPDATE memories SET vec_claim_node = ?, "
                f"vec_claim_until = now() + interval '{CLAIM_SECONDS} seconds' "
                f"WHERE seq IN (SELECT seq FROM memories "
                f"WHERE vec_pending IN ({VEC_PENDING}, {VEC_FAILED}){where} "
                f"AND (vec_claim_until IS NULL OR vec_claim_until < now()) "
                f"ORDER BY seq LIMIT ? FOR UPDATE SKIP LOCKED) "
                f"RETURNING seq, {COLUMNS}, ({VECTOR_LIVE})",
                (queue.node_id, *params, limit),
            ).fetchall()
        claimed.sort(key=lambda r: int(r[0]))
        return [(r[0], row_to_item(r[1:-1]), bool(r[-1])) for r in claimed]
    rows = db.read(
        f"SELECT seq, {COLUMNS}, ({VECTOR_LIVE}) FROM memories {index} "
        f"WHERE vec_pending IN ({VEC_PENDING}, {VEC_FAILED}){where} "
        f"ORDER BY seq LIMIT ?",
        (*params, limit),
    )
    return [(r[0], row_to_item(r[1:-1]), bool(r[-1])) for r in rows]
