"""Running the app: uvicorn in a daemon thread, on a socket bound before it starts.

Binding first means port 0 works (the kernel picks a free port and `url` says
which) and a bind error is raised to the caller instead of inside the thread.
The connections go through transport.py (a head timeout, a connection cap
below the descriptor limit, an event-loop error handler that cannot fail).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from dataclasses import dataclass, field

import uvicorn

from core.server.app import create_app
from core.server.owner import is_loopback
from core.server.served import ServedBanks
from core.server.token import ENV, TokenRing
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
    _stopping: threading.Event = field(default_factory=threading.Event, repr=False)
    _served: ServedBanks | None = field(default=None, repr=False)

    def stop(self) -> None:
        """Stop accepting, finish the requests in flight, and return. The change
        streams clients follow end at once (they would never finish by themselves)."""
        self._stopping.set()
        if self._served is not None:
            self._served.wake_followers()
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def url_of(sock: socket.socket, scheme: str = "http") -> str:
    host, port = sock.getsockname()[:2]
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


@dataclass(frozen=True)
class Certificate:
    """TLS for the server: uvicorn's own certificate and key files (PEM)."""

    certfile: str
    keyfile: str | None = None  # None: the key is in the certificate file

    def check(self) -> None:
        """Refuse files that are not a usable certificate and key, before serving."""
        import ssl

        for what, path in (("certificate", self.certfile), ("key", self.keyfile)):
            if path is not None and not os.path.isfile(path):
                raise InvalidInputError(f"the TLS {what} file {path} does not exist")
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
                self.certfile, self.keyfile
            )
        except (ssl.SSLError, OSError) as error:
            raise InvalidInputError(
                f"the TLS certificate {self.certfile} and key {self.keyfile or '(in it)'}"
                f" cannot be used: {error}"
            ) from None


class _Server(uvicorn.Server):
    async def startup(self, sockets=None) -> None:
        # Before the first accept: an error asyncio reports must never stop its loop.
        asyncio.get_running_loop().set_exception_handler(quiet_exception_handler)
        await super().startup(sockets)


def start_server(
    served: ServedBanks,
    host: str,
    port: int,
    token: str | TokenRing,
    *,
    certificate: Certificate | None = None,
    head_timeout: float = HEAD_TIMEOUT,
    max_connections: int = MAX_CONNECTIONS,
    **app_options,
) -> ServerHandle:
    """Serve `served` on host:port (0 = a free port) until `stop()`; returns once it
    accepts connections; over TLS with `certificate`. Raises InvalidInputError for
    a non-loopback host without ENGRAM_API_TOKEN (TLS or not: encryption is not
    authentication) or an unusable certificate, OSError when the address is taken.
    `token`: the one token accepted, or a `TokenRing` (the data folder's default and
    named tokens). `max_connections` is lowered to fit the descriptor limit
    (transport.connection_cap)."""
    check_bind(host)
    if certificate is not None:
        certificate.check()
    sock = bind_socket(host, port)
    app = create_app(served, token, **app_options)
    stopping = app.state.stopping  # read by the change and activity streams
    tls = (
        {"ssl_certfile": certificate.certfile, "ssl_keyfile": certificate.keyfile}
        if certificate is not None
        else {}
    )
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
        **tls,
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
    return ServerHandle(
        url_of(sock, "https" if certificate else "http"), server, thread, sock, stopping, served
    )
