"""SQL connections of the records store: one writer, one reader connection per thread.

SQLite in WAL mode lets readers run beside the single writer. Each reading thread gets its
own connection; every write runs on one connection, guarded by a lock, inside a
``BEGIN IMMEDIATE ... COMMIT`` transaction. sqlite3 errors become
:class:`~agentmem.errors.StorageError` here, so no caller sees a driver exception.

The SQL written against a :class:`Database` uses ``?`` placeholders and statements both SQLite
and PostgreSQL understand (``INSERT ... ON CONFLICT``, no ``INSERT OR ...``); where a
statement cannot be shared, the table module asks :attr:`Database.dialect`. SQLite connections
get a ``regexp`` function, so ``content REGEXP ?`` takes a Python regular expression.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from ..errors import StorageError
from .datadir import writable

#: SQLite page cache per connection, in KiB: recall reads ~150 rows by id at random places.
CACHE_KIB = 32768


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _regexp(pattern: str, text: str | None) -> bool:
    """SQLite's ``text REGEXP pattern`` (a Python regular expression, searched)."""
    return text is not None and _compiled(pattern).search(text) is not None


class Cursor(Protocol):
    """What a write transaction's ``execute`` returns."""

    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Transaction(Protocol):
    """A write transaction (the writer connection between BEGIN and COMMIT)."""

    def execute(self, sql: str, params: Any = ..., /) -> Cursor: ...

    def executemany(self, sql: str, params: Any, /) -> Cursor: ...


