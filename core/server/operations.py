"""Asynchronous retains (`"async": true`): queued, run one at a time, polled by id.

The record lives in memory: a server restarted before an operation finished
forgets it, and its retain either committed (the document is in the bank) or
left nothing (one transaction per document).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core.server.served import ServedBanks
from core.types import EngramError

KEEP = 10_000  # finished operations remembered, oldest forgotten first
FINISHED = ("completed", "failed", "cancelled")


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class Operation:
    id: str
    bank: str
    kind: str
    items_count: int
    status: str = "pending"  # pending | processing | completed | failed | cancelled
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    completed_at: str | None = None
    error: str | None = None
    result: dict[str, Any] | None = None


class Operations:
    def __init__(self, served: ServedBanks) -> None:
        self.served = served
        self._ops: dict[str, Operation] = {}
        self._work: dict[str, Callable[[], dict[str, Any]]] = {}  # kept for a retry
        self._guard = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-op")

    def submit(
        self,
        bank: str,
        kind: str,
        items_count: int,
        work: Callable[[], dict[str, Any]],
        operation_id: str | None = None,
    ) -> Operation:
        """Queue `work`; a caller-given id already known returns that operation
        (an idempotent retry), without running it again."""
        op_id = operation_id or str(uuid.uuid4())
        with self._guard:
            known = self._ops.get(op_id)
            if known is not None:
                if known.bank != bank:
                    raise EngramError(f"operation {op_id!r} belongs to another bank")
                return known
            op = Operation(op_id, bank, kind, items_count)
            self._ops[op_id] = op
            self._work[op_id] = work
            self._forget_old()
        self._pool.submit(self._run, op, work)
        return op

    def _run(self, op: Operation, work: Callable[[], dict[str, Any]]) -> None:
        with self._guard:
            if op.status != "pending":  # cancelled while it waited
                return
            op.status = "processing"
        self._set(op, status="processing")
        try:
            result = work()
        except Exception as error:  # reported through the operation, not lost
            self._set(op, status="failed", error=str(error) or type(error).__name__)
        else:
            self._set(op, status="completed", result=result)

    def _set(self, op: Operation, **values: Any) -> None:
        with self._guard:
            for key, value in values.items():
                setattr(op, key, value)
            op.updated_at = _now()
            if op.status in FINISHED:
                op.completed_at = op.updated_at
            if op.status == "completed":
                self._work.pop(op.id, None)  # nothing left to retry

    def _forget_old(self) -> None:
        finished = [o for o in self._ops.values() if o.status in FINISHED]
        for op in finished[: max(0, len(self._ops) - KEEP)]:
            del self._ops[op.id]
            self._work.pop(op.id, None)

    def cancel(self, bank: str, op_id: str) -> bool:
        """Cancel a pending operation (True), or not: it runs or has run."""
        with self._guard:
            op = self._ops.get(op_id)
            if op is None or op.bank != bank or op.status != "pending":
                return False
        self._set(op, status="cancelled", error="cancelled before it ran")
        return True

    def retry(self, bank: str, op_id: str) -> bool:
        """Queue a failed or cancelled operation again (True), or not."""
        with self._guard:
            op = self._ops.get(op_id)
            work = self._work.get(op_id)
            if (
                op is None
                or op.bank != bank
                or op.status not in ("failed", "cancelled")
                or not work
            ):
                return False
            op.status, op.error, op.completed_at = "pending", None, None
        self._pool.submit(self._run, op, work)
        return True

    def forget(self, bank: str, op_id: str) -> bool:
        """Drop a finished operation's record (True), or not: it is not finished."""
        with self._guard:
            op = self._ops.get(op_id)
            if op is None or op.bank != bank or op.status not in FINISHED:
                return False
            del self._ops[op_id]
            self._work.pop(op_id, None)
        return True

    def get(self, bank: str, op_id: str) -> Operation | None:
        with self._guard:
            op = self._ops.get(op_id)
            return op if op is not None and op.bank == bank else None

    def of_bank(self, bank: str) -> list[Operation]:
        with self._guard:
            return [o for o in self._ops.values() if o.bank == bank]

    def pending(self, bank: str) -> int:
        return sum(o.status in ("pending", "processing") for o in self.of_bank(bank))

    def failed(self, bank: str) -> int:
        return sum(o.status == "failed" for o in self.of_bank(bank))

    def wait(self, timeout: float | None = None) -> None:
        """Block until everything queued so far has run (tests, shutdown)."""
        self._pool.submit(lambda: None).result(timeout)

    def shutdown(self) -> None:
        """Finish what was queued (each retain is acknowledged only once it ran)."""
        self._pool.shutdown(wait=True)
