"""Why `engram serve` could not listen: the port is taken (and by whom), or not ours to take.

Without this, the bind's OSError reached the command's disk-failure handler
and read as a bank transaction that stopped.
"""

from __future__ import annotations

import errno

# Windows reports a taken port as WSAEADDRINUSE, which errno names on Windows only.
_IN_USE = {errno.EADDRINUSE, 10048}
_DENIED = {errno.EACCES, 10013}


def bind_failure(error: OSError, host: str, port: int) -> str | None:
    """One line for a failed bind of host:port, or None when `error` is something else."""
    code = getattr(error, "winerror", None) or error.errno
    if code in _IN_USE:
        holder = port_holder(port)
        by = f" by {holder}" if holder else " by another program"
        return (
            f"port {port} on {host} is already taken{by}: stop it, or serve on another "
            "port (--port N; --port 0 picks a free one)"
        )
    if code in _DENIED:
        return (
            f"not allowed to listen on port {port} on {host} (ports below 1024 need "
            "administrator rights): serve on another port (--port N)"
        )
    return None


def port_holder(port: int) -> str | None:
    """The process listening on `port` ("engram serve (pid 123)"), when the system
    lets us see it (other users' sockets are hidden on macOS without root)."""
    import psutil

    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return None
    for connection in connections:
        listening = connection.status == psutil.CONN_LISTEN
        if listening and connection.laddr and connection.laddr.port == port and connection.pid:
            return describe_process(connection.pid)
    return None


def describe_process(pid: int) -> str:
    import psutil

    try:
        process = psutil.Process(pid)
        words = process.cmdline() or [process.name()]
    except (psutil.Error, OSError):
        return f"process {pid}"
    name = " ".join(_short(w) for w in words[:3])
    return f"{name} (pid {pid})"


def _short(word: str) -> str:
    """A command word without its folder (`/usr/bin/python3` -> `python3`)."""
    from pathlib import PurePath

    return PurePath(word).name if ("/" in word or "\\" in word) else word
