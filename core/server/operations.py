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


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class Operation:
    id: str
    bank: str
    kind: str
    items_count: int
    status: str = "pending"  # pending | processing | completed | failed
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    completed_at: str | None = None
    error: str | None = None
    result: dict[str, Any] | None = None


class Operations:
    def __init__(self, served: ServedBanks) -> None:
        self.served = served
        self._ops: dict[str, Operation] = {}
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
            self._forget_old()
        self._pool.submit(self._run, op, work)
        return op

    def _run(self, op: Operation, work: Callable[[], dict[str, Any]]) -> None:
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
            if op.status in ("completed", "failed"):
                op.completed_at = op.updated_at

    def _forget_old(self) -> None:
        finished = [o for o in self._ops.values() if o.status in ("completed", "failed")]
        for op in finished[: max(0, len(self._ops) - KEEP)]:
            del self._ops[op.id]

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
