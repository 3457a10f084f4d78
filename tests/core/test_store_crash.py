"""Crash consistency: SIGKILL a writer at random moments; nothing reported is lost.

A child process adds batches of units in a loop and prints the number of each
batch once `add_units` has returned. The test kills it at random moments (at
least 30 times), then reopens the bank: `verify` must pass, and every reported
batch must be there and found by both vector and BM25 search.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from core import Engine

KILLS = 30
BATCH = 20
DIM = 384

WRITER = (
    textwrap.dedent(
        """
    import sys
    import numpy as np
    from core import Engine, NewUnit

    home, start = sys.argv[1], int(sys.argv[2])
    engine = Engine(home)  # default embedding spec; vectors are given, no model loads
    bank = engine.open_bank("crash")
    print("ready", flush=True)
    batch = start
    while True:
        rng = np.random.default_rng(batch)
        vectors = rng.standard_normal((BATCH, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        bank.add_units([
            NewUnit(f"batch{batch}marker unit {i} of a crash test", vector=tuple(vectors[i]))
            for i in range(BATCH)
        ])
        print(batch, flush=True)
        batch += 1
    """
    )
    .replace("BATCH", str(BATCH))
    .replace("DIM", str(DIM))
)


def batch_vectors(batch: int) -> np.ndarray:
    rng = np.random.default_rng(batch)
    vectors = rng.standard_normal((BATCH, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def run_until_killed(home, start: int, rng: random.Random) -> list[int]:
    """Start a writer, kill it at a random moment after it is ready; return reported batches."""
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home), str(start)],
        stdout=subprocess.PIPE,
        text=True,
    )
    reported: list[int] = []
    try:
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + rng.uniform(0.05, 1.5)
        fd = child.stdout.fileno()
        os.set_blocking(fd, False)
        buffer = ""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if ready:
                buffer += os.read(fd, 4096).decode()
        child.send_signal(signal.SIGKILL)
        child.wait()
        buffer += child.stdout.read() or ""
        # Only whole lines were reported: a cut-off last line was not.
        lines = buffer.split("\n")
        reported = [int(line) for line in lines[:-1] if line.strip()]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return reported


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_nothing_reported(tmp_path, embedder):
    home = tmp_path / "home"
    with Engine(home, embedder=embedder) as engine:
        engine.create_bank("crash").close()

    rng = random.Random(20261129)
    reported: list[int] = []
    next_batch = 0
    for _ in range(KILLS):
        new = run_until_killed(home, next_batch, rng)
        reported += new
        # The killed writer may have committed one more batch than it reported.
        next_batch = (max(reported) if reported else next_batch - 1) + 2
        with Engine(home, embedder=embedder) as engine:
            bank = engine.open_bank("crash")
            report = bank.verify()
            assert report.ok, report
            for batch in new:
                check_batch_is_searchable(bank, batch)
            bank.close()

    assert len(reported) >= KILLS  # the writer made progress between kills
    with Engine(home, embedder=embedder) as engine:
        bank = engine.open_bank("crash")
        texts = {u.text for u in bank.units(limit=None)}
        for batch in reported:
            assert f"batch{batch}marker unit 0 of a crash test" in texts


def check_batch_is_searchable(bank, batch: int) -> None:
    marker = f"batch{batch}marker"
    lexical = {bank.unit(h.id).text for h in bank.store.lexical.search(marker, BATCH * 2)}
    assert {t for t in lexical if t.startswith(marker + " ")} == {
        f"{marker} unit {i} of a crash test" for i in range(BATCH)
    }
    vectors = batch_vectors(batch)
    for i in (0, BATCH - 1):
        hit = bank.store.vectors.search(vectors[i], 1)[0]
        assert bank.unit(hit.id).text == f"{marker} unit {i} of a crash test"
