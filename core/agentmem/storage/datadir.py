"""A data dir on disk: its writer lock, its files, and setting aside a broken index.

Layout of a data dir::

    LOCK               held (flock) by the process that writes to the dir
    records.sqlite3    the records store (system of record; absent with a Postgres records URL)
    NODE_ID            with a Postgres records URL: this node's name in the shared index
                       progress (stands for the keyword index beside it)
    keywords/          Tantivy index (derived)
    chroma/            embedded Chroma store (derived; absent with a Chroma server)

An index found unreadable at open is removed and rebuilt from the records; none is kept
"for inspection" (as ``keywords.broken-<time>`` once was): no forget, retention or erasure
can reach into an index nobody can read, so a kept copy would hold content after it was
forgotten. Such copies left by an earlier version are removed at the next writing open
(and by an erasure); ``doctor`` reports any it finds.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import time
from pathlib import Path
from typing import IO

from ..errors import DataDirLockedError, StorageError

log = logging.getLogger("agentmem.storage")

RECORDS_FILE = "records.sqlite3"
NODE_FILE = "NODE_ID"
KEYWORDS_DIR = "keywords"
VECTORS_DIR = "chroma"


class DataDirLock:
    """The exclusive writer lock of a data dir (an ``flock`` on ``LOCK``), held until
    :meth:`release`. The operating system releases it when the process dies.

    Raises:
        StorageError: the dir cannot be created or written.
        DataDirLockedError: another process (or another open in this one) holds it.
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        if home.exists() and not home.is_dir():  # mkdir would say "File exists"
            raise StorageError(f"data dir {home} is a file, not a directory", path=str(home))
        try:
            home.mkdir(parents=True, exist_ok=True)
            probe = home / f".write-probe-{os.getpid()}"
            probe.write_text("ok")
            probe.unlink()
            handle: IO[str] = open(home / "LOCK", "a+")  # noqa: SIM115 - held until release
        except OSError as exc:
            raise StorageError(
                f"data dir {home} is not writable: {exc.strerror or exc}", path=str(home)
            ) from exc
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.seek(0)
            holder = handle.read().strip()  # the holder wrote its pid once it had the lock
            handle.close()
            pid = int(holder) if holder.isdigit() else None
            who = f"another process (pid {pid})" if pid is not None else "another process"
            raise DataDirLockedError(
                f"data dir {home} is open for writing in {who}; a data dir has one "
                "writing process at a time. Share one memory between processes with a server "
                "(`agentmem --home DIR serve`, then `agentmem.connect(url, api_key=...)`), or "
                "run the work as threads of one process. Read-only commands (`agentmem stats`, "
                "`doctor`, `export`) work beside the writer.",
                path=str(home),
                pid=pid,
            ) from exc
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle: IO[str] | None = handle

    def release(self) -> None:
        """Give the lock up (idempotent)."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        finally:
            handle.close()


#: Marks the name of an index dir that was found unreadable (``keywords.broken-<time>``).
QUARANTINE_MARK = ".broken-"


def discard_unreadable(path: Path, what: str, reason: BaseException | str | None = None) -> str:
    """Remove an unreadable index dir (to be rebuilt from the records); returns a note.

    It is renamed to ``<name>.broken-<time>`` first, so an index is never half gone under its
    own name, and a removal a crash interrupts is finished at the next open
    (:func:`remove_quarantined`).
    """
    aside = path.with_name(f"{path.name}{QUARANTINE_MARK}{time.strftime('%Y%m%d%H%M%S')}")
    path.rename(aside)
    _remove(aside)
    note = f"{what} at {path} was unreadable ({reason}); removed, rebuilt from the records"
    log.error(note)
    return note


def quarantined(home: Path) -> list[Path]:
    """Copies of unreadable indexes in ``home`` (``keywords.broken-<time>``,
    ``chroma.broken-<time>``)."""
    if not home.is_dir():
        return []
    names = tuple(f"{index}{QUARANTINE_MARK}" for index in (KEYWORDS_DIR, VECTORS_DIR))
    return sorted(p for p in home.iterdir() if p.name.startswith(names))


def remove_quarantined(home: Path) -> list[str]:
    """Remove the copies :func:`quarantined` finds; returns their names."""
    removed = []
    for path in quarantined(home):
        _remove(path)
        removed.append(path.name)
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def writable(path: Path) -> bool:
    """True if this process may create and change files in ``path`` (False on read-only
    media, or in a dir of another user)."""
    return os.access(path, os.W_OK)


def dir_size(path: Path) -> int:
    """Bytes of a file, or of every file under a directory (0 if missing)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += (Path(root) / f).stat().st_size
            except OSError:
                continue
    return total
