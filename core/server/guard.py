"""ASGI middleware in front of every route (the MCP mount included): the bearer
token, the body's size limit and read timeout, and what a request's work
learns when its client leaves or its time is up.

- 401 without the token; 413 for a body over the limit (by Content-Length, or
  counted as it arrives); 408 when the body stops arriving for
  `read_timeout` seconds (a client that sends half a request holds nothing
  for long).
- A JSON request's body is read whole before the app sees it (FastAPI reads
  it whole anyway), so a request waiting in its bank's queue (admission.py)
  still hears its client leave. Streamed uploads (`streamed` path suffixes:
  snapshots) pass through as they arrive, counted.
- Each request has a `Departure`: set when the client disconnects or
  `request_timeout` seconds have passed. Its `CancelToken` reaches the thread
  that runs the handler (`current_cancel()`), so a retain stops between
  chunks, leaving the bank as it was before the document in progress; its
  answer is a 504 that says why (nobody hears one whose client left).

The token also says who is asking: the request runs as its `Caller` (the
token's name, over HTTP or MCP; core/context.py), set here for every route,
and kept in the ASGI scope (`CALLER_KEY`) for MCP, whose tools run in the
session's own tasks.

Pure ASGI rather than Starlette's BaseHTTPMiddleware, so streamed uploads and
downloads pass through without being buffered.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from fastapi import HTTPException

from core.context import HOP_HEADER, HTTP, MCP, Caller, acting_as, parse_hop
from core.progress import CancelToken
from core.server.token import DEFAULT_NAME, TokenRing

Scope = dict
Receive = Callable
Send = Callable
CALLER_KEY = "engram.caller"
MCP_PATH = "/mcp"

BODY = "engram.body"  # the scope key of a JSON request's body, read whole
READ_TIMEOUT = 30.0  # seconds a body may pause between chunks
REQUEST_TIMEOUT = 900.0  # seconds a request may run (a long llm retain included)


async def answer(send: Send, status: int, detail: str, headers: list | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyTooLarge(HTTPException):
    """Raised from `receive` as the body passes the limit. An HTTPException, so
    FastAPI's body parsing passes it on (others become a 400) and it answers 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over the limit of {limit} bytes")


@dataclass
class Departure:
    """Whether a request's client is gone, or its time up: `left` for the event
    loop (admission stops waiting), `cancel` for the thread doing its work."""

    timeout: float
    left: asyncio.Event = field(default_factory=asyncio.Event)
    cancel: CancelToken = field(default_factory=CancelToken)
    why: str = ""  # "disconnected" or "timeout", once it left
    watcher: asyncio.Future | None = None  # awaits the client's disconnect

    def leave(self, why: str) -> None:
        if not self.left.is_set():
            self.why = why
            self.left.set()
            self.cancel.cancel()

    @property
    def timed_out(self) -> bool:
        return self.why == "timeout"


_DEPARTURE: contextvars.ContextVar[Departure | None] = contextvars.ContextVar(
    "engram_departure", default=None
)


def current_departure() -> Departure | None:
    return _DEPARTURE.get()


def current_cancel() -> CancelToken | None:
    """The cancel token of the request this thread works for (None outside one)."""
    departure = _DEPARTURE.get()
    return departure.cancel if departure is not None else None


