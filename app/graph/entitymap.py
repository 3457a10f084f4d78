"""The entity map: entities as nodes, co-mentions as edges. Read in the runner, no Qt.

An entity's size says how many facts mention it, its colour its type; an edge
says how many active facts mention both ends. Each entity keeps only its
`EDGES_PER_ENTITY` strongest co-mentions: at a few thousand entities the full
pair list is a hairball, and a layout over it takes minutes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from app.graph.layout import force_layout
from app.graph.model import GraphData

if TYPE_CHECKING:
    from core import Bank, Entity

EDGES_PER_ENTITY = 6


@dataclass(frozen=True)
class EntityMap:
    entities: tuple[Entity, ...]
    graph: GraphData  # node i is entities[i]; edges carry co-mention counts as weights in [0, 1]
    counts: np.ndarray  # co-mentions per edge
    positions: np.ndarray
    pairs_total: int  # co-mentioning pairs before the per-entity cut

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(sorted({e.type for e in self.entities}))

    def index_of(self, name_or_id: str) -> int | None:
        i = self.graph.index.get(name_or_id)
        if i is not None:
            return i
        needle = name_or_id.strip().lower()
        return next((j for j, e in enumerate(self.entities) if e.name.lower() == needle), None)


def strongest_pairs(
    pairs: list[tuple[str, str, int]], per_entity: int = EDGES_PER_ENTITY
) -> list[tuple[str, str, int]]:
    """The pairs that are among the `per_entity` strongest of either end."""
    kept: dict[str, int] = {}
    out = []
    for a, b, n in sorted(pairs, key=lambda p: (-p[2], p[0], p[1])):
        if kept.get(a, 0) < per_entity or kept.get(b, 0) < per_entity:
            kept[a] = kept.get(a, 0) + 1
            kept[b] = kept.get(b, 0) + 1
            out.append((a, b, n))
    return out


def build(entities: list[Entity], pairs: list[tuple[str, str, int]]) -> EntityMap:
    kept = strongest_pairs(pairs)
    top = max((n for _a, _b, n in kept), default=1)
    graph = GraphData.build(
        [(e.id, "world") for e in entities],
        [(a, b, "entity", n / top) for a, b, n in kept],
        {e.id: e.name for e in entities},
    )
    count_of = {(min(a, b), max(a, b)): n for a, b, n in kept}
    counts = np.array(
        [
            count_of.get((min(graph.ids[s], graph.ids[d]), max(graph.ids[s], graph.ids[d])), 0)
            for s, d in zip(graph.src.tolist(), graph.dst.tolist(), strict=True)
        ],
        dtype=np.int64,
    )
    by_id = {e.id: e for e in entities}
    ordered = tuple(by_id[i] for i in graph.ids)
    return EntityMap(ordered, graph, counts, force_layout(graph), len(pairs))


def read(bank: Bank) -> EntityMap:
    """Runs in the runner: the bank's active entities and their co-mentions, laid out."""
    return build(bank.entities(), bank.entity_comentions())
