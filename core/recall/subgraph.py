"""A graph neighbourhood in one call: the units near some seeds and the links
among them, read from the bank's in-memory link graph (core/recall/linkgraph.py).

The studio's graph views used to walk `Bank.links` one unit at a time (a view
of a query made ~76 calls, one per unit); over a network each is a round trip.
Here the walk runs beside the arrays recall spreads over, under their lock, and
one query reads the units reached.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.recall.linkgraph import link_graph
from core.store.units import get_units
from core.types import Subgraph, UnitStatus


def subgraph(handle, seeds: Sequence[str], hops: int, limit: int, context: int) -> Subgraph:
    """From `seeds` (in order), the units up to `hops` links away, breadth first
    and strongest link first, `limit` at most; then the `context` units one link
    from those with the strongest such link; and every link among them. A retracted
    or hidden unit is walked through (its links stay) but not returned."""
    store = handle.store
    graph = link_graph(store)
    with graph.lock:
        graph.refresh(store.reader(), store.generation)
        reached = dict.fromkeys(seeds)
        frontier = list(reached)
        edges: dict[str, list] = {}

        def leaving(nodes: Sequence[str]) -> None:
            wanted = [n for n in nodes if n not in edges]
            for node in wanted:
                edges[node] = []
            for edge in graph.neighbours(wanted, entity_fan=True):
                edges[edge.source].append(edge)
            for node in wanted:  # strongest first, as drawn (ties as `Bank.links` breaks them)
                edges[node].sort(key=lambda e: (-e.weight, e.kind, e.target))

        for _ in range(max(0, hops)):
            if not frontier or len(reached) >= limit:
                break
            leaving(frontier)
            nxt = []
            for node in frontier:
                for edge in edges[node]:
                    if edge.target not in reached and len(reached) < limit:
                        reached[edge.target] = None
                        nxt.append(edge.target)
            frontier = nxt
        around: list[str] = []
        if context > 0:
            leaving(list(reached))
            outside: dict[str, float] = {}
            for node in reached:
                for edge in edges[node]:
                    if edge.target not in reached:
                        outside[edge.target] = max(outside.get(edge.target, 0.0), edge.weight)
            around = sorted(outside, key=lambda i: (-outside[i], i))[:context]
        kept = [*reached, *around]
        leaving(list(reached))
    units = get_units(store.reader(), kept)
    shown = [units[i] for i in kept if i in units and units[i].status == UnitStatus.ACTIVE]
    ids = {u.id for u in shown}
    # The links of what was reached, to anything shown: among the context units only
    # those through the reached ones (a view stays readable).
    links = tuple(
        (e.source, e.target, e.kind, float(e.weight))
        for node in reached
        if node in ids
        for e in edges[node]
        if e.target in ids
    )
    return Subgraph(tuple(shown), links, tuple(i for i in around if i in ids))
