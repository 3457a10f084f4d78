"""The FastAPI app: Hindsight's paths under `/v1/default/...`, Engram's own under
`/engram/v1/...`, MCP (streamable HTTP) at `/mcp` and `/mcp/{bank}/`; the same bearer
tokens for all (the default one and the named ones: core/server/token.py).

Route handlers are plain `def`s: FastAPI runs them in its thread pool, so an
engine call never blocks the event loop. Writes take the bank's lock from
`ServedBanks`; reads do not (see served.py).
"""

from __future__ import annotations

import threading

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from core.server import (
    routes_activity,
    routes_cli,
    routes_engram,
    routes_hindsight,
    routes_hindsight_more,
)
from core.server.api_docs import PublicDocs
from core.server.calls import Downloads, LongCalls
from core.server.errors import engram_error, http_error
from core.server.guard import Guard
from core.server.operations import Operations
from core.server.served import ServedBanks
from core.server.token import TokenRing
from core.types import EngramError

API_TITLE = "Engram Studio memory API"
MAX_BODY = 8 * 2**20
MAX_SNAPSHOT = 4 * 2**30


def create_app(
    served: ServedBanks,
    token: str | TokenRing,
    *,
    max_body_bytes: int = MAX_BODY,
    max_snapshot_bytes: int = MAX_SNAPSHOT,
    mcp: bool = True,
) -> FastAPI:
    from core.server.version import ENGRAM_VERSION

    operations = Operations(served)
    calls, downloads = LongCalls(), Downloads()
    mcp_app = None
    if mcp:
        from core.server.mcp_tools import streamable_http_app

        mcp_app, mcp_session = streamable_http_app(served, operations)

    async def lifespan(_app):
        if mcp_app is None:
            yield
        else:
            async with mcp_session():
                yield
        calls.cancel_all()
        operations.shutdown()
        downloads.close()

    app = FastAPI(
        title=API_TITLE,
        version=ENGRAM_VERSION,
        description="Hindsight-compatible memory API over Engram banks, plus Engram's "
        "own extensions under /engram/v1. Every request carries "
        "`Authorization: Bearer <token>`.",
        lifespan=lifespan,
        # Swagger and ReDoc load their code from a CDN: core/server/api_docs.py serves
        # /docs offline instead.
        docs_url=None,
        redoc_url=None,
    )
    app.state.served = served
    app.state.operations = operations
    # Set as the server stops: long-lived responses (the activity stream) end then.
    app.state.stopping = threading.Event()
    app.state.calls = calls
    app.state.downloads = downloads
    app.add_exception_handler(EngramError, engram_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.include_router(routes_engram.router)
    app.include_router(routes_activity.router)
    app.include_router(routes_cli.router)  # what RemoteBank and routed commands call
    app.include_router(routes_hindsight.router)
    app.include_router(routes_hindsight_more.router)
    app.include_router(routes_hindsight_more.unsupported)  # last: a 501 for the rest
    if mcp_app is not None:
        # Mounted at the root, after every route: it answers `/mcp` only.
        app.mount("/", mcp_app)
    app.openapi = lambda: _openapi(app)
    app.add_middleware(
        Guard,
        tokens=token if isinstance(token, TokenRing) else TokenRing(token),
        max_body_bytes=max_body_bytes,
        limits={routes_engram.SNAPSHOT_IMPORT_SUFFIX: max_snapshot_bytes},
    )
    # Outside the token check: the docs to a browser on this machine (no bank data).
    app.add_middleware(PublicDocs, openapi=app.openapi)
    return app


def _openapi(app: FastAPI) -> dict:
    """FastAPI's document, saying that every operation needs the bearer token."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        schema.setdefault("components", {})["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer"}
        }
        schema["security"] = [{"bearer": []}]
        app.openapi_schema = schema
    return app.openapi_schema


async def _validation_error(_request, error: RequestValidationError) -> JSONResponse:
    # FastAPI's own shape (loc names the field), without echoing the input back.
    detail = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in error.errors()]
    return JSONResponse({"detail": detail}, status_code=422)
