"""Force-directed layout (Fruchterman–Reingold), vectorised in numpy, deterministic.

Stable means two things here. The same graph lays out bit for bit the same
way whatever order its nodes and edges were listed in: the work happens in the
order of the sorted ids, and every sum runs in that fixed order. And a node
starts from a position derived from its id (a hash), not from a random draw,
so a neighbourhood that grew by a few nodes keeps roughly its old shape.

Each connected component is laid out on its own and the components are then
packed side by side, largest first: under one force field, unlinked nodes
drift far out and squeeze the part that matters into a dot.

Repulsion is exact (every pair) in a component of up to `EXACT_LIMIT` nodes.
A larger one, where every pair costs minutes, is pushed apart by a grid
approximation instead (app/graph/farfield.py): exact between near nodes,
cell centres of mass beyond; it is as deterministic as the exact sum.

Pure: no Qt, safe to run in the studio's runner.
"""

from __future__ import annotations

import hashlib

import numpy as np

from app.graph.farfield import grid_repulsion
from app.graph.model import GraphData

# Rows of the pairwise repulsion computed at once: bounds memory to
# BLOCK × n × 2 floats however large the graph is.
BLOCK = 512
ASPECT = 1.6  # width : height the packed components aim for (a landscape pane)
GAP = 0.35  # between packed components, in units of a single node's disc
# Largest component with exact all-pairs repulsion: up to here a layout takes
# seconds and every picture stays what it always was; beyond, the grid.
EXACT_LIMIT = 1000


def seed_positions(ids: tuple[str, ...] | list[str], seed: int = 0) -> np.ndarray:
    """A start position in [-1, 1]² per id, fixed by the id and the seed."""
    out = np.empty((len(ids), 2), dtype=np.float64)
    for i, unit_id in enumerate(ids):
        digest = hashlib.blake2b(f"{seed}:{unit_id}".encode(), digest_size=8).digest()
        x, y = np.frombuffer(digest, dtype="<u4")
        out[i] = (x / 2**32 * 2 - 1, y / 2**32 * 2 - 1)
    return out


def default_iterations(n: int) -> int:
    # Large graphs settle in fewer rounds relative to their cost; small ones are cheap.
    if n <= 200:
        return 300
    if n <= 2000:
        return 120
    return 60


def force_layout(
    graph: GraphData,
    iterations: int | None = None,
    seed: int = 0,
    aspect: float = ASPECT,
    exact_limit: int = EXACT_LIMIT,
) -> np.ndarray:
    """Positions (n × 2), same graph → same positions.

    The result is centred on the origin and scaled so that |y| ≤ 1 and
    |x| ≤ `aspect`."""
    n = graph.node_count
    if n == 0:
        return np.zeros((0, 2))
    if n == 1:
        return np.zeros((1, 2))

    # Canonical order: sorted ids, edges sorted by their (canonical) endpoints.
    order = np.argsort(np.array(graph.ids, dtype=object), kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    a, b = rank[graph.src], rank[graph.dst]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    edge_order = np.lexsort((graph.kind, hi, lo))
    lo, hi = lo[edge_order], hi[edge_order]
    w = np.clip(graph.weight[edge_order], 0.05, None)
    start = seed_positions([graph.ids[i] for i in order], seed)

    label = components(n, lo, hi)
    placed = np.zeros((n, 2))
    pieces: list[tuple[int, int, np.ndarray, np.ndarray]] = []  # size, first rank, members, layout
    for first in np.unique(label):
        members = np.flatnonzero(label == first)
        if members.size == 1:
            pieces.append((1, int(first), members, np.zeros((1, 2))))
            continue
        inside = label[lo] == first
        local = np.full(n, -1, dtype=np.int64)
        local[members] = np.arange(members.size)
        sub = fruchterman_reingold(
            start[members],
            local[lo[inside]],
            local[hi[inside]],
            w[inside],
            iterations,
            exact_limit=exact_limit,
        )
        pieces.append((int(members.size), int(first), members, sub))

    # Largest first (ties by the smallest id in it), each scaled by √size so a
    # node takes about the same room in every component.
    pieces.sort(key=lambda piece: (-piece[0], piece[1]))
    radii = [0.5 if size == 1 else 0.5 * np.sqrt(size) for size, *_ in pieces]
    centres = _shelf_pack(radii, aspect)
    for (_size, _first, members, sub), radius, centre in zip(pieces, radii, centres, strict=True):
        placed[members] = centre + sub * radius
    placed = _normalise(placed, aspect)
    out = np.empty_like(placed)
    out[order] = placed
    return out


def components(n: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Each node's component, named by its smallest member (union–find)."""
    parent = np.arange(n)

    def find(i: int) -> int:
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:  # path compression
            parent[i], i = root, parent[i]
        return root

    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(i) for i in range(n)], dtype=np.int64)


