"""`Bank.units(...)` filters and ordering agree with a plain-Python model of the same data."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import Engine, Network, NewUnit
from core.store.bank_store import utcnow

WORDS = ["alice", "bob", "hiking", "google", "paris", "coffee", "Zoë", "50%", "a_b"]
ENTITIES = {"e-alice": "Alice", "e-bob": "Bob", "e-paris": "Paris"}
BASE = datetime(2023, 1, 1)


@pytest.fixture(scope="module")
def populated(tmp_path_factory, embedder):
    """One bank of 150 random units, built once: writing is the slow part."""
    rng = random.Random(7)
    vectors = np.eye(384, dtype=np.float32)
    units = []
    for i in range(150):
        start = BASE + timedelta(days=rng.randrange(0, 365)) if rng.random() < 0.85 else None
        end = start + timedelta(days=rng.randrange(0, 10)) if start and rng.random() < 0.5 else None
        network = rng.choice(list(Network))
        units.append(
            NewUnit(
                " ".join(rng.sample(WORDS, 3)) + f" #{i}",
                network,
                occurred_start=start,
                occurred_end=end,
                confidence=round(rng.random(), 2) if network == Network.OPINION else None,
                entity_ids=tuple(rng.sample(sorted(ENTITIES), rng.randrange(0, 3))),
                vector=tuple(vectors[i % 384]),
            ).with_id()
        )
    engine = Engine(tmp_path_factory.mktemp("listing"), embedder=embedder)
    bank = engine.create_bank("listing")
    now = utcnow()
    with bank.store.transaction() as tx:
        for entity_id, name in ENTITIES.items():
            tx.con.execute(
                "INSERT INTO entities VALUES (?, ?, 'person', [], 'active', ?, ?)",
                [entity_id, name, now, now],
            )
    bank.add_units(units)
    yield bank, units
    engine.close()


def in_range(u: NewUnit, start: datetime | None, end: datetime | None) -> bool:
    """The unit's occurrence overlaps [start, end): an interval [s, e) with e > s
    (its end exclusive) when s < end and e > start; an instant (no end, or an end
    not after its start) when start <= s < end. A unit with no date is in no range."""
    s, e = u.occurred_start, u.occurred_end
    if s is None:
        return False
    if end is not None and not s < end:
        return False
    if start is None:
        return True
    return e > start if e is not None and e > s else s >= start


def model_select(units, network, text, entity, start, end, min_conf, order, descending):
    def keep(u: NewUnit) -> bool:
        if network is not None and str(u.network) not in network:
            return False
        if text is not None and text.lower() not in u.text.lower():
            return False
        if entity is not None and not any(
            entity in (e, ENTITIES[e], ENTITIES[e].lower()) for e in u.entity_ids
        ):
            return False
        if (start is not None or end is not None) and not in_range(u, start, end):
            return False
        return not (min_conf is not None and (u.confidence is None or u.confidence < min_conf))

    kept = [u for u in units if keep(u)]
    key = {
        "occurred_start": lambda u: u.occurred_start,
        "confidence": lambda u: u.confidence,
        "text": lambda u: u.text.lower(),
    }[order]
    present = sorted((u for u in kept if key(u) is not None), key=lambda u: (key(u), u.id))
    if descending:
        present.reverse()
    missing = sorted((u for u in kept if key(u) is None), key=lambda u: u.id, reverse=descending)
    return present + missing


dates = st.none() | st.integers(0, 380).map(lambda d: BASE + timedelta(days=d))


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    network=st.none() | st.sets(st.sampled_from([n.value for n in Network]), min_size=1),
    text=st.none() | st.sampled_from(WORDS + ["#1", "zo", "%", "_", "nothing"]),
    entity=st.none() | st.sampled_from(["e-alice", "Bob", "paris", "nobody"]),
    start=dates,
    end=dates,
    min_conf=st.none() | st.floats(0, 1),
    order=st.sampled_from(["occurred_start", "confidence", "text"]),
    descending=st.booleans(),
    offset=st.integers(0, 40),
    limit=st.integers(1, 60),
)
@pytest.mark.slow
def test_units_filters_and_order_match_a_python_model(
    populated, network, text, entity, start, end, min_conf, order, descending, offset, limit
):
    bank, units = populated
    filters = dict(text=text, entity=entity, start=start, end=end, min_confidence=min_conf)
    expected = model_select(units, network, text, entity, start, end, min_conf, order, descending)
    page = bank.units(
        sorted(network) if network else None,
        order=order,
        descending=descending,
        offset=offset,
        limit=limit,
        **filters,
    )
    assert [u.id for u in page] == [u.id for u in expected[offset : offset + limit]]
    assert bank.count(sorted(network) if network else None, **filters) == len(expected)


def test_from_leaves_out_an_interval_ending_on_it(populated):
    """The boundary the property test turns on, checked every run: an interval's end
    is exclusive, so one ending on the From date is over, one ending a day later is
    not, and an instant on the From date is in (issue 13, item 12)."""
    bank, units = populated
    intervals = [u for u in units if u.occurred_end and u.occurred_end > u.occurred_start]
    instants = [u for u in units if u.occurred_start and not u.occurred_end]
    assert intervals and instants
    for unit in intervals[:10]:
        on_end = {u.id for u in bank.units(start=unit.occurred_end, limit=None)}
        day_before = {
            u.id for u in bank.units(start=unit.occurred_end - timedelta(days=1), limit=None)
        }
        assert unit.id not in on_end and unit.id in day_before
        assert not in_range(unit, unit.occurred_end, None)
        assert in_range(unit, unit.occurred_end - timedelta(days=1), None)
    for unit in instants[:10]:
        at = {u.id for u in bank.units(start=unit.occurred_start, limit=None)}
        after = {
            u.id for u in bank.units(start=unit.occurred_start + timedelta(days=1), limit=None)
        }
        assert unit.id in at and unit.id not in after
        assert in_range(unit, unit.occurred_start, None)
        assert not in_range(unit, unit.occurred_start + timedelta(days=1), None)


def test_units_carry_their_entities(populated):
    bank, units = populated
    by_id = {u.id: u for u in units}
    for unit in bank.units(limit=None):
        assert set(unit.entity_ids) == set(by_id[unit.id].entity_ids)
