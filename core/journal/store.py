"""The activity journal of one bank: `journal.duckdb` in the bank's folder.

A file of its own, beside `bank.duckdb`: it is a log of what was done, not the
memory (snapshots leave it out), and its writes must never contend with the
bank's — no bank transaction, no generation bump, no checkpoint of the bank's
file on a recall's account.

Recording is off the operation's critical path. `record` gives the entry its
id, tells the listeners (the studio, the live stream) at once and queues it; a
writer thread serialises and compresses the heavy part (a recall's trace) and
commits batches when no operation is running (at the latest `MAX_DELAY` after
an entry was queued). An entry recorded `durable` (every write) is committed
before `record` returns: what a client was told was done is in the journal.
A recall's entry is committed within `MAX_DELAY`; a clean close commits all
that is queued; only a kill in that window can lose one (never the bank's
data). That is what "acknowledged" means for a journal entry: a write's entry
once its response is sent, a read's once the writer committed it.

Bounded: entries older than `keep_days` go, then the oldest until the entries
take at most `keep_mb` (checked every `PRUNE_EVERY`). A purge scrubs every
entry naming what it purged (`scrub`) and rewrites the file, so no old copy
survives in free blocks; entries of operations still running when it ran are
scrubbed as they arrive (`purging`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
from pydantic_core import to_json

from core.journal.entry import (
    REDACTED,
    ActivityEntry,
    change_from_json,
    change_to_json,
)
from core.text import has_surrogate, without_surrogates

log = logging.getLogger(__name__)

JOURNAL_DB = "journal.duckdb"
MAX_DELAY = 0.5  # seconds a queued entry may wait for the bank to be idle
# A recall's ~130 KB of trace JSON to ~30 KB in ~1 ms (level 6: 27 KB in 2.2 ms); zlib
# gives the GIL up meanwhile.
ZLIB_LEVEL = 3
QUIET = 0.02  # seconds after an operation the writer leaves to its request's answer
PRUNE_EVERY = 60.0  # seconds between retention checks
DURABLE_WAIT = 10.0  # seconds a write waits for its entry; then it goes on (logged)
LIST_LIMIT = 1000

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS activity (
        id BIGINT PRIMARY KEY,
        started_at TIMESTAMP NOT NULL,
        duration_ms DOUBLE NOT NULL,
        actor VARCHAR NOT NULL,
        transport VARCHAR NOT NULL,
        kind VARCHAR NOT NULL,
        operation VARCHAR NOT NULL,
        outcome VARCHAR NOT NULL,
        summary VARCHAR NOT NULL,
        error VARCHAR,
        arguments VARCHAR,
        change VARCHAR,
        tokens INTEGER,
        unit_ids VARCHAR[],
        size INTEGER NOT NULL,
        detail BLOB
    )""",
    "CREATE INDEX IF NOT EXISTS activity_started ON activity(started_at)",
]
# A plain INSERT commits in half the time of INSERT OR REPLACE (~8 ms against ~16 ms
# on the shared machine): a write waits for its entry's commit.
INSERT = "INSERT INTO activity VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
INSERT_OR_REPLACE = INSERT.replace("INSERT", "INSERT OR REPLACE", 1)
LIGHT_COLUMNS = (
    "id, started_at, duration_ms, actor, transport, kind, operation, outcome, summary,"
    " error, arguments, change, tokens, unit_ids, size"
)

Detail = Callable[[], Any] | Mapping[str, Any] | None
Listener = Callable[[ActivityEntry], None]
Limits = Callable[[], tuple[float, float]]  # (keep_days, keep_mb); 0: no bound


@dataclass
class _Pending:
    entry: ActivityEntry
    detail: Detail
    durable: bool
    started: float = field(default_factory=time.monotonic)


@dataclass
class _Purge:
    hit: Callable[[str], bool]
    ended: float | None = None  # monotonic; None while it runs


