"""Spreading activation for the graph pane: re-run it, and turn it into frames.

The rule is the engine's (`core.recall.activation.spread`, a pure function):

    A(j, t+1) = max over edges (i, j) of A(i, t) · w(i, j) · δ · μ(kind)

The studio re-runs it over the neighbourhood it shows when a person moves the
δ or μ sliders or hides a link kind, so what the pane animates is exactly what
recall would compute on that graph. Pure: no Qt.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.graph.model import LINK_KINDS, GraphData
from core import adjacency, spread  # the engine's own activation, pure and Qt-free

# The engine's defaults (core/config.py) for a graph with no bank behind it.
DEFAULT_PARAMS: dict[str, Any] = {
    "decay": 0.8,
    "mu": {"causal": 1.0, "entity": 0.9, "temporal": 0.6, "semantic": 0.6},
    "threshold": 0.05,
    "max_steps": 3,
    "node_budget": 200,
}


def params_from_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Activation parameters from a trace's `settings` (recall.* keys), defaults elsewhere."""
    out = {**DEFAULT_PARAMS, "mu": dict(DEFAULT_PARAMS["mu"])}
    if "recall.activation_decay" in settings:
        out["decay"] = float(settings["recall.activation_decay"])
    if "recall.activation_threshold" in settings:
        out["threshold"] = float(settings["recall.activation_threshold"])
    if "recall.activation_steps" in settings:
        out["max_steps"] = int(settings["recall.activation_steps"])
    if "recall.activation_node_budget" in settings:
        out["node_budget"] = int(settings["recall.activation_node_budget"])
    for kind in LINK_KINDS:
        key = f"recall.mu_{kind}"
        if key in settings:
            out["mu"][kind] = float(settings[key])
    return out


def rerun(
    graph: GraphData,
    seeds: Mapping[str, float],
    *,
    decay: float,
    mu: Mapping[str, float],
    threshold: float = DEFAULT_PARAMS["threshold"],
    max_steps: int = DEFAULT_PARAMS["max_steps"],
    node_budget: int = DEFAULT_PARAMS["node_budget"],
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
    )
    return result.to_dict()


@dataclass
class Timeline:
    """Activation as arrays, one row per step (row 0: the seeds).

    `levels[s, i]` is node i's activation after step s (a node keeps the highest
    it reached); `carried[s]` the edge indices that carried activation in step s
    (empty for s = 0)."""

    levels: np.ndarray
    carried: list[np.ndarray]
    lit_order: list[str] = field(default_factory=list)

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

    @classmethod
    def empty(cls, node_count: int) -> Timeline:
        return cls(np.zeros((1, node_count), dtype=np.float32), [np.zeros(0, dtype=np.int64)])


def timeline(graph: GraphData, activation: Mapping[str, Any] | None) -> Timeline:
    """Frames from an activation record (the trace's, or `rerun`'s). Steps naming
    nodes or edges the graph does not show are left out of the picture."""
    n = graph.node_count
    if not activation:
        return Timeline.empty(n)
    edge_at = {
        (min(a, b), max(a, b), k): e
        for e, (a, b, k) in enumerate(
            zip(graph.src.tolist(), graph.dst.tolist(), graph.kind.tolist(), strict=True)
        )
    }
    current = np.zeros(n, dtype=np.float32)
    for seed in activation.get("seeds", []):
        i = graph.index.get(seed["node"])
        if i is not None:
            current[i] = max(current[i], float(seed["activation"]))
    rows = [current.copy()]
    carried: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    lit: list[str] = []
    by_step: dict[int, list[Mapping[str, Any]]] = {}
    for step in activation.get("steps", []):
        by_step.setdefault(int(step["step"]), []).append(step)
    for t in sorted(by_step):
        edges: list[int] = []
        for step in by_step[t]:
            j, i = graph.index.get(step["node"]), graph.index.get(step["from"])
            if j is None:
                continue
            current[j] = max(current[j], float(step["activation"]))
            lit.append(step["node"])
            kind = LINK_KINDS.index(step["edge"]) if step["edge"] in LINK_KINDS else -1
            if i is not None:
                e = edge_at.get((min(i, j), max(i, j), kind))
                if e is not None:
                    edges.append(e)
        rows.append(current.copy())
        carried.append(np.array(sorted(set(edges)), dtype=np.int64))
    return Timeline(np.stack(rows), carried, lit)
