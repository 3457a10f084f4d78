"""Frames per second of the activation animation at 1,000 nodes and 5,000 edges.

Offscreen: builds a random graph (fixed seed), lays it out, runs spreading
activation over it with the engine's rule, then plays N frames through the
real widget — each frame updates node sizes and brushes as whole arrays and
the lit edges per step — and forces a full repaint of the view every frame.
The target is 30 frames per second.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/graph_fps.py [--frames 300]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from PySide6.QtCore import QEvent, QObject  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.graph.activation import rerun  # noqa: E402
from app.graph.layout import force_layout, seed_positions  # noqa: E402
from app.graph.model import LINK_KINDS, NETWORKS, GraphData  # noqa: E402
from app.graph.widget import GraphWidget  # noqa: E402


class PaintCounter(QObject):
    """Counts the view's paint events, to be sure every frame was really drawn."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, _obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def random_graph(nodes: int, edges: int, seed: int = 7) -> GraphData:
    rng = np.random.default_rng(seed)
    ids = [f"unit-{i:05d}" for i in range(nodes)]
    pairs = [(u, NETWORKS[int(rng.integers(0, len(NETWORKS)))]) for u in ids]
    links = []
    distinct: set[tuple[int, int, str]] = set()  # kept as it grows: 50,000 edges in seconds
    while len(distinct) < edges:
        a, b = rng.integers(0, nodes, 2)
        if a != b:
            kind = LINK_KINDS[int(rng.integers(0, len(LINK_KINDS)))]
            links.append((ids[a], ids[b], kind, float(rng.uniform(0.4, 1.0))))
            distinct.add((min(a, b), max(a, b), kind))
    labels = {u: f"fact {i}: something the agent remembers" for i, u in enumerate(ids)}
    return GraphData.build(pairs, links, labels)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--edges", type=int, default=5000)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument(
        "--seed-layout",
        action="store_true",
        help="place nodes at their seed positions instead of the force layout "
        "(measures drawing alone; benchmarks/graph_layout.py measures the layout)",
    )
    args = parser.parse_args()

    app = QApplication.instance() or QApplication([])
    graph = random_graph(args.nodes, args.edges)
    t0 = time.perf_counter()
    positions = seed_positions(graph.ids) if args.seed_layout else force_layout(graph)
    layout_s = time.perf_counter() - t0

    seeds = {graph.ids[i]: 0.9 - 0.05 * i for i in range(5)}
    t0 = time.perf_counter()
    activation = rerun(
        graph, seeds, decay=0.8, mu={k: 0.9 for k in LINK_KINDS}, max_steps=4, node_budget=1000
    )
    rerun_ms = (time.perf_counter() - t0) * 1000

    widget = GraphWidget()
    widget.resize(args.width, args.height)
    widget.show()
    widget.show_graph(graph, activation=activation, positions=positions)
    widget.player.loop = True
    app.processEvents()

    paints = PaintCounter()
    widget.view.viewport().installEventFilter(paints)
    player = widget.player
    player.seek(0)
    app.processEvents()
    paints.count = 0
    frames = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    while frames < args.frames:
        player.advance(1.0)  # one frame: the arrays are updated through frame_changed
        app.processEvents()  # Qt paints the changed scene, as it would between timer ticks
        frames += 1
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    fps = frames / elapsed
    if paints.count < frames:
        print(f"warning: {paints.count} paints for {frames} frames", file=sys.stderr)

    result = {
        "nodes": graph.node_count,
        "edges": graph.edge_count,
        "lit": activation["lit"],
        "steps": widget.timeline.steps,
        "frames": frames,
        "paints": paints.count,
        "seconds": round(elapsed, 3),
        "fps": round(fps, 1),
        # Frames per CPU second: what the machine could do unshared (others' load excluded).
        "fps_cpu": round(frames / cpu, 1) if cpu > 0 else None,
        "layout_s": round(layout_s, 2),
        "rerun_ms": round(rerun_ms, 1),
        "size": f"{args.width}x{args.height}",
        "layout": "seed" if args.seed_layout else "force",
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    widget.close()
    # Delete the Qt objects while the interpreter is whole: left to interpreter
    # shutdown, PySide6 and pyqtgraph may tear down in an order that crashes.
    widget.deleteLater()
    app.processEvents()
    del widget, player
    return 0 if fps >= 30 else 1


if __name__ == "__main__":
    sys.exit(main())
