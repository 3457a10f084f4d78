"""ASGI middleware in front of every route (the MCP mount included): the bearer
token, then the request body's size limit.

The token also says who is asking: the request runs as its `Caller` (the
token's name, over HTTP or MCP; core/context.py), set here for every route,
and kept in the ASGI scope (`CALLER_KEY`) for MCP, whose tools run in the
session's own tasks.

Pure ASGI rather than Starlette's BaseHTTPMiddleware, so streamed uploads and
downloads pass through without being buffered.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from fastapi import HTTPException

from core.context import HOP_HEADER, HTTP, MCP, Caller, acting_as, parse_hop
from core.server.token import DEFAULT_NAME, TokenRing

Scope = dict
Receive = Callable
Send = Callable
CALLER_KEY = "engram.caller"
MCP_PATH = "/mcp"


async def _answer(send: Send, status: int, detail: str, headers: list | None = None) -> None:
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


class Guard:
    """401 without the token; 413 for a body over the limit (by Content-Length, or
    counted as it streams in). `limits` maps a path suffix to its own limit
    (snapshot uploads are larger than any JSON request)."""

    def __init__(self, app, tokens: TokenRing, max_body_bytes: int, limits: dict[str, int]) -> None:
        self.app = app
        self.tokens = tokens
        self.max_body_bytes = max_body_bytes
        self.limits = limits

    def limit_for(self, path: str) -> int:
        for suffix, limit in self.limits.items():
            if path.endswith(suffix):
                return limit
        return self.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        auth = headers.get(b"authorization", b"").decode("latin-1")
        name = self.tokens.identify(auth)
        if name is None:
            await _answer(
                send,
                401,
                "missing or wrong bearer token (send 'Authorization: Bearer <token>')",
                [(b"www-authenticate", b"Bearer")],
            )
            return
        caller = caller_of(name, scope["path"], headers)
        scope[CALLER_KEY] = caller
        with acting_as(caller):
            await self._limited(scope, receive, send, headers)

    async def _limited(self, scope: Scope, receive: Receive, send: Send, headers: dict) -> None:
        limit = self.limit_for(scope["path"])
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await _answer(send, 413, f"request body over the limit of {limit} bytes")
            return
        received = 0
        started = False

        async def counted_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        async def tracked_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if not started:
                await _answer(send, 413, f"request body over the limit of {limit} bytes")


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
