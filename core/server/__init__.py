"""Serving banks over HTTP (a Hindsight-compatible API plus Engram's own) and MCP.

The process that owns a bank serves it: `engram serve` (headless) or the
studio. `ServedBanks` holds the banks and the one lock per bank that
serialises writes; `create_app` builds the FastAPI app over it;
`start_server` runs it with uvicorn in a daemon thread.
"""

__all__ = ["ServedBanks", "ServerHandle", "api_token", "create_app", "start_server"]

# Loaded on first use: a routed `engram` command imports core.server.client,
# which must not pull in FastAPI and the engine with this package.
_NAMES = {
    "ServedBanks": "core.server.served",
    "ServerHandle": "core.server.running",
    "api_token": "core.server.token",
    "create_app": "core.server.app",
    "start_server": "core.server.running",
}


def __getattr__(name: str):
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'core.server' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
