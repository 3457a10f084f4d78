"""Recalls made by agents and the studio count; inspection runs do not."""

from __future__ import annotations

import contextlib
import threading
from datetime import datetime

import pytest

from core.cli import main
from core.store.access import AccessCounts
from tests.support.reflection import add, unit


def _counts(bank, ids):
    return {i: bank.unit(i).access_count for i in ids}


def test_a_recall_counts_each_unit_it_returns_and_when(bank):
    ids = add(
        bank,
        unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)),
        unit("Bob repaired his bicycle chain.", when=datetime(2024, 5, 2)),
    )
    before = datetime.now()
    result = bank.recall("Where did Alice hike?")
    returned = set(result.unit_ids)
    assert returned
    for unit_id in ids:
        u = bank.unit(unit_id)
        if unit_id in returned:
            assert u.access_count == 1 and u.last_accessed_at >= before.replace(microsecond=0)
        else:
            assert u.access_count == 0 and u.last_accessed_at is None
    bank.recall("Where did Alice hike?")
    assert {bank.unit(i).access_count for i in returned} == {2}


def test_an_inspection_recall_counts_nothing(bank):
    ids = add(bank, unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)))
    result = bank.recall("Where did Alice hike?", count_access=False)
    assert set(result.unit_ids) == set(ids)
    assert _counts(bank, ids) == {ids[0]: 0}
    assert bank.unit(ids[0]).last_accessed_at is None


def test_an_agents_cli_recall_counts(engine, bank, capsys):
    ids = add(bank, unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)))
    name = bank.name
    bank.close()
    assert main(["--home", str(engine.home), "recall", name, "Where did Alice hike?"]) == 0
    capsys.readouterr()
    assert engine.open_bank(name).unit(ids[0]).access_count == 1


@contextlib.contextmanager
def _write_held(bank):
    """Another thread holds the bank's write lock (a long retain, say) meanwhile."""
    holding, release = threading.Event(), threading.Event()

    def writer():
        with bank.store.transaction():
            holding.set()
            release.wait()

    thread = threading.Thread(target=writer)
    thread.start()
    holding.wait()
    try:
        yield
    finally:
        release.set()
        thread.join()


def _on_another_thread(call):
    """`call()` run on a thread of its own; it must not wait for the write lock."""
    out: list = []
    thread = threading.Thread(target=lambda: out.append(call()))
    thread.start()
    thread.join(60)  # a deadlock guard, not a timing: it would wait for the writer otherwise
    assert not thread.is_alive() and out
    return out[0]


def test_a_recall_takes_no_write_lock_and_leaves_the_read_caches_valid(bank):
    ids = add(bank, unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)))
    bank.recall("Where did Alice hike?", count_access=False)  # what loads once is loaded
    generation = bank.store.generation
    with _write_held(bank):
        recalled = _on_another_thread(lambda: bank.recall("Alice hike"))
        assert recalled.unit_ids == ids
        assert bank.store.generation == generation
    assert _counts(bank, ids) == {ids[0]: 1}
    assert bank.store.generation == generation + 1  # the writer's commit alone


def test_counts_wait_in_memory_merged_per_unit_and_a_failed_write_keeps_them():
    written: list = []
    failing = [True]

    def write(pending):
        if failing[0]:
            raise OSError("disk full")
        written.append(dict(pending))

    counts = AccessCounts(write, threading.RLock(), delay=3600)  # flushed by hand here
    first, second = datetime(2024, 5, 1, 12), datetime(2024, 5, 1, 13)
    counts.record(["a", "b", "a"], first)  # listed twice in one recall: counted once
    counts.record(["a"], second)
    with pytest.raises(OSError):
        counts.flush()
    assert len(counts) == 2 and written == []
    counts.record(["b"], second)
    failing[0] = False
    assert counts.flush() == 2
    assert written == [{"a": (2, second), "b": (2, second)}]
    assert counts.flush() == 0 and len(written) == 1
    counts.close()
    with pytest.raises(RuntimeError):
        counts.record(["a"], second)


def test_a_clean_close_writes_the_counts_still_waiting(engine, bank):
    ids = add(bank, unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)))
    name = bank.name
    for _ in range(3):
        bank.recall("Where did Alice hike?")
    bank.close()
    assert engine.open_bank(name).unit(ids[0]).access_count == 3


def test_a_read_never_waits_for_a_write_to_show_the_counts(bank):
    ids = add(bank, unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)))
    bank.recall("Where did Alice hike?", count_access=False)  # what loads once is loaded
    with _write_held(bank):
        bank.recall("Where did Alice hike?")
        seen = _on_another_thread(lambda: bank.unit(ids[0]).access_count)
        assert seen == 0  # the count written so far
    bank.store.access.flush()  # the timer's flush may be the one writing it now
    assert bank.unit(ids[0]).access_count == 1  # waited, not lost