class Journal:
    def __init__(self, folder: Path, limits: Limits | None = None) -> None:
        self.folder = Path(folder)
        self.path = self.folder / JOURNAL_DB
        self._limits = limits
        self._db: duckdb.DuckDBPyConnection | None = None
        self._db_lock = threading.RLock()
        self._cond = threading.Condition()
        self._queue: list[_Pending] = []
        self._next_id = 0
        self._written = 0  # ids up to this one are committed (or given up on)
        self._busy = 0
        self._idle_since = 0.0  # when the last operation ended (monotonic)
        self._listeners: list[Listener] = []
        self._purges: list[_Purge] = []
        self._writer: threading.Thread | None = None
        self._closed = False
        self._last_prune = time.monotonic()

    # -- the database ------------------------------------------------------------------

    def _open(self) -> duckdb.DuckDBPyConnection:
        with self._db_lock:
            if self._db is None:
                if self._closed:
                    raise RuntimeError("the journal is closed")
                for stale in (_rebuild_path(self.path), _wal(_rebuild_path(self.path))):
                    stale.unlink(missing_ok=True)
                self._db = _connect(self.path)
                for statement in SCHEMA:
                    self._db.execute(statement)
                top = self._db.execute("SELECT coalesce(max(id), 0) FROM activity").fetchone()[0]
                with self._cond:
                    self._next_id = max(self._next_id, int(top))
                    self._written = max(self._written, int(top))
            return self._db

    # -- recording ---------------------------------------------------------------------

    @contextmanager
    def operation(self) -> Iterator[None]:
        """Mark an operation as running: the writer waits for none to be."""
        with self._cond:
            self._busy += 1
        try:
            yield
        finally:
            with self._cond:
                self._busy -= 1
                if not self._busy:
                    self._idle_since = time.monotonic()
                    self._cond.notify_all()

    def record(
        self,
        entry: ActivityEntry,
        detail: Detail = None,
        *,
        durable: bool = False,
        began: float | None = None,
    ) -> ActivityEntry:
        """Journal `entry` (its id is assigned here) and return it as recorded.
        `detail`: its heavy part, or a function making it (called on the writer's
        thread). `durable`: return only once it is committed. `began`: when the
        operation started (`time.monotonic()`; default now): a purge that ran
        since is applied to it."""
        if self._db is None:  # (the lock only the first time: the writer holds it to write)
            self._open()
        with self._cond:
            self._next_id += 1
            entry = replace(entry, id=self._next_id)
            pending = _Pending(entry, detail, durable)
            if began is not None:
                pending.started = began
            self._queue.append(pending)
            self._start_writer()
            self._cond.notify_all()
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(entry)
            except Exception:  # a listener's failure is its own
                log.exception("an activity listener failed")
        if durable:
            self.wait_for(entry.id, DURABLE_WAIT)
        return entry

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(entry)` for every entry recorded from now on (on the
        recording thread; it must be quick). Returns the unsubscribe function."""
        with self._cond:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._cond, contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def wait_for(self, entry_id: int, timeout: float | None = None) -> bool:
        """Until the entry is committed; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._written < entry_id:
                if self._writer is None or not self._writer.is_alive():
                    return False
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    log.warning("journal entry %d is not written yet", entry_id)
                    return False
                self._cond.wait(left)
        return True

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Commit everything queued so far."""
        with self._cond:
            target = self._next_id
            if self._queue:
                self._queue[-1].durable = True  # the writer stops waiting for idle
                self._cond.notify_all()
        return self.wait_for(target, timeout)

    def _start_writer(self) -> None:
        if self._writer is None or not self._writer.is_alive():
            self._writer = threading.Thread(
                target=self._write_loop, name="engram-journal", daemon=True
            )
            self._writer.start()

    def _write_loop(self) -> None:
        _lower_priority()
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait(PRUNE_EVERY)
                    if not self._queue and not self._closed:
                        break  # idle a while: a retention check below
                # Off the critical path: wait while operations run, and a moment
                # after (the request still answers its client), unless a write
                # waits for its entry, or the oldest has waited long enough.
                while self._queue and not self._closed and not self._quiet():
                    if any(p.durable for p in self._queue):
                        break
                    left = MAX_DELAY - (time.monotonic() - self._queue[0].started)
                    if left <= 0:
                        break
                    self._cond.wait(min(left, QUIET))
                batch, self._queue = self._queue, []
                closing = self._closed and not batch
            if batch:
                self._write(batch)
                with self._cond:
                    self._written = max(self._written, batch[-1].entry.id)
                    self._cond.notify_all()
            if closing:
                return
            if time.monotonic() - self._last_prune >= PRUNE_EVERY:
                self._last_prune = time.monotonic()
                with contextlib.suppress(Exception):
                    self.prune()

    def _write(self, batch: list[_Pending]) -> None:
        with self._cond:
            purges = list(self._purges)
        rows = []
        for pending in batch:
            try:
                rows.append(self._row(pending, purges))
            except Exception:
                log.exception("journal entry %d could not be serialised", pending.entry.id)
        with self._cond:
            self._forget_purges()
        try:
            try:
                self._insert(rows, INSERT)
            except duckdb.ConstraintException:
                # Ids only grow (from the file's largest on opening): a clash is a file
                # changed under the journal; its rows are replaced rather than lost.
                self._insert(rows, INSERT_OR_REPLACE)
        except Exception:
            # The journal is a record of what happened, never a reason for it not to:
            # a full disk loses these entries, and says so here.
            log.exception("%d journal entr(ies) could not be written", len(rows))

    def _insert(self, rows: list[tuple], statement: str) -> None:
        with self._db_lock:
            db = self._open()
            db.execute("BEGIN")
            try:
                db.executemany(statement, rows)
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.Error):
                    db.execute("ROLLBACK")
                raise

    def _quiet(self) -> bool:
        """No operation runs, and none ended in the last QUIET seconds."""
        return not self._busy and time.monotonic() - self._idle_since >= QUIET

    def _give_way(self, deadline: float) -> None:
        """Wait while operations run (until `deadline`), then let another thread run."""
        with self._cond:
            while self._busy and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        time.sleep(0)

    def _row(self, pending: _Pending, purges: list[_Purge]) -> tuple:
        e = pending.entry
        detail = pending.detail() if callable(pending.detail) else pending.detail
        arguments = (
            json.dumps(e.arguments, ensure_ascii=False, default=str) if e.arguments else None
        )
        change = change_to_json(e.change)
        change_text = json.dumps(change, ensure_ascii=False) if change else None
        blob = None
        if detail is not None:
            # A write waits for its entry: that one gives way to nothing.
            self._give_way(0.0 if pending.durable else pending.started + MAX_DELAY)
            blob = zlib.compress(_json_bytes(detail), ZLIB_LEVEL)
        row = [
            e.id,
            e.started_at,
            e.duration_ms,
            e.actor,
            e.transport,
            e.kind,
            e.operation,
            e.outcome,
            e.summary,
            e.error or None,
            arguments,
            change_text,
            e.tokens,
            list(e.unit_ids),
            0,
            blob,
        ]
        # A refused call's arguments (and its error) may hold what it was refused for:
        # a lone surrogate DuckDB cannot encode would lose the whole batch with it.
        row[3:12] = [
            without_surrogates(v) if isinstance(v, str) and has_surrogate(v) else v
            for v in row[3:12]
        ]
        applying = [p for p in purges if p.ended is None or pending.started < p.ended]
        if applying and any(p.hit(_row_text(row)) for p in applying):
            # A purge ran while this operation did: what it holds may name what went.
            row = _redacted_row(row)
        row[14] = _size(row)
        return tuple(row)

    def _forget_purges(self) -> None:
        """A finished purge's names are kept (in memory only) while an operation that
        started before it ended may still be recorded."""
        oldest = min((p.started for p in self._queue), default=time.monotonic())
        self._purges = [
            p for p in self._purges if p.ended is None or self._busy or oldest < p.ended
        ]

    # -- reading -----------------------------------------------------------------------

    def entries(
        self,
        *,
        actor: str | None = None,
        kind: str | None = None,
        operation: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[ActivityEntry]:
        """Entries newest first, without their detail. `before`: only ids below it
        (the next page after a page ending at that id)."""
        self.flush()
        clauses, params = [], []
        for column, value in (("actor", actor), ("kind", kind), ("operation", operation)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            clauses.append("started_at >= ?")
            params.append(since)
        if until is not None:
            clauses.append("started_at < ?")
            params.append(until)
        if before is not None:
            clauses.append("id < ?")
            params.append(int(before))
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        limit = max(0, min(int(limit), LIST_LIMIT))
        with self._db_lock:
            rows = (
                self._open()
                .execute(
                    f"SELECT {LIGHT_COLUMNS} FROM activity{where} ORDER BY id DESC LIMIT ?",
                    [*params, limit],
                )
                .fetchall()
            )
        return [_entry(r) for r in rows]

    def entry(self, entry_id: int) -> ActivityEntry | None:
        """One entry with its detail (a recall's whole result), or None."""
        self.flush()
        with self._db_lock:
            row = (
                self._open()
                .execute(
                    f"SELECT {LIGHT_COLUMNS}, detail FROM activity WHERE id = ?", [int(entry_id)]
                )
                .fetchone()
            )
        if row is None:
            return None
        detail = json.loads(zlib.decompress(row[-1]).decode("utf-8")) if row[-1] else None
        return replace(_entry(row[:-1]), detail=detail)

    def actors(self) -> list[str]:
        """Every actor in the journal, most recent first (the filters' choices)."""
        self.flush()
        with self._db_lock:
            rows = (
                self._open()
                .execute("SELECT actor FROM activity GROUP BY actor ORDER BY max(id) DESC")
                .fetchall()
            )
        return [r[0] for r in rows]

    def usage(self) -> tuple[int, int]:
        """(entries, bytes they take)."""
        self.flush()
        with self._db_lock:
            count, size = (
                self._open()
                .execute("SELECT count(*), coalesce(sum(size), 0) FROM activity")
                .fetchone()
            )
        return int(count), int(size)

    # -- bounds ------------------------------------------------------------------------

    def prune(self, keep_days: float | None = None, keep_mb: float | None = None) -> int:
        """Drop what is past the retention (the bank's `journal.*` settings unless
        given); returns how many entries went."""
        if keep_days is None or keep_mb is None:
            days, mb = self._limits() if self._limits is not None else (0.0, 0.0)
            keep_days = days if keep_days is None else keep_days
            keep_mb = mb if keep_mb is None else keep_mb
        removed = 0
        with self._db_lock:
            db = self._open()
            if keep_days and keep_days > 0:
                cutoff = _utcnow() - timedelta(days=keep_days)
                removed += db.execute(
                    "DELETE FROM activity WHERE started_at < ?", [cutoff]
                ).fetchone()[0]
            if keep_mb and keep_mb > 0:
                cap = int(keep_mb * 2**20)
                total = db.execute("SELECT coalesce(sum(size), 0) FROM activity").fetchone()[0]
                if total > cap:
                    # Oldest first, down to 90% of the cap, so it is not pruned again at once.
                    removed += db.execute(
                        "DELETE FROM activity WHERE id IN (SELECT id FROM ("
                        " SELECT id, sum(size) OVER (ORDER BY id) - size AS before FROM activity)"
                        " WHERE before < ?)",
                        [int(total - cap * 0.9)],
                    ).fetchone()[0]
            if removed:
                db.execute("CHECKPOINT")
                if keep_mb and self.path.stat().st_size > 2 * keep_mb * 2**20 + 32 * 2**20:
                    self._rewrite()  # freed blocks are reused, but never handed back
        return int(removed)

    # -- purge -------------------------------------------------------------------------

    @contextmanager
    def purging(self, hit: Callable[[str], bool]) -> Iterator[None]:
        """While a purge runs, and for the operations that started before it ended,
        entries whose text `hit` matches are recorded redacted."""
        purge = _Purge(hit)
        with self._cond:
            self._purges.append(purge)
        try:
            yield
        finally:
            with self._cond:
                purge.ended = time.monotonic()

    def scrub(self, hit: Callable[[str], bool]) -> int:
        """Redact every entry whose text (summary, arguments, change, detail)
        `hit` matches, then rewrite the file: no byte of them stays on disk.
        Returns how many were redacted."""
        self.flush()
        with self._db_lock:
            db = self._open()
            hits = []
            cursor = db.execute(f"SELECT {LIGHT_COLUMNS}, detail FROM activity")
            while batch := cursor.fetchmany(500):
                for row in batch:
                    if hit(_row_text(list(row))):
                        hits.append(row[0])
            if hits:
                db.execute(
                    "UPDATE activity SET summary = ?, error = NULL, arguments = NULL,"
                    " change = NULL, unit_ids = [], detail = NULL, size = 64"
                    " WHERE id IN (SELECT unnest(?))",
                    [REDACTED, hits],
                )
            self._rewrite()
        return len(hits)

    def _rewrite(self) -> None:
        """Copy the journal into a fresh file and swap it in (as BankStore's
        rebuild_database does): DuckDB never wipes a freed block."""
        from core.store.filters import sql_string

        with self._db_lock:
            db = self._open()
            fresh = _rebuild_path(self.path)
            for stale in (fresh, _wal(fresh)):
                stale.unlink(missing_ok=True)
            name = db.execute("SELECT current_database()").fetchone()[0]
            db.execute("CHECKPOINT")
            db.execute(f"ATTACH {sql_string(str(fresh))} AS journal_rebuild")
            try:
                db.execute(f'COPY FROM DATABASE "{name}" TO journal_rebuild')
            finally:
                db.execute("DETACH journal_rebuild")
            db.close()
            self._db = None
            try:
                os.replace(fresh, self.path)
                _wal(self.path).unlink(missing_ok=True)
            finally:
                self._open()

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Commit what is queued, stop the writer, close the file."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            writer = self._writer
        if writer is not None:
            writer.join(timeout=30)
        with self._db_lock:
            if self._db is not None:
                with contextlib.suppress(duckdb.Error):
                    self._db.execute("CHECKPOINT")
                self._db.close()
                self._db = None


def _json_bytes(value: Any) -> bytes:
    """`value` as UTF-8 JSON (names raw, never escaped: a purge searches them).
    pydantic's serializer: a recall's trace in ~0.6 ms, a quarter of json.dumps's,
    and the GIL held that much less while a recall waits for it."""
    try:
        return to_json(value, fallback=str)
    except (ValueError, TypeError):  # a lone surrogate: json keeps it
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        return text.encode("utf-8", "surrogatepass")


def _connect(path: Path) -> duckdb.DuckDBPyConnection:
    # A log: one thread, a small buffer; the bank's own database keeps the memory.
    return duckdb.connect(str(path), config={"threads": 1, "memory_limit": "128MB"})


def _rebuild_path(path: Path) -> Path:
    return path.with_name(path.name + ".rebuild")


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _utcnow() -> datetime:
    from datetime import UTC

    return datetime.now(UTC).replace(tzinfo=None)


def _lower_priority() -> None:
    """The writer's thread yields the CPU to the requests (Linux: per-thread nice)."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


def _entry(row: tuple) -> ActivityEntry:
    return ActivityEntry(
        id=row[0],
        started_at=row[1],
        duration_ms=row[2],
        actor=row[3],
        transport=row[4],
        kind=row[5],
        operation=row[6],
        outcome=row[7],
        summary=row[8],
        error=row[9] or "",
        arguments=json.loads(row[10]) if row[10] else {},
        change=change_from_json(json.loads(row[11])) if row[11] else None,
        tokens=row[12],
        unit_ids=tuple(row[13] or ()),
        size=row[14],
    )


def _row_text(row: list) -> str:
    """Everything a row says, as one text to search (its detail decompressed)."""
    parts = [str(v) for v in row[3:13] if v is not None]
    parts += list(row[13] or ())
    if row[15]:
        parts.append(zlib.decompress(row[15]).decode("utf-8", "surrogatepass"))
    return "\n".join(parts)


def _redacted_row(row: list) -> list:
    row = list(row)
    row[8], row[9], row[10], row[11], row[13], row[15] = REDACTED, None, None, None, [], None
    return row


def _size(row: list) -> int:
    """Bytes the row takes, near enough: what the `keep_mb` bound counts."""
    texts = (row[3], row[4], row[5], row[6], row[7], row[8], row[9], row[10], row[11])
    size = 64 + sum(len(t.encode("utf-8", "surrogatepass")) for t in texts if t)
    size += sum(len(i) + 8 for i in row[13] or ())
    return size + (len(row[15]) if row[15] else 0)
