"""Spreading activation over the memory graph, as a pure function.

Seeds start with their activation (recall uses the semantic similarity of the
best hits). Each step spreads from the frontier — the nodes whose activation
rose in the previous step — along every edge touching them:

    A(j, t+1) = max over edges (i, j) of A(i, t) · w(i, j) · δ · μ(kind)

A node keeps the highest activation it ever reached; it joins the next
frontier only when a step raised it. Spreading is a process, wave by wave:
every node an edge offers energy (at least the threshold, more than it has)
becomes a candidate, and each step lights at most `step_budget` new nodes,
strongest candidates first; the others wait and compete again in the next
step, against what the new frontier offers. So a strong node two links away
can be lit before a weak one next to a seed, and the picture grows in
distinct steps instead of all at once. Spreading stops when no candidate is
left (no edge lifts a node to the threshold), after `max_steps` steps, or
once `node_budget` nodes are lit.

Each step is recorded as a `Wave`: the frontier that spread, the links that
carried energy into the nodes it lit (with the energy), the nodes lit, and
how many candidates were left waiting. The studio replays these waves; it
does not re-simulate them.

The graph is given as a `neighbours(frontier)` function returning the edges
that touch the frontier, oriented away from it; the studio and the tests back
it with an in-memory adjacency (`adjacency`). Being pure, the studio can re-run
it live when a person moves the δ and μ sliders. Recall runs the same rule
over the bank's link arrays in numpy (arrayspread.py), which must give exactly
what this gives.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple


class Edge(NamedTuple):
    """An edge oriented from `source` (a frontier node) to `target`.

    A named tuple, not a dataclass: recall builds tens of thousands a query,
    and a tuple is several times cheaper to make."""

    source: str
    target: str
    kind: str
    weight: float


class Step(NamedTuple):
    """`node` lit at `step` to `activation`, through `kind` edge of `weight` from `source`.

    Named tuples, as `Edge`: a recall's trace holds hundreds of steps and carried
    links, and a frozen dataclass costs several times more to make (~2 ms a recall)."""

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


class Carried(NamedTuple):
    """Energy that flowed along one link in one step: `energy` reached `target`."""

    source: str
    target: str
    kind: str
    weight: float
    energy: float

    def to_dict(self) -> dict:
        return {
            "from": self.source,
            "to": self.target,
            "edge": self.kind,
            "weight": self.weight,
            "energy": self.energy,
        }


@dataclass
class Wave:
    """One step of the spreading: the frontier that spread, the links that
    carried energy into nodes lit by the end, the nodes lit (or raised) in this
    step, and how many candidates were left waiting by the per-step budget."""

    step: int
    frontier: list[str]
    carried: list[Carried] = field(default_factory=list)
    lit: list[str] = field(default_factory=list)
    waiting: int = 0

    def to_dict(self) -> dict:
        return {
            "step": self.step,
            "frontier": list(self.frontier),
            "carried": [c.to_dict() for c in self.carried],
            "lit": list(self.lit),
            "waiting": self.waiting,
        }


@dataclass
class Activation:
    seeds: dict[str, float]
    activation: dict[str, float]  # every lit node, seeds included
    steps: list[Step] = field(default_factory=list)
    stopped: str = ""  # no_seeds | exhausted | threshold | steps | node_budget
    waves: list[Wave] = field(default_factory=list)
    step_budget: int = 0  # new nodes a step may light (0: no limit)
    node_budget: int = 0

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
            "waves": [w.to_dict() for w in self.waves],
            "stopped": self.stopped,
            "lit": len(self.activation),
            "step_budget": self.step_budget,
            "node_budget": self.node_budget,
        }


Neighbours = Callable[[Collection[str]], Iterable[Edge]]
# Links recorded per wave at most, strongest first, as a multiple of the nodes
# it lit: enough to draw every path that mattered, bounded for the trace's size.
CARRIED_PER_LIT = 4


def _better(a: float, edge: Edge, current: tuple[float, Edge] | None) -> bool:
    # Ties between edges go to the lexically first source, so runs repeat exactly.
    return (
        current is None
        or a > current[0]
        or (a == current[0] and (edge.source, edge.kind) < (current[1].source, current[1].kind))
    )


def start(
    seeds: Mapping[str, float], threshold: float, node_budget: int, step_budget: int
) -> Activation:
    """The activation before the first step: the seeds that reach the threshold,
    the weakest dropped beyond the node budget."""
    lit = {n: float(a) for n, a in seeds.items() if a >= threshold}
    ordered = sorted(lit.items(), key=lambda pair: (-pair[1], pair[0]))[: max(node_budget, 0)]
    return Activation(
        seeds=dict(ordered),
        activation=dict(ordered),
        step_budget=int(step_budget) if step_budget and step_budget > 0 else 0,
        node_budget=int(node_budget),
    )


def spread(
    seeds: Mapping[str, float],
    neighbours: Neighbours,
    *,
    decay: float,
    mu: Mapping[str, float],
    threshold: float,
    max_steps: int,
    node_budget: int,
    step_budget: int = 0,
) -> Activation:
    """Spread activation from `seeds`; see the module docstring for the rule."""
    result = start(seeds, threshold, node_budget, step_budget)
    lit, per_step = result.seeds, result.step_budget
    if not lit:
        result.stopped = "no_seeds"
        return result
    activation = result.activation
    # Candidates offered energy but not lit yet (the per-step budget held them back):
    # node -> (best energy offered, the edge that offered it).
    waiting: dict[str, tuple[float, Edge]] = {}
    frontier = list(lit)
    for t in range(1, max_steps + 1):
        wave = Wave(t, list(frontier))
        offered: list[tuple[float, Edge]] = []
        seen_edge = False
        for edge in neighbours(frontier):
            if edge.source not in activation or edge.target == edge.source:
                continue
            seen_edge = True
            a = activation[edge.source] * edge.weight * decay * mu.get(edge.kind, 0.0)
            if a < threshold or a <= activation.get(edge.target, 0.0):
                continue
            offered.append((a, edge))
            if _better(a, edge, waiting.get(edge.target)):
                waiting[edge.target] = (a, edge)
        if not waiting:
            # "exhausted": the frontier has no edges; "threshold": none lifts a node enough.
            result.stopped = "threshold" if seen_edge else "exhausted"
            return result
        frontier = []
        new = 0
        for node, (a, edge) in sorted(waiting.items(), key=lambda item: (-item[1][0], item[0])):
            if node not in activation:
                if len(activation) >= node_budget or (per_step and new >= per_step):
                    continue
                new += 1
            activation[node] = a
            result.steps.append(Step(t, node, edge.source, edge.kind, edge.weight, a))
            wave.lit.append(node)
            frontier.append(node)
        # The links that carried energy into this step's nodes: the winning one of
        # each (offered now, or in an earlier step if the node waited), then the
        # strongest others offered now.
        winners = [waiting.pop(node) for node in wave.lit]
        wave.waiting = len(waiting)
        lit_now, winner_set = set(wave.lit), set(winners)
        others = sorted(
            (pair for pair in offered if pair[1].target in lit_now and pair not in winner_set),
            key=lambda pair: (-pair[0], pair[1].source, pair[1].target),
        )
        carried = sorted(
            winners + others[: max(CARRIED_PER_LIT - 1, 0) * len(winners)],
            key=lambda pair: (-pair[0], pair[1].source, pair[1].target),
        )
        wave.carried = [Carried(e.source, e.target, e.kind, e.weight, a) for a, e in carried]
        result.waves.append(wave)
        # A full budget ends the spreading: later steps could only re-weigh lit nodes.
        if len(activation) >= node_budget:
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
