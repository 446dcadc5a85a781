"""The system of record: every memory row lives in the records store first.

Both search indexes (Tantivy keywords, Chroma vectors) are derived from these rows and can be
rebuilt from them. A write is acknowledged only after its transaction commits; the rows carry
their own index state, so a background indexer, or a restart after a crash, knows what is
left to do (:mod:`agentmem.storage.index_queue`).

:class:`RecordStore` opens the database (SQLite or Postgres) and migrates it; the SQL lives in
one aggregate per thing stored, each an attribute of the store:

- ``memories`` (:mod:`~agentmem.storage.memories`): writing, retiring and reading rows by id;
- ``conversations``: a session's rows in order and their tier moves;
- ``supersession``: which memory replaced which, and the judge's queue;
- ``retention``: forgetting (tombstones) and anonymization;
- ``archive``: streaming, restoring and counting the whole store;
- ``partitions``: the vector collections, and re-embedding every row;
- ``sessions``, ``working``, ``agent_state``, ``meta``, ``ingest_log``, ``api_keys``,
  ``activity``, ``sources``, ``erasure`` and ``index`` (index progress): one table each.
- ``browse``: the inspector's reads across them (counts, spans, a row's audit).

Feature code calls these named operations and never writes SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .activity import ActivityLog
from .agent_state import AgentStateTable
from .archive import ArchiveTable
from .browse import BrowseReads
from .conversations import ConversationRows
from .database import Database
from .erasure import ErasureStore
from .index_queue import IndexQueue
from .keys import ApiKeyTable
from .memories import MemoryTable
from .meta import IngestLog, MetaTable
from .partitions import PartitionTable
from .postgres import PostgresDatabase
from .retention import RetentionTable
from .schema import MIGRATIONS, POSTGRES_MIGRATIONS
from .sessions import SessionTable, WorkingStateTable
from .sources import SourceLinks
from .supersession import SupersessionTable


class RecordStore:
    """The records store of one data dir (SQLite, WAL), or of a cluster (PostgreSQL), with
    versioned migrations.

    Args:
        path: The SQLite file (unused with ``url``).
        durable: ``synchronous=FULL`` instead of ``NORMAL`` (see
            :attr:`~agentmem.config.MemoryConfig.durable_writes`); a Postgres commit is
            durable as the server is configured.
        read_only: Open for reading only (no migration, no writes), e.g. for
            ``agentmem stats`` beside a running process.
        url: A ``postgresql://`` URL: the records live in that database, shared by every
            node opened on it.
        node_id: This node's name in the Postgres store's index progress.

    Example:
        >>> store = RecordStore(tmp_path / "records.sqlite3")  # doctest: +SKIP
        >>> store.memories.insert([new_record])  # doctest: +SKIP
        [('3f2a...', True)]
    """

    def __init__(
        self,
        path: Path,
        *,
        durable: bool = False,
        read_only: bool = False,
        url: str | None = None,
        node_id: str | None = None,
    ) -> None:
        self.db: Database
        if url is not None:
            self.db = PostgresDatabase(url, read_only=read_only)
            migrations = POSTGRES_MIGRATIONS
        else:
            self.db = Database(path, durable=durable, read_only=read_only)
            migrations = MIGRATIONS
        self.path = self.db.path
        try:
            self.db.migrate(migrations)
            self.index = IndexQueue(self.db, node_id)
        except BaseException:
            self.db.close()
            raise
        self.sessions = SessionTable(self.db)
        self.working = WorkingStateTable(self.db)
        self.agent_state = AgentStateTable(self.db)
        self.meta = MetaTable(self.db)
        self.ingest_log = IngestLog(self.db)
        self.api_keys = ApiKeyTable(self.db)
        self.activity = ActivityLog(self.db)
        self.sources = SourceLinks(self.db)
        self.erasure = ErasureStore(self.db)
        self.memories = MemoryTable(self.db)
        self.conversations = ConversationRows(self.db)
        self.archive = ArchiveTable(self.db)
        self.retention = RetentionTable(self.db)
        self.supersession = SupersessionTable(self.db)
        self.partitions = PartitionTable(self.db)
        self.browse = BrowseReads(self.db)

    # -- raw access, for diagnostics and tests ---------------------------------------------
    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a raw query. Feature code uses the named methods instead."""
        return self.db.read(sql, params)

    def write(self) -> Any:
        """A raw write transaction (context manager). Feature code uses the named methods."""
        return self.db.write()

    def count(self, where: str = "1=1", params: Sequence[Any] = ()) -> int:
        """Rows of ``memories`` matching a raw condition (diagnostics and tests)."""
        return self.archive.count(where, params)

    def schema_version(self) -> int:
        return self.db.schema_version()

    def reclaim(self) -> bool:
        """Rewrite the records file and empty its WAL, so no copy of deleted content stays in
        either (after an erasure); False when readers kept the WAL from being emptied."""
        return self.db.reclaim(vacuum=True)

    def close(self) -> None:
        self.db.close()

    @property
    def location(self) -> str:
        """Where the records are, for messages: the SQLite file, or the Postgres URL without
        its password."""
        return self.db.url_redacted if isinstance(self.db, PostgresDatabase) else str(self.path)

    @property
    def shared(self) -> bool:
        """True when other nodes may write to these records too (Postgres)."""
        return isinstance(self.db, PostgresDatabase)

    def on_change(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` when another node changes indexed rows (Postgres ``LISTEN``; on
        SQLite this process is the only writer, so there is nothing to hear)."""
        if isinstance(self.db, PostgresDatabase):
            self.db.listen(wake)
