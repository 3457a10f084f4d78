"""Half-open connections cannot wedge the server (issue 27, item 2).

`engram serve` in a process allowed 1,024 descriptors; 1,100 connections each
send part of a request head and stop. Before the fix the descriptors ran out,
asyncio's accept loop died on the error and the server, alive and holding its
banks' locks, never answered again. Now the connections past the cap get a
503 and are closed, the half-open ones are closed after the head timeout, and
the server answers (and writes) again, whether the clients close them or not.
"""

from __future__ import annotations

import os
import resource
import socket
import time

import httpx
import pytest

from core import Engine
from tests.support.children import Child, engram_serve_limited

TOKEN = "transport-test-token-0123456789"
HALF_OPEN = 1100
OPEN_FILES = 1024


def wait_until(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not come true")
        time.sleep(0.1)


def half_open(host: str, port: int) -> socket.socket:
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(b"POST /v1/default/banks/b/memories HTTP/1.1\r\nHost: x\r\n")  # no end of head
    return s


def answered(url: str) -> bool:
    try:
        r = httpx.get(url + "/health", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    except httpx.HTTPError:
        return False
    return r.status_code == 200


def closed_by_server(s: socket.socket) -> bool:
    """The server closed it (after a 503, or silently at the head timeout)."""
    s.setblocking(False)
    try:
        data = s.recv(4096)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return data == b"" or data.startswith(b"HTTP/1.1 503")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_half_open_connections_leave_the_server_answering(tmp_path, embedder):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = HALF_OPEN + 400  # this process's side of the connections
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"this process may open only {hard} files")
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))  # harmless to keep
    home = tmp_path / "home"
    with Engine(home, embedder=embedder) as engine:
        engine.create_bank("b")
    child = Child(
        engram_serve_limited,
        str(home),
        OPEN_FILES,
        "--head-timeout",
        "3",
        env={"ENGRAM_API_TOKEN": TOKEN},
    )
    sockets: list[socket.socket] = []
    try:
        line = child.receive_one(300) or ""
        assert line.startswith("engram: serving"), line
        url = line.rsplit(" at ", 1)[1]
        host, port = url.removeprefix("http://").rsplit(":", 1)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        first = {"items": [{"content": "Before the flood.", "strategy": "verbatim"}]}
        assert httpx.post(url + "/v1/default/banks/b/memories", json=first, headers=headers,
                          timeout=120).status_code == 200  # fmt: skip
        for _ in range(HALF_OPEN):
            sockets.append(half_open(host, int(port)))
        # Never more connections than descriptors allow: the process keeps its own.
        fds = len(os.listdir(f"/proc/{child.pid}/fd"))
        assert fds < OPEN_FILES - 100, fds
        # The server closes every one of them itself, the clients doing nothing.
        wait_until(lambda: all(closed_by_server(s) for s in sockets))
        wait_until(lambda: answered(url))
        later = {"items": [{"content": "After the flood.", "strategy": "verbatim"}]}
        r = httpx.post(url + "/v1/default/banks/b/memories", json=later, headers=headers,
                       timeout=120)  # fmt: skip
        assert r.status_code == 200, r.text
        # And once more, the clients closing theirs.
        for s in sockets:
            s.close()
        sockets = [half_open(host, int(port)) for _ in range(HALF_OPEN)]
        for s in sockets:
            s.close()
        wait_until(lambda: answered(url))
    finally:
        for s in sockets:
            s.close()
        child.kill()
    with Engine(home, embedder=embedder) as engine:
        texts = {u.text for u in engine.open_bank("b").units(limit=None)}
    assert {"Before the flood.", "After the flood."} <= texts
