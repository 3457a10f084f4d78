"""Crash consistency: SIGKILL a writer at random moments; nothing reported is lost.

A child process (forked from a server that imported the engine once, so each
start is cheap) adds batches of units in a loop and reports the number of each
batch once `add_units` has returned. The test kills it 12 times, at moments
spread over a window several batches long (so over every stage of a write:
DuckDB commit, vector and BM25 sync, queue drain), then reopens the bank:
`verify` must pass, and every reported batch must be there and found by both
vector and BM25 search.
"""

from __future__ import annotations

import numpy as np
import pytest

from core import Engine
from tests.support.children import Child, kill_moments, store_writer

KILLS = 12  # one per equal slice of the window, as the server crash test
# A 20-unit batch takes ~0.05-0.2 s: the window spans several.
WINDOW = (0.05, 0.65)
BATCH = 20
DIM = 384


def run_until_killed(home, start: int, moment: float) -> list[int]:
    """Start a writer, kill it `moment` seconds after its first reported batch (so a
    busy machine, where a batch takes longer than the window, still kills it
    mid-write rather than before it wrote anything); return reported batches."""
    child = Child(store_writer, str(home), start, BATCH, DIM)
    reported: list[str] = []
    try:
        child.wait_for("ready")
        first = child.receive_one(120)
        reported += [first] if first is not None else []
        reported += child.receive(moment)
    finally:
        reported += child.kill()
    return [int(number) for number in reported]


def batch_vectors(batch: int) -> np.ndarray:
    rng = np.random.default_rng(batch)
    vectors = rng.standard_normal((BATCH, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_nothing_reported(tmp_path, embedder):
    home = tmp_path / "home"
    with Engine(home, embedder=embedder) as engine:
        engine.create_bank("crash").close()

    reported: list[int] = []
    next_batch = 0
    for moment in kill_moments(KILLS, *WINDOW, seed=20261129):
        new = run_until_killed(home, next_batch, moment)
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

    # The writer made progress between kills (most of them; a loaded machine is slow to start).
    assert len(reported) >= KILLS  # one at least before each kill
    with Engine(home, embedder=embedder) as engine:
        bank = engine.open_bank("crash")
        texts = {u.text for u in bank.units(limit=None)}
        for batch in reported:
            assert f"batch{batch}marker unit 0 of a crash test" in texts


def check_batch_is_searchable(bank, batch: int) -> None:
    marker = f"batch{batch}marker"
    hits = [h.id for h in bank.store.lexical.search(marker, BATCH * 2)]
    lexical = {u.text for u in bank.units(ids=hits, limit=None)}
    assert {t for t in lexical if t.startswith(marker + " ")} == {
        f"{marker} unit {i} of a crash test" for i in range(BATCH)
    }
    vectors = batch_vectors(batch)
    for i in (0, BATCH - 1):
        hit = bank.store.vectors.search(vectors[i], 1)[0]
        assert bank.unit(hit.id).text == f"{marker} unit {i} of a crash test"
