"""A Chroma store whose files are corrupt raises ``StorageError``, never a Rust panic.

The embedded Chroma store runs in Rust, which panics on files it cannot read (a page of its
SQLite file zeroed: "Expect it to be fetched: ... database disk image is malformed"). pyo3
raises a panic as ``PanicException``, a ``BaseException`` that every ``except Exception``
misses: each command died with a traceback, ``doctor`` and ``reindex`` too. Every call to the
Chroma client of a :class:`~.vector_index.VectorIndex`, and to its collections, goes through
one :class:`CorruptionGuard`, which turns a panic, or SQLite's word that the file is
malformed or is not a database, into ``StorageError``: an unreadable index like any other
(recall answers from keywords, ``degraded``; ``doctor`` reports it; ``reindex`` removes the
files and builds the index anew from the records).

Files found corrupt stay so: for an embedded store (``sticky``) every later call raises at
once without asking Chroma again (each attempt would panic and print Rust's report on stderr
again), until the index is closed or its store removed.

Example:
    >>> guard = CorruptionGuard("/data/chroma", sticky=True)  # doctest: +SKIP
    >>> client = guard.wrap(chromadb.PersistentClient(path="/data/chroma"))  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..errors import StorageError

#: What SQLite says of a file that is damaged, or not an SQLite file at all (fixed strings
#: of SQLite's, in the errors of Chroma's Rust core and of Python's ``sqlite3`` alike).
_CORRUPT_SQLITE = ("database disk image is malformed", "file is not a database")
#: The client methods that answer with a collection (guarded in turn).
_COLLECTION_GETTERS = frozenset({"get_collection", "get_or_create_collection", "create_collection"})


def _corruption(exc: BaseException) -> bool:
    """Chroma found the files of its store corrupt: its Rust core panicked (pyo3's
    ``PanicException``), or SQLite called its file malformed."""
    if type(exc).__name__ == "PanicException":
        return True
    return isinstance(exc, Exception) and any(m in str(exc) for m in _CORRUPT_SQLITE)


class CorruptionGuard:
    """Watches the calls to one Chroma store (see the module docstring).

    Args:
        location: Where the store is, for messages.
        sticky: Remember a store found corrupt (an embedded store: its files do not mend;
            a server's operator may repair its own).
    """

    def __init__(self, location: str, *, sticky: bool) -> None:
        self.location = location
        self.sticky = sticky
        #: Why the store is known corrupt; None while it is not.
        self.corrupt: str | None = None

    @contextlib.contextmanager
    def watch(self) -> Iterator[None]:
        """Raise ``StorageError`` where Chroma finds its store corrupt (at once when it is
        known corrupt), and remember it."""
        if self.corrupt is not None:
            raise StorageError(self.corrupt, path=self.location)
        try:
            yield
        except BaseException as exc:
            if not _corruption(exc):
                raise
            problem = (
                f"vector index at {self.location} is corrupt ({exc}); `agentmem reindex` "
                "rebuilds it from the records"
            )
            if self.sticky:
                self.corrupt = problem
            raise StorageError(problem, path=self.location) from exc

    def wrap(self, target: Any) -> Any:
        """``target`` (a Chroma client or collection) with every call watched."""
        return _Guarded(target, self)


class _Guarded:
    """A Chroma client or collection whose every call goes through a guard's ``watch``."""

    __slots__ = ("_guard", "_target")

    def __init__(self, target: Any, guard: CorruptionGuard) -> None:
        self._target = target
        self._guard = guard

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._guard.watch():
                out = value(*args, **kwargs)
            return self._guard.wrap(out) if name in _COLLECTION_GETTERS else out

        return call


__all__ = ["CorruptionGuard"]
