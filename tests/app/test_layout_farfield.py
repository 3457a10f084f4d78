"""The grid repulsion that lets large components lay out in seconds (app/graph/farfield.py)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from app.graph.farfield import grid_repulsion
from app.graph.layout import EXACT_LIMIT, exact_repulsion, force_layout
from app.graph.model import GraphData
from tests.support.graphs import random_graph

EXACT = sys.maxsize  # an exact_limit no component reaches: the all-pairs layout


def spreads(n: int, seed: int = 5) -> dict[str, np.ndarray]:
    """Positions as layouts give them: even, clumped (dense clusters), and one far outlier."""
    rng = np.random.default_rng(seed)
    even = rng.uniform(-1, 1, (n, 2))
    centres = rng.uniform(-1, 1, (6, 2))
    clumped = centres[rng.integers(0, 6, n)] + rng.normal(0, 0.04, (n, 2))
    outlier = even.copy()
    outlier[0] = (40.0, -25.0)  # stretches the grid: most nodes share a few cells
    return {"even": even, "clumped": clumped, "outlier": outlier}


@pytest.mark.parametrize("kind", ["even", "clumped", "outlier"])
def test_grid_repulsion_is_within_one_percent_of_the_exact_sum(kind: str) -> None:
    n = 3000
    pos = spreads(n)[kind]
    k2 = 4.0 / n
    exact = exact_repulsion(pos, k2)
    approx = grid_repulsion(pos, k2)
    error = np.linalg.norm(approx - exact, axis=1)
    size = np.linalg.norm(exact, axis=1)
    # The bound the module states: RMS error ≤ 1 % of the RMS force, and no
    # more than 5 % on 99 % of the nodes (measured: ≈ 0.3 % and ≈ 2.5 %).
    assert np.sqrt((error**2).mean() / (size**2).mean()) <= 0.01
    assert np.quantile(error / size, 0.99) <= 0.05


def test_grid_repulsion_of_degenerate_positions() -> None:
    assert np.array_equal(grid_repulsion(np.zeros((5, 2)), 1.0), np.zeros((5, 2)))
    two = np.array([[0.0, 0.0], [1.0, 0.0]])
    assert np.allclose(grid_repulsion(two, 1.0), exact_repulsion(two, 1.0))


def test_grid_repulsion_handles_a_clump_larger_than_a_chunk(monkeypatch) -> None:
    # The near pairs are cut into chunks; the chunk edges must not drop or repeat a pair.
    import app.graph.farfield as farfield

    pos = spreads(800)["clumped"]
    whole = grid_repulsion(pos, 0.01)
    monkeypatch.setattr(farfield, "PAIR_CHUNK", 37)
    assert np.allclose(grid_repulsion(pos, 0.01), whole, rtol=1e-12, atol=1e-12)


def test_approximated_layout_is_stable_whatever_the_input_order() -> None:
    g = random_graph(400, 900)
    pos = force_layout(g, exact_limit=50)
    assert not np.array_equal(pos, force_layout(g, exact_limit=EXACT))  # the grid was used
    shuffled = GraphData.build([(u, "world") for u in reversed(g.ids)], list(reversed(g.links())))
    pos2 = force_layout(shuffled, exact_limit=50)
    by_id = {u: pos2[i] for i, u in enumerate(shuffled.ids)}
    assert np.array_equal(np.array([by_id[u] for u in g.ids]), pos)
    assert np.array_equal(force_layout(g, exact_limit=50), pos)  # no hidden randomness


def test_approximated_layout_is_as_good_as_the_exact_one() -> None:
    g = random_graph(500, 1000, seed=8)
    ratios = []
    for limit in (EXACT, 0):
        pos = force_layout(g, exact_limit=limit)
        edge = np.linalg.norm(pos[g.src] - pos[g.dst], axis=1).mean()
        pair = np.linalg.norm(pos[:, None] - pos[None], axis=2).mean()
        ratios.append(edge / pair)
    exact_ratio, grid_ratio = ratios
    assert grid_ratio < 0.8  # linked nodes sit closer than any two
    assert abs(grid_ratio - exact_ratio) <= 0.05 * exact_ratio


def test_small_components_keep_the_exact_layout() -> None:
    # Pictures of up to EXACT_LIMIT nodes are what they were before the grid.
    assert EXACT_LIMIT >= 1000
    g = random_graph(300, 600)
    assert np.array_equal(force_layout(g), force_layout(g, exact_limit=EXACT))
