"""Graphs for the graph package's tests, fixed by a seed."""

from __future__ import annotations

import numpy as np

from app.graph.model import LINK_KINDS, GraphData


def random_graph(n: int, m: int, seed: int = 3) -> GraphData:
    """n nodes, m random links of random kinds and weights (repeats and self-loops dropped)."""
    rng = np.random.default_rng(seed)
    ids = [f"u{i:04d}" for i in range(n)]
    links = [
        (ids[a], ids[b], LINK_KINDS[k], float(w))
        for a, b, k, w in zip(
            rng.integers(0, n, m),
            rng.integers(0, n, m),
            rng.integers(0, 4, m),
            rng.random(m),
            strict=True,
        )
    ]
    return GraphData.build([(u, "world") for u in ids], links)
