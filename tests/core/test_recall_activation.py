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


# -- spreading as a process: the per-step budget and the recorded waves ----------------

# A seed S with five neighbours of falling strength, and a strong path S-H-J
# (J two links away, stronger than the weakest neighbours).
FAN = [
    ("S", "n1", "causal", 1.0),
    ("S", "n2", "causal", 0.9),
    ("S", "n3", "causal", 0.8),
    ("S", "n4", "causal", 0.3),
    ("S", "n5", "causal", 0.25),
    ("n1", "J", "causal", 1.0),
]


def fan(**overrides):
    params = {
        "decay": 1.0,
        "mu": MU,
        "threshold": 0.1,
        "max_steps": 10,
        "node_budget": 100,
        "step_budget": 2,
        **overrides,
    }
    return spread({"S": 1.0}, adjacency(FAN), **params)


def test_the_step_budget_spreads_in_distinct_waves():
    result = fan()
    lit_by_step = [wave.lit for wave in result.waves]
    # Step 1 lights the two strongest; n3 waits. Step 2: J (1.0 via n1) and n3
    # (0.8) beat the weak n4 and n5, which are lit in step 3.
    assert lit_by_step == [["n1", "n2"], ["J", "n3"], ["n4", "n5"]]
    assert [wave.frontier for wave in result.waves] == [["S"], ["n1", "n2"], ["J", "n3"]]
    assert [wave.waiting for wave in result.waves] == [3, 2, 0]
    assert len({s.step for s in result.steps}) == 3
    assert result.stopped == "threshold"  # step 4: the frontier offers nothing new
    # Without a per-step budget every neighbour is lit in step 1 (the old picture).
    unlimited = fan(step_budget=0)
    assert unlimited.waves[0].lit == ["n1", "n2", "n3", "n4", "n5"]
    assert set(unlimited.activation) == set(result.activation)
    assert unlimited.activation == pytest.approx(result.activation)


def test_the_node_budget_still_caps_the_total_and_keeps_the_strongest():
    result = fan(node_budget=5)  # S and four more
    assert set(result.activation) == {"S", "n1", "n2", "J", "n3"}
    assert result.stopped == "node_budget"
    # The steps cap the waves too: one step lights only the first two.
    assert set(fan(max_steps=1).activation) == {"S", "n1", "n2"}


def test_waves_record_the_energy_each_link_carried():
    result = fan()
    for wave in result.waves:
        assert wave.carried, wave
        earlier = {n for w in result.waves if w.step < wave.step for n in w.lit} | {"S"}
        for c in wave.carried:
            # From this frontier, or (a node that waited) from one lit earlier.
            assert c.source in earlier and c.target in wave.lit
            # energy = A(source) · w · δ · μ(kind), with δ = 1 here
            assert c.energy == pytest.approx(result.activation[c.source] * c.weight * MU[c.kind])
        # Every node lit in a wave is reached by a recorded link carrying its activation.
        for node in wave.lit:
            assert max(c.energy for c in wave.carried if c.target == node) == pytest.approx(
                result.activation[node]
            )
    as_dict = result.to_dict()
    assert as_dict["step_budget"] == 2
    assert as_dict["waves"][1]["carried"][0] == {
        "from": "n1",
        "to": "J",
        "edge": "causal",
        "weight": 1.0,
        "energy": pytest.approx(1.0),
    }


def test_replaying_the_trace_gives_what_spreading_computed():
    from core.recall.trace import replay_activation

    for result in (fan(), run(), fan(node_budget=4)):
        levels = replay_activation(result.to_dict())
        assert len(levels) == len(result.waves) + 1
        assert levels[0] == result.seeds
        assert levels[-1] == pytest.approx(result.activation)
        for wave, after in zip(result.waves, levels[1:], strict=True):
            assert set(wave.lit) <= set(after)
            assert all(after[n] == pytest.approx(result.activation[n]) for n in wave.lit)