class Database:
    """A SQLite database file (WAL) with versioned migrations.

    Args:
        path: The database file.
        durable: ``synchronous=FULL`` (an acknowledged write survives power loss) instead
            of ``NORMAL`` (survives any process crash).
        read_only: Open without migrating; writes raise StorageError.

    Example:
        >>> db = Database(tmp_path / "records.sqlite3")  # doctest: +SKIP
        >>> with db.write() as tx:  # doctest: +SKIP
        ...     tx.execute("INSERT INTO meta (key, value, updated_at) VALUES (?,?,?)", row)
    """

    dialect = "sqlite"

    def __init__(self, path: Path, *, durable: bool = False, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._sync = "FULL" if durable else "NORMAL"
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._all_conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        try:
            self._writer = None if read_only else self._connect()
        except sqlite3.Error as exc:
            raise _failed(f"cannot open records store at {path}", path, exc) from exc

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            conn = sqlite3.connect(
                read_only_uri(self.path),
                uri=True,
                timeout=30.0,
                isolation_level=None,
                check_same_thread=False,
            )
        else:
            conn = sqlite3.connect(
                self.path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            _enable_wal(conn)
            conn.execute(f"PRAGMA synchronous={self._sync}")
            # deleted and overwritten content is zeroed in the file, not left in free space
            # (forget and erase promise that no byte of it stays behind)
            conn.execute("PRAGMA secure_delete=ON")
        conn.create_function("regexp", 2, _regexp, deterministic=True)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        with self._conns_lock:
            self._all_conns.append(conn)
        return conn

    def _reader(self) -> sqlite3.Connection:
        if self._closed:
            raise StorageError("records store is closed", path=str(self.path))
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = self._connect()
            except sqlite3.Error as exc:
                raise _failed(f"cannot read records store {self.path}", self.path, exc) from exc
            self._local.conn = conn
        return conn

    @property
    def closed(self) -> bool:
        return self._closed

    @contextmanager
    def write(
        self, *, keys: Collection[str] | None = None, serial: bool = True
    ) -> Iterator[Transaction]:
        """A write transaction; it commits on exit and rolls back on any exception.

        Every SQLite write is serial (one writer); ``keys`` and ``serial`` (which locks a
        write takes) matter only on Postgres.
        """
        if self._closed:
            raise StorageError("records store is closed", path=str(self.path))
        if self._writer is None:
            raise StorageError(f"records store {self.path} is open read-only", path=str(self.path))
        with self._write_lock:
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn  # type: ignore[misc]
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _failed("records store write failed", self.path, exc) from exc
                raise

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of a query, on this thread's reader connection."""
        try:
            return self._reader().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _failed("records store read failed", self.path, exc) from exc

    def migrate(self, migrations: Sequence[str]) -> None:
        """Apply the migrations this file has not seen, each in its own transaction.

        Raises:
            StorageError: the file was written by a newer agentmem (more migrations), or,
                opened read-only, by an older one (it cannot be upgraded here).
        """
        if self._writer is None:
            version = self.schema_version()
            if version > len(migrations):
                raise _too_new(self.path, version, len(migrations))
            if 0 < version < len(migrations):  # 0: nothing there yet (refused elsewhere)
                raise _too_old_to_read(self.path, version, len(migrations))
            return
        conn = self._writer
        try:
            while True:
                # the version is read inside the write transaction: processes opening a new
                # file at once each wait for the one migrating, then see its version (read
                # before BEGIN, two of them applied the same migration: "duplicate column")
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
                    )
                    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
                    current = int(row[0] or 0)
                    if current > len(migrations):
                        raise _too_new(self.path, current, len(migrations))
                    if current < len(migrations):
                        for statement in migrations[current].split(";"):
                            if statement.strip():
                                conn.execute(statement)
                        conn.execute(
                            "INSERT INTO schema_version (version) VALUES (?)", (current + 1,)
                        )
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                if current >= len(migrations):
                    return
        except sqlite3.Error as exc:
            raise _failed(f"cannot migrate records store at {self.path}", self.path, exc) from exc

    def reclaim(self, *, vacuum: bool) -> bool:
        """Leave no copy of deleted content in the database's files.

        With ``vacuum``, the file is rewritten (``VACUUM``: no free page, no unused space in
        a page survives, whatever was deleted before ``secure_delete`` was on). Then the WAL
        is checkpointed into the file and truncated to zero bytes, so no old page image
        stays in it. Returns False when readers kept the checkpoint from completing (retried
        a few times first); the WAL then still holds frames until a later checkpoint.
        """
        if self._closed:
            raise StorageError("records store is closed", path=str(self.path))
        if self._writer is None:
            raise StorageError(f"records store {self.path} is open read-only", path=str(self.path))
        with self._write_lock:
            conn = self._writer
            try:
                if vacuum:
                    conn.execute("VACUUM")
                for attempt in range(20):
                    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                    if not busy:
                        return True
                    time.sleep(0.05 * (attempt + 1))
            except sqlite3.Error as exc:
                raise StorageError(f"records store compaction failed: {exc}") from exc
        return False

    def damage(self) -> str | None:
        """What SQLite's ``quick_check`` finds wrong with the file (None: nothing). A damaged
        page that no query has touched yet shows up here first."""
        try:
            found = [str(r[0]) for r in self.read("PRAGMA quick_check(5)") if r[0] != "ok"]
        except StorageError as exc:
            return str(exc)
        return _damaged(self.path, "; ".join(found)) if found else None

    def schema_version(self) -> int:
        rows = self.read("SELECT MAX(version) FROM schema_version")
        return int(rows[0][0] or 0)

    def close(self) -> None:
        with self._write_lock:
            self._closed = True
            with self._conns_lock:
                for conn in self._all_conns:
                    with suppress(sqlite3.Error):
                        conn.close()
                self._all_conns.clear()


def read_only_uri(path: Path) -> str:
    """The URI that opens a SQLite file for reading only, without writing a byte beside it.

    ``mode=ro`` still needs the WAL's shared-memory file, which it creates when missing: on
    read-only media (or in another user's dir) the open then fails. There, a file without a
    ``-wal`` beside it is opened ``immutable`` (no lock, no shared memory; nothing else can
    change it, since nobody writes the dir, and no WAL holds commits it would miss). A WAL
    left beside it keeps ``mode=ro``: SQLite reads it when its ``-shm`` exists too.
    """
    wal = path.with_name(path.name + "-wal")
    if not writable(path.parent) and not wal.exists():
        return f"file:{quote(str(path))}?immutable=1"
    return f"file:{quote(str(path))}?mode=ro"


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch a connection's file to WAL, waiting for other processes opening it too.

    The switch needs an exclusive lock, and SQLite answers "database is locked" at once,
    without its busy timeout, to a process that cannot get it while another one holds the
    write lock (processes opening a new file at once, one of them migrating it).
    """
    deadline = time.monotonic() + 30.0
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


#: SQLite's primary result codes for a damaged file (SQLITE_CORRUPT) and for a file that is
#: not a database at all (SQLITE_NOTADB).
_DAMAGED = frozenset({11, 26})
#: SQLITE_FULL: no room for the write (the disk, or max_page_count).
_FULL = 13


def _failed(what: str, path: Path, exc: sqlite3.Error) -> StorageError:
    """``what`` failed with ``exc``; a damaged file is named as such, with the way out (the
    driver's own words, "database disk image is malformed" under "cannot migrate", sent
    users looking for a schema problem)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _DAMAGED:
        return StorageError(_damaged(path, str(exc)), path=str(path))
    if code is not None and code & 0xFF == _FULL:
        return StorageError(
            f"{what}: {exc} (the disk holding {path} is full, or the file reached its size "
            "limit): that write was rolled back; free some space and retry",
            path=str(path),
        )
    return StorageError(f"{what}: {exc}", path=str(path))


def _damaged(path: Path, detail: str) -> str:
    return (
        f"records store {path} is damaged ({detail}): what it holds cannot all be read, and "
        f"the indexes cannot restore its content. Restore it from a backup; `sqlite3 {path} "
        ".recover` may salvage the rows that are still readable"
    )


def _too_new(path: Path | str, version: int, known: int) -> StorageError:
    return StorageError(
        f"records store schema version {version} is newer than this agentmem ({known}); "
        "upgrade agentmem",
        path=str(path),
    )


def _too_old_to_read(path: Path | str, version: int, known: int) -> StorageError:
    # Read as it is, the queries of this version fail on tables and columns it lacks
    # ("no such table: erasures"); only a writing open migrates it.
    return StorageError(
        f"records store {path} was written by an older agentmem (schema version {version}; "
        f"this one reads {known}) and a read-only open cannot upgrade it: open it once for "
        "writing with this agentmem (`agentmem --home DIR doctor`, say, while no other "
        "process holds the data dir; on read-only media, a copy on writable storage), or "
        "read it with the agentmem that wrote it",
        path=str(path),
    )


def marks(n: int) -> str:
    """``?,?,...`` for ``n`` parameters."""
    return ",".join("?" * n)


def chunks(values: Sequence[Any], size: int = 500) -> Iterator[list[Any]]:
    """``values`` in lists of at most ``size`` (SQLite limits the parameters of a query)."""
    for start in range(0, len(values), size):
        yield list(values[start : start + size])
