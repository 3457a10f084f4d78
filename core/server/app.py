"""The FastAPI app: Hindsight's paths under `/v1/default/...`, Engram's own under
`/engram/v1/...`, MCP (streamable HTTP) at `/mcp` and `/mcp/{bank}/`; the same bearer
tokens for all (the default one and the named ones: core/server/token.py).

Route handlers are plain `def`s: FastAPI runs them in its thread pool, so an
engine call never blocks the event loop. Writes take the bank's lock from
`ServedBanks`; reads do not (see served.py). A request is admitted to its
bank's queue before it reaches a thread (admission.py): waiting for a lock
holds no worker, and past a queue's bound the answer is a 503.
"""

from __future__ import annotations

import threading

import duckdb
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from core import limits
from core.server import (
    routes_activity,
    routes_cli,
    routes_engram,
    routes_hindsight,
    routes_hindsight_more,
)
from core.server.admission import Admission, AdmissionMiddleware
from core.server.api_docs import PublicDocs
from core.server.calls import Downloads, LongCalls
from core.server.errors import brief, brief_detail, disk_error, engram_error, http_error
from core.server.guard import READ_TIMEOUT, REQUEST_TIMEOUT, Guard
from core.server.operations import Operations
from core.server.served import ServedBanks
from core.server.token import TokenRing
from core.types import EngramError

API_TITLE = "Engram Studio memory API"
MAX_BODY = limits.BODY_BYTES
MAX_SNAPSHOT = limits.SNAPSHOT_BYTES


def create_app(
    served: ServedBanks,
    token: str | TokenRing,
    *,
    max_body_bytes: int = MAX_BODY,
    max_snapshot_bytes: int = MAX_SNAPSHOT,
    mcp: bool = True,
    queues: dict[str, int] | None = None,
    read_timeout: float = READ_TIMEOUT,
    request_timeout: float = REQUEST_TIMEOUT,
) -> FastAPI:
    """The app over `served`. `queues` sets the per-bank bounds (admission.py:
    writes_waiting, reads, reads_waiting); the timeouts are guard.py's."""
    from core.server.version import ENGRAM_VERSION

    operations = Operations(served)
    admission = Admission(served.lock_of, **(queues or {}))
    calls, downloads = LongCalls(), Downloads()
    mcp_app = None
    if mcp:
        from core.server.mcp_tools import streamable_http_app

        mcp_app, mcp_session = streamable_http_app(served, operations, admission)

    async def lifespan(_app):
        operations.start()  # finish what a previous server left queued
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
    app.state.admission = admission
    app.state.calls = calls
    app.state.downloads = downloads
    app.add_exception_handler(EngramError, engram_error)
    for failure in (OSError, duckdb.Error):
        app.add_exception_handler(failure, disk_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    routers = [
        routes_engram.router,
        routes_activity.router,
        routes_cli.router,  # what RemoteBank and routed commands call
        routes_hindsight.router,
        routes_hindsight_more.router,
        routes_hindsight_more.unsupported,  # last: a 501 for the rest
    ]
    for router in routers:
        app.include_router(router)
    if mcp_app is not None:
        # Mounted at the root, after every route: it answers `/mcp` only.
        app.mount("/", mcp_app)
    app.openapi = lambda: _openapi(app)
    # Inside the guard (added first): only a request with the token is queued.
    app.add_middleware(
        AdmissionMiddleware,
        routes=[route for router in routers for route in router.routes],
        admission=admission,
        call_writes=routes_cli.writes,
    )
    app.add_middleware(
        Guard,
        tokens=token if isinstance(token, TokenRing) else TokenRing(token),
        max_body_bytes=max_body_bytes,
        limits={routes_engram.SNAPSHOT_IMPORT_SUFFIX: max_snapshot_bytes},
        read_timeout=read_timeout,
        request_timeout=request_timeout,
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
    detail = [
        {"loc": brief_detail(list(e["loc"])), "msg": brief(e["msg"]), "type": e["type"]}
        for e in error.errors()
    ]
    return JSONResponse({"detail": detail}, status_code=422)
