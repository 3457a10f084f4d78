"""Spreading activation over the memory graph, as a pure function.

Seeds start with their activation (recall uses the semantic similarity of the
best hits). Each step spreads from the frontier — the nodes whose activation
rose in the previous step — along every edge touching them:

    A(j, t+1) = max over edges (i, j) of A(i, t) · w(i, j) · δ · μ(kind)

A node keeps the highest activation it ever reached; it joins the next
frontier only when this step raised it. Spreading stops when no edge lifts a
node to the threshold, after `max_steps` steps, or once `node_budget` nodes
are lit (the strongest candidates of that step are taken first).

The graph is given as a `neighbours(frontier)` function returning the edges
that touch the frontier, oriented away from it. Recall backs it with one SQL
query per step (only the frontier's adjacency is ever loaded); the studio and
the tests back it with an in-memory adjacency (`adjacency`). Being pure, the
studio can re-run it live when a person moves the δ and μ sliders.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Edge:
    """An edge oriented from `source` (a frontier node) to `target`."""

    source: str
    target: str
    kind: str
    weight: float


@dataclass(frozen=True)
class Step:
    """`node` lit at `step` to `activation`, through `kind` edge of `weight` from `source`."""

    step: int
    node: str
    source: str
    kind: str
    weight: float
    activation: float

    def to_dict(self) -> dict:
        return {
            "step": self.step,
            "node": self.node,
            "from": self.source,
            "edge": self.kind,
            "weight": self.weight,
            "activation": self.activation,
        }


@dataclass
class Activation:
    seeds: dict[str, float]
    activation: dict[str, float]  # every lit node, seeds included
    steps: list[Step] = field(default_factory=list)
    stopped: str = ""  # no_seeds | exhausted | threshold | steps | node_budget

    def ranked(self, include_seeds: bool = False) -> list[tuple[str, float]]:
        """Lit nodes by activation, strongest first (ties by id, so it is stable)."""
        return sorted(
            (
                (node, a)
                for node, a in self.activation.items()
                if include_seeds or node not in self.seeds
            ),
            key=lambda pair: (-pair[1], pair[0]),
        )

    def to_dict(self) -> dict:
        return {
            "seeds": [{"node": n, "activation": a} for n, a in self.seeds.items()],
            "steps": [s.to_dict() for s in self.steps],
            "stopped": self.stopped,
            "lit": len(self.activation),
        }


Neighbours = Callable[[Collection[str]], Iterable[Edge]]


def spread(
    seeds: Mapping[str, float],
    neighbours: Neighbours,
    *,
    decay: float,
    mu: Mapping[str, float],
    threshold: float,
    max_steps: int,
    node_budget: int,
) -> Activation:
    """Spread activation from `seeds`; see the module docstring for the rule."""
    lit = {n: float(a) for n, a in seeds.items() if a >= threshold}
    # Seeds beyond the node budget are dropped weakest first.
    ordered = sorted(lit.items(), key=lambda pair: (-pair[1], pair[0]))[: max(node_budget, 0)]
    lit = dict(ordered)
    result = Activation(seeds=dict(lit), activation=dict(lit))
    if not lit:
        result.stopped = "no_seeds"
        return result
    frontier = list(lit)
    for t in range(1, max_steps + 1):
        best: dict[str, tuple[float, Edge]] = {}
        seen_edge = False
        for edge in neighbours(frontier):
            if edge.source not in result.activation or edge.target == edge.source:
                continue
            seen_edge = True
            a = result.activation[edge.source] * edge.weight * decay * mu.get(edge.kind, 0.0)
            if a < threshold or a <= result.activation.get(edge.target, 0.0):
                continue
            current = best.get(edge.target)
            # Ties between edges go to the lexically first source, so runs repeat exactly.
            if (
                current is None
                or a > current[0]
                or (
                    a == current[0]
                    and (edge.source, edge.kind) < (current[1].source, current[1].kind)
                )
            ):
                best[edge.target] = (a, edge)
        if not best:
            # "exhausted": the frontier has no edges; "threshold": none lifts a node enough.
            result.stopped = "threshold" if seen_edge else "exhausted"
            return result
        frontier = []
        for node, (a, edge) in sorted(best.items(), key=lambda item: (-item[1][0], item[0])):
            if node not in result.activation and len(result.activation) >= node_budget:
                break
            result.activation[node] = a
            result.steps.append(Step(t, node, edge.source, edge.kind, edge.weight, a))
            frontier.append(node)
        # A full budget ends the spreading: later steps could only re-weigh lit nodes.
        if len(result.activation) >= node_budget:
            result.stopped = "node_budget"
            return result
    result.stopped = "steps"
    return result


def adjacency(links: Iterable[tuple[str, str, str, float]], directed: bool = False) -> Neighbours:
    """An in-memory `neighbours` over (source, target, kind, weight) links.

    Links are undirected unless `directed`: retain lays each link once, and
    relatedness runs both ways."""
    table: dict[str, list[Edge]] = {}
    for source, target, kind, weight in links:
        table.setdefault(source, []).append(Edge(source, target, str(kind), float(weight)))
        if not directed:
            table.setdefault(target, []).append(Edge(target, source, str(kind), float(weight)))

    def neighbours(frontier: Collection[str]) -> list[Edge]:
        return [edge for node in frontier for edge in table.get(node, ())]

    return neighbours
