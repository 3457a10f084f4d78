"""Link planning depends on the units, never on the order a query listed them in.

Stored units often share a time (every fact of one turn does), so a cap that
picks "the most recent" or "the nearest in time" meets ties; ingesting the same
document into two copies of a bank must lay the same links in both."""

from __future__ import annotations

import random
from datetime import datetime

from core.retain.links import LinkSet, Timed, plan_entity_links, plan_temporal_links

WHEN = datetime(2025, 3, 4, 10, 0)


def _stored(count: int) -> list[Timed]:
    # Facts of one earlier turn: the same time, and stored units carry no order.
    return [Timed(f"stored-{i:02d}", WHEN, -1) for i in range(count)]


def _planned(plan, shuffles: int = 6) -> set:
    seen = set()
    for seed in range(shuffles):
        stored = _stored(12)
        random.Random(seed).shuffle(stored)
        links = LinkSet()
        plan(links, stored)
        seen.add(frozenset((x.source, x.target, x.weight) for x in links.links()))
    return seen


def test_entity_links_to_tied_stored_units_do_not_depend_on_their_listing_order():
    fresh = [Timed("new-a", datetime(2025, 3, 5), 0), Timed("new-b", datetime(2025, 3, 5), 1)]
    plans = _planned(
        lambda links, stored: plan_entity_links(links, {"e1": fresh}, {"e1": stored}, 3)
    )
    assert len(plans) == 1


def test_temporal_links_to_tied_stored_units_do_not_depend_on_their_listing_order():
    fresh = [Timed("new-a", datetime(2025, 3, 4, 11), 0)]

    def plan(links, stored):
        plan_temporal_links(links, fresh, stored, window_hours=48, decay_hours=24, per_unit=4)

    plans = _planned(plan)
    assert len(plans) == 1
    (links,) = plans
    assert len(links) == 8  # four neighbours, each link stored both ways
