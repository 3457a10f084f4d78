"""The studio's coarse queries (issue 25, item 4): `Bank.unit_context` (a fact's
conversation) and `Bank.subgraph` (a graph neighbourhood), each one call where
the studio used to make one per document or one per unit. Each is checked
against the multi-call path it replaces, written out here as it was."""

from __future__ import annotations

import functools
import shutil
from datetime import datetime, timedelta

import pytest

from core import Document, Engine, EngramError, Kind, Network, Turn
from tests.support.embedders import HashEmbedder

AROUND = 3


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_subset_home, embedder):
    """A copy of the shared demo bank (two conversations, rules mode, with their
    observations), one per module: the tests below undo what they change."""
    home = tmp_path_factory.mktemp("coarse") / "home"
    shutil.copytree(demo_subset_home, home)
    with Engine(home, embedder=embedder) as engine:
        yield engine.open_bank("Demo")


@pytest.fixture(scope="module")
def links(demo):
    """`Bank.links` of the demo bank, each unit's read once (the walks below read
    the same units' links many times; the bank's links do not change here)."""
    return functools.cache(demo.links)


@pytest.fixture(scope="module")
def drawn_weights(demo, links):
    """The weights the pane drew a pair's links with (two units sharing several
    entities have an entity link through each): an entity link's weight times
    its entity's specificity, as recall spreads it; strongest first."""
    specificity = demo.entity_specificity()

    def weights(source: str, target: str, kind: str) -> list[float]:
        return sorted(
            (
                link.weight * (specificity.get(link.entity_id, 1.0) if link.entity_id else 1.0)
                for link in links(source)
                if link.target == target and str(link.kind) == kind
            ),
            reverse=True,
        )

    return weights


# -- the paths replaced ------------------------------------------------------------------


def scanned_context(bank, unit_id: str, around: int) -> dict[str, tuple]:
    """The detail pane's old search: the unit's turns, then the documents one by one
    (it showed the first listed holding any of them; an observation's may lie in
    several). For each document holding some: its title -> (turn ids shown, more
    before, more after, how many of the unit's turns it holds)."""
    turns = bank.provenance(unit_id)
    used = {t.id: t.text for t in turns}
    found = {}
    for document in bank.documents():
        conversation = bank.turns(document.id)
        at = [i for i, t in enumerate(conversation) if used.get(t.id) == t.text]
        if at:
            lo, hi = max(0, min(at) - around), min(len(conversation), max(at) + around + 1)
            shown = [t.id for t in conversation[lo:hi]]
            found[document.title] = (shown, lo > 0, hi < len(conversation), len(at))
    return found


def walked(bank, links, seeds: list[str], hops: int) -> tuple[set[str], set[tuple[str, str, str]]]:
    """The graph pane's old walk: `Bank.links` (`links`) unit by unit, `hops` times,
    then the links among the active units reached."""
    reached, frontier = set(seeds), list(seeds)
    for _ in range(hops):
        next_frontier = []
        for unit_id in frontier:
            for link in links(unit_id):
                if link.target not in reached:
                    reached.add(link.target)
                    next_frontier.append(link.target)
        frontier = next_frontier
    active = {u.id for u in bank.units(ids=list(reached), network=None, limit=None)}
    among = {
        (link.source, link.target, str(link.kind))
        for unit_id in active
        for link in links(unit_id)
        if link.target in active
    }
    return active, among


# -- unit_context --------------------------------------------------------------------------


def test_a_facts_conversation_is_the_one_the_document_scan_found(demo):
    facts = [u for u in demo.units(network=None, limit=None) if u.source_ids]
    assert len(facts) > 20 and {u.network for u in facts} >= {Network.WORLD, Network.OBSERVATION}
    several = 0
    # A quarter of them (the scan is slow), and every profile: a profile's facts
    # come from several conversations, which a quarter taken by id may miss.
    sample = [u for i, u in enumerate(facts) if i % 4 == 0 or u.network is Network.OBSERVATION]
    for unit in sample:
        found = demo.unit_context(unit.id, AROUND)
        assert found.unit == demo.unit(unit.id)
        assert found.sources == tuple(demo.provenance(unit.id))
        scanned = scanned_context(demo, unit.id, AROUND)
        assert found.title in scanned, unit.text
        *expected, holds = scanned[found.title]
        assert [[t.id for t in found.turns], found.before, found.after] == expected, unit.text
        # Sources in several conversations: the one holding most of them is shown.
        assert holds == max(h for *_, h in scanned.values())
        assert found.document_id in {d.id for d in demo.documents()}
        several += len(scanned) > 1
    assert several, "no fact with sources in several conversations was checked"


def test_a_fact_with_no_source_turns_has_no_conversation_and_an_unknown_one_is_refused(demo):
    change = demo.add_memory("Maya waters the lemon tree on Sundays.")
    try:
        [unit_id] = change.added[Kind.UNIT]
        found = demo.unit_context(unit_id)
        assert found.unit.id == unit_id and not found.sources and not found.turns
        assert found.title == "" and found.document_id is None
    finally:
        demo.undo()
    with pytest.raises(EngramError, match="no unit 'nope'"):
        demo.unit_context("nope")


