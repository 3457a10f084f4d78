"""Child processes for crash tests, forked from a server that imported the engine once.

A crash test kills a child dozens of times. Started as a fresh interpreter,
each child pays the engine's cold import (several seconds: lancedb, duckdb)
before doing anything; forked from a forkserver that preloaded them, it starts
in milliseconds, and the kill lands in the work, not in the imports. The
forkserver itself is a clean single-threaded process, so forking it is safe
where forking the test process (with its thread pools) would not be.

A child reports through a pipe, one short message per event: such writes are
atomic, so a SIGKILL never leaves half a message, and only what was sent
before the kill is read as reported.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import time
from collections.abc import Callable
from typing import Any

# core is a lazy face and Engine loads the stores on first open: preload them by name.
PRELOAD = [
    "numpy",
    "duckdb",
    "lancedb",
    "tantivy",
    "core",
    "core.engine",
    "core.bank",
    "core.store.bank_store",
    "tests.support.children",
    # What a write reaches for on first use (curation's bookkeeping, entity matching).
    "core.curate",
    "core.retain.entities",
    "numpy.random",
    # The snapshot crash test's children import a snapshot with the hash embedder.
    "core.snapshot.importer",
    "tests.support.embedders",
    # The server crash test's children serve HTTP and embed (tests/server). The
    # packages above are lazy faces: name the modules `engram serve` and its first
    # retain import (FastAPI, uvicorn, MCP: ~650 modules, seconds a child when cold).
    "onnxruntime",
    "tokenizers",
    "core.providers.embedder",
    "core.cli",
    "core.cli.serve",
    "core.server.app",
    "core.server.running",
    "core.server.served",
    "core.server.retain",
    "core.server.mcp_tools",
    "core.retain.pipeline",
    "core.retain.rules",
    "core.retain.gazetteer",
    "core.recall",
    "uvicorn.loops.asyncio",
    "uvicorn.lifespan.on",
    "anyio._backends._asyncio",
]

_context: Any = None


def kill_moments(count: int, low: float, high: float, seed: int) -> list[float]:
    """`count` delays in [low, high), one drawn in each equal slice, in a shuffled order.

    A crash loop kills a child that repeats one write; where in that write a kill
    lands is what matters. Stratified moments spread a few kills over the window
    as evenly as many random ones would, and a writer's cycle is shorter than the
    window, so every phase of it is hit without dozens of restarts."""
    rng = random.Random(seed)
    width = (high - low) / count
    moments = [low + (i + rng.random()) * width for i in range(count)]
    rng.shuffle(moments)
    return moments


def _forkserver() -> Any:
    global _context
    if _context is None:
        _context = mp.get_context("forkserver")
        _context.set_forkserver_preload(PRELOAD)
    return _context


def _enter(target: Callable[..., None], report: Any, env: dict[str, str], args: tuple) -> None:
    os.environ.update(env)
    target(lambda message: report.send_bytes(str(message).encode()), *args)


class Child:
    """`target(report, *args)` running in a child process; `report(x)` sends x to the test."""

    def __init__(self, target: Callable[..., None], *args: Any, env: dict[str, str] | None = None):
        context = _forkserver()
        self._inbox, report = context.Pipe(duplex=False)
        self.process = context.Process(target=_enter, args=(target, report, env or {}, args))
        self.process.start()
        report.close()  # the child holds the only writing end: EOF means it is gone

    @property
    def pid(self) -> int:
        return self.process.pid

    def receive(self, timeout: float) -> list[str]:
        """Every message sent within `timeout` seconds (fewer if the child exits)."""
        messages: list[str] = []
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not self._inbox.poll(left):
                break
            try:
                messages.append(self._inbox.recv_bytes().decode())
            except EOFError:
                break
        return messages

    def wait_for(self, expected: str, timeout: float = 120) -> None:
        got = self.receive_one(timeout)
        if got != expected:
            raise AssertionError(f"child said {got!r}, expected {expected!r}")

    def receive_one(self, timeout: float) -> str | None:
        if self._inbox.poll(timeout):
            try:
                return self._inbox.recv_bytes().decode()
            except EOFError:
                return None
        return None

    def kill(self) -> list[str]:
        """SIGKILL the child; return what it had sent and not yet been read."""
        if self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.join()
        left = []
        while self._inbox.poll():
            try:
                left.append(self._inbox.recv_bytes().decode())
            except EOFError:
                break
        self._inbox.close()
        return left

    def join(self, timeout: float = 120) -> int | None:
        self.process.join(timeout)
        return self.process.exitcode


# -- the children the crash tests run ------------------------------------------


def store_writer(
    report: Callable[[object], None], home: str, start: int, batch: int, dim: int
) -> None:
    """Add batches of units for ever; report each batch's number once add_units returned."""
    import numpy as np

    from core import Engine, NewUnit

    engine = Engine(home)  # default embedding spec; vectors are given, no model loads
    bank = engine.open_bank("crash")
    report("ready")
    number = start
    while True:
        rng = np.random.default_rng(number)
        vectors = rng.standard_normal((batch, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        bank.add_units(
            [
                NewUnit(f"batch{number}marker unit {i} of a crash test", vector=tuple(vectors[i]))
                for i in range(batch)
            ]
        )
        report(number)
        number += 1


def snapshot_importer(
    report: Callable[[object], None],
    home: str,
    path: str,
    name: str,
    replace: bool,
    fault: str | None = None,
) -> None:
    """Import a snapshot; at the step named `fault` the import SIGKILLs itself."""
    from core import Engine
    from core.snapshot import importer
    from tests.support.embedders import HashEmbedder

    def kill_at(point: str) -> None:
        if point == fault:
            os.kill(os.getpid(), signal.SIGKILL)

    importer.on_step = kill_at

    with Engine(home, embedder=HashEmbedder()) as engine:
        engine.import_snapshot(path, name=name, replace=replace)
    report("done")


def engram_serve(report: Callable[[object], None], home: str, *options: str) -> None:
    """`engram serve --port 0 [options]` itself; each line it prints is reported."""
    import io
    import sys

    from core.cli import main

    class Lines(io.TextIOBase):
        def write(self, text: str) -> int:
            for line in text.splitlines():
                if line.strip():
                    report(line)
            return len(text)

    sys.stdout = Lines()
    main(["--home", home, "serve", "--port", "0", *options])


def engram_serve_limited(
    report: Callable[[object], None], home: str, open_files: int, *options: str
) -> None:
    """`engram serve` in a process allowed `open_files` descriptors (soft and hard)."""
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
    engram_serve(report, home, *options)
