"""Force-layout seconds and quality: exact repulsion (the old way) against the grid.

For each graph both layouts run in this one process, so the ratio holds under
whatever else the machine is doing:

- `random 1k/5k`, `random 10k/50k`: benchmarks/graph_fps.py's random graphs;
- `entity map 3k`: an entity-map-like graph — 3,000 entities, facts that
  mention 2–4 of them with a skewed popularity, co-mentions cut to each
  entity's strongest as app/graph/entitymap.py does.

"exact" is `force_layout(graph, exact_limit=∞)`, the layout before the grid
existed; "grid" is `force_layout(graph)`. Quality, for each (lower is better):

- `edge_ratio`: mean edge length / mean distance between random node pairs —
  how much closer linked nodes sit than any two;
- `crowded`: share of nodes whose nearest other node is nearer than a quarter
  of the even spacing √(area / n) — overlapping discs.

    .venv/bin/python benchmarks/graph_layout.py [--only 3k] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from app.graph.entitymap import strongest_pairs  # noqa: E402
from app.graph.layout import force_layout  # noqa: E402
from app.graph.model import GraphData  # noqa: E402
from benchmarks.graph_fps import random_graph  # noqa: E402


def entity_map_graph(entities: int = 3000, facts: int = 12000, seed: int = 11) -> GraphData:
    """Co-mentions as a real bank has them: a few popular entities, a long tail."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, entities + 1) ** 0.8
    popularity /= popularity.sum()
    counts: dict[tuple[int, int], int] = {}
    for _ in range(facts):
        mentioned = np.unique(rng.choice(entities, size=int(rng.integers(2, 5)), p=popularity))
        for i, a in enumerate(mentioned.tolist()):
            for b in mentioned[i + 1 :].tolist():
                counts[(a, b)] = counts.get((a, b), 0) + 1
    ids = [f"entity-{i:05d}" for i in range(entities)]
    kept = strongest_pairs([(ids[a], ids[b], n) for (a, b), n in counts.items()])
    top = max(n for _a, _b, n in kept)
    return GraphData.build(
        [(u, "world") for u in ids], [(a, b, "entity", n / top) for a, b, n in kept]
    )


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


def measure(name: str, graph: GraphData) -> dict:
    row: dict = {"graph": name, "nodes": graph.node_count, "edges": graph.edge_count}
    for label, limit in (("exact", sys.maxsize), ("grid", None)):
        t0, c0 = time.perf_counter(), time.process_time()
        pos = force_layout(graph) if limit is None else force_layout(graph, exact_limit=limit)
        row[f"{label}_s"] = round(time.perf_counter() - t0, 2)
        # CPU seconds: what the layout costs with the machine's other load taken out.
        row[f"{label}_cpu_s"] = round(time.process_time() - c0, 2)
        row[f"{label}_edge_ratio"] = round(edge_ratio(graph, pos), 4)
        row[f"{label}_crowded"] = round(crowded(pos), 4)
        if label == "exact":
            exact = pos
        else:
            row["identical"] = bool(np.array_equal(pos, exact))
    row["speedup"] = round(row["exact_s"] / max(row["grid_s"], 1e-9), 1)
    row["speedup_cpu"] = round(row["exact_cpu_s"] / max(row["grid_cpu_s"], 1e-9), 1)
    print(json.dumps(row), flush=True)
    return row


GRAPHS = {
    "1k": ("random 1k/5k", lambda: random_graph(1000, 5000)),
    "3k": ("entity map 3k", entity_map_graph),
    "10k": ("random 10k/50k", lambda: random_graph(10_000, 50_000)),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(GRAPHS), action="append")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    rows = [measure(*GRAPHS[key][:1], GRAPHS[key][1]()) for key in args.only or GRAPHS]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