def test_the_last_documents_fact_is_found_whatever_the_number_of_documents(tmp_path):
    """The pane's scan read documents one `turns` call each, and gave up after 500
    (benchmarks/calls_per_action.py measures the 505-document bank: an ingest of
    505 documents takes over a minute here, too long for `make test`). Now the
    fact's own document is read: the last listed as soon as the first."""
    start = datetime(2024, 1, 1)
    speakers = ("Ana", "Ben") * 4
    documents = [
        Document(
            id=f"d{i:03}",
            title=f"Conversation {i}",
            turns=tuple(
                Turn(f"t{j}", speaker, f"{speaker} said room {i} note {j}.", start + timedelta(i))
                for j, speaker in enumerate(speakers)
            ),
        )
        for i in range(12)
    ]
    with Engine(tmp_path, embedder=HashEmbedder()) as engine:
        bank = engine.create_bank("many")
        bank.ingest(documents, mode="verbatim")
        for i in (0, 11):
            unit = bank.units(text=f"room {i} note 5", limit=1)[0]
            shown = bank.unit_context(unit.id, AROUND)
            assert shown.title == f"Conversation {i}"
            # Note 5, three turns either side: from note 2 to the last (note 7).
            expected = [f"{s} said room {i} note {j}." for j, s in enumerate(speakers)][2:]
            assert [t.text for t in shown.turns] == expected
            assert shown.before and not shown.after
            scanned = scanned_context(bank, unit.id, AROUND)
            assert scanned == {shown.title: ([t.id for t in shown.turns], True, False, 1)}


# -- subgraph ----------------------------------------------------------------------------


def test_a_units_neighbourhood_is_the_walk_over_its_links(demo, links, drawn_weights):
    seeds = [u.id for u in demo.units(limit=None) if links(u.id)][::20]
    assert len(seeds) >= 5
    for hops in (1, 2):
        for seed in seeds:
            found = demo.subgraph([seed], hops=hops, limit=100_000)
            ids, among = walked(demo, links, [seed], hops)
            assert found.units[0].id == seed and {u.id for u in found.units} == ids
            assert {(s, t, k) for s, t, k, _w in found.links} == among
    weights: dict[tuple[str, str, str], list[float]] = {}
    for source, target, kind, weight in found.links:
        weights.setdefault((source, target, kind), []).append(weight)
    for (source, target, kind), drawn in weights.items():
        expected = drawn_weights(source, target, kind)
        assert sorted(drawn, reverse=True) == pytest.approx(expected, rel=1e-5)


def test_an_entitys_neighbourhood_is_the_walk_from_the_units_that_mention_it(demo, links):
    entity = max(demo.entities(), key=lambda e: e.mention_count)
    mentioning = [u.id for u in demo.units(entity=entity.name, limit=None)]
    found = demo.subgraph(mentioning, hops=1, limit=100_000)
    assert {u.id for u in found.units} == walked(demo, links, mentioning, 1)[0]
    assert [u.id for u in found.units[: len(mentioning)]] == mentioning  # seeds first


def test_a_limit_keeps_the_strongest_links_first_breadth_first(demo, links, drawn_weights):
    seed = max(demo.units(limit=None), key=lambda u: len(links(u.id))).id
    found = demo.subgraph([seed], hops=2, limit=12)
    ids = [u.id for u in found.units]
    assert len(ids) == 12 and ids[0] == seed
    # Its first hop: the neighbours with the strongest drawn links, in that order.
    weights: dict[str, float] = {}
    for link in links(seed):
        weights[link.target] = max(
            weights.get(link.target, 0.0),
            drawn_weights(seed, link.target, str(link.kind))[0],
        )
    first_hop = [i for i in ids[1:] if i in weights]
    assert first_hop and all(
        weights[a] >= weights[b] - 1e-6 for a, b in zip(first_hop, first_hop[1:], strict=False)
    )
    strongest_left_out = max((w for i, w in weights.items() if i not in ids), default=0.0)
    assert strongest_left_out <= min(weights[i] for i in first_hop) + 1e-6


def test_a_querys_context_is_the_strongest_one_link_neighbours(demo, links, drawn_weights):
    core = demo.recall("What went wrong with Atlas in June?", count_access=False).unit_ids[:6]
    everything = demo.subgraph(core, hops=0, limit=len(core), context=100_000)
    outside = {}
    for unit_id in core:
        for link in links(unit_id):
            if link.target not in core:
                weight = drawn_weights(unit_id, link.target, str(link.kind))[0]
                outside[link.target] = max(outside.get(link.target, 0.0), weight)
    active = {u.id for u in demo.units(ids=list(outside), network=None, limit=None)}
    assert set(everything.context) == active
    few = demo.subgraph(core, hops=0, limit=len(core), context=5)
    assert len(few.context) == 5 and set(few.context) <= active
    assert (
        min(outside[i] for i in few.context)
        >= max(w for i, w in outside.items() if i not in few.context) - 1e-6
    )
    assert [u.id for u in few.units] == [*core, *few.context]
    # Links leave the query's units only: to each other and to the context.
    assert {s for s, *_ in few.links} <= set(core)
    assert {t for _s, t, *_ in few.links} <= {*core, *few.context}


def test_a_hidden_unit_is_left_out_of_a_neighbourhood(demo, links):
    seed = next(u.id for u in demo.units(limit=None) if links(u.id))
    around = demo.subgraph([seed], hops=1)
    hidden = around.units[1].id
    demo.hide_units([hidden])
    try:
        found = demo.subgraph([seed], hops=1)
        assert hidden not in {u.id for u in found.units}
        assert all(hidden not in (s, t) for s, t, *_ in found.links)
    finally:
        demo.undo()