def fruchterman_reingold(
    start: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    w: np.ndarray,
    iterations: int | None = None,
    gravity: float = 0.02,
    exact_limit: int = EXACT_LIMIT,
) -> np.ndarray:
    """One connected graph laid out into the unit disc.

    Repulsion k²/d between every pair, attraction w·d²/k along edges, a weak
    pull to the centre, and a temperature that cools linearly so it settles.
    An edge's pull is divided by √(deg(a)·deg(b)): in the dense entity cliques
    of a real bank, hubs would otherwise collapse onto their neighbours."""
    n = start.shape[0]
    iterations = default_iterations(n) if iterations is None else max(1, int(iterations))
    pos = start.copy()
    degree = np.bincount(lo, minlength=n) + np.bincount(hi, minlength=n)
    pull_weight = w / np.sqrt(np.maximum(degree[lo] * degree[hi], 1))
    k = np.sqrt(4.0 / n)  # the ideal edge length for n nodes in a 2 × 2 square
    k2 = k * k
    t0 = 0.2
    repulsion = exact_repulsion if n <= exact_limit else grid_repulsion
    for it in range(iterations):
        disp = repulsion(pos, k2)
        delta = pos[lo] - pos[hi]
        dist = np.sqrt(np.maximum((delta * delta).sum(axis=1), 1e-12))
        pull = (delta / dist[:, None]) * (pull_weight * dist * dist / k)[:, None]
        for axis in (0, 1):
            disp[:, axis] -= np.bincount(lo, weights=pull[:, axis], minlength=n)
            disp[:, axis] += np.bincount(hi, weights=pull[:, axis], minlength=n)
        disp -= gravity * pos * np.sqrt(n) * k
        length = np.sqrt(np.maximum((disp * disp).sum(axis=1), 1e-12))
        temperature = t0 * (1.0 - it / iterations) + 1e-4
        pos += disp / length[:, None] * np.minimum(length, temperature)[:, None]
    pos -= pos.mean(axis=0)
    span = float(np.sqrt((pos * pos).sum(axis=1)).max())
    return pos / span if span > 0 else pos


def _shelf_pack(radii: list[float], aspect: float) -> np.ndarray:
    """Centres for discs of these radii, in rows of about `aspect` × their height."""
    sizes = [2 * r + GAP for r in radii]
    area = sum(s * s for s in sizes)
    width = max(max(sizes), float(np.sqrt(area * aspect)))
    centres = np.zeros((len(radii), 2))
    x = y = row_height = 0.0
    for i, s in enumerate(sizes):
        if x > 0 and x + s > width:
            y -= row_height
            x = row_height = 0.0
        centres[i] = (x + s / 2, y - s / 2)
        x += s
        row_height = max(row_height, s)
    return centres


def _normalise(pos: np.ndarray, aspect: float) -> np.ndarray:
    low, high = pos.min(axis=0), pos.max(axis=0)
    pos = pos - (low + high) / 2
    half = (high - low) / 2
    scale = max(half[0] / aspect, half[1], 1e-12)
    return pos / scale


def exact_repulsion(pos: np.ndarray, k2: float) -> np.ndarray:
    """Σ over every other node of k²·(p − q)/|p − q|², in blocks of rows."""
    x, y = pos[:, 0], pos[:, 1]
    disp = np.empty_like(pos)
    for start in range(0, x.shape[0], BLOCK):
        stop = start + BLOCK
        dx = x[start:stop, None] - x[None, :]
        dy = y[start:stop, None] - y[None, :]
        d2 = dx * dx + dy * dy
        # A node's delta to itself is 0, so its own push vanishes whatever the floor.
        np.maximum(d2, 1e-9, out=d2)
        np.divide(k2, d2, out=d2)
        disp[start:stop, 0] = (dx * d2).sum(axis=1)
        disp[start:stop, 1] = (dy * d2).sum(axis=1)
    return disp
