"""Running the app: uvicorn in a daemon thread, on a socket bound before it starts.

Binding first means port 0 works (the kernel picks a free port and `url` says
which) and a bind error is raised to the caller instead of inside the thread.
The connections go through transport.py (a head timeout, a connection cap
below the descriptor limit, an event-loop error handler that cannot fail).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import threading
import time
from dataclasses import dataclass, field

import uvicorn

from core.server.app import create_app
from core.server.served import ServedBanks
from core.server.token import ENV
from core.server.transport import (
    HEAD_TIMEOUT,
    MAX_CONNECTIONS,
    connection_cap,
    protocol_class,
    quiet_exception_handler,
)
from core.types import InvalidInputError

START_TIMEOUT = 30.0
BACKLOG = 64


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str) -> None:
    """Refuse to listen beyond loopback unless the token was set on purpose."""
    if not is_loopback(host) and not os.environ.get(ENV, "").strip():
        raise InvalidInputError(
            f"refusing to serve on {host}, which is not a loopback address, without "
            f"{ENV} set: set it to a long random secret (clients send it as a bearer token)"
        )


def bind_socket(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(
        host.strip("[]"), port, type=socket.SOCK_STREAM
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


@dataclass
class ServerHandle:
    url: str
    _server: uvicorn.Server = field(repr=False)
    _thread: threading.Thread = field(repr=False)
    _sock: socket.socket = field(repr=False)

    def stop(self) -> None:
        """Stop accepting, finish the requests in flight, and return."""
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


class _Server(uvicorn.Server):
    async def startup(self, sockets=None) -> None:
        # Before the first accept: an error asyncio reports must never stop its loop.
        asyncio.get_running_loop().set_exception_handler(quiet_exception_handler)
        await super().startup(sockets)


def start_server(
    served: ServedBanks,
    host: str,
    port: int,
    token: str,
    *,
    head_timeout: float = HEAD_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    **app_options,
) -> ServerHandle:
    """Serve `served` on host:port (0 = a free port) until `stop()`; returns once it
    accepts connections. Raises InvalidInputError for a non-loopback host without
    ENGRAM_API_TOKEN, OSError when the address is taken. `max_connections` is
    lowered to fit the descriptor limit (transport.connection_cap)."""
    check_bind(host)
    sock = bind_socket(host, port)
    app = create_app(served, token, **app_options)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        http=protocol_class(head_timeout, connection_cap(max_connections)),
        # Idle kept-alive connections go after this; a stalled head after head_timeout.
        timeout_keep_alive=5,
        # asyncio accepts up to `backlog` connections at each wake-up before any of
        # them reaches the protocol's cap: a burst must fit in the descriptors held back.
        backlog=BACKLOG,
    )
    server = _Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="engram-server", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    return ServerHandle(url_of(sock), server, thread, sock)
