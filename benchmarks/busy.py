"""A background process that keeps one core busy, for measuring under load.

A desktop app always shares its cores (the GUI thread, the user's other
programs), so latency is measured idle and with one core taken. The process
is started and stopped by the benchmark itself.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator


@contextlib.contextmanager
def one_core_busy() -> Iterator[None]:
    """Run a pure-Python busy loop in a child process for the duration."""
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it reach the loop
        yield
    finally:
        child.kill()
        child.wait()


@contextlib.contextmanager
def condition(name: str) -> Iterator[None]:
    """`idle` (nothing started) or `busy` (one core taken)."""
    if name == "busy":
        with one_core_busy():
            yield
    else:
        yield


CONDITIONS = ("idle", "busy")
