"""Asynchronous retains (`"async": true`): queued, run one at a time, polled by id.

The queue is the bank's own (core/store/oplog.py, in its DuckDB): an
operation is acknowledged only once its row, with the request it will run, is
committed, so a kill loses none, and its status outlives a restart. Whoever
serves the bank next (`engram serve`, the studio) finishes what is queued:
`resume` runs when a serving process opens a bank, and at start for the
banks the data folder's `queued/` marks (a file per bank with operations left:
a hint, so a server need not open every bank to find them; the rows decide).

An operation that was running when the process died is run again: a retain
skips what it already wrote (the same content under the same id is unchanged).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.context import ENGINE_CALLER, Caller, acting_as, current_caller
from core.server.served import ServedBanks
from core.types import EngramError

FINISHED = ("completed", "failed", "cancelled")
MARKS = "queued"  # in the data folder: one empty file per bank id with queued work

# kind -> run(served, bank id, payload) -> result; each kind's module adds its own.
Runner = Callable[[ServedBanks, str, dict[str, Any]], dict[str, Any]]
RUNNERS: dict[str, Runner] = {}
CALLER = "engram_caller"  # the payload's key for who queued it (core/context.py)


@dataclass(frozen=True)
class Operation:
    """An operation as the API shows it (times as ISO 8601 text, in UTC)."""

    id: str
    bank: str
    kind: str
    items_count: int
    status: str = "pending"  # pending | processing | completed | failed | cancelled
    created_at: str = ""
    updated_at: str = ""
    completed_at: str | None = None
    error: str | None = None
    result: dict[str, Any] | None = None


def _iso(value: datetime | None) -> str | None:
    return value.replace(tzinfo=UTC).isoformat() if value is not None else None


def _shown(bank: str, record) -> Operation:
    return Operation(
        record.id,
        bank,
        record.kind,
        record.items_count,
        record.status,
        _iso(record.created_at),
        _iso(record.updated_at),
        _iso(record.completed_at),
        record.error,
        record.result,
    )


class Operations:
    def __init__(self, served: ServedBanks) -> None:
        self.served = served
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-op")
        self._scheduled: set[tuple[str, str]] = set()  # (bank, op) queued in the pool
        self._guard = threading.Lock()
        self._closed = False
        served.opened.append(self.resume)

    @property
    def _marks(self) -> Path:
        # Read when first needed, not built: the OpenAPI document is made with no engine.
        return Path(self.served.engine.home) / MARKS

    # -- queueing --------------------------------------------------------------------

    def submit(
        self,
        bank: str,
        kind: str,
        items_count: int,
        payload: dict[str, Any],
        operation_id: str | None = None,
    ) -> Operation:
        """Queue the operation durably, then schedule it; a caller-given id already
        known returns that operation (an idempotent retry) without queueing again."""
        if kind not in RUNNERS:
            raise EngramError(f"no operation of kind {kind!r}")
        op_id = operation_id or str(uuid.uuid4())
        # Who asked goes with the request: run later (after a restart too) as them.
        caller = current_caller()
        payload = {**payload, CALLER: {"actor": caller.actor, "transport": caller.transport}}
        held = self.served.get(bank)
        self._mark(bank)  # before the commit: a kill after it leaves the mark
        known = held.operation_queue.enqueue(op_id, kind, items_count, payload)
        if known is not None:
            return _shown(bank, known)
        self._schedule(bank, op_id)
        return _shown(bank, held.operation_queue.get(op_id))

    def resume(self, bank: str) -> int:
        """Schedule what `bank` has queued (run again what a dead process was
        running); how many. Called when a serving process opens the bank."""
        try:
            held = self.served.get(bank)
            records = held.operation_queue.listing()
        except EngramError:
            return 0
        count = 0
        for record in records:
            if record.status in ("pending", "processing"):
                self._schedule(bank, record.id)
                count += 1
        if not count:
            self._unmark(bank)
        return count

    def start(self) -> None:
        """At start, in the background: the banks served already (the studio's)
        and the ones the marks name (each is opened, if this process serves it)."""
        banks = self.served.open_ids()
        with contextlib.suppress(OSError):
            banks += [p.read_text("utf-8") for p in self._marks.iterdir()]
        for bank in dict.fromkeys(banks):
            self._pool.submit(self.resume, bank)

    def _schedule(self, bank: str, op_id: str) -> None:
        with self._guard:
            if self._closed or (bank, op_id) in self._scheduled:
                return
            self._scheduled.add((bank, op_id))
        self._pool.submit(self._run, bank, op_id)

    def _run(self, bank: str, op_id: str) -> None:
        with self._guard:
            self._scheduled.discard((bank, op_id))
            if self._closed:
                return  # stopping: it stays queued, for the next to serve the bank
        try:
            held = self.served.get(bank)
            record = held.operation_queue.get(op_id)
            if record is None or record.status not in ("pending", "processing"):
                return
            payload = held.operation_queue.payload(op_id) or {}
            # Only from pending (or from a dead process's processing): a cancel wins.
            if not held.operation_queue.update(
                op_id, "processing", only_from=("pending", "processing")
            ):
                return
        except EngramError:
            return  # the bank went (closed, deleted): its rows wait with it
        try:
            with acting_as(_caller_of(payload)):
                result = RUNNERS[record.kind](self.served, bank, payload)
        except Exception as error:  # reported through the operation, not lost
            self._finish(bank, op_id, "failed", error=str(error) or type(error).__name__)
        else:
            self._finish(bank, op_id, "completed", result=result)

    def _finish(self, bank: str, op_id: str, status: str, **outcome: Any) -> None:
        with contextlib.suppress(EngramError):
            held = self.served.get(bank)
            held.operation_queue.update(op_id, status, **outcome)
            if not any(
                r.status in ("pending", "processing") for r in held.operation_queue.listing()
            ):
                self._unmark(bank)

    # -- marks: which banks have queued work ---------------------------------------------

    def _mark_of(self, bank: str) -> Path:
        # A bank id a client chose may be any text: the file is named by its hash.
        return self._marks / hashlib.sha256(bank.encode("utf-8", "replace")).hexdigest()[:32]

    def _mark(self, bank: str) -> None:
        self._marks.mkdir(mode=0o700, exist_ok=True)
        mark = self._mark_of(bank)
        if not mark.exists():
            fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, bank.encode("utf-8", "replace"))
                os.fsync(fd)
            finally:
                os.close(fd)
            with contextlib.suppress(OSError):  # the directory entry, durably
                dir_fd = os.open(self._marks, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)

    def _unmark(self, bank: str) -> None:
        with contextlib.suppress(OSError):
            self._mark_of(bank).unlink()

    # -- what the API asks ---------------------------------------------------------------

    def get(self, bank: str, op_id: str) -> Operation | None:
        record = self.served.get(bank).operation_queue.get(op_id)
        return _shown(bank, record) if record is not None else None

    def of_bank(self, bank: str) -> list[Operation]:
        return [_shown(bank, r) for r in self.served.get(bank).operation_queue.listing()]

    def pending(self, bank: str) -> int:
        return sum(o.status in ("pending", "processing") for o in self.of_bank(bank))

    def failed(self, bank: str) -> int:
        return sum(o.status == "failed" for o in self.of_bank(bank))

    def cancel(self, bank: str, op_id: str) -> bool:
        """Cancel a pending operation (True), or not: it runs or has run."""
        return self.served.get(bank).operation_queue.update(
            op_id, "cancelled", error="cancelled before it ran", only_from=("pending",)
        )

    def retry(self, bank: str, op_id: str) -> bool:
        """Queue a failed or cancelled operation again (True), or not."""
        held = self.served.get(bank)
        record = held.operation_queue.get(op_id)
        if record is None or record.status not in ("failed", "cancelled"):
            return False
        if held.operation_queue.payload(op_id) is None:
            return False
        self._mark(bank)
        held.operation_queue.update(op_id, "pending")
        self._schedule(bank, op_id)
        return True

    def forget(self, bank: str, op_id: str) -> bool:
        """Drop a finished operation's record (True), or not: it is not finished."""
        held = self.served.get(bank)
        record = held.operation_queue.get(op_id)
        if record is None or record.status not in FINISHED:
            return False
        held.operation_queue.forget(op_id)
        return True

    def wait(self, timeout: float | None = None) -> None:
        """Block until everything scheduled so far has run (tests, shutdown)."""
        self._pool.submit(lambda: None).result(timeout)

    def shutdown(self) -> None:
        """Finish what is running; what is still queued stays queued in its bank."""
        with self._guard:
            self._closed = True
        with contextlib.suppress(ValueError):
            self.served.opened.remove(self.resume)
        self._pool.shutdown(wait=True, cancel_futures=True)


def _caller_of(payload: dict[str, Any]) -> Caller:
    """Who queued the operation (an operation queued before actors were kept: the engine)."""
    said = payload.get(CALLER)
    if isinstance(said, dict) and said.get("actor") and said.get("transport"):
        return Caller(str(said["actor"]), str(said["transport"]))
    return ENGINE_CALLER
