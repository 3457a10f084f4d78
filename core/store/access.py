"""Recall's access counts, written off the request path.

A recall counts each unit it returned (`access_count`, `last_accessed_at`).
Written in the recall's own transaction, that took the bank's write lock (a
recall waited behind a retain) and bumped `store.generation`, which told every
read cache (the link graph, the units in memory) to check itself again: on
every recall. Here the counts wait in memory, merged per unit, and a
background flush writes them all in one UPDATE at most FLUSH_SECONDS later,
without a generation bump (nothing derived from the tables depends on access
counts). Closing the bank flushes what is left, so a clean shutdown loses
none; a crash loses at most the last FLUSH_SECONDS of counts, which are
bookkeeping, never an acknowledged write. Reads that show the counts (the
studio's unit detail, listings sorted by them, snapshots) flush first, unless
a write holds the bank (a long retain): a read never waits for one, it shows
the counts written so far.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from datetime import datetime

FLUSH_SECONDS = 1.0

# unit id -> (recalls not yet written, the latest of them)
Pending = dict[str, tuple[int, datetime]]


class AccessCounts:
    """Counts of recalled units not yet written. `write` stores a batch of them
    under `write_lock` (the bank's), which every flush takes before it takes
    the counts: a flush waiting for a write leaves them pending, and one that
    holds the lock has written everything recorded before it."""

    def __init__(
        self,
        write: Callable[[Pending], None],
        write_lock: threading.RLock,
        delay: float = FLUSH_SECONDS,
    ) -> None:
        self._write = write
        self._write_lock = write_lock
        self._delay = delay
        self._pending: Pending = {}
        self._lock = threading.Lock()  # guards _pending, _timer and _closed
        self._timer: threading.Timer | None = None
        self._closed = False
        self._writing = False  # a flush holds the write lock (for a moment)

    def record(self, unit_ids: Iterable[str], when: datetime) -> None:
        """Count one recall of each unit (once per recall, however often listed)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the bank is closed")
            for unit_id in dict.fromkeys(unit_ids):
                n, last = self._pending.get(unit_id, (0, when))
                self._pending[unit_id] = (n + 1, max(last, when))
            self._schedule()

    def _schedule(self) -> None:
        """A flush FLUSH_SECONDS from now, if counts wait and none is due (under _lock)."""
        if self._pending and self._timer is None and not self._closed:
            self._timer = threading.Timer(self._delay, self._flush_later)
            self._timer.daemon = True
            self._timer.start()

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self, wait: bool = True) -> int:
        """Write every count recorded so far; returns how many units it wrote.
        With `wait` False, writes nothing (0) rather than wait for a write; a
        flush in progress it waits for (a moment: its counts are being written)."""
        if not self._write_lock.acquire(blocking=wait) and not (
            self._writing and self._write_lock.acquire(timeout=FLUSH_SECONDS)
        ):
            return 0
        try:
            self._writing = True
            with self._lock:
                pending, self._pending = self._pending, {}
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
            if not pending:
                return 0
            try:
                self._write(pending)
            except BaseException:
                self._put_back(pending)
                raise
            return len(pending)
        finally:
            self._writing = False
            self._write_lock.release()

    def _put_back(self, pending: Pending) -> None:
        """A failed write's counts wait for the next flush, merged with newer ones."""
        with self._lock:
            for unit_id, (n, last) in pending.items():
                m, later = self._pending.get(unit_id, (0, last))
                self._pending[unit_id] = (n + m, max(last, later))
            self._schedule()

    def _flush_later(self) -> None:
        with self._lock:
            self._timer = None
        # A failure keeps them pending (put back, a new timer set): tried again.
        with contextlib.suppress(Exception):
            self.flush()

    def close(self) -> None:
        """Write what is left and take no more (the bank is closing)."""
        with self._lock:
            self._closed = True
        self.flush()
