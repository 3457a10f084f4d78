"""Where a spreading's nodes go: one ring per wave, each node beside the node that lit it.

The seeds sit at the centre (on a small ring when there are several), the
nodes the first wave lit on the next ring out, and so on: the picture of a
recall grows outward wave by wave, and the energy's path from a seed runs
outward without crossing another. Each node's wedge of the circle is shared
among the nodes it lit in proportion to how many nodes each of them leads
to (a radial tree layout, Eades 1992), so a node stays near its parent and a
seed that lit much gets room for it.

A ring keeps its nodes a minimum distance apart (the least displacement from
where their wedges put them, found by isotonic regression); a wave too large
for its ring spreads over a band of staggered rings rather than pushing the
next waves far out. Nodes the spreading did not reach — the one-hop context,
results other channels found — go on one ring outside the last wave, each
in the direction of its strongest link into the lit region: apart from it,
not mixed in. Those with no link into it at all (an entity's profile found
by its name) go in rows under the picture, not round a ring far away.

Rings are ellipses stretched to the view's aspect (a landscape pane has the
room sideways). Same input, same positions; pure numpy, no Qt.
"""

from __future__ import annotations

import numpy as np

from app.graph.activation import Timeline
from app.graph.model import GraphData

SPACING = 1.0  # between neighbours on a ring (before the stretch to the view's aspect)
RING_GAP = 2.2  # between one wave's ring and the next
BAND_GAP = 1.1  # between the staggered rings of one crowded wave
MAX_BAND = 1  # staggered rings a wave may take before its ring moves out
CONTEXT_GAP = 2.6  # from the last wave to the ring of what was not reached
SEED_RING = 1.6  # the seeds' ring, when there are several, at least this wide
TOP = np.pi / 2  # the first seed sits at the top
MAX_STRETCH = 1.5  # sideways, to fill the view when rows under the rings add height


def ring_layout(graph: GraphData, tl: Timeline, aspect: float = 1.6) -> np.ndarray:
    """Positions (n × 2) with |y| ≤ 1 and |x| ≤ `aspect`: lit nodes on the ring
    of the wave that first lit them, the rest on a context ring outside."""
    n = graph.node_count
    if n == 0:
        return np.zeros((0, 2))
    wave = tl.first_lit() if tl.levels.shape[1] == n else np.full(n, -1)
    if not (wave >= 0).any():
        wave = np.zeros(n, dtype=np.int64)  # nothing lit: every node a seed of its own
    parent = tl.parent if tl.parent is not None and tl.parent.shape[0] == n else np.full(n, -1)
    strength = tl.levels[-1] if tl.levels.shape[1] == n else np.zeros(n)
    lit = wave >= 0
    # A parent must be lit in an earlier wave (else the node roots a tree of its own).
    valid = lit & (parent >= 0)
    valid[valid] &= wave[parent[valid]] < wave[valid]
    parent = np.where(valid, parent, -1)

    # Children in a fixed order: strongest first, ties by id.
    order = sorted(np.flatnonzero(lit).tolist(), key=lambda i: (-strength[i], graph.ids[i]))
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    for i in order:
        (children.setdefault(int(parent[i]), []) if parent[i] >= 0 else roots).append(i)
    weight = np.ones(n)
    for i in sorted(order, key=lambda i: -wave[i]):  # leaves first
        if parent[i] >= 0:
            weight[parent[i]] += weight[i]

    # Each node's wedge: the roots share the circle, children their parent's wedge.
    centre = np.zeros(n)
    seeds_first = sorted(roots, key=lambda i: (wave[i], -strength[i], graph.ids[i]))
    _share(seeds_first, TOP, TOP + 2 * np.pi, weight, centre)
    stack = list(seeds_first)
    span = np.zeros(n)
    total = float(weight[seeds_first].sum()) or 1.0
    for i in seeds_first:
        span[i] = 2 * np.pi * weight[i] / total
    while stack:
        i = stack.pop()
        kids = children.get(i, [])
        if kids:
            low = centre[i] - span[i] / 2
            _share(kids, low, low + span[i], weight, centre)
            inner = float(weight[kids].sum())
            for k in kids:
                span[k] = span[i] * weight[k] / inner
            stack.extend(kids)

    radius = np.zeros(n)
    angle = centre.copy()
    r = 0.0
    for t in range(int(wave.max()) + 1):
        members = np.flatnonzero(wave == t)
        if members.size == 0:
            continue
        if t == 0 and members.size == 1:
            radius[members] = 0.0  # one seed: the centre
        elif t == 0:
            r = _place_ring(members, SEED_RING, angle, radius)
        else:
            r = _place_ring(members, r + RING_GAP, angle, radius)
    # What the spreading did not reach: one ring outside, toward its strongest link in.
    anchor = _anchors(graph, lit)
    ring = np.flatnonzero(~lit & (anchor >= 0))
    if ring.size:
        angle[ring] = angle[anchor[ring]]
        _place_ring(ring, r + CONTEXT_GAP, angle, radius)
    pos = np.column_stack((radius * np.cos(angle) * aspect, radius * np.sin(angle)))
    alone = np.flatnonzero(~lit & (anchor < 0))
    if alone.size:
        pos[alone] = _rows(alone.size, pos[lit | (anchor >= 0)], aspect)
    return _normalise(pos, aspect)


