"""Long `Bank` calls over HTTP: progress streamed back, cancel from the client.

A long operation (one the interface declares with progress or cancel:
ingest, export, import, rebuilds) answers with a stream of JSON lines:

    {"call": "<id>"}                       first: the id to cancel it by
    {"progress": [done, total, "message"]}  as the engine reports it (throttled)
    {"heartbeat": true}                    while nothing else is said
    {"value": ...}                         the result (wire-encoded), last
    {"error": {"status": 400, "kind": "EngramError", "detail": "..."}}   or this

The work runs on a thread of its own (not the server's shared pool), with a
`CancelToken` that `POST /engram/v1/calls/{id}/cancel` sets, and that a client
which goes away sets too (its stream is closed). Cancelled work rolls back as
it does in the studio; the client reads on until the error line says so.

A snapshot export also leaves a file to fetch: `Downloads` keeps it until it
is fetched (`GET /engram/v1/downloads/{id}`) or for `DOWNLOAD_TTL` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from core.progress import CancelToken

HEARTBEAT = 2.0  # seconds between lines when the work says nothing
PROGRESS_EVERY = 0.1  # at most this often; the last report always goes
DOWNLOAD_TTL = 900.0

Work = Callable[[Callable[[int, int, str], None], CancelToken], dict]
ErrorEvent = Callable[[BaseException], dict]


class LongCalls:
    """The long calls in flight, by id, so a client can cancel one."""

    def __init__(self) -> None:
        self._tokens: dict[str, CancelToken] = {}
        self._lock = threading.Lock()

    def start(self) -> tuple[str, CancelToken]:
        call_id, token = uuid.uuid4().hex, CancelToken()
        with self._lock:
            self._tokens[call_id] = token
        return call_id, token

    def cancel(self, call_id: str) -> bool:
        with self._lock:
            token = self._tokens.get(call_id)
        if token is None:
            return False
        token.cancel()
        return True

    def end(self, call_id: str) -> None:
        with self._lock:
            self._tokens.pop(call_id, None)

    def cancel_all(self) -> None:
        """The server is stopping: every long call stops at its next check."""
        with self._lock:
            tokens = list(self._tokens.values())
        for token in tokens:
            token.cancel()


def _line(event: dict) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


async def stream(calls: LongCalls, work: Work, error_event: ErrorEvent) -> AsyncIterator[bytes]:
    """Run `work(progress, cancel)` on its own thread and yield the JSON lines."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[dict] = asyncio.Queue()
    call_id, token = calls.start()
    last_sent = [0.0]

    def put(event: dict) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody listens
            loop.call_soon_threadsafe(queue.put_nowait, event)

    def progress(done: int, total: int, message: str = "") -> None:
        now = time.monotonic()
        if now - last_sent[0] >= PROGRESS_EVERY or (total and done >= total):
            last_sent[0] = now
            put({"progress": [int(done), int(total), str(message)]})

    def run() -> None:
        try:
            event = work(progress, token)
        except BaseException as error:  # noqa: BLE001 - every failure is reported
            event = {"error": error_event(error)}
        put(event)

    # In the request's context: the thread holds the bank's write lock through the
    # request's admission ticket (admission.py), and knows its departure.
    # It runs as the request's caller too (core/context.py).
    context = contextvars.copy_context()
    threading.Thread(
        target=context.run, args=(run,), name=f"engram-call-{call_id[:8]}", daemon=True
    ).start()
    finished = False
    try:
        yield _line({"call": call_id})
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), HEARTBEAT)
            except TimeoutError:
                yield _line({"heartbeat": True})
                continue
            finished = "value" in event or "error" in event
            yield _line(event)
            if finished:
                return
    finally:
        if not finished:
            token.cancel()  # the client went away: stop the work it asked for
        calls.end(call_id)


class Downloads:
    """Files a long call left for its client to fetch once, kept a while."""

    def __init__(self, ttl: float = DOWNLOAD_TTL) -> None:
        self.ttl = ttl
        self._files: dict[str, tuple[Path, str, float]] = {}
        self._lock = threading.Lock()

    def add(self, path: Path, filename: str) -> str:
        self.expire()
        download_id = uuid.uuid4().hex
        with self._lock:
            self._files[download_id] = (path, filename, time.monotonic() + self.ttl)
        return download_id

    def take(self, download_id: str) -> tuple[Path, str] | None:
        """The file and its name, no longer kept (the caller deletes it once sent)."""
        with self._lock:
            found = self._files.pop(download_id, None)
        return None if found is None else found[:2]

    def expire(self) -> None:
        now = time.monotonic()
        with self._lock:
            gone = [k for k, (_, _, until) in self._files.items() if until < now]
            paths = [self._files.pop(k)[0] for k in gone]
        for path in paths:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        with self._lock:
            paths = [path for path, _, _ in self._files.values()]
            self._files.clear()
        for path in paths:
            path.unlink(missing_ok=True)


def no_value() -> dict[str, Any]:
    return {"value": None}
