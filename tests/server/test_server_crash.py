"""Nothing acknowledged is lost: SIGKILL a serving `engram serve` mid-retain, again
and again; every retain it acknowledged is in the bank afterwards, and `verify`
passes.

The server runs forked from the crash tests' forkserver (tests/support), which
imported the engine, FastAPI and uvicorn once, so a restart costs the model's
weights and the bank's open, not the imports. A client thread retains one
document per request; only a 200 counts as acknowledged. Twelve kills, at
moments spread over a window of several retains (each ~0.05-0.2 s), land in
every stage of one.

The notes differ only in their numbers, so retain's near-duplicate merge
(`retain.duplicate_similarity`, cosine 0.95) would fold about one in eight of
them into a neighbour's unit (its document and turn stored, no unit of its own).
The bank turns that merge off, so every acknowledged note must have a unit of
its own, with its exact text (verbatim mode keeps a speakerless turn as it is).
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from core import Engine
from tests.support.children import Child, engram_serve, kill_moments

KILLS = 12
TOKEN = "crash-test-token-0123456789"


def text_of(n: int) -> str:
    return f"Crash note {n}: the kettle in room {n % 97} was descaled on day {n}."


def retain_until_gone(url: str, first: int, acknowledged: list[int], stop: threading.Event):
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        n = first
        while not stop.is_set():
            item = {"content": text_of(n), "document_id": f"note-{n}", "strategy": "verbatim"}
            try:
                r = http.post(
                    "/v1/default/banks/crash/memories", json={"items": [item]}, timeout=60
                )
            except httpx.HTTPError:
                return  # the server is gone: this retain was not acknowledged
            if r.status_code == 200:
                acknowledged.append(n)
            n += 1


def serve_until_killed(home, first: int, moment: float, acknowledged: list[int]) -> int:
    """Start `engram serve`, retain until `moment` s after the first acknowledgement,
    SIGKILL it; the next number."""
    child = Child(engram_serve, str(home), env={"ENGRAM_API_TOKEN": TOKEN})
    stop = threading.Event()
    try:
        line = child.receive_one(300) or ""
        assert line.startswith("engram: serving"), line
        url = line.rsplit(" at ", 1)[1]
        before = len(acknowledged)
        writer = threading.Thread(target=retain_until_gone, args=(url, first, acknowledged, stop))
        writer.start()
        # Kill once retains are flowing (the first one opens the bank).
        deadline = time.monotonic() + 120
        while len(acknowledged) == before and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(moment)
    finally:
        child.kill()
        stop.set()
    writer.join()
    # A retain in flight at the kill may have committed without an answer: skip its number.
    return max(acknowledged, default=first) + 2


@pytest.mark.slow
@pytest.mark.timeout(1200)  # 236 s measured at a load average of ~20 on 2 cores
def test_sigkill_mid_retain_loses_nothing_acknowledged(tmp_path, embedder):
    home = tmp_path / "home"
    with Engine(home, embedder=embedder) as engine:
        bank = engine.create_bank("crash")
        # No cosine exceeds 1: no note is merged into another's unit.
        bank.set_profile(config={"retain.duplicate_similarity": 1.01})
    acknowledged: list[int] = []
    first = 0
    for moment in kill_moments(KILLS, 0.0, 0.6, seed=20261201):
        first = serve_until_killed(home, first, moment, acknowledged)

    assert len(acknowledged) >= KILLS
    with Engine(home, embedder=embedder) as engine:
        bank = engine.open_bank("crash")
        assert bank.verify().ok
        stored = {d.id for d in bank.documents()}
        missing = [n for n in acknowledged if f"note-{n}" not in stored]
        assert not missing, missing
        for n in acknowledged:
            assert bank.turns(f"note-{n}")[0].text == text_of(n)
        assert bank.config["retain.duplicate_similarity"] > 1
        texts = {u.text for u in bank.units(limit=None)}
        without_unit = [n for n in acknowledged if text_of(n) not in texts]
        assert not without_unit, without_unit
