"""Are the records still there? Checked before a data dir is opened.

The records store is the system of record and the only copy of the memories' content; the
keyword index and the vector index are derived from it. When ``records.sqlite3`` is deleted
(or a node's Postgres database is recreated, or the wrong one is named) while the indexes
stay, opening the dir would start an empty store beside them, and ``agentmem doctor`` would
advise ``reindex``, which deletes them. So a data dir whose records store is missing, or new
(no row, no logged erasure), while its keyword index or its embedded vector index holds
entries is refused, before anything is created or changed.

Example:
    >>> refuse_lost_records(home, vectors)  # doctest: +SKIP
    Traceback (most recent call last):
    agentmem.errors.RecordsMissingError: the records store .../records.sqlite3 is missing, ...
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RecordsMissingError, StorageError
from .datadir import KEYWORDS_DIR, RECORDS_FILE, VECTORS_DIR
from .keyword_index import KeywordIndex
from .records import RecordStore
from .vector_index import VectorIndex


def blank_records_file(path: Path) -> bool:
    """The SQLite records file is missing, or empty (0 bytes, no WAL beside it: a
    truncation, or a create that never wrote): SQLite would make a new store of it, so it is
    checked (:func:`refuse_lost_records`) before SQLite opens it and writes a byte."""
    try:
        if path.stat().st_size > 0:
            return False
    except FileNotFoundError:
        return True
    wal = path.with_name(path.name + "-wal")
    return not wal.exists() or wal.stat().st_size == 0


def refuse_lost_records(
    home: Path, vectors: VectorIndex, records: RecordStore | None = None
) -> None:
    """Refuse ``home`` if its indexes hold entries while its records are lost.

    Args:
        home: The data dir.
        vectors: Its vector index (read from its files, without opening Chroma, which writes
            to them; a Chroma server is not asked: one marked by another records store is
            refused before the first vector goes in, see :mod:`.vector_check`).
        records: The open records store, which holds nothing (None: the SQLite file is
            missing or empty, :func:`blank_records_file`).

    Raises:
        RecordsMissingError: the keyword index or the embedded vector index holds entries
            (or cannot be read, so may).
    """
    held: list[str] = []
    keywords = home / KEYWORDS_DIR
    if keywords.is_dir():
        try:
            index = KeywordIndex(keywords.absolute(), read_only=True)  # linked from a temp dir
            try:
                entries = index.num_docs()
            finally:
                index.close()
            if entries:
                held.append(f"the keyword index {keywords} (entries: {entries})")
        except StorageError as exc:
            held.append(f"a keyword index at {keywords} that cannot be read ({exc})")
    if vectors.owns_client:
        try:
            count = vectors.vectors_on_disk()
            if count:
                held.append(f"the vector index {vectors.location} (vectors: {count})")
        except StorageError as exc:
            held.append(f"a vector index at {vectors.location} that cannot be read ({exc})")
    if not held:
        return
    if records is None:
        path = home / RECORDS_FILE
        problem = f"the records store {path} is {'empty' if path.exists() else 'missing'}"
        restore = f"Restore {RECORDS_FILE} into {home} from a backup"
    else:
        problem = f"the records store {records.location} holds no record (it is new)"
        restore = (
            f"Restore {RECORDS_FILE} into {home} from a backup"
            if not records.shared
            else "Restore the records database from a backup, or give the URL of the right one"
        )
    moved = [f"{name}/" for name in (KEYWORDS_DIR, VECTORS_DIR) if (home / name).exists()]
    raise RecordsMissingError(
        f"{problem}, but {' and '.join(held)} remain of the records this data dir held. The "
        "records are the only copy of the memories' content (the indexes keep search terms "
        "and vectors, which cannot restore it), so nothing was opened or changed, and "
        f"`agentmem reindex` would delete what is left. {restore}; to start an empty store "
        f"here instead, first move {' and '.join(moved)} out of {home}.",
        path=str(home),
    )


__all__ = ["blank_records_file", "refuse_lost_records"]
