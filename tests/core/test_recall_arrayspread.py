"""Spreading over the link graph's arrays gives exactly what spread() gives over
the same edges: activations, steps, waves, carried links and the stop reason."""

from __future__ import annotations

import random

import numpy as np
import pytest

from core.recall.activation import spread
from core.recall.arrayspread import spread_arrays
from core.recall.linkgraph import KINDS, LinkGraph
from tests.support.links import link_tables


def _bank_links(rng: random.Random, nodes: int, links: int):
    con = link_tables()
    names = [f"u{rng.randrange(10**6):06d}-{i}" for i in range(nodes)]
    rows = []
    for _ in range(links):
        a, b = rng.choice(names), rng.choice(names)  # self-loops included on purpose
        kind = rng.choice(KINDS)
        # Few distinct weights, so equal energies (and the tie rules) come up often.
        weight = rng.choice((1.0, 0.5, 0.25, 0.8))
        entity = f"e{rng.randrange(4)}" if kind == "entity" else None
        rows += [(a, b, kind, weight, entity), (b, a, kind, weight, entity)]
    con.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?, NULL)", rows)
    con.executemany("INSERT INTO units VALUES (?)", [[n] for n in names])
    con.executemany(
        "INSERT INTO mentions VALUES (?, ?, NULL)",
        [[n, f"e{rng.randrange(4)}"] for n in names for _ in range(rng.randrange(3))],
    )
    return con, names


@pytest.mark.parametrize("case", range(12))
def test_array_spreading_matches_spread(case):
    rng = random.Random(case)
    con, names = _bank_links(rng, rng.choice((8, 40, 200)), rng.choice((10, 150, 900)))
    graph = LinkGraph()
    graph.refresh(con)
    # A few more links after the first load: the appended (delta) arrays are read too.
    extra = [(rng.choice(names), rng.choice(names)) for _ in range(5)]
    con.executemany(
        "INSERT INTO links VALUES (?, ?, 'temporal', 0.5, NULL, NULL)",
        [r for a, b in extra for r in ((a, b), (b, a))],
    )
    graph.refresh(con, generation=1)
    outside = set(rng.sample(names, len(names) // 5))
    admitted = np.array([n not in outside for n in graph.ids], bool)
    entity_fan = case % 2 == 1

    def neighbours(frontier):
        return [e for e in graph.neighbours(list(frontier), entity_fan) if e.target not in outside]

    seeds = {n: rng.choice((0.9, 0.6, 0.45, 0.2)) for n in rng.sample(names, 4)}
    seeds["not-in-the-graph"] = 0.7
    params = {
        "decay": rng.choice((0.8, 0.5)),
        "mu": {"causal": 1.0, "entity": 0.9, "temporal": 0.8, "semantic": 0.6},
        "threshold": rng.choice((0.05, 0.2)),
        "max_steps": rng.choice((2, 8)),
        "node_budget": rng.choice((5, 30, 500)),
        "step_budget": rng.choice((0, 3, 10)),
    }
    expected = spread(seeds, neighbours, **params)
    got, steps_read, edges_read = spread_arrays(
        graph, seeds, admitted, entity_fan=entity_fan, **params
    )
    assert got.to_dict() == expected.to_dict()
    assert got.activation == expected.activation
    assert got.ranked() == expected.ranked()
    assert steps_read >= 1 and edges_read >= 0


def test_nothing_spreads_outside_the_mask():
    con, names = _bank_links(random.Random(7), 30, 200)
    graph = LinkGraph()
    graph.refresh(con)
    seed = names[0]
    admitted = np.zeros(len(graph.ids), bool)
    got, _, edges_read = spread_arrays(
        graph,
        {seed: 1.0},
        admitted,
        decay=0.8,
        mu={kind: 1.0 for kind in KINDS},
        threshold=0.01,
        max_steps=5,
        node_budget=100,
    )
    assert got.activation == {seed: 1.0}
    assert got.stopped == "exhausted" and edges_read == 0