def ring_guides(
    pos: np.ndarray, wave: np.ndarray, aspect: float
) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """The rings `ring_layout` put each wave on, to draw: their common centre
    and, per wave from the first (the seeds' ring is not drawn), the ellipse's
    half width and half height (0, 0 for a wave with no node shown)."""
    seeds = pos[wave == 0]
    centre = seeds.mean(axis=0) if seeds.size else np.zeros(2)
    radii: list[tuple[float, float]] = []
    for t in range(1, int(wave.max(initial=0)) + 1):
        members = pos[wave == t]
        if members.size == 0:
            radii.append((0.0, 0.0))
            continue
        d = members - centre
        r = float(np.median(np.hypot(d[:, 0] / aspect, d[:, 1])))
        radii.append((r * aspect, r))
    return centre, radii


def _rows(m: int, above: np.ndarray, aspect: float) -> np.ndarray:
    """`m` places in centred rows under the points `above`, as wide as they are."""
    pitch = SPACING * aspect
    low, high = above.min(axis=0), above.max(axis=0)
    per_row = max(1, int((high[0] - low[0]) // pitch) + 1)
    i = np.arange(m)
    row, col = i // per_row, i % per_row
    in_row = np.minimum(m - row * per_row, per_row)
    x = (low[0] + high[0]) / 2 + (col - (in_row - 1) / 2) * pitch
    y = low[1] - CONTEXT_GAP - row * SPACING * 1.5
    return np.column_stack((x, y))


def _share(nodes: list[int], low: float, high: float, weight: np.ndarray, out: np.ndarray) -> None:
    """Wedge centres for `nodes` in [low, high), each in proportion to its weight."""
    w = weight[nodes]
    edges = low + (high - low) * np.concatenate(([0.0], np.cumsum(w))) / w.sum()
    out[nodes] = (edges[:-1] + edges[1:]) / 2


def _place_ring(members: np.ndarray, r: float, angle: np.ndarray, radius: np.ndarray) -> float:
    """Spread `members` around a ring of radius at least `r` (a band of up to
    MAX_BAND staggered rings when crowded), keeping their order and least moved;
    returns the outermost radius used."""
    m = members.size
    bands = 1
    while bands < MAX_BAND and m * SPACING > 2 * np.pi * r * bands:
        bands += 1
    r = max(r, m * SPACING / (2 * np.pi * bands))  # still too full: the ring moves out
    gap = SPACING / (r * bands)
    order = members[np.argsort(angle[members] % (2 * np.pi), kind="stable")]
    angle[order] = _separate(angle[order] % (2 * np.pi), gap)
    # Staggered: neighbours in angle alternate between the band's rings.
    radius[order] = r + BAND_GAP * (np.arange(m) % bands)
    return r + BAND_GAP * (bands - 1)


def _separate(theta: np.ndarray, gap: float) -> np.ndarray:
    """Sorted angles moved as little as possible (least squares) so that
    neighbours, around the circle, are at least `gap` apart."""
    m = theta.size
    if m < 2:
        return theta
    if m * gap >= 2 * np.pi:
        return theta[0] + np.arange(m) * (2 * np.pi / m)
    # Cut the circle at its widest gap and solve on the line it leaves.
    gaps = np.diff(np.concatenate((theta, [theta[0] + 2 * np.pi])))
    cut = int(np.argmax(gaps)) + 1
    line = np.concatenate((theta[cut:], theta[:cut] + 2 * np.pi))
    steps = np.arange(m) * gap
    fitted = _isotonic(line - steps) + steps
    if fitted[-1] - fitted[0] > 2 * np.pi - gap:  # wrapped onto itself: spread evenly
        fitted = fitted[0] + np.arange(m) * (2 * np.pi / m)
    return np.roll(fitted, cut)


def _isotonic(y: np.ndarray) -> np.ndarray:
    """The non-decreasing sequence nearest `y` (pool adjacent violators)."""
    means: list[float] = []
    counts: list[int] = []
    for value in y.tolist():
        means.append(value)
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            c = counts[-2] + counts[-1]
            means[-2] = (means[-2] * counts[-2] + means[-1] * counts[-1]) / c
            counts[-2] = c
            means.pop()
            counts.pop()
    return np.repeat(means, counts)


def _anchors(graph: GraphData, lit: np.ndarray) -> np.ndarray:
    """For each unlit node, the lit node it has its strongest link to (-1: none;
    ties by edge order, so the same graph gives the same anchors)."""
    a, b, w = graph.src, graph.dst, graph.weight
    across = lit[a] != lit[b]
    inside = np.where(lit[a], a, b)[across]
    outside = np.where(lit[a], b, a)[across]
    order = np.lexsort((np.arange(outside.size), -w[across], outside))
    first = np.r_[True, outside[order][1:] != outside[order][:-1]] if order.size else order
    anchor = np.full(graph.node_count, -1, dtype=np.int64)
    anchor[outside[order][first]] = inside[order][first]
    return anchor


def _normalise(pos: np.ndarray, aspect: float) -> np.ndarray:
    """Centred and filling |x| ≤ aspect, |y| ≤ 1: stretched a little sideways
    when the rows under the rings make the picture taller than the view's shape."""
    low, high = pos.min(axis=0), pos.max(axis=0)
    pos = pos - (low + high) / 2
    half = np.maximum((high - low) / 2, 1e-12)
    scale = max(half[0] / aspect, half[1])
    # A picture narrower than the view is widened toward it, by half at most
    # (rings, not a line stretched across: a lone column of nodes stays one).
    return pos / np.array([max(half[0] / aspect, scale / MAX_STRETCH), scale])
