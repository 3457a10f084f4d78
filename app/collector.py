"""Python's cyclic garbage collection, run on the UI thread only.

The collector runs in whichever thread happens to allocate when a generation's
threshold is crossed. In the studio that is often a worker (the runner's pool,
the server's threads, an HTTP client's): if the cycle it frees holds a Qt
object, the C++ object is deleted from the wrong thread, its timers cannot be
unregistered, and the next timer event on the UI thread dereferences freed
memory (a segfault in QTimerInfoList::activateTimers). It was seen as a worker
crash in the test suite whenever a test ran many worker threads.

So automatic collection is switched off and a timer on the UI thread runs
`gc.collect` for each generation whose count passed its threshold, as the
interpreter would have. Reference counting still frees everything acyclic at
once; only cycles wait, for at most one interval.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500


class MainThreadCollector(QObject):
    """Owned by the application object; `install(app)` makes the one instance."""

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self._thresholds = gc.get_threshold()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.check)
        self._timer.start(INTERVAL_MS)

    def check(self) -> None:
        """Collect the oldest generation past its threshold (which includes the
        younger ones), as automatic collection would."""
        counts = gc.get_count()
        for generation in (2, 1, 0):
            if counts[generation] > self._thresholds[generation]:
                gc.collect(generation)
                return


def install(app: QObject) -> MainThreadCollector:
    """Switch automatic collection off and collect on `app`'s thread from now on
    (once per application: a second call returns the first collector)."""
    existing = app.findChild(MainThreadCollector)
    return existing if existing is not None else MainThreadCollector(app)


__all__ = ["MainThreadCollector", "install"]
