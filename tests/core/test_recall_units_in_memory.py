"""A small bank's units in memory for recall: what recall reads is what DuckDB
holds, before and after writes, whether the units came from memory or not."""

from __future__ import annotations

from datetime import datetime

from core.recall.unitcache import units_in_memory
from core.store.units import all_units, get_units
from tests.support.reflection import add, add_entity, unit


def _stored(bank, ids):
    return get_units(bank.store.reader(), ids)


def test_all_units_are_the_units_get_units_reads(bank):
    alice = add_entity(bank, "Alice")
    ids = add(
        bank,
        unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1), entities=(alice,)),
        unit("Bob repaired his bicycle chain.", when=datetime(2024, 5, 2), confidence=0.4),
    )
    assert {u.id: u for u in all_units(bank.store.reader())} == _stored(bank, ids)


def test_recall_reads_units_from_memory_once_loaded_and_never_stale_ones(bank):
    ids = add(
        bank,
        unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)),
        unit("Alice camped near Half Dome.", when=datetime(2024, 5, 2)),
    )
    bank.prepare_recall()
    cache = units_in_memory(bank.store)
    assert cache.generation == bank.store.generation and set(cache.units) == set(ids)
    first = bank.recall("Where did Alice hike?", count_access=False)
    assert first.units == {i: u for i, u in _stored(bank, first.unit_ids).items()}

    bank.edit_unit(ids[0], text="Alice hiked the Panorama Trail in Yosemite.")
    assert cache.generation != bank.store.generation  # the units in memory are stale now
    after = bank.recall("Where did Alice hike?", count_access=False)  # read from DuckDB
    assert after.units[ids[0]].text == "Alice hiked the Panorama Trail in Yosemite."
    cache.wait()  # the reload that recall started
    assert cache.generation == bank.store.generation
    assert cache.units[ids[0]].text == "Alice hiked the Panorama Trail in Yosemite."
    again = bank.recall("Where did Alice hike?", count_access=False)  # from memory
    assert again.units == _stored(bank, again.unit_ids) == after.units
    assert [(i.unit_id, i.score) for i in again.items] == [(i.unit_id, i.score) for i in after.items]


def test_a_bank_past_the_limit_reads_from_duckdb(bank, monkeypatch):
    import core.recall.unitcache as unitcache

    ids = add(bank, unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)))
    monkeypatch.setattr(unitcache, "UNITS_IN_MEMORY_MAX", 0)
    bank.prepare_recall()
    assert units_in_memory(bank.store).units is None
    result = bank.recall("Where did Alice hike?", count_access=False)
    assert result.unit_ids == ids and result.units == _stored(bank, ids)
