"""Reads run while writes commit: recall and listings take no bank lock (each read
has its own DuckDB cursor; the indexes change under the store's write lock).
Under concurrent retains and recalls, every request succeeds, every
acknowledged retain is there afterwards, and the three stores agree."""

from __future__ import annotations

import random
import threading

import pytest

WRITERS = 4
PER_WRITER = 8
READERS = 2
WORDS = (
    "lighthouse harbour violin glacier orchard tram ledger comet falcon quarry saffron "
    "tundra anvil meadow lantern walrus pepper canyon marble cobalt"
).split()


def distinct_fact(n: int, i: int) -> str:
    """Facts far enough apart that retain does not merge them as near-duplicates."""
    rng = random.Random(n * 1000 + i)
    return f"Fact {n}-{i}: the " + " and the ".join(rng.sample(WORDS, 4)) + "."


@pytest.mark.slow
def test_recall_while_retaining(served, bank_id):
    with served.client() as http:
        http.put(f"/v1/default/banks/{bank_id}", json={}).raise_for_status()
        http.post(
            f"/v1/default/banks/{bank_id}/memories",
            json={"items": [{"content": "The warm-up fact.", "strategy": "verbatim"}]},
        ).raise_for_status()
    errors: list[str] = []
    acknowledged: list[str] = []
    recalls = 0
    writing = threading.Event()
    writing.set()
    # Readers read once per answered write rather than spinning: with four
    # writers a write is always in flight, so every read still overlaps a commit,
    # and spinning readers only starved the writers (21 s CPU for the same check).
    answered = threading.Condition()
    writes_answered = 0

    def write(n: int) -> None:
        nonlocal writes_answered
        with served.client() as http:
            for i in range(PER_WRITER):
                text = distinct_fact(n, i)
                r = http.post(
                    f"/v1/default/banks/{bank_id}/memories",
                    json={"items": [{"content": text, "strategy": "verbatim"}]},
                )
                if r.status_code == 200:
                    acknowledged.append(text)
                else:
                    errors.append(r.text)
                with answered:
                    writes_answered += 1
                    answered.notify_all()

    def read() -> None:
        nonlocal recalls
        seen = 0
        with served.client() as http:
            while writing.is_set():
                with answered:
                    answered.wait_for(
                        lambda last=seen: writes_answered > last or not writing.is_set()
                    )
                    seen = writes_answered
                r = http.post(
                    f"/v1/default/banks/{bank_id}/memories/recall",
                    json={"query": "lighthouse fact", "max_tokens": 300},
                )
                listed = http.get(f"/v1/default/banks/{bank_id}/memories/list")
                for answer in (r, listed):
                    if answer.status_code != 200:
                        errors.append(answer.text)
                recalls += 1

    writers = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    readers = [threading.Thread(target=read) for _ in range(READERS)]
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join()
    with answered:
        writing.clear()
        answered.notify_all()
    for t in readers:
        t.join()

    assert not errors, errors[:3]
    assert len(acknowledged) == WRITERS * PER_WRITER and recalls > 0
    bank = served.banks.get(bank_id)
    stored = {u.text for u in bank.units(limit=None)}
    assert set(acknowledged) <= stored
    assert bank.verify().ok


@pytest.mark.slow
def test_a_note_without_a_speaker_is_kept_as_written(served, http, bank_id):
    """Verbatim retain of a speakerless item: no ': ' prefix, no nameless entity
    (both happened before the fix in core/retain/facts.py)."""
    http.put(f"/v1/default/banks/{bank_id}", json={}).raise_for_status()
    http.post(
        f"/v1/default/banks/{bank_id}/memories",
        json={"items": [{"content": "Deploys happen on Tuesdays.", "strategy": "verbatim"}]},
    ).raise_for_status()
    bank = served.banks.get(bank_id)
    assert [u.text for u in bank.units(limit=None)] == ["Deploys happen on Tuesdays."]
    assert all(e.name.strip() for e in bank.entities())
