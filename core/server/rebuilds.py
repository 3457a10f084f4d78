"""Observation rebuilds when no studio owns the served banks (`engram serve`).

A change through the API (an agent's retain, a document deleted or re-ingested,
a curation call) hides the observations it made stale and queues their
rebuilds in its own transaction. In the studio the pending-jobs indicator runs
them at once; headless, nobody would until `engram jobs run`. So here one
worker thread runs them after the request's change has committed: the
response never waits, repeated triggers for a bank coalesce into one run, and
the run holds the bank's write lock (`ServedBanks.using`), as requests do. The
jobs stay queued in DuckDB until their batch is written, so a process that dies
loses nothing acknowledged; `close` cancels between jobs and waits.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from core.context import ENGINE_CALLER, acting_as
from core.progress import CancelToken
from core.types import BankNotFoundError, CancelledError

if TYPE_CHECKING:
    from core.server.served import ServedBanks

log = logging.getLogger(__name__)


class ObservationRebuilds:
    """One background worker running the banks' pending observation jobs."""

    def __init__(self, served: ServedBanks) -> None:
        self._served = served
        self._wanted: dict[str, None] = {}  # banks triggered and not yet taken, in order
        self._cond = threading.Condition()
        self._cancel = CancelToken()
        self._closing = False
        self._running = False
        self._thread: threading.Thread | None = None

    def busy(self) -> bool:
        """Whether a rebuild runs or waits to."""
        with self._cond:
            return self._running or bool(self._wanted)

    def trigger(self, bank_name: str) -> bool:
        """Rebuild `bank_name`'s pending observations soon; False once closing."""
        with self._cond:
            if self._closing:
                return False
            self._wanted[bank_name] = None
            if self._thread is None:
                # Started on the first trigger: a server that changes nothing runs no thread.
                self._thread = threading.Thread(
                    target=self._work, name="engram-rebuilds", daemon=True
                )
                self._thread.start()
            self._cond.notify()
            return True

    def close(self) -> None:
        """Take no more triggers, cancel the running rebuild between jobs (its
        jobs stay queued) and wait for the worker: call before the banks close."""
        with self._cond:
            self._closing = True
            self._wanted.clear()
            self._cond.notify_all()
            thread = self._thread
        self._cancel.cancel()
        if thread is not None:
            thread.join()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._wanted and not self._closing:
                    self._cond.wait()
                if self._closing:
                    return
                name = next(iter(self._wanted))
                del self._wanted[name]
                self._running = True
            try:
                self._rebuild(name)
            finally:
                with self._cond:
                    self._running = False

    def _rebuild(self, name: str) -> None:
        try:
            # The engine's own upkeep: the journal says so, whoever queued it.
            with acting_as(ENGINE_CALLER), self._served.using(name) as bank:
                if bank.closed:
                    return  # deleted or closed while this waited for its lock
                report = bank.rebuild_observations(cancel=self._cancel)
        except (BankNotFoundError, CancelledError):
            return  # gone, or shutting down: what was not written stays queued
        except Exception:  # noqa: BLE001 - the worker must outlive one bank's failure
            log.exception(
                "rebuilding the observations of bank %r failed; its jobs stay queued"
                " (run `engram jobs run`)",
                name,
            )
            return
        if report is not None and report.fallback_note():
            log.warning("bank %r: %s", name, report.fallback_note())
        if report is not None and report.failed:
            log.error(
                "bank %r: %d observation job(s) failed: %s",
                name,
                len(report.failed),
                "; ".join(f"{entity}: {why}" for entity, why in report.failed),
            )
