"""The open bank's activity, as it happens: one subscription to its journal for
the whole studio.

`ActivityFeed` listens to the bank's journal (`Bank.watch_activity`) and
hands each entry to the UI thread (`recorded`). From it the studio knows what
others are doing right now: the rows an agent just wrote are marked for a
while (`is_marked`), and the status bar says how many requests came in the
last minute and from whom. The studio's own work is in the journal too, but
marks nothing: the person did it and saw it happen.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

import shiboken6
from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot

from core import STUDIO_CALLER, Kind

if TYPE_CHECKING:
    from core import ActivityEntry, Bank

MARK_SECONDS = 30.0  # how long a row another actor wrote stays marked
WINDOW_SECONDS = 60.0  # "requests in the last minute"


class ActivityFeed(QObject):
    recorded = Signal(object)  # ActivityEntry, on the UI thread
    marks_changed = Signal()  # rows were marked, or their marks ran out
    pulse = Signal()  # the counts below changed
    _heard = Signal(object)  # from the recording thread

    def __init__(self, state, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self._stop = None
        self._bank: Bank | None = None
        self._marks: dict[str, tuple[float, str]] = {}  # id -> (until, actor)
        self._recent: deque[tuple[float, str]] = deque()  # (when, actor) of others' requests
        self.last_actor = ""
        self._heard.connect(self._arrived, Qt.ConnectionType.QueuedConnection)
        self._timer = QTimer(self)
        self._timer.setInterval(1000)
        self._timer.timeout.connect(self._tick)
        state.bank_changed.connect(self.follow)
        self.follow(state.bank)

    # -- the bank --------------------------------------------------------------------

    def follow(self, bank: Bank | None) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None
        self._bank = bank
        self._marks.clear()
        self._recent.clear()
        self.last_actor = ""
        if bank is not None:
            watch = getattr(bank, "watch_activity", None)
            if watch is not None:
                self._stop = watch(self._from_journal)
        self.marks_changed.emit()
        self.pulse.emit()

    def close(self) -> None:
        self.follow(None)

    def _from_journal(self, entry: ActivityEntry) -> None:
        # On whichever thread recorded it (a server thread, the runner's).
        if shiboken6.isValid(self):
            self._heard.emit(entry)

    @Slot(object)
    def _arrived(self, entry: ActivityEntry) -> None:
        now = time.monotonic()
        if entry.actor != STUDIO_CALLER.actor:
            self._recent.append((now, entry.actor))
            self.last_actor = entry.actor
            if entry.change is not None:
                ids = entry.change.ids(Kind.UNIT) - entry.change.removed.get(Kind.UNIT, set())
                ids |= entry.change.added.get(Kind.DOCUMENT, frozenset())
                for unit_id in ids:
                    self._marks[unit_id] = (now + MARK_SECONDS, entry.actor)
                if ids:
                    self.marks_changed.emit()
            if not self._timer.isActive():
                self._timer.start()
            self.pulse.emit()
        self.recorded.emit(entry)

    # -- what it tells --------------------------------------------------------------

    def is_marked(self, item_id: str) -> bool:
        mark = self._marks.get(item_id)
        return mark is not None and mark[0] > time.monotonic()

    def marked_by(self, item_id: str) -> str:
        """Who wrote the marked row ("" if it is not marked)."""
        return self._marks[item_id][1] if self.is_marked(item_id) else ""

    def requests_last_minute(self) -> int:
        self._forget(time.monotonic())
        return len(self._recent)

    def _forget(self, now: float) -> None:
        while self._recent and self._recent[0][0] < now - WINDOW_SECONDS:
            self._recent.popleft()

    def _tick(self) -> None:
        now = time.monotonic()
        before = len(self._recent)
        self._forget(now)
        expired = [i for i, (until, _) in self._marks.items() if until <= now]
        for item_id in expired:
            del self._marks[item_id]
        if expired:
            self.marks_changed.emit()
        if len(self._recent) != before:
            self.pulse.emit()
        if not self._recent and not self._marks:
            self._timer.stop()
