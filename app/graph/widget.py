"""The graph with its controls: playback, find, zoom-to-fit, link filters,
the node and step budgets, δ and μ sliders.

`GraphWidget.show_graph(graph, activation=...)` lays the graph out — a
recall's spreading on rings, one a wave (app/graph/rings.py); a graph with
no activation by forces, in the studio's runner when there is one (a
thousand nodes take a second) — then replays the activation the recall trace
recorded, wave by wave: the seeds, then each wave's new nodes as it lights
them, then the context it did not reach, faint. Fit frames what was lit and
the packed results. Changing a
budget asks the owner to run recall again with it (`recall_rerun`, set by the
Graph pane and the recall debugger) so the replay stays what recall did;
without an owner, and when δ or a μ moves or a link kind is hidden, the
engine's rule is re-run over the graph shown, as a what-if.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSlider,
    QSpinBox,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.graph.activation import DEFAULT_PARAMS, Timeline, rerun, timeline
from app.graph.animation import ActivationPlayer
from app.graph.layout import force_layout
from app.graph.model import LINK_KINDS, NETWORKS, GraphData, strongest_per_node
from app.graph.rings import ring_guides, ring_layout
from app.graph.style import KIND_COLORS, network_color
from app.graph.view import GraphView
from core import CONFIG_SPEC, STOP_REASONS

SPEEDS = (("¼×", 0.25), ("½×", 0.5), ("1×", 1.0), ("2×", 2.0), ("4×", 4.0))
SLIDER_STEPS = 100  # δ in [0, 1] and μ in [0, 2] move in hundredths / fiftieths
# The sliders reach what a bank may be set to (the engine's configuration spec).
DECAY_MAX = float(CONFIG_SPEC["recall.activation_decay"].maximum or 1.0)
MU_MAX = float(max(CONFIG_SPEC[f"recall.mu_{kind}"].maximum or 2.0 for kind in LINK_KINDS))
# Resting links lighter than this are not drawn at first: a recall's subgraph on
# a dense bank holds thousands of weak entity links (the energy's path always shows).
DEFAULT_MIN_WEIGHT = 0.5
# Of the links left, each node keeps its few strongest (a hub's hundred weak
# links hide everything); the links that carried energy are always drawn.
DEFAULT_PER_NODE = 3
# The rings are ellipses as wide as the view, up to this much wider than tall: a
# 1280x720 window leaves the graph about 2.4 times as wide as tall (flatter reads badly).
MAX_ASPECT = 2.2


def _swatch(color: QColor, size: int = 10) -> QLabel:
    pixmap = QPixmap(size, size)
    pixmap.fill(color)
    label = QLabel()
    label.setPixmap(pixmap)
    return label


class _ValueSlider(QWidget):
    """A labelled horizontal slider over [0, maximum] showing its value."""

    moved = Signal(float)

    def __init__(self, label: str, maximum: float, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.maximum = maximum
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setMinimumWidth(70)
        self.name = QLabel(label)
        self.value_label = QLabel("0.00")
        self.value_label.setMinimumWidth(self.value_label.fontMetrics().horizontalAdvance("0.000"))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.name)
        row.addWidget(self.slider, 1)
        row.addWidget(self.value_label)
        self.slider.valueChanged.connect(self._changed)

    def value(self) -> float:
        return self.slider.value() / SLIDER_STEPS * self.maximum

    def set_value(self, value: float, emit: bool = False) -> None:
        blocked = self.slider.blockSignals(not emit)
        self.slider.setValue(
            round(min(max(value, 0.0), self.maximum) / self.maximum * SLIDER_STEPS)
        )
        self.slider.blockSignals(blocked)
        self.value_label.setText(f"{self.value():.2f}")

    def _changed(self, _raw: int) -> None:
        self.value_label.setText(f"{self.value():.2f}")
        self.moved.emit(self.value())


class GraphWidget(QWidget):
    node_clicked = Signal(str)  # a unit id: the shell opens its detail
    layout_ready = Signal()
    activation_changed = Signal(object)  # the activation record now animated
    frame_shown = Signal(int)

    def __init__(
        self,
        parent: QWidget | None = None,
        runner: Any = None,
        layout_fn: Callable[[GraphData], np.ndarray] = force_layout,
        autoplay: bool = False,
    ) -> None:
        super().__init__(parent)
        self.runner = runner
        self.layout_fn = layout_fn  # for a graph with no activation to replay
        # Play a new recall's spreading from its seeds once it is laid out (the
        # panes); else show where it ended (tests, benchmarks, screenshots).
        self.autoplay = autoplay
        self._fixed_positions = False  # given by the caller: kept when the rule re-runs
        self._ringed = False
        self._aspect = 1.6
        self.view = GraphView(self)
        self.player = ActivationPlayer(self)
        self.graph = GraphData.empty()
        self.positions = np.zeros((0, 2))
        self.seeds: dict[str, float] = {}
        self.activation: dict[str, Any] | None = None
        self.params: dict[str, Any] = {**DEFAULT_PARAMS, "mu": dict(DEFAULT_PARAMS["mu"])}
        self.timeline = Timeline.empty(0)
        # Set by an owner that can run recall again: called with recall settings.
        self.recall_rerun: Callable[[dict[str, Any]], None] | None = None
        self._trail: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
        self._won: list[np.ndarray] = [np.zeros(0, dtype=bool)]  # per step: carried[s] that won
        self._pending_marks: list[str] = []
        self._rerun_timer = QTimer(self)
        self._rerun_timer.setSingleShot(True)
        self._rerun_timer.setInterval(40)  # coalesce a slider drag into a few re-runs
        self._rerun_timer.timeout.connect(self.rerun)

        self.view.node_clicked.connect(self.node_clicked)
        self.player.frame_changed.connect(self._show_frame)
        self.player.playing_changed.connect(self._on_playing)

        root = QVBoxLayout(self)
        root.setContentsMargins(0, 0, 0, 0)
        root.setSpacing(4)
        root.addWidget(self._build_playback())
        root.addWidget(self.view, 1)
        self.parameters = self._build_parameters()
        root.addWidget(self.info)
        root.addWidget(self.parameters)
        self._sync_controls()

    # -- building the controls ------------------------------------------------------------

    def _build_playback(self) -> QWidget:
        bar = QWidget()
        rows = QVBoxLayout(bar)
        rows.setContentsMargins(4, 0, 4, 0)
        rows.setSpacing(2)
        row = QHBoxLayout()
        self._tools_row = QHBoxLayout()  # the tools, when compact (see set_compact)
        rows.addLayout(row)
        rows.addLayout(self._tools_row)
        self._main_row = row
        icons = self.style()
        self.back_button = self._tool(
            icons.standardIcon(QStyle.StandardPixmap.SP_MediaSkipBackward),
            "Back",
            "Previous wave of the spreading activation",
        )
        self.play_button = self._tool(
            icons.standardIcon(QStyle.StandardPixmap.SP_MediaPlay),
            "Play",
            "Play / pause the spreading activation",
        )
        self.step_button = self._tool(
            icons.standardIcon(QStyle.StandardPixmap.SP_MediaSkipForward),
            "Step",
            "Next wave of the spreading activation",
        )
        self.back_button.clicked.connect(self.player.step_back)
        self.play_button.clicked.connect(self.player.toggle)
        self.step_button.clicked.connect(self.player.step)
        self.scrub = QSlider(Qt.Orientation.Horizontal, toolTip="Scrub through the animation")
        self.scrub.valueChanged.connect(self._on_scrub)
        self.scrub.setMinimumWidth(40)
        self.speed = QComboBox(toolTip="Playback speed")
        for label, value in SPEEDS:
            self.speed.addItem(label, value)
        self.speed.setCurrentIndex(2)
        self.speed.currentIndexChanged.connect(
            lambda _i: self.player.set_speed(float(self.speed.currentData()))
        )
        self.step_label = QLabel()
        self.step_label.setMinimumWidth(
            self.step_label.fontMetrics().horizontalAdvance("wave 10 / 10 · 200 lit")
        )
        self.fit_button = QToolButton(
            text="Fit", toolTip="Zoom to what the spreading lit and the packed results"
        )
        self.fit_button.clicked.connect(self.view.fit)
        self.find = QLineEdit(placeholderText="Find a node…", toolTip="Find a node by its text")
        self.find.setClearButtonEnabled(True)
        self.find.setMaximumWidth(200)
        self.find.setMinimumWidth(60)
        # The parameters (networks, δ and μ, budgets, link filters) fold away where
        # the graph has little room (the recall debugger); the counts stay shown.
        self.controls_button = QToolButton(
            text="Controls", checkable=True, checked=True, toolTip="Show or hide the parameters"
        )
        self.controls_button.toggled.connect(self.set_controls_visible)
        self.find.returnPressed.connect(self.find_next)
        for widget in (self.back_button, self.play_button, self.step_button):
            row.addWidget(widget)
        row.addWidget(self.scrub, 1)
        row.addWidget(self.step_label)
        for widget in self._tools():
            row.addWidget(widget)
        return bar

    def _tools(self) -> tuple[QWidget, ...]:
        return (self.speed, self.fit_button, self.find, self.controls_button)

    def set_compact(self, compact: bool) -> None:
        """Where the graph has little room (the recall debugger): the tools on a
        second row and the parameters folded (the Controls button unfolds them)."""
        target = self._tools_row if compact else self._main_row
        if compact:
            self._tools_row.addStretch(1)
        for widget in self._tools():
            target.addWidget(widget)
        self.set_controls_visible(not compact)

    def set_controls_visible(self, visible: bool) -> None:
        self.parameters.setVisible(visible)
        if self.controls_button.isChecked() != visible:
            self.controls_button.setChecked(visible)

    @staticmethod
    def _tool(icon, text: str, tip: str) -> QToolButton:
        button = QToolButton()
        button.setIcon(icon)
        button.setText(text)  # read by screen readers and tests; the icon is what shows
        button.setToolTip(tip)
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        return button

    def _build_parameters(self) -> QWidget:
        panel = QFrame()
        grid = QGridLayout(panel)
        grid.setContentsMargins(4, 0, 4, 4)
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(2)

        legend = QHBoxLayout()
        legend.setSpacing(4)
        legend.addWidget(QLabel("Networks:"))
        for i, name in enumerate(NETWORKS):
            legend.addSpacing(6)
            legend.addWidget(_swatch(network_color(i)))
            legend.addWidget(QLabel(name))
        legend.addSpacing(6)
        ring = QLabel("◯ packed")
        ring.setStyleSheet("color: #f97316; font-weight: 600;")
        legend.addWidget(ring)
        legend.addStretch(1)
        self.info = QLabel()  # the counts: under the view, shown with the controls folded too
        self.info.setWordWrap(True)
        self.info.setContentsMargins(4, 0, 4, 0)
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        grid.addLayout(legend, 0, 0, 1, 3)

        budgets = QHBoxLayout()
        self.weight_slider = _ValueSlider("min weight", 1.0)
        self.weight_slider.setToolTip("Links lighter than this are not drawn (they still count)")
        self.weight_slider.set_value(DEFAULT_MIN_WEIGHT)
        self.weight_slider.moved.connect(self._weight_moved)
        self.node_budget = QSpinBox(minimum=1, maximum=5000, toolTip="Lit nodes at most")
        self.step_budget = QSpinBox(
            minimum=0, maximum=5000, toolTip="New nodes one step may light (0: no limit)"
        )
        self.step_budget.setToolTip("New nodes one wave may light (0: no limit)")
        self.max_steps = QSpinBox(minimum=1, maximum=50, toolTip="Waves of spreading at most")
        for label, box in (
            ("nodes", self.node_budget),
            ("per wave", self.step_budget),
            ("waves", self.max_steps),
        ):
            budgets.addWidget(QLabel(label))
            budgets.addWidget(box)
            box.editingFinished.connect(self._budgets_changed)
        self.per_node = QSpinBox(
            minimum=0,
            maximum=99,
            value=DEFAULT_PER_NODE,
            specialValueText="all",
            toolTip="Each node's strongest links drawn (all: every link above the min weight);"
            " the links that carried energy are always drawn",
        )
        self.per_node.valueChanged.connect(self._weight_moved)
        budgets.addWidget(QLabel("links/node"))
        budgets.addWidget(self.per_node)
        budgets.addWidget(self.weight_slider, 1)
        grid.addLayout(budgets, 4, 0, 1, 3)

        self.kind_boxes: dict[str, QCheckBox] = {}
        self.mu_sliders: dict[str, _ValueSlider] = {}
        self.decay_slider = _ValueSlider("δ", DECAY_MAX)
        self.decay_slider.setToolTip("Decay δ applied at every activation step")
        self.decay_slider.moved.connect(self._parameter_moved)
        grid.addWidget(self.decay_slider, 1, 0)
        # Two rows of two link kinds beside δ: the pane stays usable at half a screen.
        cells = ((1, 1), (1, 2), (2, 1), (2, 2))
        for (row, col), kind in zip(cells, LINK_KINDS, strict=True):
            box = QCheckBox(kind, checked=True)
            box.setToolTip(f"Show {kind} links and let them carry activation")
            box.setStyleSheet(f"QCheckBox {{ color: {KIND_COLORS[kind]}; font-weight: 600; }}")
            box.toggled.connect(lambda on, k=kind: self._kind_toggled(k, on))
            self.kind_boxes[kind] = box
            slider = _ValueSlider("μ", MU_MAX)
            slider.setToolTip(f"μ({kind}): how much a {kind} link passes on")
            slider.moved.connect(self._parameter_moved)
            self.mu_sliders[kind] = slider
            cell = QHBoxLayout()
            cell.addWidget(box)
            cell.addWidget(slider, 1)
            grid.addLayout(cell, row, col)
        return panel

    # -- content -------------------------------------------------------------------------

    def show_graph(
        self,
        graph: GraphData,
        *,
        activation: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        marked: Iterable[str] = (),
        positions: np.ndarray | None = None,
    ) -> None:
        """Lay out and show `graph`; animate `activation` (the trace's record) if given."""
        if self.runner is not None:
            self.runner.supersede(self, "layout")  # a newer graph replaces one being laid out
        self.player.pause()
        self.graph = graph
        self.activation = dict(activation) if activation else None
        self.seeds = {
            s["node"]: float(s["activation"]) for s in (activation or {}).get("seeds", [])
        }
        if params:
            self.params = {**self.params, **params, "mu": dict(params.get("mu", self.params["mu"]))}
        self._pending_marks = list(marked)
        self._sync_controls()
        self._fixed_positions = positions is not None
        self._ringed = False  # laid out on rings by wave: the rings are drawn
        if positions is not None:
            self._laid_out(np.asarray(positions))
            return
        if self.seeds:
            # A spreading to replay: on rings by wave (milliseconds, so here).
            self._laid_out(self._rings(timeline(graph, self.activation)))
            return
        layout_fn = self.layout_fn
        # Laid out by the links that can be drawn (each node's strongest and
        # the energy's path), so the shape shows what is drawn rather than a
        # ball pulled together by thousands of hidden weak links.
        skeleton = graph.with_edges(self._skeleton(graph))
        if self.runner is not None and graph.node_count > 1:
            self.info.setText(f"laying out {graph.node_count} nodes…")
            self.runner.run_query(
                lambda: layout_fn(skeleton), self._laid_out, latest=(self, "layout")
            )
        else:
            self._laid_out(layout_fn(skeleton))

    def _rings(self, tl: Timeline) -> np.ndarray:
        size = self.view.size()
        # Rings as wide as the view has room for, within reason.
        self._aspect = min(max(size.width() / max(size.height(), 1), 1.0), MAX_ASPECT)
        self._ringed = True
        return ring_layout(self.graph, tl, self._aspect)

    def _skeleton(self, graph: GraphData) -> np.ndarray:
        every = np.ones(graph.edge_count, dtype=bool)
        keep = strongest_per_node(graph.src, graph.dst, graph.weight, every, DEFAULT_PER_NODE)
        keep[timeline(graph, self.activation).path_edges()] = True
        return keep

    def _laid_out(self, positions: np.ndarray) -> None:
        self.positions = positions
        selected = self.view.selected_id
        self.view.set_graph(self.graph, positions)
        self.view.set_marked(self._pending_marks)
        self.view.set_seeds(self.seeds)
        self.view.set_edge_filter(self.weight_slider.value(), self.per_node.value())
        self._set_timeline(timeline(self.graph, self.activation))
        self.view.set_selected(selected)
        if self._ringed:
            self.view.set_guides(*ring_guides(positions, self.timeline.first_lit(), self._aspect))
        self.view.set_fit_nodes(self._framed())
        self.view.fit()
        if self.autoplay and self.timeline.steps:
            self.player.seek(0)
            self.player.play()
        else:
            self.player.seek(self.player.last_frame)
        self.layout_ready.emit()

    def _framed(self) -> list[str]:
        """What Fit frames: every node the spreading lit, and the packed results
        (none: the whole graph)."""
        if not self.activation:
            return []
        lit = np.flatnonzero(self.timeline.levels[-1] > 0)
        return [*(self.graph.ids[i] for i in lit), *self._pending_marks]

    def _set_timeline(self, tl: Timeline) -> None:
        self.timeline = tl
        # trail[s]: the edges that lit a node before step s (the energy's path;
        # every link it ran along pulses during its step, but only the path stays).
        trail: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
        for step in range(1, tl.steps + 1):
            trail.append(tl.path_edges(step - 1))
        self._trail = trail
        self._won = [np.isin(c, p) for c, p in zip(tl.carried, tl.paths, strict=True)]
        self.view.set_path(self._trail_all())
        frames = tl.frame_count(self.player.frames_per_step)
        blocked = self.scrub.blockSignals(True)
        self.scrub.setRange(0, frames - 1)
        self.scrub.blockSignals(blocked)
        self.player.set_frame_count(frames)
        self._update_info()

    def _update_info(self) -> None:
        g = self.graph
        tl = self.timeline
        lit = int((tl.levels[-1] > 0).sum()) if tl.levels.shape[1] == g.node_count else 0
        parts = [f"{g.node_count} nodes"]
        if self.activation:
            steps = tl.steps
            parts[0] += f" ({lit} lit, {g.node_count - lit} context)"
            parts.append(f"lit in {steps} wave{'' if steps == 1 else 's'}")
            code = str(self.activation.get("stopped") or "")
            why = STOP_REASONS.get(code, code)
            if why:
                parts.append(f"stopped: {why}")
        counts = self.view.edge_counts()
        links = f"{counts['drawn']} of {counts['total']} links drawn"
        hidden = []
        if counts["below_weight"]:
            hidden.append(f"{counts['below_weight']} below {self.weight_slider.value():.2f}")
        if counts["beyond_strongest"]:
            hidden.append(
                f"{counts['beyond_strongest']} beyond each node's {self.per_node.value()} strongest"
            )
        if counts["hidden_kind"]:
            hidden.append(f"{counts['hidden_kind']} of hidden kinds")
        parts.append(links + (f" ({', '.join(hidden)})" if hidden else ""))
        self.info.setText(" · ".join(parts))

    def _show_frame(self, frame: int) -> None:
        tl = self.timeline
        step = 0
        if self.activation is None or tl.levels.shape[1] != self.graph.node_count:
            self.view.show_frame(None)
        else:
            levels, step, frac = tl.at(frame, self.player.frames_per_step)
            if self.view.lod:
                # Level of detail: node fills move in half steps, the pulses every frame.
                half = self.player.frames_per_step // 2 or 1
                levels, _step, _frac = tl.at(frame - frame % half, self.player.frames_per_step)
            moving = 0 < step <= tl.steps and frac < 1.0
            none = np.zeros(0, np.int64)
            # The links that won their node carry the pulses; the rest that carried
            # energy this step are drawn thin (a wave's dozens of offers are a hairball).
            won = self._won[step] if moving else np.zeros(0, dtype=bool)
            carried = tl.carried[step] if moving else none
            self.view.show_frame(
                levels,
                carried[won],
                self._trail[min(step, tl.steps)] if frac < 1.0 else self._trail_all(),
                energy=tl.energy[step][won] if moving else None,
                frontier=tl.frontier[step] if moving else none,
                progress=frac if moving else 1.0,
                settled=frame >= self.player.last_frame,
                offered_edges=carried[~won],
            )
        blocked = self.scrub.blockSignals(True)
        self.scrub.setValue(frame)
        self.scrub.blockSignals(blocked)
        whole = -(-frame // self.player.frames_per_step)  # the step being entered (ceil)
        shown = min(whole, tl.steps)
        self.view.show_guides(shown)
        self.step_label.setText(f"wave {shown} / {tl.steps} · {tl.lit_after(shown)} lit")
        self.frame_shown.emit(frame)

    def _trail_all(self) -> np.ndarray:
        return self.timeline.path_edges()

    def find_next(self) -> str | None:
        """Select and centre the next node matching the find box."""
        text = self.find.text()
        hits = self.view.find(text)
        if not hits:
            self.find.setStyleSheet("QLineEdit { color: #c0392b; }")
            return None
        self.find.setStyleSheet("")
        current = self.view.selected_id
        at = (hits.index(current) + 1) % len(hits) if current in hits else 0
        unit_id = hits[at]
        self.view.set_selected(unit_id)
        self.view.center_on(unit_id)
        self.view.hover_node(unit_id)
        self.node_clicked.emit(unit_id)
        return unit_id

    def _on_scrub(self, value: int) -> None:
        self.player.pause()
        self.player.seek(value)

    def _on_playing(self, playing: bool) -> None:
        pixmap = (
            QStyle.StandardPixmap.SP_MediaPause if playing else QStyle.StandardPixmap.SP_MediaPlay
        )
        self.play_button.setIcon(self.style().standardIcon(pixmap))
        self.play_button.setText("Pause" if playing else "Play")

    # -- selection and marks ---------------------------------------------------------------

    def select(self, unit_id: str | None) -> None:
        self.view.set_selected(unit_id)

    def set_marked(self, unit_ids: Iterable[str]) -> None:
        self._pending_marks = list(unit_ids)
        self.view.set_marked(self._pending_marks)
        self.view.set_fit_nodes(self._framed())  # Fit frames them (the view stays put)

    # -- parameters ------------------------------------------------------------------------

    def _sync_controls(self) -> None:
        for box, key in (
            (self.node_budget, "node_budget"),
            (self.step_budget, "step_budget"),
            (self.max_steps, "max_steps"),
        ):
            blocked = box.blockSignals(True)
            box.setValue(int(self.params.get(key, 0)))
            box.blockSignals(blocked)
        self.decay_slider.set_value(float(self.params["decay"]))
        for kind, slider in self.mu_sliders.items():
            slider.set_value(float(self.params["mu"].get(kind, 0.0)))

    def current_params(self) -> dict[str, Any]:
        return {
            **self.params,
            "node_budget": self.node_budget.value(),
            "step_budget": self.step_budget.value(),
            "max_steps": self.max_steps.value(),
            "decay": self.decay_slider.value(),
            "mu": {kind: slider.value() for kind, slider in self.mu_sliders.items()},
        }

    def visible_kinds(self) -> list[str]:
        return [kind for kind, box in self.kind_boxes.items() if box.isChecked()]

    def _kind_toggled(self, kind: str, on: bool) -> None:
        self.view.set_kind_visible(kind, on)
        self._update_info()
        self._parameter_moved()

    def _weight_moved(self, *_args: Any) -> None:
        self.view.set_edge_filter(self.weight_slider.value(), self.per_node.value())
        self._update_info()

    def _budgets_changed(self) -> None:
        params = self.current_params()
        if all(
            params[k] == self.params.get(k) for k in ("node_budget", "step_budget", "max_steps")
        ):
            return
        self.params.update({k: params[k] for k in ("node_budget", "step_budget", "max_steps")})
        if self.recall_rerun is not None:
            self.recall_rerun(
                {
                    "recall.activation_node_budget": params["node_budget"],
                    "recall.activation_step_budget": params["step_budget"],
                    "recall.activation_steps": params["max_steps"],
                }
            )
        elif self.seeds:
            self.rerun()

    def _parameter_moved(self, *_args: Any) -> None:
        if self.seeds:
            self._rerun_timer.start()

    def rerun(self) -> None:
        """Re-run the activation over the graph shown with the sliders' δ and μ."""
        self._rerun_timer.stop()
        if not self.seeds or self.graph.node_count == 0:
            return
        params = self.current_params()
        self.activation = rerun(
            self.graph,
            self.seeds,
            decay=params["decay"],
            mu=params["mu"],
            threshold=params["threshold"],
            max_steps=params["max_steps"],
            node_budget=params["node_budget"],
            step_budget=params["step_budget"],
            kinds=self.visible_kinds(),
        )
        playing = self.player.playing
        tl = timeline(self.graph, self.activation)
        if self._fixed_positions:
            self._set_timeline(tl)
        else:
            # The waves changed, so their rings do: lay them out again (kept
            # selection, marks and seeds; Fit frames the new lit region).
            autoplay, self.autoplay = self.autoplay, False
            self._laid_out(self._rings(tl))
            self.autoplay = autoplay
        if playing:
            self.player.play()
        else:
            self.player.seek(self.player.last_frame)
        self.activation_changed.emit(self.activation)
