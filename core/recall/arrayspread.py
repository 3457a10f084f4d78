"""Spreading activation over the link graph's arrays: spread()'s rule, in numpy.

`activation.spread` walks Python edge objects: clear, and what the studio
re-runs live, but a recall's frontier touches tens of thousands of edges and
building and scoring them one by one cost ~50 ms of a ~110 ms recall. This
runs the same rule over the CSR arrays the bank keeps in memory
(linkgraph.py), one vector operation per step, with a boolean scope mask
(which nodes recall may pass through) instead of a query per step.

It gives the same `Activation` as `spread(seeds, neighbours, ...)` over the same
edges: the same values (the same float64 arithmetic in the same order), the same
ties (by id string, through the graph's `order` ranks), the same waves and
carried links. tests/core/test_recall_arrayspread.py holds it to that on random
graphs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from core.recall.activation import CARRIED_PER_LIT, Activation, Carried, Step, Wave, start
from core.recall.linkgraph import KINDS, LinkGraph


class _Waiting:
    """Candidates held back by the step budget: per node, the best energy offered
    and the edge (source, kind, weight) that offered it; energy -inf: none."""

    def __init__(self, n: int) -> None:
        self.energy = np.full(n, -np.inf)
        self.source = np.full(n, -1, np.int64)
        self.kind = np.zeros(n, np.int64)
        self.weight = np.zeros(n, np.float64)

    def nodes(self) -> np.ndarray:
        return np.flatnonzero(self.energy > -np.inf)


def spread_arrays(
    graph: LinkGraph,
    seeds: Mapping[str, float],
    admitted: np.ndarray | Callable[[np.ndarray], np.ndarray],
    *,
    decay: float,
    mu: Mapping[str, float],
    threshold: float,
    max_steps: int,
    node_budget: int,
    step_budget: int = 0,
    entity_fan: bool = False,
) -> tuple[Activation, int, int]:
    """(the activation, steps read, edges read) from `seeds` over `graph`, never
    passing into a node `admitted` refuses: a boolean array by graph index, or a
    function of an index array answering one (channels.ScopeMask).

    Call under `graph.lock`, after `graph.refresh`."""
    result = start(seeds, threshold, node_budget, step_budget)
    lit, per_step = result.seeds, result.step_budget
    if not lit:
        result.stopped = "no_seeds"
        return result, 0, 0
    ids, rank = graph.ids, graph.order()
    n = len(ids)
    admit = admitted if callable(admitted) else admitted.__getitem__
    act = np.zeros(n, np.float64)  # a node's activation; 0: not lit
    is_lit = np.zeros(n, bool)
    for node, a in lit.items():
        ix = graph.index_of(node)
        if ix >= 0:
            act[ix], is_lit[ix] = a, True
    lit_count = len(lit)  # seeds without links count too
    mu_of = np.array([float(mu.get(kind, 0.0)) for kind in KINDS], np.float64)
    waiting = _Waiting(n)
    frontier_names = list(lit)
    frontier = np.array([i for i in map(graph.index_of, frontier_names) if i >= 0], np.int64)
    steps_read = edges_read = 0
    for t in range(1, max_steps + 1):
        wave = Wave(t, list(frontier_names))
        src, tgt, kind, weight = graph.edge_arrays(frontier, entity_fan)
        steps_read += 1
        inside = admit(tgt)
        edges_read += int(np.count_nonzero(inside))
        keep = inside & (tgt != src)
        src, tgt, kind, weight = src[keep], tgt[keep], kind[keep], weight[keep]
        seen_edge = bool(tgt.size)
        energy = act[src] * weight * decay * mu_of[kind]
        offer = (energy >= threshold) & (energy > act[tgt])
        o_src, o_tgt, o_kind, o_w, o_e = (
            src[offer],
            tgt[offer],
            kind[offer],
            weight[offer],
            energy[offer],
        )
        _offer(waiting, o_src, o_tgt, o_kind, o_w, o_e, rank)
        candidates = waiting.nodes()
        if candidates.size == 0:
            result.stopped = "threshold" if seen_edge else "exhausted"
            return result, steps_read, edges_read
        # Strongest first, ties by id: the order spread() lights them in.
        candidates = candidates[np.lexsort((rank[candidates], -waiting.energy[candidates]))]
        fresh = ~is_lit[candidates]
        room = max(node_budget - lit_count, 0)
        if per_step:
            room = min(room, per_step)
        admitted_fresh = np.cumsum(fresh) <= room
        chosen = candidates[~fresh | admitted_fresh]
        lit_count += int(np.count_nonzero(fresh & admitted_fresh))
        w_src = waiting.source[chosen]
        w_kind = waiting.kind[chosen]
        w_weight = waiting.weight[chosen]
        w_energy = waiting.energy[chosen]
        act[chosen] = w_energy
        is_lit[chosen] = True
        waiting.energy[chosen] = -np.inf
        names = [ids[i] for i in chosen.tolist()]
        sources = [ids[i] for i in w_src.tolist()]
        kinds = [KINDS[k] for k in w_kind.tolist()]
        for node, source, k, w, a in zip(
            names, sources, kinds, w_weight.tolist(), w_energy.tolist(), strict=True
        ):
            result.activation[node] = a
            result.steps.append(Step(t, node, source, k, w, a))
        wave.lit = names
        wave.waiting = int(waiting.nodes().size)
        wave.carried = _carried(
            graph, chosen, (w_src, w_kind, w_weight, w_energy), (o_src, o_tgt, o_kind, o_w, o_e)
        )
        result.waves.append(wave)
        frontier, frontier_names = chosen, names
        if lit_count >= node_budget:
            result.stopped = "node_budget"
            return result, steps_read, edges_read
    result.stopped = "steps"
    return result, steps_read, edges_read


def _offer(waiting: _Waiting, src, tgt, kind, weight, energy, rank) -> None:
    """Keep, per target, the better of what waits and the best edge offered now:
    more energy, then the lexically first (source, kind), as spread()'s `_better`."""
    if tgt.size == 0:
        return
    order = np.lexsort((kind, rank[src], -energy, tgt))
    tgt_sorted = tgt[order]
    first = np.ones(tgt_sorted.size, bool)
    first[1:] = tgt_sorted[1:] != tgt_sorted[:-1]
    best = order[first]
    nodes = tgt[best]
    e, s, k = energy[best], src[best], kind[best]
    held_e, held_s = waiting.energy[nodes], waiting.source[nodes]
    held_rank = np.where(held_s >= 0, rank[np.maximum(held_s, 0)], -1)
    better = (e > held_e) | (
        (e == held_e)
        & ((rank[s] < held_rank) | ((rank[s] == held_rank) & (k < waiting.kind[nodes])))
    )
    nodes, best = nodes[better], best[better]
    waiting.energy[nodes] = energy[best]
    waiting.source[nodes] = src[best]
    waiting.kind[nodes] = kind[best]
    waiting.weight[nodes] = weight[best]


