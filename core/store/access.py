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
studio's unit detail, listings sorted by them, snapshots) flush first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from datetime import datetime

FLUSH_SECONDS = 1.0

# unit id -> (recalls not yet written, the latest of them)
Pending = dict[str, tuple[int, datetime]]


class AccessCounts:
    """Counts of recalled units not yet written; `write` stores a batch of them."""

    def __init__(self, write: Callable[[Pending], None], delay: float = FLUSH_SECONDS) -> None:
        self._write = write
        self._delay = delay
        self._pending: Pending = {}
        self._lock = threading.Lock()  # guards _pending and _timer
        # Held across taking the pending counts and writing them: a flush that
        # returns has written everything recorded before it began, even counts
        # the timer's flush had taken and was still writing.
        self._flushing = threading.Lock()
        self._timer: threading.Timer | None = None
        self._closed = False

    def record(self, unit_ids: Iterable[str], when: datetime) -> None:
        """Count one recall of each unit (once per recall, however often listed)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the bank is closed")
            for unit_id in dict.fromkeys(unit_ids):
                n, last = self._pending.get(unit_id, (0, when))
                self._pending[unit_id] = (n + 1, max(last, when))
            if self._pending and self._timer is None:
                self._timer = threading.Timer(self._delay, self._flush_later)
                self._timer.daemon = True
                self._timer.start()

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self) -> int:
        """Write every count recorded so far; returns how many units it wrote."""
        with self._flushing:
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

    def _put_back(self, pending: Pending) -> None:
        """A failed write's counts wait for the next flush, merged with newer ones."""
        with self._lock:
            for unit_id, (n, last) in pending.items():
                m, later = self._pending.get(unit_id, (0, last))
                self._pending[unit_id] = (n + m, max(last, later))

    def _flush_later(self) -> None:
        try:
            self.flush()
        except Exception:  # kept pending; the next recall's timer or close tries again
            with self._lock:
                self._timer = None

    def close(self) -> None:
        """Write what is left and take no more (the bank is closing)."""
        with self._lock:
            self._closed = True
        self.flush()
