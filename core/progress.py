"""Progress reporting and cooperative cancellation for long engine work.

The engine never knows who listens: the CLI prints, the studio's runner turns
callbacks into signals. A `CancelToken` is checked between steps; cancelling
raises `CancelledError` at the next check, and the operation that was running
leaves the bank as it was before it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from core.types import CancelledError

# progress(done, total, message): total may be 0 when unknown.
Progress = Callable[[int, int, str], None]


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise CancelledError("cancelled")


def report(progress: Progress | None, done: int, total: int, message: str = "") -> None:
    if progress is not None:
        progress(done, total, message)


def check(cancel: CancelToken | None) -> None:
    if cancel is not None:
        cancel.raise_if_cancelled()