def _carried(graph: LinkGraph, chosen, winners, offered) -> list[Carried]:
    """The links that carried energy into this step's nodes: each one's winning
    edge, then the strongest others offered now, at most CARRIED_PER_LIT a node."""
    ids, rank = graph.ids, graph.order()
    w_src, w_kind, w_weight, w_energy = winners
    o_src, o_tgt, o_kind, o_w, o_e = offered
    slot = np.full(len(ids), -1, np.int64)
    slot[chosen] = np.arange(chosen.size)
    into = slot[o_tgt] if o_tgt.size else np.zeros(0, np.int64)
    mine = into >= 0
    s = np.maximum(into, 0)
    is_winner = (
        mine
        & (o_src == w_src[s])
        & (o_kind == w_kind[s])
        & (o_w == w_weight[s])
        & (o_e == w_energy[s])
    )
    others = np.flatnonzero(mine & ~is_winner)
    others = others[np.lexsort((rank[o_tgt[others]], rank[o_src[others]], -o_e[others]))]
    others = others[: max(CARRIED_PER_LIT - 1, 0) * chosen.size]
    src = np.concatenate([w_src, o_src[others]])
    tgt = np.concatenate([chosen, o_tgt[others]])
    kind = np.concatenate([w_kind, o_kind[others]])
    weight = np.concatenate([w_weight, o_w[others]])
    energy = np.concatenate([w_energy, o_e[others]])
    order = np.lexsort((rank[tgt], rank[src], -energy))
    return [
        Carried(ids[a], ids[b], KINDS[k], w, e)
        for a, b, k, w, e in zip(
            src[order].tolist(),
            tgt[order].tolist(),
            kind[order].tolist(),
            weight[order].tolist(),
            energy[order].tolist(),
            strict=True,
        )
    ]
