"""Spreading activation on a small hand-built graph, activations computed by hand.

        A ──entity 1.0── B ──causal 0.8── D ──entity 1.0── E
        └──temporal 0.5── C ──semantic 1.0──┘

δ = 0.8; μ: causal 1.0, entity 0.9, temporal 0.6, semantic 0.6; seed A = 1.0.
  step 1: B = 1·1.0·0.8·0.9 = 0.72          C = 1·0.5·0.8·0.6 = 0.24
  step 2: D = max(0.72·0.8·0.8·1.0, 0.24·1.0·0.8·0.6) = max(0.4608, 0.1152) = 0.4608 (via B)
  step 3: E = 0.4608·1.0·0.8·0.9 = 0.331776 (D -> C would be 0.221184 < 0.24: no change)
"""

from __future__ import annotations

import pytest

from core.recall.activation import adjacency, spread

LINKS = [
    ("A", "B", "entity", 1.0),
    ("A", "C", "temporal", 0.5),
    ("B", "D", "causal", 0.8),
    ("C", "D", "semantic", 1.0),
    ("D", "E", "entity", 1.0),
]
MU = {"causal": 1.0, "entity": 0.9, "temporal": 0.6, "semantic": 0.6}


def run(**overrides):
    params = {
        "decay": 0.8,
        "mu": MU,
        "threshold": 0.1,
        "max_steps": 3,
        "node_budget": 100,
        **overrides,
    }
    return spread({"A": 1.0}, adjacency(LINKS), **params)


def test_activations_match_the_hand_computation():
    result = run()
    assert result.activation == pytest.approx(
        {"A": 1.0, "B": 0.72, "C": 0.24, "D": 0.4608, "E": 0.331776}
    )
    steps = [(s.step, s.node, s.source, s.kind, round(s.activation, 6)) for s in result.steps]
    assert steps == [
        (1, "B", "A", "entity", 0.72),
        (1, "C", "A", "temporal", 0.24),
        (2, "D", "B", "causal", 0.4608),
        (3, "E", "D", "entity", 0.331776),
    ]
    assert result.stopped == "steps"
    assert [n for n, _ in result.ranked()] == ["B", "D", "E", "C"]
    assert result.ranked(include_seeds=True)[0] == ("A", 1.0)


def test_spreading_stops_below_the_threshold():
    result = run(threshold=0.3)
    assert set(result.activation) == {"A", "B", "D", "E"}  # C (0.24) never lit
    assert result.activation["D"] == pytest.approx(0.4608)
    longer = run(max_steps=10)
    assert longer.stopped == "threshold"  # E -> D would be 0.2389 < 0.4608
    assert len(longer.steps) == 4


def test_step_limit_and_node_budget():
    one_step = run(max_steps=1)
    assert set(one_step.activation) == {"A", "B", "C"}
    assert one_step.stopped == "steps"
    budget = run(node_budget=2)  # A, then only the stronger of B and C
    assert set(budget.activation) == {"A", "B"}
    assert budget.stopped == "node_budget"
    full = run(node_budget=3)  # step 1 fills the budget: no step 2 is read
    assert set(full.activation) == {"A", "B", "C"} and len(full.steps) == 2
    assert full.stopped == "node_budget"


def test_mu_changes_the_path():
    # With semantic boosted above causal, D is reached through C instead of B.
    result = run(mu={**MU, "semantic": 4.0, "causal": 0.1})
    d = next(s for s in result.steps if s.node == "D")
    assert d.source == "C" and d.kind == "semantic"
    assert d.activation == pytest.approx(0.24 * 1.0 * 0.8 * 4.0)


def test_seeds_below_threshold_and_empty_graphs():
    assert (
        spread(
            {"A": 0.01},
            adjacency(LINKS),
            decay=0.8,
            mu=MU,
            threshold=0.1,
            max_steps=3,
            node_budget=9,
        ).stopped
        == "no_seeds"
    )
    lonely = spread(
        {"Z": 1.0}, adjacency(LINKS), decay=0.8, mu=MU, threshold=0.1, max_steps=3, node_budget=9
    )
    assert lonely.activation == {"Z": 1.0} and lonely.stopped == "exhausted"


def test_directed_adjacency_only_follows_given_direction():
    result = spread(
        {"D": 1.0},
        adjacency(LINKS, directed=True),
        decay=1.0,
        mu=MU,
        threshold=0.1,
        max_steps=5,
        node_budget=9,
    )
    assert set(result.activation) == {"D", "E"}
    trace = result.to_dict()
    assert trace["steps"][0] == {
        "step": 1,
        "node": "E",
        "from": "D",
        "edge": "entity",
        "weight": 1.0,
        "activation": pytest.approx(0.9),
    }
