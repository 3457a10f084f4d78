"""`engram serve`: serve the data folder's banks over HTTP (and MCP at /mcp);
`engram mcp BANK`: one bank over MCP on stdin/stdout, for desktop agents,
bridged to the bank's owner when another process has it open.

`engram serve` owns what it serves: a bank is opened on the first request
naming it and stays open (its lock held) until the server stops. It also runs
the observation rebuilds a request's change queued, in the background
(core/server/rebuilds.py), as the studio does.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from core import Engine

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8888  # Hindsight's port, so a Hindsight agent's default URL works


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve the banks over HTTP (Hindsight-compatible API, Engram's API, MCP)",
        description="Serve every bank in the data folder until stopped (Ctrl-C or SIGTERM). "
        "Requests need 'Authorization: Bearer <token>': the token is ENGRAM_API_TOKEN, "
        "else the one in <home>/api-token, or a named one (engram tokens add NAME).",
    )
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address (default {DEFAULT_HOST})")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port; 0 picks a free one")
    serve.add_argument(
        "--request-timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="the longest a request may run; longer work stops between chunks and is"
        ' answered 504 (default 900; long retains can go "async": true)',
    )
    serve.add_argument(
        "--head-timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds a client has to send a request's head before its connection is"
        " closed (default 10)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="open connections at most; past it a connection is answered 503"
        " (default 1000, lowered to fit the open-file limit)",
    )
    serve.add_argument(
        "--certfile",
        help="serve over HTTPS with this PEM certificate (clients verify it: give them its CA)",
    )
    serve.add_argument("--keyfile", help="the certificate's PEM private key (if not in --certfile)")
    serve.set_defaults(handler=run_serve)

    mcp = sub.add_parser(
        "mcp",
        help="serve one bank over MCP on stdin/stdout (for Claude Desktop, Claude Code, Cursor)",
        description="Serve BANK's memory tools over MCP on stdin/stdout. While the studio or "
        "`engram serve` has the bank open, each call goes through it; otherwise the bank is "
        "opened for the calls and closed again when they stop, so the studio can open it.",
    )
    mcp.add_argument("bank")
    mcp.set_defaults(handler=run_mcp)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 10**6:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}")
    return value


def run_serve(args, engine: Engine) -> int:
    from core.server import ServedBanks, TokenRing, start_server
    from core.server.running import Certificate, check_bind
    from core.server.token import ENV, token_file

    check_bind(args.host)  # before loading anything
    if args.keyfile and not args.certfile:
        print("engram: --keyfile needs --certfile", file=sys.stderr)
        return 2
    certificate = Certificate(args.certfile, args.keyfile) if args.certfile else None
    if certificate is not None:
        certificate.check()
    tokens = TokenRing.for_home(engine.home)
    engine.embedder  # noqa: B018 — loaded once now, so the first request is not the slow one
    served = ServedBanks(engine, open_on_demand=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    options = {
        "request_timeout": args.request_timeout,
        "head_timeout": args.head_timeout,
        "max_connections": args.max_connections,
    }
    try:
        handle = start_server(
            served,
            args.host,
            args.port,
            tokens,
            certificate=certificate,
            **{k: v for k, v in options.items() if v is not None},
        )
    except OSError as error:
        from core.cli.ports import bind_failure

        served.close()
        reason = bind_failure(error, args.host, args.port)
        if reason is None:
            raise
        print(f"engram: {reason}", file=sys.stderr)
        return 1
    from_env = bool(os.environ.get(ENV, "").strip())
    where = f"${ENV}" if from_env else str(token_file(engine.home))
    # Each bank's lock names this address: `engram` commands on it are routed here.
    served.advertise(
        handle.url,
        None if from_env else str(token_file(engine.home)),
        str(Path(certificate.certfile).resolve()) if certificate is not None else None,
    )
    print(f"engram: serving {engine.banks_dir} at {handle.url}", flush=True)
    print(f"engram: bearer token in {where}; MCP at {handle.url}/mcp", flush=True)
    try:
        stop.wait()
    finally:
        handle.stop()
        served.close()
    print("engram: stopped", file=sys.stderr)
    return 0


def run_mcp(args, engine: Engine) -> int:
    """One bank over MCP on stdio. Each call goes to the process that has the bank
    open (the studio, `engram serve`), or opens it for as long as calls come
    (core/server/mcp_stdio.py): it never holds the bank while the agent is idle."""
    from core.context import MCP_STDIO, Caller, set_process_caller
    from core.server.mcp_stdio import run_stdio

    # Over stdio no token says who it is: "mcp", and the client's name from the MCP
    # handshake (core/server/mcp_caller.py); bridged, the owner is told so.
    set_process_caller(Caller(getattr(args, "actor", None) or "mcp", MCP_STDIO))

    # The embedding model loads on the first call this process answers itself:
    # bridged to an owner, it is never needed here.
    run_stdio(engine, args.bank)
    return 0
