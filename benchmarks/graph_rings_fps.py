"""Frame rate of the recall replay on rings against the previous layout, in one run.

The graph pane lays a recall's spreading out on rings, one a wave
(app/graph/rings.py); before, it used the force layout of the links drawn.
This plays the same spreading on the same random graph (fixed seed) through
the real widget both ways and reports each one's frames per second and the
ratio rings / force. Runs alternate (force, rings, force, rings, …) so a
neighbour's load on a shared machine falls on both alike; the median of each
is reported. Every frame is a full repaint (counted, as graph_fps.py does).

Two spreadings: the pane's defaults (node budget 200, 40 a wave, 8 waves:
what a recall lights) and a stress case that lights the whole graph.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/graph_rings_fps.py [--frames 240] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from graph_fps import PaintCounter, random_graph  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.graph.activation import DEFAULT_PARAMS, rerun  # noqa: E402
from app.graph.layout import force_layout  # noqa: E402
from app.graph.model import LINK_KINDS  # noqa: E402
from app.graph.widget import GraphWidget  # noqa: E402

CASES = {
    "defaults": {
        "node_budget": DEFAULT_PARAMS["node_budget"],
        "step_budget": DEFAULT_PARAMS["step_budget"],
        "max_steps": DEFAULT_PARAMS["max_steps"],
    },
    "whole graph": {"node_budget": 100_000, "step_budget": 0, "max_steps": 4},
}


def play(app, widget: GraphWidget, frames: int) -> tuple[float, float, int]:
    """Frames per wall second and per CPU second over `frames` frames from the
    first, and the paints counted."""
    paints = PaintCounter()
    widget.view.viewport().installEventFilter(paints)
    player = widget.player
    player.loop = True
    player.seek(0)
    app.processEvents()
    paints.count = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(frames):
        player.advance(1.0)
        app.processEvents()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    widget.view.viewport().removeEventFilter(paints)
    return frames / wall, frames / cpu if cpu > 0 else float("nan"), paints.count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--edges", type=int, default=5000)
    parser.add_argument("--frames", type=int, default=240)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

    app = QApplication.instance() or QApplication([])
    graph = random_graph(args.nodes, args.edges)
    seeds = {graph.ids[i]: 0.9 - 0.05 * i for i in range(5)}
    widget = GraphWidget()
    widget.resize(args.width, args.height)
    widget.show()
    app.processEvents()
    report: dict[str, object] = {
        "nodes": graph.node_count,
        "edges": graph.edge_count,
        "frames": args.frames,
        "rounds": args.rounds,
        "size": f"{args.width}x{args.height}",
        "cases": {},
    }
    for name, budgets in CASES.items():
        activation = rerun(graph, seeds, decay=0.8, mu={k: 0.9 for k in LINK_KINDS}, **budgets)
        # The previous layout: forces over the links that can be drawn (each node's
        # strongest and the energy's path, as the widget lays out a graph with no
        # spreading), computed once, outside the timing.
        widget.show_graph(graph, activation=activation)
        force = force_layout(graph.with_edges(widget._skeleton(graph)))
        runs: dict[str, list[tuple[float, float, int]]] = {"force": [], "rings": []}
        for _ in range(args.rounds):
            for layout in ("force", "rings"):
                positions = force if layout == "force" else None
                widget.show_graph(graph, activation=activation, positions=positions)
                app.processEvents()
                runs[layout].append(play(app, widget, args.frames))
        result = {}
        for layout, measured in runs.items():
            result[layout] = {
                "fps": round(statistics.median(m[0] for m in measured), 1),
                "fps_cpu": round(statistics.median(m[1] for m in measured), 1),
                "paints_min": min(m[2] for m in measured),
            }
        result["lit"] = activation["lit"]
        result["waves"] = widget.timeline.steps
        result["ratio_rings_over_force"] = round(result["rings"]["fps"] / result["force"]["fps"], 3)
        result["ratio_cpu"] = round(result["rings"]["fps_cpu"] / result["force"]["fps_cpu"], 3)
        report["cases"][name] = result
        if min(result[k]["paints_min"] for k in ("force", "rings")) < args.frames:
            print(f"warning ({name}): fewer paints than frames", file=sys.stderr)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    widget.close()
    widget.deleteLater()  # while the interpreter is whole (see graph_fps.py)
    app.processEvents()
    del widget
    return 0


if __name__ == "__main__":
    sys.exit(main())
