"""Who an MCP tool call is: the request's caller, named after its MCP client too.

MCP messages are handled in the session's own tasks, not the HTTP request's,
so the caller the guard worked out from the bearer token is read back from
the request's ASGI scope; over stdio there is no request, and the process's
caller (`engram mcp`: MCP over stdio) stands. Either way the client's name
from the MCP handshake (`clientInfo.name`) is added: "support-bot (claude-code)".
"""

from __future__ import annotations

from typing import Any

from core.context import HOP_TRANSPORTS, Caller, acting_as, current_caller
from core.server.guard import CALLER_KEY


def caller_of(ctx: Any) -> Caller:
    """The caller of the message `ctx` (a ServerRequestContext) carries."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    caller = scope.get(CALLER_KEY) if isinstance(scope, dict) else None
    if not isinstance(caller, Caller):
        caller = current_caller()
    if caller.transport in HOP_TRANSPORTS:
        return caller  # a local tool's hop: it named its own client already (`engram mcp`)
    try:
        params = ctx.session.client_params
    except (AttributeError, ValueError):
        params = None
    info = getattr(params, "client_info", None)
    return caller.with_client(getattr(info, "name", None))


class CallerMiddleware:
    """MCP server middleware: every message is handled as its caller (core/context.py)."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        with acting_as(caller_of(ctx)):
            return await call_next(ctx)
