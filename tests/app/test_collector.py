"""Cycles are freed on the UI thread, never on the worker that happened to
allocate (a Qt object freed there segfaulted the next timer event)."""

from __future__ import annotations

import gc
import threading

from app import collector


class _Cycle:
    freed_on: list[threading.Thread] = []

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        _Cycle.freed_on.append(threading.current_thread())


def test_a_cycle_made_on_a_worker_is_freed_on_the_ui_thread(qtbot, qapp) -> None:
    assert collector.install(qapp) is collector.install(qapp)  # one per application
    assert not gc.isenabled()
    gc.collect()
    _Cycle.freed_on.clear()

    kept: list[list] = []

    def churn() -> None:
        _Cycle()  # unreachable at once, but only a collection can free it
        # Past the youngest generation's threshold: automatic collection would run here.
        kept.extend([] for _ in range(2 * gc.get_threshold()[0]))

    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()
    assert _Cycle.freed_on == []  # nothing collected on the worker
    qtbot.waitUntil(lambda: bool(_Cycle.freed_on), timeout=5_000)
    assert _Cycle.freed_on == [threading.main_thread()]
