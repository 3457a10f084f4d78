"""A bank's queue of asynchronous operations (`"async": true` retains), in its
DuckDB: an operation is acknowledged only once its row is committed, so a kill
never loses one; whoever opens the bank to serve it finishes what is queued.

A row keeps what is needed to run the operation again (`payload`, the request
as JSON) until it completes; then only its outcome stays, and at most `KEEP`
finished rows are kept, the oldest forgotten first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from core.store.bank_store import utcnow

KEEP = 10_000
ACTIVE = ("pending", "processing")
FINISHED = ("completed", "failed", "cancelled")

_COLUMNS = "id, kind, status, items_count, created_at, updated_at, completed_at, error, result"


@dataclass(frozen=True)
class QueuedOperation:
    id: str
    kind: str
    status: str  # pending | processing | completed | failed | cancelled
    items_count: int
    created_at: datetime
    updated_at: datetime
    completed_at: datetime | None = None
    error: str | None = None
    result: dict[str, Any] | None = None


def _record(row) -> QueuedOperation:
    *head, result = row
    return QueuedOperation(*head, result=json.loads(result) if result else None)


def enqueue(
    con: duckdb.DuckDBPyConnection,
    op_id: str,
    kind: str,
    items_count: int,
    payload: dict[str, Any],
    now: datetime,
) -> QueuedOperation | None:
    """Queue it (inside the caller's transaction); the operation already queued
    under `op_id`, if one is (an idempotent retry: nothing is queued again)."""
    known = get(con, op_id)
    if known is not None:
        return known
    con.execute(
        "INSERT INTO operations (id, kind, status, items_count, payload, created_at,"
        " updated_at) VALUES (?, ?, 'pending', ?, ?, ?, ?)",
        [op_id, kind, items_count, json.dumps(payload), now, now],
    )
    finished = con.execute(
        "SELECT count(*) FROM operations WHERE status IN (SELECT unnest(?))", [list(FINISHED)]
    ).fetchone()[0]
    if finished > KEEP:
        con.execute(
            "DELETE FROM operations WHERE id IN (SELECT id FROM operations WHERE status IN"
            " (SELECT unnest(?)) ORDER BY updated_at LIMIT ?)",
            [list(FINISHED), finished - KEEP],
        )
    return None


def get(con: duckdb.DuckDBPyConnection, op_id: str) -> QueuedOperation | None:
    row = con.execute(f"SELECT {_COLUMNS} FROM operations WHERE id = ?", [op_id]).fetchone()
    return _record(row) if row else None


def payload(con: duckdb.DuckDBPyConnection, op_id: str) -> dict[str, Any] | None:
    row = con.execute("SELECT payload FROM operations WHERE id = ?", [op_id]).fetchone()
    return json.loads(row[0]) if row and row[0] else None


def listing(con: duckdb.DuckDBPyConnection, status: str | None = None) -> list[QueuedOperation]:
    """Oldest first."""
    where, params = ("WHERE status = ?", [status]) if status else ("", [])
    rows = con.execute(
        f"SELECT {_COLUMNS} FROM operations {where} ORDER BY created_at, id", params
    ).fetchall()
    return [_record(r) for r in rows]


def update(
    con: duckdb.DuckDBPyConnection,
    op_id: str,
    status: str,
    now: datetime,
    *,
    error: str | None = None,
    result: dict[str, Any] | None = None,
    only_from: tuple[str, ...] | None = None,
) -> bool:
    """Move it on (only from one of `only_from`, when given); whether it moved.
    Completed, it keeps no payload (nothing left to run again)."""
    row = con.execute(
        "UPDATE operations SET status = ?, updated_at = ?, error = ?, result = ?,"
        " completed_at = CASE WHEN ? THEN ? ELSE NULL END,"
        " payload = CASE WHEN ? = 'completed' THEN NULL ELSE payload END"
        " WHERE id = ? AND (? OR status IN (SELECT unnest(?)))",
        [
            status,
            now,
            error,
            json.dumps(result) if result is not None else None,
            status in FINISHED,
            now,
            status,
            op_id,
            only_from is None,
            list(only_from or ()),
        ],
    ).fetchone()
    return bool(row and row[0])


def forget(con: duckdb.DuckDBPyConnection, op_id: str) -> None:
    con.execute("DELETE FROM operations WHERE id = ?", [op_id])



class OperationQueue:
    """The queue of one bank's store: each change in a committed transaction of its own."""

    def __init__(self, store) -> None:
        self._store = store

    def enqueue(
        self, op_id: str, kind: str, items_count: int, payload: dict[str, Any]
    ) -> QueuedOperation | None:
        """See `enqueue`."""
        with self._store.transaction() as tx:
            return enqueue(tx.con, op_id, kind, items_count, payload, utcnow())

    def get(self, op_id: str) -> QueuedOperation | None:
        return get(self._store.reader(), op_id)

    def listing(self, status: str | None = None) -> list[QueuedOperation]:
        return listing(self._store.reader(), status)

    def payload(self, op_id: str) -> dict[str, Any] | None:
        """What the operation runs (None once it completed)."""
        return payload(self._store.reader(), op_id)

    def update(
        self,
        op_id: str,
        status: str,
        *,
        error: str | None = None,
        result: dict[str, Any] | None = None,
        only_from: tuple[str, ...] | None = None,
    ) -> bool:
        """See `update`."""
        with self._store.transaction() as tx:
            return update(
                tx.con, op_id, status, utcnow(), error=error, result=result, only_from=only_from
            )

    def forget(self, op_id: str) -> None:
        with self._store.transaction() as tx:
            forget(tx.con, op_id)
