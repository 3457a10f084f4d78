"""Recalls made by agents and the studio count; inspection runs do not."""

from __future__ import annotations

from datetime import datetime

from core.cli import main
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
