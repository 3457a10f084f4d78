"""Force-layout seconds and quality: exact repulsion (the old way) against the grid.

For each graph both layouts run in this one process, so the ratio holds under
whatever else the machine is doing:

- `random 1k/5k`, `random 10k/50k`: benchmarks/graph_fps.py's random graphs;
- `entity map 3k`: an entity map built by app/graph/entitymap.py from
  3,000 entities in topics of 30 and 12,000 facts that mention 2–4 of them
  (see `entity_map`).

"exact" is `force_layout(graph, exact_limit=∞)`, the layout before the grid
existed; "grid" is `force_layout(graph)`. Quality, for each (lower is better):

- `edge_ratio`: mean edge length / mean distance between random node pairs —
  how much closer linked nodes sit than any two;
- `crowded`: share of nodes whose nearest other node is nearer than a quarter
  of the even spacing √(area / n) — overlapping discs.

    .venv/bin/python benchmarks/graph_layout.py [--only 3k] [--json out.json] [--render DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from app.graph.entitymap import EntityMap  # noqa: E402
from app.graph.entitymap import build as build_entity_map  # noqa: E402
from app.graph.layout import force_layout  # noqa: E402
from app.graph.model import GraphData  # noqa: E402
from benchmarks.graph_fps import random_graph  # noqa: E402
from core import Entity  # noqa: E402


def entity_map(entities: int = 3000, facts: int = 12000, seed: int = 11) -> EntityMap:
    """An entity map as app/graph/entitymap.py builds it from a bank whose facts
    mention 2–4 entities each. Entities belong to topics of about 30 (a project,
    a trip, a team); a fact mentions entities of one topic, now and then one of
    the few everybody mentions. Within a topic and overall, popularity is skewed."""
    rng = np.random.default_rng(seed)
    topic_size = 30
    topics = entities // topic_size
    within = 1.0 / np.arange(1, topic_size + 1) ** 0.8
    within /= within.sum()
    famous = 12  # the user, the assistant, the company…
    counts: dict[tuple[int, int], int] = {}
    mentions = np.zeros(entities, dtype=np.int64)
    for _ in range(facts):
        topic = int(rng.integers(0, topics))
        size = int(rng.integers(2, 5))
        picked = topic * topic_size + rng.choice(topic_size, size=size, p=within)
        if rng.random() < 0.2:
            picked[0] = rng.integers(0, famous)
        mentioned = np.unique(picked)
        mentions[mentioned] += 1
        for i, a in enumerate(mentioned.tolist()):
            for b in mentioned[i + 1 :].tolist():
                counts[(a, b)] = counts.get((a, b), 0) + 1
    kinds = ("person", "place", "project", "organisation", "other")
    people = [
        Entity(f"entity-{i:05d}", f"name {i}", kinds[i % len(kinds)], mention_count=int(m))
        for i, m in enumerate(mentions.tolist())
    ]
    pairs = [(people[a].id, people[b].id, n) for (a, b), n in counts.items()]
    return build_entity_map(people, pairs)


def edge_ratio(graph: GraphData, pos: np.ndarray, samples: int = 200_000) -> float:
    rng = np.random.default_rng(0)
    edge = np.linalg.norm(pos[graph.src] - pos[graph.dst], axis=1).mean()
    a = rng.integers(0, graph.node_count, samples)
    b = rng.integers(0, graph.node_count, samples)
    pair = np.linalg.norm(pos[a] - pos[b], axis=1)[a != b].mean()
    return float(edge / pair)


def crowded(pos: np.ndarray, block: int = 1024) -> float:
    n = pos.shape[0]
    span = pos.max(axis=0) - pos.min(axis=0)
    spacing = math.sqrt(float(span[0] * span[1]) / n)
    nearest = np.empty(n)
    for start in range(0, n, block):
        d2 = ((pos[start : start + block, None, :] - pos[None, :, :]) ** 2).sum(axis=2)
        d2[np.arange(d2.shape[0]), np.arange(start, start + d2.shape[0])] = np.inf
        nearest[start : start + block] = np.sqrt(d2.min(axis=1))
    return float((nearest < 0.25 * spacing).mean())


def measure(name: str, graph: GraphData) -> tuple[dict, dict[str, np.ndarray]]:
    row: dict = {"graph": name, "nodes": graph.node_count, "edges": graph.edge_count}
    laid: dict[str, np.ndarray] = {}
    for label, limit in (("exact", sys.maxsize), ("grid", None)):
        t0, c0 = time.perf_counter(), time.process_time()
        pos = force_layout(graph) if limit is None else force_layout(graph, exact_limit=limit)
        row[f"{label}_s"] = round(time.perf_counter() - t0, 2)
        # CPU seconds: what the layout costs with the machine's other load taken out.
        row[f"{label}_cpu_s"] = round(time.process_time() - c0, 2)
        row[f"{label}_edge_ratio"] = round(edge_ratio(graph, pos), 4)
        row[f"{label}_crowded"] = round(crowded(pos), 4)
        laid[label] = pos
    row["identical"] = bool(np.array_equal(laid["exact"], laid["grid"]))
    row["speedup"] = round(row["exact_s"] / max(row["grid_s"], 1e-9), 1)
    row["speedup_cpu"] = round(row["exact_cpu_s"] / max(row["grid_cpu_s"], 1e-9), 1)
    print(json.dumps(row), flush=True)
    return row, laid


def render(
    folder: Path, key: str, made: GraphData | EntityMap, laid: dict[str, np.ndarray]
) -> None:
    """Each layout drawn as the studio draws it, 1440×900: the entity map's view
    for the entity map, the graph widget for the others."""
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from app.graph.entity_pane import EntityMapView
    from app.graph.widget import GraphWidget

    app = QApplication.instance() or QApplication([])
    folder.mkdir(parents=True, exist_ok=True)
    for label, pos in laid.items():
        if isinstance(made, EntityMap):
            widget = EntityMapView()
            widget.resize(1440, 900)
            widget.show()
            widget.set_map(replace(made, positions=pos))
        else:
            widget = GraphWidget()
            widget.resize(1440, 900)
            widget.show()
            widget.show_graph(made, positions=pos)
        app.processEvents()
        widget.grab().save(str(folder / f"layout-{key}-{label}.png"))
        widget.close()
        widget.deleteLater()
        app.processEvents()


GRAPHS: dict[str, tuple[str, Callable[[], GraphData | EntityMap]]] = {
    "1k": ("random 1k/5k", lambda: random_graph(1000, 5000)),
    "3k": ("entity map 3k", entity_map),
    "10k": ("random 10k/50k", lambda: random_graph(10_000, 50_000)),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(GRAPHS), action="append")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--render", type=Path, help="also draw each layout to PNG in this folder")
    args = parser.parse_args()
    # Free one large array first: glibc then serves later blocks of up to 32 MB
    # from the heap instead of fresh, page-faulting mmaps. Without it the first
    # layout timed pays those faults and looks 2× slower than the very same
    # code run second (seen on the 1k graph, below the exact limit).
    np.ones(4_000_000).sum()
    rows = []
    for key in args.only or GRAPHS:
        name, make = GRAPHS[key]
        made = make()
        graph = made.graph if isinstance(made, EntityMap) else made
        row, laid = measure(name, graph)
        rows.append(row)
        if args.render:
            render(args.render, key, made, laid)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
