"""Spreading activation for the graph pane: replay the trace, or re-run it.

The rule and its defaults are the engine's (`core.spread`, `core.activation_params`):

    A(j, t+1) = max over edges (i, j) of A(i, t) · w(i, j) · δ · μ(kind)

spread wave by wave, at most `step_budget` new nodes a step. What the pane
animates is the trace's record of what recall did (each wave's frontier and
the energy its links carried), replayed with `core.replay_activation`. Only
when a person moves the δ or μ sliders is the rule re-run, over the graph
shown, as a what-if. Pure: no Qt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.graph.model import LINK_KINDS, GraphData
from core import activation_params, adjacency, replay_activation, spread

# The engine's defaults (core/config.py, through the public face): never a copy.
DEFAULT_PARAMS: dict[str, Any] = activation_params()


def params_from_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Activation parameters from recall settings (a bank's config, a trace's
    `settings`): the engine's reading of them, defaults for what is missing."""
    return activation_params(settings)


def rerun(
    graph: GraphData,
    seeds: Mapping[str, float],
    *,
    decay: float,
    mu: Mapping[str, float],
    threshold: float = DEFAULT_PARAMS["threshold"],
    max_steps: int = DEFAULT_PARAMS["max_steps"],
    node_budget: int = DEFAULT_PARAMS["node_budget"],
    step_budget: int = DEFAULT_PARAMS["step_budget"],
    kinds: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Spread from `seeds` over `graph`; the result has the trace's activation layout
    ({seeds, steps, stopped, lit}). Kinds not in `kinds` carry nothing (μ = 0)."""
    allowed = set(LINK_KINDS if kinds is None else kinds)
    factors = {kind: (float(mu.get(kind, 0.0)) if kind in allowed else 0.0) for kind in LINK_KINDS}
    present = {s: a for s, a in seeds.items() if s in graph.index}
    result = spread(
        present,
        adjacency(graph.links()),
        decay=float(decay),
        mu=factors,
        threshold=float(threshold),
        max_steps=int(max_steps),
        node_budget=int(node_budget),
        step_budget=int(step_budget),
    )
    return result.to_dict()


@dataclass
class Timeline:
    """Activation as arrays, one row per step (row 0: the seeds).

    `levels[s, i]` is node i's activation after step s (a node keeps the highest
    it reached); `carried[s]` the edge indices that carried energy in step s
    and `energy[s]` what each carried (empty for s = 0); `frontier[s]` the
    nodes that spread in step s; `paths[s]` the edges that lit a node in
    step s (each lit node's winning link: the path the trail keeps drawn);
    `parent[i]` the node whose link first lit node i (-1 for a seed, or a node
    never lit)."""

    levels: np.ndarray
    carried: list[np.ndarray]
    lit_order: list[str] = field(default_factory=list)
    energy: list[np.ndarray] = field(default_factory=list)
    frontier: list[np.ndarray] = field(default_factory=list)
    paths: list[np.ndarray] = field(default_factory=list)
    parent: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.parent is None:
            self.parent = np.full(self.levels.shape[1], -1, dtype=np.int64)

    @property
    def steps(self) -> int:
        return self.levels.shape[0] - 1

    def frame_count(self, frames_per_step: int) -> int:
        return self.steps * frames_per_step + 1

    def at(self, frame: int, frames_per_step: int) -> tuple[np.ndarray, int, float]:
        """Activation at `frame` (linear between steps), the step being entered and how far."""
        frame = int(np.clip(frame, 0, self.steps * frames_per_step))
        step, offset = divmod(frame, frames_per_step)
        if step >= self.steps:
            return self.levels[-1], self.steps, 1.0
        frac = offset / frames_per_step
        if frac == 0.0:
            return self.levels[step], step, 0.0
        before, after = self.levels[step], self.levels[step + 1]
        return before + (after - before) * np.float32(frac), step + 1, frac

    def lit_after(self, step: int) -> int:
        step = min(max(step, 0), self.steps)
        return int((self.levels[step] > 0).sum())

    def first_lit(self) -> np.ndarray:
        """The wave each node was first lit in (0: a seed; -1: never lit)."""
        lit = self.levels > 0
        return np.where(lit.any(axis=0), lit.argmax(axis=0), -1)

    @classmethod
    def empty(cls, node_count: int) -> Timeline:
        none = np.zeros(0, dtype=np.int64)
        return cls(
            np.zeros((1, node_count), dtype=np.float32),
            [none],
            energy=[np.zeros(0, dtype=np.float32)],
            frontier=[none],
            paths=[none],
        )

    def path_edges(self, upto: int | None = None) -> np.ndarray:
        """The edges that lit a node in steps 1..upto (all steps by default)."""
        parts = self.paths[1 : (self.steps if upto is None else upto) + 1]
        return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def timeline(graph: GraphData, activation: Mapping[str, Any] | None) -> Timeline:
    """Frames replayed from an activation record (the trace's, or `rerun`'s):
    levels from `replay_activation`, and per step the links that carried
    energy as the record names them. Nodes or links the graph does not show
    are left out of the picture."""
    n = graph.node_count
    if not activation:
        return Timeline.empty(n)
    edge_at = {
        (min(a, b), max(a, b), k): e
        for e, (a, b, k) in enumerate(
            zip(graph.src.tolist(), graph.dst.tolist(), graph.kind.tolist(), strict=True)
        )
    }
    index = graph.index
    rows: list[np.ndarray] = []
    for levels in replay_activation(dict(activation)):
        row = np.zeros(n, dtype=np.float32)
        for node, a in levels.items():
            i = index.get(node)
            if i is not None:
                row[i] = a
        rows.append(row)
    steps = len(rows) - 1
    waves = {int(w["step"]): w for w in activation.get("waves", [])}
    by_step: dict[int, list[Mapping[str, Any]]] = {}
    for step in activation.get("steps", []):
        by_step.setdefault(int(step["step"]), []).append(step)
    none = np.zeros(0, dtype=np.int64)
    carried, energy, frontier = [none], [np.zeros(0, dtype=np.float32)], [none]
    paths = [none]
    lit: list[str] = []
    parent = np.full(n, -1, dtype=np.int64)
    reached = {s["node"] for s in activation.get("seeds", [])}

    def edge_of(source: str, target: str, kind: str) -> int | None:
        i, j = index.get(source), index.get(target)
        k = LINK_KINDS.index(kind) if kind in LINK_KINDS else -1
        return edge_at.get((min(i, j), max(i, j), k)) if i is not None and j is not None else None

    for t in range(1, steps + 1):
        wave = waves.get(t)
        # Old traces (no waves) name only the winning link of each lit node.
        links = (
            [(c["from"], c["to"], c["edge"], c["energy"]) for c in wave["carried"]]
            if wave is not None
            else [(s["from"], s["node"], s["edge"], s["activation"]) for s in by_step.get(t, [])]
        )
        found: dict[int, float] = {}
        for source, target, kind, carried_energy in links:
            e = edge_of(source, target, kind)
            if e is not None:
                found[e] = max(found.get(e, 0.0), float(carried_energy))
        order = sorted(found)
        carried.append(np.array(order, dtype=np.int64))
        energy.append(np.array([found[e] for e in order], dtype=np.float32))
        names = (
            wave["frontier"]
            if wave is not None
            else sorted({s["from"] for s in by_step.get(t, [])})
        )
        frontier.append(np.array(sorted(index[x] for x in names if x in index), dtype=np.int64))
        lit += [s["node"] for s in by_step.get(t, [])]
        for s in by_step.get(t, []):
            # The link that first lit a node is its parent's (a later raise keeps it).
            if s["node"] not in reached and s["node"] in index and s["from"] in index:
                parent[index[s["node"]]] = index[s["from"]]
            reached.add(s["node"])
        won = {edge_of(s["from"], s["node"], s["edge"]) for s in by_step.get(t, [])}
        paths.append(np.array(sorted(e for e in won if e is not None), dtype=np.int64))
    return Timeline(np.stack(rows), carried, lit, energy, frontier, paths, parent)
