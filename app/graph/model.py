"""The graph the studio draws: plain arrays, no Qt.

`GraphData` is what the layout, the activation re-run and the renderer share.
Nodes are unit ids with their network; edges are index pairs with a link kind
and a weight. Everything is a numpy array so a frame can be drawn by indexing
whole arrays rather than touching one item at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core import RecallTrace

NETWORKS: tuple[str, ...] = ("world", "experience", "opinion", "observation")
LINK_KINDS: tuple[str, ...] = ("entity", "temporal", "semantic", "causal")
# Nodes whose network the studio does not know yet (not loaded, or deleted since).
UNKNOWN_NETWORK = len(NETWORKS)


@dataclass(frozen=True)
class GraphData:
    """`ids[i]` is node i; `network[i]` indexes NETWORKS (or UNKNOWN_NETWORK).

    `src[e]`, `dst[e]` index nodes, `kind[e]` indexes LINK_KINDS, `weight[e]` in [0, 1].
    Edges are undirected: retain lays both directions, the graph keeps one."""

    ids: tuple[str, ...]
    network: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    weight: np.ndarray
    labels: tuple[str, ...] = ()
    index: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.index:
            self.index.update({unit_id: i for i, unit_id in enumerate(self.ids)})

    @property
    def node_count(self) -> int:
        return len(self.ids)

    @property
    def edge_count(self) -> int:
        return int(self.src.shape[0])

    def degree(self) -> np.ndarray:
        n = self.node_count
        return np.bincount(self.src, minlength=n) + np.bincount(self.dst, minlength=n)

    def label(self, i: int) -> str:
        return self.labels[i] if self.labels and self.labels[i] else self.ids[i]

    def links(self) -> list[tuple[str, str, str, float]]:
        """(source, target, kind, weight) per edge, as the activation function takes them."""
        return [
            (self.ids[a], self.ids[b], LINK_KINDS[k], float(w))
            for a, b, k, w in zip(
                self.src.tolist(),
                self.dst.tolist(),
                self.kind.tolist(),
                self.weight.tolist(),
                strict=True,
            )
        ]

    @classmethod
    def build(
        cls,
        nodes: Sequence[tuple[str, str]] | Mapping[str, str],
        links: Iterable[tuple[str, str, str, float]],
        labels: Mapping[str, str] | None = None,
    ) -> GraphData:
        """From (unit id, network) pairs and (source, target, kind, weight) links.

        Links to nodes not listed, self-loops and unknown kinds are dropped; a
        link given in both directions (as retain stores it) is kept once, with
        the higher weight."""
        pairs = list(nodes.items()) if isinstance(nodes, Mapping) else list(nodes)
        ids: list[str] = []
        nets: list[int] = []
        seen: dict[str, int] = {}
        for unit_id, network in pairs:
            if unit_id in seen:
                continue
            seen[unit_id] = len(ids)
            ids.append(unit_id)
            nets.append(NETWORKS.index(network) if network in NETWORKS else UNKNOWN_NETWORK)
        best: dict[tuple[int, int, int], float] = {}
        for source, target, kind, weight in links:
            a, b = seen.get(source), seen.get(target)
            kind = str(kind)
            if a is None or b is None or a == b or kind not in LINK_KINDS:
                continue
            key = (min(a, b), max(a, b), LINK_KINDS.index(kind))
            best[key] = max(best.get(key, 0.0), float(weight))
        keys = sorted(best)
        edges = np.array(keys, dtype=np.int64).reshape(-1, 3)
        names = tuple((labels or {}).get(unit_id, "") for unit_id in ids) if labels else ()
        return cls(
            ids=tuple(ids),
            network=np.array(nets, dtype=np.int64),
            src=edges[:, 0].copy(),
            dst=edges[:, 1].copy(),
            kind=edges[:, 2].copy(),
            weight=np.array([best[k] for k in keys], dtype=np.float64),
            labels=names,
        )

    def with_edges(self, keep: np.ndarray) -> GraphData:
        """The same nodes with only the edges `keep` marks."""
        return GraphData(
            self.ids,
            self.network,
            self.src[keep],
            self.dst[keep],
            self.kind[keep],
            self.weight[keep],
            self.labels,
            self.index,
        )

    @classmethod
    def empty(cls) -> GraphData:
        return cls.build([], [])


def strongest_per_node(
    src: np.ndarray, dst: np.ndarray, weight: np.ndarray, eligible: np.ndarray, k: int
) -> np.ndarray:
    """Edges among `eligible` that are one of the `k` heaviest at either end
    (ties by edge index, so the same graph keeps the same edges)."""
    keep = np.zeros(src.shape[0], dtype=bool)
    ids = np.flatnonzero(eligible)
    if k <= 0 or ids.size == 0:
        keep[ids] = True
        return keep
    ends = np.concatenate([src[ids], dst[ids]])
    edges = np.concatenate([ids, ids])
    order = np.lexsort((edges, -np.concatenate([weight[ids], weight[ids]]), ends))
    ends, edges = ends[order], edges[order]
    first = np.flatnonzero(np.r_[True, ends[1:] != ends[:-1]])
    rank = np.arange(ends.size) - np.repeat(first, np.diff(np.r_[first, ends.size]))
    keep[edges[rank < k]] = True
    return keep


def typed_trace(trace: RecallTrace | Mapping[str, Any]) -> RecallTrace:
    """Recall's own trace as it is; a saved trace's JSON read back."""
    return trace if isinstance(trace, RecallTrace) else RecallTrace.from_dict(trace)


def trace_node_ids(trace: RecallTrace | Mapping[str, Any]) -> list[str]:
    """Every unit a recall trace names, in a stable order: activation first, then
    the channels, the fused list and the packing decision."""
    trace = typed_trace(trace)
    ordered: dict[str, None] = {}
    activation = trace.activation or {}
    for seed in activation.get("seeds", []):
        ordered.setdefault(seed["node"], None)
    for step in activation.get("steps", []):
        ordered.setdefault(step["from"], None)
        ordered.setdefault(step["node"], None)
    for channel in trace.channels.values():
        for unit_id in channel.ids:
            ordered.setdefault(unit_id, None)
    for fused in trace.fused:
        ordered.setdefault(fused.id, None)
    return list(ordered)


def trace_links(trace: RecallTrace | Mapping[str, Any]) -> list[tuple[str, str, str, float]]:
    """The edges that carried activation in a trace (the only links a trace names)."""
    activation = typed_trace(trace).activation or {}
    return [
        (step["from"], step["node"], step["edge"], float(step.get("weight", 1.0)))
        for step in activation.get("steps", [])
    ]
