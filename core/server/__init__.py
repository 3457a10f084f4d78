"""Serving banks over HTTP (a Hindsight-compatible API plus Engram's own) and MCP.

The process that owns a bank serves it: `engram serve` (headless) or the
studio. `ServedBanks` holds the banks and the one lock per bank that
serialises writes; `create_app` builds the FastAPI app over it;
`start_server` runs it with uvicorn in a daemon thread.
"""

from core.server.app import create_app
from core.server.running import ServerHandle, start_server
from core.server.served import ServedBanks
from core.server.token import api_token

__all__ = ["ServedBanks", "ServerHandle", "api_token", "create_app", "start_server"]
