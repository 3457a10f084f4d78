"""The connections themselves: what no client may do before it has a request.

uvicorn's h11 protocol waits for a request head for ever, and accepts every
connection it is offered. ~1,100 connections that sent half a head used up
the process's 1,024 descriptors; asyncio's accept loop then logged EMFILE
through a logging handler that needed a file to do it, its error escaped the
loop's exception handler, and the server never accepted again. So:

- `head_timeout`: a connection that has not sent a whole request head within
  it (a new one, or a kept-alive one that started another) is closed;
- `max_connections`: past it a connection is answered 503 and closed at once,
  and the cap stays below the descriptor limit (`connection_cap`), so the
  stores keep the descriptors they need and accept never fails;
- the event loop's exception handler writes one plain line to stderr (never
  through logging, never raising), so an error there cannot stop the loop.
"""

from __future__ import annotations

import asyncio
import resource
import sys
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT = 10.0  # seconds a client has to send a request's head
MAX_CONNECTIONS = 1000
# Descriptors kept back from connections: the banks' DuckDB, LanceDB and Tantivy
# files, the worker threads' pipes, the log.
DESCRIPTOR_RESERVE = 256
_BUSY_BODY = b'{"detail": "too many open connections; retry in a second"}'
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b"retry-after: 1\r\nconnection: close\r\n"
    b"content-length: " + str(len(_BUSY_BODY)).encode() + b"\r\n\r\n" + _BUSY_BODY
)


def connection_cap(wanted: int = MAX_CONNECTIONS) -> int:
    """`wanted`, or less: what the descriptor limit leaves after the reserve.
    Raises the soft limit to the hard one first (as servers do)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, target), hard))
            soft = max(soft, target)
        except (ValueError, OSError):
            pass
    return max(8, min(wanted, soft - DESCRIPTOR_RESERVE, soft * 3 // 4))


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with a head timeout and a connection cap (set on a
    subclass by `protocol_class`)."""

    head_timeout = HEAD_TIMEOUT
    max_connections = MAX_CONNECTIONS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._head_timer: asyncio.TimerHandle | None = None
        self._refused = len(self.connections) >= self.max_connections
        if self._refused:
            self.transport = transport
            transport.write(BUSY)
            transport.close()
            return
        super().connection_made(transport)
        self._expect_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:
            self._expect_head()  # part of a head, or a kept-alive connection's next one
        else:
            self._stop_head_timer()

    # -- the head timer -------------------------------------------------------------

    def _expect_head(self) -> None:
        if self._head_timer is None and not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_late)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def protocol_class(head_timeout: float, max_connections: int) -> type[GuardedH11]:
    return type(
        "EngramH11",
        (GuardedH11,),
        {"head_timeout": head_timeout, "max_connections": max_connections},
    )


_last_said = 0.0


def quiet_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """One line on stderr, at most once a second; never logging, never raising:
    asyncio calls this where an error would otherwise end its accept loop."""
    global _last_said
    try:
        now = time.monotonic()
        if now - _last_said < 1.0:
            return
        _last_said = now
        error = context.get("exception")
        sys.stderr.write(f"engram: serving: {context.get('message', 'error')}: {error!r}\n")
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - nothing may escape an exception handler
        pass
