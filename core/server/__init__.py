"""Serving banks over HTTP (a Hindsight-compatible API plus Engram's own) and MCP.

The process that owns a bank serves it: `engram serve` (headless) or the
studio. `ServedBanks` holds the banks and the one lock per bank that
serialises writes; `create_app` builds the FastAPI app over it;
`start_server` runs it with uvicorn in a daemon thread.
"""

from core.lazy import lazy_exports

__all__ = [
    "ServedBanks",
    "ServerHandle",
    "TokenRing",
    "api_token",
    "create_app",
    "start_server",
]

# Loaded on first use: a routed `engram` command imports core.server.client,
# which must not pull in FastAPI and the engine with this package.
_NAMES = {
    "ServedBanks": "core.server.served",
    "ServerHandle": "core.server.running",
    "api_token": "core.server.token",
    "create_app": "core.server.app",
    "start_server": "core.server.running",
    "TokenRing": "core.server.token",
}


__getattr__, __dir__ = lazy_exports("core.server", _NAMES, globals())
