"""Maximal marginal relevance: a ranked list reordered so near-duplicates wait.

    next = argmax over the rest of  relevance(i) − λ · max over chosen j of cos(i, j)

relevance is the reranked score scaled to [0, 1] (divided by the best). Why:
a budget filled with five rewordings of the best hit answers less than one
that also holds the second and third thing the query asks about — which is
what questions gathering several facts ("what activities does she do?") need.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def mmr(relevance: Sequence[float], vectors: np.ndarray, lam: float) -> list[int]:
    """Indices of the items in MMR order. `vectors` are unit-normalised rows; with
    lam <= 0 (or nothing to compare) the order is by relevance, stable."""
    n = len(relevance)
    rel = np.asarray(relevance, dtype=np.float64)
    if n == 0:
        return []
    top = rel.max()
    rel = rel / top if top > 0 else rel
    if lam <= 0 or n == 1:
        return sorted(range(n), key=lambda i: -rel[i])
    sims = np.asarray(vectors, dtype=np.float32) @ np.asarray(vectors, dtype=np.float32).T
    closest = np.full(n, -np.inf)  # max similarity to anything chosen so far
    chosen: list[int] = []
    left = np.ones(n, dtype=bool)
    for _ in range(n):
        gain = rel - lam * np.where(np.isfinite(closest), closest, 0.0)
        gain[~left] = -np.inf
        pick = int(np.argmax(gain))  # first of equal gains: the better ranked
        chosen.append(pick)
        left[pick] = False
        closest = np.maximum(closest, sims[pick])
    return chosen
