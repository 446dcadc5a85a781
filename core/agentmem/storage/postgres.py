"""The records store on PostgreSQL: the same surface as :class:`~.database.Database`.

Several agentmem nodes share one Postgres database. Each node keeps its own derived keyword
index; the records, and everything else that is state, live here.

- Statements are the shared SQL of the table modules, translated once per text by
  :func:`to_postgres` (``?`` placeholders, SQLite's index hints and ``IS ?``).
- Parameters are bound on the client (``ClientCursor``), so an untyped ``NULL`` or a Python
  ``bool`` behaves as the same literal would in SQLite.
- Write transactions lock only what they read before they write, with advisory locks
  taken first thing in the transaction (:meth:`PostgresDatabase.write`). A write that names
  its keys (``keys=...``) takes the cluster lock in shared mode and an exclusive lock per key,
  so writes of different users, topics and sessions run at the same time on every node; a
  write that names none takes the cluster lock exclusively and runs alone, as every write
  did before (maintenance, forgetting, erasure, imports: rare, and touching rows of many
  partitions). :mod:`~agentmem.storage.write_locks` says which key each step needs and why.
- The change sequence (``change_seq``, assigned by a trigger) does not grow in commit order,
  since writes run at the same time; each change also carries the id of the transaction
  that made it (``change_xid``), and a node reads changes only below the oldest transaction
  still running (:meth:`~agentmem.storage.index_queue.IndexQueue.pending_keyword`), so no
  change can commit behind its position.
- The claim of rows to embed and a node's index position take no advisory lock: the claim
  uses ``FOR UPDATE SKIP LOCKED`` so nodes embedding at the same time take disjoint rows.
- ``NOTIFY agentmem_changes`` (sent by the trigger, once per transaction) wakes the other
  nodes' indexers; they also poll, so a lost notification only delays them.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..distribution import pip_install
from ..errors import StorageError
from .database import Database, Transaction, _too_new, _too_old_to_read

log = logging.getLogger("agentmem.storage")

#: Advisory lock key of migrations at open (one per database: nodes of any schema wait).
MIGRATE_LOCK = 0x61676D02
#: The name of the cluster lock among the write keys (see :meth:`PostgresDatabase.write`).
CLUSTER_LOCK = "cluster"
#: The channel the change trigger notifies.
CHANNEL = "agentmem_changes"
#: Seconds an open keeps retrying a server that answers it is still starting up (as when a
#: cluster comes up together) before it fails; also a pool's wait for a connection.
CONNECT_WAIT = 30.0
#: Seconds one connection attempt may take (libpq's ``connect_timeout``, unless the URL sets
#: its own): an unreachable host fails within it instead of the system's TCP timeout.
CONNECT_TIMEOUT = 5
#: What a server says while it cannot take connections yet (SQLSTATE 57P03), the one refusal
#: an open waits out; any other (nothing listening, no such host, bad password, no such
#: database) fails the open at once.
_STARTING = ("the database system is starting up", "not yet accepting connections")
#: Seconds the change listener waits for a notification before it checks whether the store
#: is closing (a close also wakes it at once, through a notification of its own).
LISTEN_POLL = 0.5

_INDEXED_BY = re.compile(r"\s+INDEXED BY \w+")
_UNARY_PLUS = re.compile(r"(?<=[\s(])\+(?=[a-z_])")
_IS_NOT_PARAM = re.compile(r"\bIS NOT \?")
_IS_PARAM = re.compile(r"\bIS \?")
_TOKENS = re.compile(r"'(?:[^']|'')*'|\?|%")


@lru_cache(maxsize=1024)
def to_postgres(sql: str) -> str:
    """The SQLite-flavoured statement ``sql`` as psycopg expects it.

    SQLite's planner hints (``INDEXED BY``, a unary ``+`` that keeps a column off an index)
    are dropped; ``IS ?`` becomes ``IS NOT DISTINCT FROM``; ``?`` becomes ``%s`` and a
    literal ``%`` is doubled (in quoted strings too: psycopg reads the whole text).
    """
    sql = _INDEXED_BY.sub("", sql)
    sql = _UNARY_PLUS.sub("", sql)
    sql = _IS_NOT_PARAM.sub("IS DISTINCT FROM ?", sql)
    sql = _IS_PARAM.sub("IS NOT DISTINCT FROM ?", sql)

    def token(m: re.Match[str]) -> str:
        text = m.group(0)
        if text == "?":
            return "%s"
        return text.replace("%", "%%")

    return _TOKENS.sub(token, sql)


def redact(url: str) -> str:
    """``url`` without its password (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


def _driver() -> Any:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:  # pragma: no cover - the postgres extra is a dependency of all
        raise StorageError(
            f"records_url needs psycopg 3 and psycopg-pool: {pip_install('postgres')}"
        ) from exc
    return psycopg, psycopg_pool


class _Tx:
    """A write transaction on one pooled connection (the :class:`Transaction` protocol)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Any = (), /) -> Any:
        cur = self._conn.cursor()
        cur.execute(to_postgres(sql), tuple(params))
        return cur

    def executemany(self, sql: str, params: Any, /) -> Any:
        cur = self._conn.cursor()
        cur.executemany(to_postgres(sql), [tuple(p) for p in params])
        return cur


class PostgresDatabase(Database):
    """A PostgreSQL database (``postgresql://...``) with versioned migrations.

    Same surface as the SQLite :class:`~.database.Database` (``write``, ``read``,
    ``migrate``, ``reclaim``, ``close``); :attr:`dialect` is ``"postgres"``.

    Args:
        url: A libpq connection URL.
        read_only: Writes raise StorageError (the server refuses them too).
        pool_size: Most connections this process opens.

    Example:
        >>> db = PostgresDatabase("postgresql://agentmem@db/agentmem")  # doctest: +SKIP
        >>> db.read("SELECT COUNT(*) FROM memories")  # doctest: +SKIP
        [(0,)]
    """

    dialect = "postgres"

    def __init__(self, url: str, *, read_only: bool = False, pool_size: int = 16) -> None:
        psycopg, psycopg_pool = _driver()
        self._psycopg = psycopg
        self._psycopg_pool = psycopg_pool
        self.url = url
        #: For messages and logs.
        self.url_redacted = redact(url)
        #: A Postgres store has no file; the (redacted) URL stands in for messages.
        self.path = Path(self.url_redacted)
        self.read_only = read_only
        self._close_lock = threading.Lock()
        self._closed = False
        self._listeners: list[threading.Thread] = []
        self._stop = threading.Event()
        #: This instance's own channel: :meth:`close` notifies it to end the listener's wait
        #: at once (else a close takes up to a poll interval).
        self._stop_channel = f"agentmem_stop_{uuid.uuid4().hex}"
        kwargs: dict[str, Any] = {"autocommit": True, "cursor_factory": psycopg.ClientCursor}
        try:
            if "connect_timeout" not in psycopg.conninfo.conninfo_to_dict(url):
                kwargs["connect_timeout"] = CONNECT_TIMEOUT
        except psycopg.Error as exc:
            raise StorageError(
                f"records_url {redact(url)} is not a connection URL: {exc}", path=redact(url)
            ) from exc

        def read_only_session(conn: Any) -> None:
            # set per connection, not as a connection option: that would replace the
            # URL's own ``options`` (a search_path, say)
            conn.execute("SET default_transaction_read_only = on")

        # one connection of its own first: the pool would retry any failure in the
        # background, logging each, and say only that it timed out after CONNECT_WAIT
        where = self._connect_once(url, kwargs)
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs=kwargs,
            configure=read_only_session if read_only else None,
            open=False,
            timeout=CONNECT_WAIT,
        )
        try:
            self._pool.open(wait=True, timeout=CONNECT_WAIT)
        except psycopg_pool.PoolTimeout as exc:
            self._pool.close()
            raise StorageError(
                f"cannot open records store at {redact(url)}: {exc}", path=redact(url)
            ) from exc
        #: What the write keys' lock numbers are made unique in (database and schema).
        self._namespace = f"{where[0]}.{where[1]}"
        self._cluster_lock = self.lock_id(CLUSTER_LOCK)

    def _connect_once(self, url: str, kwargs: dict[str, Any]) -> tuple[str, str]:
        """Connect to ``url`` once (waiting out a server still starting up, for at most
        :data:`CONNECT_WAIT` seconds); returns the database and schema connected to.

        Raises:
            StorageError: the connection failed, with libpq's reason (which names the host
                and port, and says whether the connection was refused, timed out, or the
                server refused the user or the database).
        """
        psycopg = self._psycopg
        deadline = time.monotonic() + CONNECT_WAIT
        while True:
            try:
                with psycopg.connect(url, **kwargs) as conn:
                    where = conn.execute("SELECT current_database(), current_schema()").fetchone()
                return str(where[0]), str(where[1])
            except psycopg.Error as exc:
                reason = " ".join(str(exc).split())  # libpq's text spans lines
                if any(s in reason for s in _STARTING) and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                raise StorageError(
                    f"cannot open records store at {redact(url)}: {reason}", path=redact(url)
                ) from exc

    @property
    def closed(self) -> bool:
        return self._closed

    def _check(self) -> None:
        if self._closed:
            raise StorageError("records store is closed", path=self.url_redacted)

    def lock_id(self, key: str) -> int:
        """The advisory lock number of a write key in this store (its database and schema:
        stores in other schemas of the same database never wait for each other)."""
        digest = hashlib.blake2b(f"{self._namespace}\x00{key}".encode(), digest_size=8)
        return int.from_bytes(digest.digest(), "big", signed=True)

    @contextmanager
    def write(
        self, *, keys: Collection[str] | None = None, serial: bool = True
    ) -> Iterator[Transaction]:
        """A write transaction; commits on exit, rolls back on any exception.

        Its first statement takes its advisory locks, held until it ends:

        - ``keys`` given (may be empty): the cluster lock shared, then each key's lock
          exclusively, in one fixed order (by lock number), so two such writes never wait
          for each other in a cycle. For the hot write paths, whose read-then-write steps
          depend only on the rows of their keys.
        - ``keys`` None: the cluster lock exclusively; the transaction runs alone.
        - ``serial=False``: no lock (statements that change no state another write reads
          first, such as claiming rows to embed).
        """
        self._check()
        if self.read_only:
            raise StorageError(
                f"records store {self.url_redacted} is open read-only", path=self.url_redacted
            )
        psycopg = self._psycopg
        locks: list[int] = []
        if serial:
            locks = [self._cluster_lock]
            if keys is not None:
                locks += sorted({self.lock_id(k) for k in keys})
        shared = keys is not None
        try:
            with self._pool.connection() as conn, conn.transaction():
                if len(locks) == 1:
                    fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
                    conn.execute(f"SELECT {fn}(%s)", (locks[0],))
                elif locks:
                    # one round trip; unnest yields the array in order: the cluster lock
                    # (shared) before the keys' locks
                    conn.execute(
                        "SELECT CASE WHEN n = 1 THEN pg_advisory_xact_lock_shared(k) "
                        "ELSE pg_advisory_xact_lock(k) END "
                        "FROM unnest(%s::bigint[]) WITH ORDINALITY AS t(k, n)",
                        (locks,),
                    )
                yield _Tx(conn)
        except psycopg.Error as exc:
            raise StorageError(f"records store write failed: {exc}") from exc

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of a query (its own snapshot)."""
        self._check()
        try:
            with self._pool.connection() as conn:
                return list(conn.execute(to_postgres(sql), tuple(params)).fetchall())
        except self._psycopg.Error as exc:
            raise StorageError(f"records store read failed: {exc}") from exc

    def migrate(self, migrations: Sequence[str]) -> None:
        """Apply the migrations this database has not seen, each in its own transaction,
        under an advisory lock (nodes starting together migrate once).

        Raises:
            StorageError: the database was migrated by a newer agentmem.
        """
        self._check()
        try:
            with self._pool.connection() as conn:
                if self.read_only:
                    version = _version(conn)
                    if version > len(migrations):
                        raise _too_new(self.url_redacted, version, len(migrations))
                    if 0 < version < len(migrations):  # 0: nothing there yet (refused elsewhere)
                        raise _too_old_to_read(self.url_redacted, version, len(migrations))
                    return
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
                    )
                    current = _version(conn)
                    if current > len(migrations):
                        raise _too_new(self.url_redacted, current, len(migrations))
                    for version in range(current + 1, len(migrations) + 1):
                        # one text per migration: a function body holds semicolons
                        with conn.transaction():
                            conn.execute(migrations[version - 1])
                            conn.execute(
                                "INSERT INTO schema_version (version) VALUES (%s)", (version,)
                            )
        except self._psycopg.Error as exc:
            raise StorageError(
                f"cannot migrate records store at {self.url_redacted}: {exc}",
                path=self.url_redacted,
            ) from exc

    def damage(self) -> str | None:
        """None: Postgres checks its own pages (checksums, its own tools), not agentmem."""
        return None

    def schema_version(self) -> int:
        with self._pool.connection() as conn:
            return _version(conn)

    def reclaim(self, *, vacuum: bool) -> bool:
        """With ``vacuum``, rewrite every table of the store's schema (``VACUUM FULL``): the
        old files, holding deleted rows, are removed. Postgres' write-ahead log, replicas and backups keep their
        own copies until they are recycled; that is the operator's retention, not ours."""
        self._check()
        if self.read_only:
            raise StorageError(
                f"records store {self.url_redacted} is open read-only", path=self.url_redacted
            )
        if not vacuum:
            return True
        try:
            with self._pool.connection() as conn:
                tables = conn.execute(
                    "SELECT quote_ident(tablename) FROM pg_tables "
                    "WHERE schemaname = current_schema()"
                ).fetchall()
                if tables:
                    conn.execute("VACUUM FULL " + ", ".join(t[0] for t in tables))
        except self._psycopg.Error as exc:
            raise StorageError(f"records store compaction failed: {exc}") from exc
        return True

    def listen(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` whenever another transaction changed indexed rows (a daemon thread
        on its own connection; it reconnects after an error)."""
        thread = threading.Thread(
            target=self._listen_loop, args=(wake,), name="agentmem-listen", daemon=True
        )
        self._listeners.append(thread)
        thread.start()

    def _listen_loop(self, wake: Callable[[], None]) -> None:
        psycopg = self._psycopg
        while not self._stop.is_set():
            try:
                with psycopg.Connection.connect(self.url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    conn.execute(f"LISTEN {self._stop_channel}")
                    wake()  # whatever changed while not listening
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=LISTEN_POLL, stop_after=1):
                            if note.channel == CHANNEL:
                                wake()
            except psycopg.Error as exc:
                log.warning("change notifications interrupted (%s); polling meanwhile", exc)
                self._stop.wait(1.0)

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._stop.set()
            if self._listeners:
                self._wake_listeners()
            for thread in self._listeners:
                thread.join(2.0)
            self._pool.close()

    def _wake_listeners(self) -> None:
        """End the listeners' wait for a notification now (they see ``_stop`` next)."""
        try:
            with self._pool.connection(timeout=1.0) as conn:
                # pg_notify, not NOTIFY: the statement is refused in a read-only session
                conn.execute("SELECT pg_notify(%s, '')", (self._stop_channel,))
        except (self._psycopg.Error, self._psycopg_pool.PoolTimeout) as exc:
            log.debug("could not wake the change listener (%s): it stops at its next poll", exc)


def _version(conn: Any) -> int:
    exists = conn.execute("SELECT to_regclass('schema_version')").fetchone()[0]
    if exists is None:
        return 0
    return int(conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0)
