"""Access tracking: how often, and when last, a memory was recalled.

Every recall hit bumps an in-memory counter; nothing is written per hit. The counters are
flushed to the records store (``access_count``, ``last_accessed``) in one batched ``UPDATE``
transaction:

- every ``flush_every`` recalls, or when ``flush_interval`` seconds have passed since the last
  flush (checked when a recall is recorded),
- on :meth:`AccessTracker.flush` (``AgentMemory.close`` and ``BoundMemory.close_session`` call
  it).

A flush that fails (e.g. the store is busy or closed) puts its counts back, so they go out with
the next flush; ``updated_at`` is not touched (being read is not an update).

Example:
    >>> tracker = AccessTracker(mem.records, flush_every=100)  # doctest: +SKIP
    >>> tracker.record(["m1", "m2"])  # doctest: +SKIP
    >>> tracker.flush()  # doctest: +SKIP
    2
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from ..errors import AgentMemError
from .records import RecordStore
from .rows import iso, now_utc

log = logging.getLogger("agentmem.storage.access")

#: Default number of recorded recalls after which the counters are flushed.
DEFAULT_FLUSH_EVERY = 64
#: Default seconds after which the next recorded recall flushes the counters.
DEFAULT_FLUSH_INTERVAL = 5.0


class AccessTracker:
    """In-memory access counters with batched flushes.

    Args:
        records: The records store the counters are flushed to.
        flush_every: Flush after this many recorded recalls.
        flush_interval: Flush on the first recall recorded this many seconds after the last
            flush.
        clock: Monotonic clock (tests pass a fake one).

    Example:
        >>> tracker = AccessTracker(records)  # doctest: +SKIP
        >>> tracker.record(["m1"]); tracker.pending()  # doctest: +SKIP
        {'m1': 1}
    """

    def __init__(
        self,
        records: RecordStore,
        *,
        flush_every: int = DEFAULT_FLUSH_EVERY,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if flush_every < 1:
            raise ValueError("flush_every must be at least 1")
        self._records = records
        self.flush_every = flush_every
        self.flush_interval = flush_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._last: dict[str, str] = {}
        self._recalls = 0
        self._last_flush = clock()
        self.flushes = 0
        """Batched flushes written so far (each one transaction)."""

    def record(self, ids: Iterable[str]) -> None:
        """Count one recall that returned ``ids``; flushes when a batch is due. Never raises."""
        now = iso(now_utc())
        assert now is not None
        with self._lock:
            for id_ in ids:
                self._counts[id_] = self._counts.get(id_, 0) + 1
                self._last[id_] = now
            self._recalls += 1
            due = (
                self._recalls >= self.flush_every
                or self._clock() - self._last_flush >= self.flush_interval
            )
        if due:
            self.flush()

    def pending(self) -> dict[str, int]:
        """Counts recorded but not yet flushed, by memory id."""
        with self._lock:
            return dict(self._counts)

    def flush(self) -> int:
        """Write the pending counters in one transaction; returns how many rows were updated.

        On a storage error the counters are kept for the next flush (logged, not raised).
        """
        with self._lock:
            counts, last = self._counts, self._last
            self._counts, self._last = {}, {}
            self._recalls = 0
            self._last_flush = self._clock()
        if not counts:
            return 0
        try:
            self._records.memories.add_access(counts, last)
        except AgentMemError as exc:
            log.warning("access counters not flushed (kept for the next flush): %s", exc)
            with self._lock:
                for id_, n in counts.items():
                    self._counts[id_] = self._counts.get(id_, 0) + n
                    if last[id_] > self._last.get(id_, ""):
                        self._last[id_] = last[id_]
            return 0
        self.flushes += 1
        return len(counts)