class Guard:
    """See the module docstring. `limits` maps a path suffix to its own body limit;
    those paths stream (snapshot uploads are larger than any JSON request)."""

    def __init__(
        self,
        app,
        tokens: TokenRing,
        max_body_bytes: int,
        limits: dict[str, int],
        *,
        read_timeout: float = READ_TIMEOUT,
        request_timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.max_body_bytes = max_body_bytes
        self.limits = limits
        self.read_timeout = read_timeout
        self.request_timeout = request_timeout

    def limit_for(self, path: str) -> tuple[int, bool]:
        """The body limit for `path`, and whether its body streams."""
        for suffix, limit in self.limits.items():
            if path.endswith(suffix):
                return limit, True
        return self.max_body_bytes, False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        auth = headers.get(b"authorization", b"").decode("latin-1")
        name = self.tokens.identify(auth)
        if name is None:
            await answer(
                send,
                401,
                "missing or wrong bearer token (send 'Authorization: Bearer <token>')",
                [(b"www-authenticate", b"Bearer")],
            )
            return
        caller = caller_of(name, scope["path"], headers)
        scope[CALLER_KEY] = caller
        with acting_as(caller):
            await self._admitted(scope, receive, send, headers)

    async def _admitted(self, scope: Scope, receive: Receive, send: Send, headers: dict) -> None:
        limit, streamed = self.limit_for(scope["path"])
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await answer(send, 413, f"request body over the limit of {limit} bytes")
            return
        departure = Departure(self.request_timeout)
        if streamed:
            await self._streamed(scope, receive, send, limit, departure)
            return
        try:
            body = await self._read_body(receive, limit)
        except BodyTooLarge:
            await answer(send, 413, f"request body over the limit of {limit} bytes")
            return
        except TimeoutError:
            await answer(
                send,
                408,
                f"the request body stopped arriving for {self.read_timeout:g} s",
                [(b"connection", b"close")],
            )
            return
        if body is None:
            return  # the client left before its request was whole: nothing to do
        scope = {**scope, BODY: body}  # for admission.py: a write may need no lock
        await self._run(scope, self._replay(body, receive, departure), send, departure)

    async def _read_body(self, receive: Receive, limit: int) -> bytes | None:
        chunks: list[bytes] = []
        received = 0
        while True:
            async with asyncio.timeout(self.read_timeout):
                message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > limit:
                raise BodyTooLarge(limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _replay(self, body: bytes, receive: Receive, departure: Departure) -> Receive:
        """The body as one message; then the client's departure, watched all along."""
        delivered = False

        async def watch() -> None:
            message = await receive()  # the body is read: only a disconnect comes now
            if message["type"] == "http.disconnect":
                departure.leave("disconnected")

        departure.watcher = asyncio.ensure_future(watch())

        async def replayed():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await departure.left.wait()
            return {"type": "http.disconnect"}

        return replayed

    async def _streamed(self, scope, receive, send, limit: int, departure: Departure) -> None:
        received = 0
        started = False

        async def counted_receive():
            nonlocal received
            async with asyncio.timeout(self.read_timeout):
                message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            elif message["type"] == "http.disconnect":
                departure.leave("disconnected")
            return message

        async def tracked_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self._run(scope, counted_receive, tracked_send, departure)
        except BodyTooLarge:
            if not started:
                await answer(send, 413, f"request body over the limit of {limit} bytes")
        except TimeoutError:
            if not started:
                await answer(send, 408, f"the upload stopped for {self.read_timeout:g} s")

    async def _run(self, scope, receive, send, departure: Departure) -> None:
        token = _DEPARTURE.set(departure)
        timer = asyncio.get_running_loop().call_later(departure.timeout, departure.leave, "timeout")
        try:
            await self.app(scope, receive, send)
        finally:
            timer.cancel()
            if departure.watcher is not None:
                departure.watcher.cancel()
            _DEPARTURE.reset(token)


def caller_of(token_name: str, path: str, headers: dict[bytes, bytes]) -> Caller:
    """Who a request is: its token's name, over MCP or plain HTTP. A local tool
    holding the default token (the data folder's own: the person at this
    computer) may say which tool it is (`HOP_HEADER`); a named token may not."""
    transport = MCP if path == MCP_PATH or path.startswith(MCP_PATH + "/") else HTTP
    if token_name == DEFAULT_NAME and HOP_HEADER.encode() in headers:
        hop = parse_hop(headers[HOP_HEADER.encode()].decode("latin-1"))
        if hop is not None:
            return hop
    return Caller(token_name, transport)
