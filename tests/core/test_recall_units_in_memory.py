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
        unit(
            "Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1), entities=(alice,)
        ),
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
    assert [(i.unit_id, i.score) for i in again.items] == [
        (i.unit_id, i.score) for i in after.items
    ]


def test_a_bank_past_the_limit_reads_from_duckdb(bank, monkeypatch):
    import core.recall.unitcache as unitcache

    ids = add(bank, unit("Alice hiked the Mist Trail in Yosemite.", when=datetime(2024, 5, 1)))
    monkeypatch.setattr(unitcache, "UNITS_IN_MEMORY_MAX", 0)
    bank.prepare_recall()
    assert units_in_memory(bank.store).units is None
    result = bank.recall("Where did Alice hike?", count_access=False)
    assert result.unit_ids == ids and result.units == _stored(bank, ids)


def test_observations_and_latest_activity_from_memory_are_duckdbs(bank, monkeypatch):
    import core.recall.unitcache as unitcache
    from core import Network
    from core.recall.unitcache import latest_activity, observations_of

    alice, bob = add_entity(bank, "Alice"), add_entity(bank, "Bob")
    ids = add(
        bank,
        unit("Alice hikes in Yosemite every spring.", Network.OBSERVATION, entities=(alice,)),
        unit("Alice and Bob climb together.", Network.OBSERVATION, entities=(alice, bob)),
        unit("Bob repaired his bicycle chain.", when=datetime(2024, 5, 2), entities=(bob,)),
        unit("Alice moved to Fresno.", when=datetime(2024, 6, 9), entities=(alice,)),
    )
    bank.edit_unit(ids[3], occurred_end=datetime(2024, 6, 20))

    def both():
        found = observations_of(bank.store, [alice, bob, "nobody"])
        return {e: sorted(v) for e, v in found.items()}, latest_activity(bank.store)

    bank.prepare_recall()
    assert units_in_memory(bank.store).current(bank.store) is not None
    from_memory = both()
    monkeypatch.setattr(unitcache, "UNITS_IN_MEMORY_MAX", 0)
    bank.prepare_recall()
    assert units_in_memory(bank.store).current(bank.store) is None
    assert both() == from_memory
    assert from_memory[0] == {alice: sorted(ids[:2]), bob: [ids[1]]}
    assert from_memory[1][1] == datetime(2024, 6, 20)


def test_labels_and_source_turns_from_memory_are_duckdbs(built, monkeypatch):
    """What a served recall shows beside its units (names, titles, observation
    sources, source turns), read from memory in a small bank, is what DuckDB
    holds, across writes that change each of them."""
    import core.recall.unitcache as unitcache
    from core import Document, Turn
    from core.store.turns import labels_of, sources_of

    bank, b = built
    bank.ingest(
        Document(
            id="",
            title="walk",
            turns=(
                Turn("w1", "Alice", "I walked the dog along the river.", datetime(2024, 5, 1)),
                Turn("w2", "Bob", "Bobby here: I fixed the fence.", datetime(2024, 5, 1)),
            ),
            format="test",
        ),
        mode="verbatim",
    )

    def from_memory_and_duckdb():
        units = bank.units(limit=100)
        ids = [u.id for u in units]
        entity_ids = [*b.entities.values(), "nobody"]
        document_ids = sorted({u.document_id for u in units if u.document_id} | {"doc1", "gone"})
        observation_ids = [b.units["obs_marker"], ids[0]]
        bank.prepare_recall()
        assert unitcache.labels_in_memory(bank.store) is not None
        memory = (
            bank.unit_labels(entity_ids, document_ids, observation_ids),
            bank.sources([*ids, "nothing"]),
        )
        con = bank.store.reader()
        duckdb = (
            labels_of(con, entity_ids, document_ids, observation_ids),
            sources_of(con, [*ids, "nothing"]),
        )
        assert memory == duckdb
        return memory

    (names, titles, observed), sources = from_memory_and_duckdb()
    assert names[b.entities["bob"]] == "Bob" and titles["doc1"].startswith("chat with")
    assert observed[b.units["obs_marker"]] and len(sources) == 2
    assert {t.speaker for turns in sources.values() for t in turns} == {"Alice", "Bob"}

    bank.rename_entity(b.entities["bob"], "Robert")
    walked = next(i for i, turns in sources.items() if turns[0].id == "w1")
    bank.delete_units([walked])
    (names, _, _), sources = from_memory_and_duckdb()
    assert names[b.entities["bob"]] == "Robert" and walked not in sources
    # Past the limit, the same calls read DuckDB.
    monkeypatch.setattr(unitcache, "UNITS_IN_MEMORY_MAX", 0)
    bank.prepare_recall()
    assert unitcache.labels_in_memory(bank.store) is None
    assert bank.unit_labels([b.entities["bob"]], [], [])[0] == {b.entities["bob"]: "Robert"}
