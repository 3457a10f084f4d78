"""The graph drawn with pyqtgraph: nodes, edges by link kind, activation frames.

One ScatterPlotItem holds every node; one PlotCurveItem per link kind holds
every drawn edge of that kind (`connect="pairs"`), plus one per kind for the
edges carrying energy in the current step and one for the steps before. The
energy itself travels as pulses: one scatter of dots, in the link kind's
colour, moving along each carrying edge during its step, sized by the energy
it carries (so decay shows: pulses shrink hop by hop). The frontier that
spreads in a step wears a halo. A frame sets whole arrays (sizes, brushes
from a lookup table, edge coordinates) and never creates a per-node object.

A replay draws only what the spreading has reached by the frame shown: a
node appears when its wave lights it (the seeds first), with its links to
nodes already drawn; once the spreading is over (`settled`) the nodes it
never reached appear too, faint, with faint links into the lit region.

Declutter: edges below a weight or of a hidden kind are not drawn, and of
the rest each node keeps only its few strongest (the backbone: a hub's
hundred weak links would otherwise hide everything); the links that carried
energy in the recall are always drawn. Labels only for seeds, packed results
and the hovered node, each beside its node where it covers no other label
and no other node (else left out: hovering names any node). Level of detail:
above `LOD_NODES` nodes antialiasing is off and the resting edges are drawn
only when zoomed in to a part of the graph.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QGraphicsItem, QWidget

from app.graph.model import LINK_KINDS, GraphData, strongest_per_node
from app.graph.notes import place_note
from app.graph.style import LEVELS, GraphStyle

TOP_LABELS = 12  # labels without hovering at most: seeds and packed results first
LABEL_CHARS = 34
SHORT_LABEL_CHARS = 18  # a label that fits nowhere in full is tried this short
LABEL_PAD_X, LABEL_PAD_Y = 8.0, 8.0  # a label's box around its text (its margins), in pixels
LOD_NODES = 3000  # above this, level of detail (see the module docstring)
LOD_VISIBLE_SHARE = 0.35  # resting edges show once the view spans less than this share


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _covers(rect: QRectF, centres: np.ndarray, radii: np.ndarray | float) -> bool:
    """Whether `rect` overlaps any of the discs (scene pixels)."""
    if centres.shape[0] == 0:
        return False
    nearest_x = np.clip(centres[:, 0], rect.left(), rect.right())
    nearest_y = np.clip(centres[:, 1], rect.top(), rect.bottom())
    d2 = (centres[:, 0] - nearest_x) ** 2 + (centres[:, 1] - nearest_y) ** 2
    return bool((d2 < np.square(radii)).any())


class GraphView(pg.PlotWidget):
    node_clicked = Signal(str)
    node_hovered = Signal(str)  # "" when the pointer leaves every node

    def __init__(self, parent: QWidget | None = None, background: QColor | None = None) -> None:
        bg = QColor(background) if background is not None else None
        if bg is None:
            bg = parent.palette().base().color() if parent is not None else QColor("#ffffff")
        super().__init__(parent, background=bg)
        self.style_ = GraphStyle(bg)
        plot = self.getPlotItem()
        for name in ("left", "bottom"):
            plot.getAxis(name).enableAutoSIPrefix(False)
            plot.hideAxis(name)
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.setAspectLocked(True)
        self.setAntialiasing(True)
        self.setMinimumSize(240, 200)

        self.graph = GraphData.empty()
        self.pos = np.zeros((0, 2))
        self._base_size = np.zeros(0)
        self._levels: np.ndarray | None = None
        self._kind_visible = dict.fromkeys(LINK_KINDS, True)
        self._min_weight = 0.0
        self._per_node = 0  # each node's strongest links drawn (0: all)
        self._path = np.zeros(0, dtype=np.int64)  # the energy's path: always drawn
        self._backbone = np.zeros(0, dtype=bool)
        self._seeds = np.zeros(0, dtype=bool)
        self._drawn = np.zeros(0, dtype=bool)
        self._lod = False
        self._lod_hidden = False
        self._marked = np.zeros(0, dtype=bool)
        self._selected: int | None = None
        self._hovered: int | None = None
        self._label_top: tuple[tuple[int, str], ...] = ()  # (node, its label text)
        self._label_pool: tuple = ()
        self._sizes = np.zeros(0)
        self._pair_x: dict[str, np.ndarray] = {}
        self._pair_y: dict[str, np.ndarray] = {}
        self._edge_ids: dict[str, np.ndarray] = {}
        self._lit_key: tuple[bytes, ...] | None = None
        self._settled = True  # the spreading is over: unreached nodes drawn faint
        self._visible = np.zeros(0, dtype=bool)  # nodes drawn in the current frame
        self._shown_key: tuple[bytes, bytes] | None = None
        self._fit_nodes = np.zeros(0, dtype=np.int64)  # what Fit frames (empty: all)

        s = self.style_
        self.base_curves = {k: self._curve(s.base_pens[k], z=-30) for k in LINK_KINDS}
        for curve in self.base_curves.values():
            curve.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.trail_curves = {k: self._curve(s.trail_pens[k], z=-20) for k in LINK_KINDS}
        self.active_curves = {k: self._curve(s.active_pens[k], z=-10) for k in LINK_KINDS}
        # Links that carried energy in this step but did not win their node: thin.
        self.offered_curves = {k: self._curve(s.offered_pens[k], z=-15) for k in LINK_KINDS}
        self.context_curve = self._curve(s.context_link_pen, z=-35)
        # The ring of each wave reached so far (a ring layout's), faint, with its number.
        self.guides = pg.PlotCurveItem(pen=s.guide_pen, connect="finite")
        self.guides.setZValue(-40)
        self.addItem(self.guides)
        self._guide_centre = np.zeros(2)
        self._guide_radii: list[tuple[float, float]] = []
        self._guide_captions: list[pg.TextItem] = []
        self._caption_boxes: list[QRectF] = []  # the captions shown, in scene pixels
        self._guides_shown = -1
        self.halo = pg.ScatterPlotItem(pxMode=True, pen=s.halo_pen, brush=s.no_brush)
        self.halo.setZValue(-5)
        self.pulses = pg.ScatterPlotItem(pxMode=True, pen=None)
        self.pulses.setZValue(3)
        self.addItem(self.halo)
        self.addItem(self.pulses)
        self._pulse_edges = np.zeros(0, dtype=np.int64)
        self._pulse_energy = np.zeros(0, dtype=np.float32)
        self.nodes = pg.ScatterPlotItem(pxMode=True, hoverable=True, tip=None, pen=s.node_pen)
        self.nodes.setZValue(0)
        self.rings = pg.ScatterPlotItem(pxMode=True, pen=s.ring_pen, brush=s.no_brush)
        self.rings.setZValue(5)
        self.selection = pg.ScatterPlotItem(pxMode=True, pen=s.selected_pen, brush=s.no_brush)
        self.selection.setZValue(6)
        for item in (self.nodes, self.rings, self.selection):
            self.addItem(item)
        self.nodes.sigClicked.connect(self._on_clicked)
        self.nodes.sigHovered.connect(self._on_hovered)

        font = QFont(self.font())
        font.setPointSizeF(max(8.0, font.pointSizeF() * 0.9))
        self._labels = [self._label(font) for _ in range(TOP_LABELS)]
        self._label_metrics = QFontMetrics(font)
        self._caption_font = QFont(font)
        self._caption_font.setPointSizeF(max(7.0, font.pointSizeF() * 0.85))
        self._hover_label = self._label(font, z=30)
        plot.getViewBox().sigRangeChanged.connect(self._range_changed)

    def _curve(self, pen, z: float) -> pg.PlotCurveItem:
        curve = pg.PlotCurveItem(pen=pen, connect="pairs", skipFiniteCheck=True)
        # Edges are separate segments: drawLines is several times faster than one long path.
        curve.setSegmentedLineMode("on")
        curve.setZValue(z)
        self.addItem(curve)
        return curve

    def _label(self, font: QFont, z: float = 20) -> pg.TextItem:
        item = pg.TextItem("", color=self.style_.text, fill=self.style_.label_fill, anchor=(0, 0))
        item.setFont(font)
        item.setZValue(z)
        item.hide()
        self.addItem(item)
        return item

    # -- content ------------------------------------------------------------------

    def set_graph(self, graph: GraphData, positions: np.ndarray) -> None:
        """Show `graph` at `positions` (n × 2); clears activation, marks and selection."""
        self.graph = graph
        self.pos = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
        degree = graph.degree().astype(np.float64)
        top = degree.max() if degree.size and degree.max() > 0 else 1.0
        self._base_size = 7.0 + 9.0 * np.sqrt(degree / top)
        self._levels = None
        self._marked = np.zeros(graph.node_count, dtype=bool)
        self._selected = None
        self._hovered = None
        self._label_top = ()
        self._label_pool = ()
        self._lit_key = None
        self._seeds = np.zeros(graph.node_count, dtype=bool)
        self._visible = np.ones(graph.node_count, dtype=bool)
        self._shown_key = None
        self._settled = True
        self._fit_nodes = np.zeros(0, dtype=np.int64)
        self.set_guides(np.zeros(2), [])
        self._lod = graph.node_count > LOD_NODES
        self.setAntialiasing(not self._lod)
        self._path = np.zeros(0, dtype=np.int64)
        self._apply_edge_filter()
        self._clear_lit()
        self._pulse_edges = np.zeros(0, dtype=np.int64)
        self.pulses.setData([], [])
        self.halo.setData([], [])
        self.nodes.setData(pos=self.pos, data=np.arange(graph.node_count), pen=self.style_.node_pen)
        self._apply_nodes()
        self.rings.setData([], [])
        self.selection.setData([], [])
        self._hover_label.hide()
        self.fit()

    def set_guides(self, centre: np.ndarray, radii: list[tuple[float, float]]) -> None:
        """The rings of the waves (half width, half height each, about `centre`),
        drawn up to the wave a frame has reached; none: no guides."""
        self._guide_centre = np.asarray(centre, dtype=np.float64)
        self._guide_radii = list(radii)
        while len(self._guide_captions) < len(radii):
            # Centred on the ring's top: inside Fit's margin, which frames the rings.
            caption = pg.TextItem("", color=self.style_.guide_text, anchor=(0.5, 0.5))
            caption.setFont(self._caption_font)
            caption.setZValue(-39)
            caption.hide()
            self.addItem(caption)
            self._guide_captions.append(caption)
        self._guides_shown = -1
        self.show_guides(len(radii))

    def show_guides(self, upto: int) -> None:
        """Draw the rings of waves 1..`upto`."""
        upto = min(max(int(upto), 0), len(self._guide_radii))
        if upto == self._guides_shown:
            return
        self._guides_shown = upto
        t = np.linspace(0.0, 2 * np.pi, 121)
        xs, ys = [], []
        cx, cy = self._guide_centre
        for rx, ry in self._guide_radii[:upto]:
            if rx > 0:
                xs += [cx + rx * np.cos(t), [np.nan]]
                ys += [cy + ry * np.sin(t), [np.nan]]
        if xs:
            self.guides.setData(np.concatenate(xs), np.concatenate(ys), connect="finite")
        else:
            self.guides.setData([], [])
        self._place_captions()
        rank_by = self._levels if self._levels is not None else self._base_size
        if self._guide_radii and rank_by.size == self.graph.node_count > 0:
            self._update_labels(rank_by, force=True)  # labels keep clear of the captions shown

    def set_fit_nodes(self, unit_ids: Iterable[str]) -> None:
        """What Fit frames: these nodes (a recall's lit region and packed results),
        or every node when none is given."""
        index = self.graph.index
        self._fit_nodes = np.array(sorted(index[u] for u in unit_ids if u in index), dtype=np.int64)

    def fit(self) -> None:
        """Zoom to the nodes set by `set_fit_nodes` (all by default)."""
        if self.graph.node_count == 0:
            return
        framed = self.pos[self._fit_nodes] if self._fit_nodes.size else self.pos
        if self._guide_radii:  # and the waves' rings, drawn round them (their captions on top)
            cx, cy = self._guide_centre
            radii = np.array(self._guide_radii)
            framed = np.vstack((framed, np.column_stack((cx + radii[:, 0], cy + radii[:, 1]))))
            framed = np.vstack((framed, np.column_stack((cx - radii[:, 0], cy - radii[:, 1]))))
        low, high = framed.min(axis=0), framed.max(axis=0)
        # A margin per axis for the outermost nodes and their rings (one from the
        # wider axis left a wide picture a quarter empty above and below).
        pad = 0.06 * (high - low) + 0.08
        self.getPlotItem().getViewBox().setRange(
            xRange=(low[0] - pad[0], high[0] + pad[0]),
            yRange=(low[1] - pad[1], high[1] + pad[1]),
            padding=0,
        )

    def _pairs(self, edge_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if edge_ids.size == 0 or self.pos.shape[0] == 0:
            return np.zeros(0), np.zeros(0)
        a, b = self.graph.src[edge_ids], self.graph.dst[edge_ids]
        x = np.column_stack((self.pos[a, 0], self.pos[b, 0])).ravel()
        y = np.column_stack((self.pos[a, 1], self.pos[b, 1])).ravel()
        return x, y

    # -- which edges are drawn ----------------------------------------------------------

    def set_edge_filter(self, min_weight: float | None = None, per_node: int | None = None) -> None:
        """Draw only edges of at least `min_weight`, of the visible kinds, and
        among those each node's `per_node` strongest (0: all)."""
        if min_weight is not None:
            self._min_weight = float(min_weight)
        if per_node is not None:
            self._per_node = int(per_node)
        self._apply_edge_filter()

    def set_path(self, edge_ids: np.ndarray) -> None:
        """The edges that lit a node in the recall shown (the energy's path): drawn
        whatever the filter."""
        self._path = np.asarray(edge_ids, dtype=np.int64)
        self._apply_edge_filter()

    def _eligible(self) -> tuple[np.ndarray, np.ndarray]:
        """(visible kind, visible kind and heavy enough) per edge."""
        g = self.graph
        visible_kind = np.array([self._kind_visible[k] for k in LINK_KINDS], dtype=bool)
        shown = visible_kind[g.kind] if g.edge_count else np.zeros(0, dtype=bool)
        return shown, shown & (g.weight >= self._min_weight)

    def _apply_edge_filter(self) -> None:
        g = self.graph
        shown, eligible = self._eligible()
        self._backbone = strongest_per_node(g.src, g.dst, g.weight, eligible, self._per_node)
        drawn = self._backbone.copy()
        carried = self._path[self._path < g.edge_count]
        drawn[carried] = True
        self._drawn = drawn & shown
        self._draw_resting()

    def _draw_resting(self) -> None:
        """The resting edges among the nodes drawn now; once settled, the faint
        links from the lit region out to the context."""
        g = self.graph
        levels = self._levels
        if levels is None or levels.shape[0] != g.node_count:
            among, outward = self._drawn, np.zeros(g.edge_count, dtype=bool)
        else:
            # While the spreading replays, the energy's path and the wave's links are
            # drawn, not the resting links among lit nodes (they hide the waves).
            lit, a, b = levels > 0, g.src, g.dst
            among = self._drawn & lit[a] & lit[b] & self._settled
            outward = self._drawn & (lit[a] ^ lit[b]) & self._settled
        for k, kind in enumerate(LINK_KINDS):
            ids = np.flatnonzero(among & (g.kind == k))
            self._edge_ids[kind] = ids
            x, y = self._pairs(ids)
            self._pair_x[kind], self._pair_y[kind] = x, y
            self.base_curves[kind].setData(x, y, connect="pairs", skipFiniteCheck=True)
            self.base_curves[kind].setVisible(self._kind_visible[kind] and not self._lod_hidden)
        visible_kind = np.array([self._kind_visible[k] for k in LINK_KINDS], dtype=bool)
        ids = np.flatnonzero(outward & visible_kind[g.kind]) if g.edge_count else outward
        x, y = self._pairs(ids)
        self.context_curve.setData(x, y, connect="pairs", skipFiniteCheck=True)
        self.context_curve.setVisible(not self._lod_hidden)

    @property
    def lod(self) -> bool:
        """Whether the graph is drawn at level of detail (see the module docstring)."""
        return self._lod

    def edge_counts(self) -> dict[str, int]:
        """How many links are drawn, and why the others are not (each link
        counted once, for the first reason that hides it)."""
        g = self.graph
        shown, eligible = self._eligible()
        hidden_kind = ~shown
        light = shown & ~eligible & ~self._drawn
        crowded = eligible & ~self._drawn
        return {
            "total": g.edge_count,
            "drawn": int(self._drawn.sum()),
            "below_weight": int(light.sum()),
            "beyond_strongest": int(crowded.sum()),
            "hidden_kind": int(hidden_kind.sum()),
        }

    @property
    def per_node(self) -> int:
        return self._per_node

    def _clear_lit(self) -> None:
        for curves in (self.trail_curves, self.active_curves, self.offered_curves):
            for curve in curves.values():
                curve.setData(np.zeros(0), np.zeros(0))

    # -- a frame -------------------------------------------------------------------

    def show_frame(
        self,
        levels: np.ndarray | None,
        active_edges: np.ndarray | None = None,
        trail_edges: np.ndarray | None = None,
        *,
        energy: np.ndarray | None = None,
        frontier: np.ndarray | None = None,
        progress: float = 1.0,
        settled: bool = True,
        offered_edges: np.ndarray | None = None,
    ) -> None:
        """Node activation in [0, 1] (None: size by degree, all lit), the edges
        carrying energy now (`energy` each, `progress` of the way along them),
        the ones that carried it in earlier steps, and the frontier spreading now;
        `offered_edges` carried energy now too, to nodes another link lit (drawn
        thin, no pulse). Only nodes with some activation are drawn, and, once `settled` (the
        spreading is over), the unreached ones faint."""
        clipped = None if levels is None else np.clip(levels, 0.0, 1.0)
        # Unchanged levels need no node update (at level of detail, the widget
        # changes them only twice a step; the pulses still move every frame).
        same = (
            clipped is not None
            and self._levels is not None
            and clipped.shape == self._levels.shape
            and np.array_equal(clipped, self._levels)
            and settled == self._settled
        )
        self._levels = clipped
        self._settled = settled
        active = np.zeros(0, dtype=np.int64) if active_edges is None else active_edges
        trail = np.zeros(0, dtype=np.int64) if trail_edges is None else trail_edges
        offered = np.zeros(0, dtype=np.int64) if offered_edges is None else offered_edges
        key = (active.tobytes(), trail.tobytes(), offered.tobytes())
        if key != self._lit_key:  # the lit edges change once per step, not per frame
            self._lit_key = key
            for curves, ids in (
                (self.active_curves, active),
                (self.trail_curves, trail),
                (self.offered_curves, offered),
            ):
                kinds = self.graph.kind[ids] if ids.size else np.zeros(0, dtype=np.int64)
                for k, kind in enumerate(LINK_KINDS):
                    x, y = self._pairs(ids[kinds == k])
                    curves[kind].setData(x, y, connect="pairs", skipFiniteCheck=True)
                    curves[kind].setVisible(self._kind_visible[kind])
            self._pulse_edges = active
            self._pulse_energy = (
                np.asarray(energy, dtype=np.float32)
                if energy is not None and len(energy) == active.size
                else np.ones(active.size, dtype=np.float32)
            )
            front = np.zeros(0, dtype=np.int64) if frontier is None else frontier
            if front.size:
                size = self._sizes[front] + 9 if self._sizes.size == self.pos.shape[0] else 20.0
                self.halo.setData(pos=self.pos[front], size=size)
            else:
                self.halo.setData([], [])
        self._show_pulses(progress)
        if not same:
            self._apply_nodes()

    def _show_pulses(self, progress: float) -> None:
        """Dots travelling from source to target along the carrying edges."""
        ids = self._pulse_edges
        if ids.size == 0 or progress >= 1.0 or progress <= 0.0:
            self.pulses.setData([], [])
            return
        kinds = self.graph.kind[ids]
        shown = np.array([self._kind_visible[k] for k in LINK_KINDS], dtype=bool)[kinds]
        ids, kinds, energy = ids[shown], kinds[shown], self._pulse_energy[shown]
        # The pulse goes from the more active end (the source) to the other.
        a, b = self.graph.src[ids], self.graph.dst[ids]
        if self._levels is not None:
            swap = self._levels[a] < self._levels[b]
            a, b = np.where(swap, b, a), np.where(swap, a, b)
        t = float(progress)
        at = self.pos[a] * (1.0 - t) + self.pos[b] * t
        sizes = np.rint(5.0 + 11.0 * np.sqrt(np.clip(energy, 0.0, 1.0)))
        self.pulses.setData(pos=at, size=sizes, brush=self.style_.pulse_brushes[kinds])

    def _apply_nodes(self) -> None:
        n = self.graph.node_count
        if n == 0:
            self.nodes.setData([], [])
            for label in self._labels:
                label.hide()
            return
        s = self.style_
        if self._levels is None:
            level_idx = np.full(n, LEVELS - 1, dtype=np.int64)
            sizes = self._base_size
            rank_by = self._base_size
            brushes = s.brushes[self.graph.network, level_idx]
            lit = visible = np.ones(n, dtype=bool)
        else:
            a = self._levels
            lit = a > 0
            level_idx = np.rint(a * (LEVELS - 1)).astype(np.int64)
            sizes = np.where(lit, 0.6 * self._base_size + 9.0 * a, 0.5 * self._base_size)
            rank_by = a
            brushes = np.where(
                lit, s.brushes[self.graph.network, level_idx], s.context_brushes[self.graph.network]
            )
            visible = lit | self._settled
        sizes = np.rint(sizes)  # whole pixels: a handful of distinct symbols to cache
        self._sizes = sizes
        # Which nodes are drawn, and lit, changes a few times a step, not every frame.
        key = (lit.tobytes(), visible.tobytes())
        changed = key != self._shown_key
        if changed:
            self._shown_key = key
            self._visible = visible
            self.nodes.setPointsVisible(visible, update=False)
            self.nodes.setPen(np.where(lit, s.node_pen, s.context_pen), update=False)
        self.nodes.setBrush(brushes, update=False)
        self.nodes.setSize(sizes, update=True)
        if changed:
            self._draw_resting()
        marked = np.flatnonzero(self._marked & visible) if self._marked.size == n else []
        if len(marked):
            self.rings.setData(pos=self.pos[marked], size=sizes[marked] + 7)
        else:
            self.rings.setData([], [])
        if self._selected is not None:
            i = self._selected
            self.selection.setData(pos=self.pos[[i]], size=[sizes[i] + 14])
        self._update_labels(rank_by)

    def _update_labels(self, rank_by: np.ndarray, force: bool = False) -> None:
        """Label the seeds and the packed results that are drawn (seeds first,
        then by strength), each where its label covers no label already placed
        and no other drawn node: beside the node on the side away from the
        graph's centre, else above, below or on the other side; a label that
        fits nowhere is left out (hovering names any node). A label stays
        inside the view, shortened when wider than it (the recall debugger's
        graph is a few hundred pixels wide)."""
        n = self.graph.node_count
        wanted = np.zeros(n, dtype=bool)
        if self._seeds.size == n:
            wanted |= self._seeds
        if self._marked.size == n:
            wanted |= self._marked
        if self._visible.size == n:
            wanted &= self._visible
        candidates = np.flatnonzero(wanted)
        # Seeds first, then by strength, ties by index: the same frame labels the same nodes.
        seeds = self._seeds if self._seeds.size == n else np.zeros(n, dtype=bool)
        ordered = sorted(candidates.tolist(), key=lambda i: (not seeds[i], -rank_by[i], i))
        key = (tuple(int(i) for i in ordered), self._sizes.tobytes())
        if key == self._label_pool and not force:
            return
        self._label_pool = key
        vb = self.getPlotItem().getViewBox()
        view = vb.sceneBoundingRect().adjusted(2.0, 2.0, -2.0, -2.0)
        scene = self._scene_positions(vb)
        # Nodes a label may not cover: every lit one (faint context may be covered).
        lit = self._levels > 0 if self._levels is not None and self._levels.size == n else None
        drawn = np.flatnonzero(lit) if lit is not None else np.arange(n)
        sizes = self._sizes if self._sizes.size == n else np.full(n, 10.0)
        discs, radii = scene[drawn], sizes[drawn] / 2 + 1.0
        middle = (self.pos.min(axis=0) + self.pos.max(axis=0)) / 2
        placed = self.caption_rects()  # a label covers no wave's caption either
        chosen: list[tuple[int, str, QPointF]] = []
        for i in ordered:
            if len(chosen) == TOP_LABELS:
                break
            at = QPointF(*scene[i])
            if not view.contains(at):
                continue  # panned or zoomed out of sight
            lift = self._size_of(i) / 2 + 2.0  # the label just clears its node
            outward = bool(self.pos[i, 0] >= middle[0])
            # The label in full where it fits, else shortened where that fits.
            for limit in (LABEL_CHARS, SHORT_LABEL_CHARS):
                text = _short(self.graph.label(i), limit)
                if self._label_metrics.horizontalAdvance(text) + LABEL_PAD_X > view.width():
                    text = self._label_metrics.elidedText(
                        text, Qt.TextElideMode.ElideRight, int(view.width() - LABEL_PAD_X)
                    )
                box = self._label_metrics.boundingRect(text)
                w, h = box.width() + LABEL_PAD_X, box.height() + LABEL_PAD_Y
                spot = next(
                    (
                        rect
                        for rect in self._label_spots(at, w, h, lift, view, outward)
                        # Not over another label, nor any lit node (its own, once moved into view).
                        if not any(rect.intersects(other) for other in placed)
                        and not _covers(rect, discs, radii)
                    ),
                    None,
                )
                if spot is not None:
                    placed.append(spot)
                    chosen.append((i, text, vb.mapSceneToView(spot.topLeft())))
                    break
        top = tuple((i, text) for i, text, _at in chosen)
        if top == self._label_top and not force:
            return
        self._label_top = top
        for slot, label in enumerate(self._labels):
            if slot < len(chosen):
                _i, text, at = chosen[slot]
                label.setText(text)
                label.setPos(at)
                label.show()
            else:
                label.hide()

    @staticmethod
    def _label_spots(
        at: QPointF, w: float, h: float, lift: float, view: QRectF, right_side: bool
    ) -> list[QRectF]:
        """Where a w × h label may go around a node at `at` (scene pixels), best
        first: outward beside it, above, below, inward, then at its four
        corners (outward first); each kept inside `view`."""
        x, y = at.x(), at.y()
        right, left = x + lift, x - lift - w
        beside_right = QRectF(right, y - h / 2, w, h)
        beside_left = QRectF(left, y - h / 2, w, h)
        above = QRectF(x - w / 2, y - lift - h, w, h)
        below = QRectF(x - w / 2, y + lift, w, h)
        corner = lift * 0.7  # the node's edge along a diagonal
        up, down = y - corner - h, y + corner
        out_x, in_x = (x + corner, x - corner - w) if right_side else (x - corner - w, x + corner)
        outward, inward = (beside_right, beside_left) if right_side else (beside_left, beside_right)
        corners = [QRectF(cx, cy, w, h) for cx in (out_x, in_x) for cy in (up, down)]
        spots = []
        for rect in (outward, above, below, inward, *corners):
            rect.translate(max(view.left() - rect.left(), 0.0), max(view.top() - rect.top(), 0.0))
            rect.translate(
                min(view.right() - rect.right(), 0.0), min(view.bottom() - rect.bottom(), 0.0)
            )
            spots.append(rect)
        return spots

    def _place_captions(self) -> None:
        """Caption the rings of the waves shown, each centred on its ring's top,
        inner first; one that would overlap an inner one's is left out (in a
        small view the rings' tops are a few pixels apart)."""
        vb = self.getPlotItem().getViewBox()
        metrics = QFontMetrics(self._caption_font)
        cx, cy = self._guide_centre
        self._caption_boxes = []
        for wave, caption in enumerate(self._guide_captions, start=1):
            rx, ry = self._guide_radii[wave - 1] if wave <= len(self._guide_radii) else (0, 0)
            rect = None
            if wave <= self._guides_shown and ry > 0:
                at = vb.mapViewToScene(QPointF(cx, cy + ry))
                box = metrics.boundingRect(f"wave {wave}")
                w, h = box.width() + LABEL_PAD_X / 2, box.height()
                rect = QRectF(at.x() - w / 2, at.y() - h / 2, w, h)
            if rect is None or any(rect.intersects(other) for other in self._caption_boxes):
                caption.hide()
                continue
            self._caption_boxes.append(rect)
            caption.setText(f"wave {wave}")
            caption.setPos(cx, cy + ry)
            caption.show()

    def caption_rects(self) -> list[QRectF]:
        """The shown wave captions' rectangles in scene pixels."""
        return list(self._caption_boxes)

    def _scene_positions(self, vb) -> np.ndarray:
        """Every node's position in scene pixels (the view maps axes linearly)."""
        if self.pos.shape[0] == 0:
            return np.zeros((0, 2))
        o = vb.mapViewToScene(QPointF(0.0, 0.0))
        u = vb.mapViewToScene(QPointF(1.0, 1.0))
        scale = np.array([u.x() - o.x(), u.y() - o.y()])
        return self.pos * scale + np.array([o.x(), o.y()])

    def label_rects(self) -> list[QRectF]:
        """The drawn labels' rectangles in scene coordinates (tests: inside the view)."""
        return [
            label.textItem.mapRectToScene(label.textItem.boundingRect())
            for label in self._labels
            if label.isVisible()
        ]

    def set_seeds(self, unit_ids: Iterable[str]) -> None:
        """The seeds of the activation: always labelled."""
        self._seeds = np.zeros(self.graph.node_count, dtype=bool)
        for unit_id in unit_ids:
            i = self.graph.index.get(unit_id)
            if i is not None:
                self._seeds[i] = True
        self._label_pool = ()
        self._apply_nodes()

    def _range_changed(self, *_: object) -> None:
        if self._lod and self.pos.shape[0]:
            # Level of detail: thousands of resting edges only once zoomed in.
            (x0, x1), (y0, y1) = self.getPlotItem().getViewBox().viewRange()
            span = self.pos.max(axis=0) - self.pos.min(axis=0) + 1e-9
            share = max((x1 - x0) / span[0], (y1 - y0) / span[1])
            hidden = share > LOD_VISIBLE_SHARE
            if hidden != self._lod_hidden:
                self._lod_hidden = hidden
                for kind, curve in self.base_curves.items():
                    curve.setVisible(self._kind_visible[kind] and not hidden)
        # Zooming changes which captions and labels collide: place them again.
        self._place_captions()
        if self.graph.node_count:
            rank_by = self._levels if self._levels is not None else self._base_size
            self._update_labels(rank_by, force=True)

    # -- filters, marks and selection ----------------------------------------------------

    def set_kind_visible(self, kind: str, visible: bool) -> None:
        self._kind_visible[kind] = visible
        for curves in (self.trail_curves, self.active_curves, self.offered_curves):
            curves[kind].setVisible(visible)
        self._apply_edge_filter()

    def set_marked(self, unit_ids: Iterable[str]) -> None:
        """Ring these nodes (the packed results)."""
        self._marked = np.zeros(self.graph.node_count, dtype=bool)
        for unit_id in unit_ids:
            i = self.graph.index.get(unit_id)
            if i is not None:
                self._marked[i] = True
        if not self._marked.any():
            self.rings.setData([], [])
        self._apply_nodes()

    def marked_ids(self) -> list[str]:
        return [self.graph.ids[i] for i in np.flatnonzero(self._marked)]

    def set_selected(self, unit_id: str | None) -> None:
        i = self.graph.index.get(unit_id) if unit_id else None
        self._selected = i
        if i is None:
            self.selection.setData([], [])
        else:
            self.selection.setData(pos=self.pos[[i]], size=[self._size_of(i) + 14])

    @property
    def selected_id(self) -> str | None:
        return None if self._selected is None else self.graph.ids[self._selected]

    def _size_of(self, i: int) -> float:
        return float(self._sizes[i]) if i < self._sizes.size else 10.0

    def sizes(self) -> np.ndarray:
        return self._sizes.copy()

    def drawn_ids(self) -> list[str]:
        """The nodes drawn in the frame shown."""
        visible = self._visible if self._visible.size == self.graph.node_count else None
        ids = self.graph.ids
        return list(ids) if visible is None else [ids[i] for i in np.flatnonzero(visible)]

    def lit_ids(self) -> list[str]:
        """The drawn nodes the spreading has lit by the frame shown (all, with no activation)."""
        if self._levels is None:
            return self.drawn_ids()
        return [self.graph.ids[i] for i in np.flatnonzero(self._levels > 0)]

    def labelled(self) -> list[str]:
        return [self.graph.ids[i] for i, _text in self._label_top]

    # -- pointer ----------------------------------------------------------------------

    def _on_clicked(self, _item, points, _ev) -> None:
        if len(points):
            self.node_clicked.emit(self.graph.ids[int(points[0].index())])

    def _on_hovered(self, _item, points, _ev) -> None:
        i = int(points[0].index()) if len(points) else None
        if i == self._hovered:
            return
        self._hovered = i
        if i is None:
            self._hover_label.hide()
            self.node_hovered.emit("")
            return
        text = _short(self.graph.label(i), 90)
        if self._levels is not None and self._levels[i] > 0:
            text += f"\nactivation {self._levels[i]:.3f}"
        self._hover_label.setText(text)
        vb = self.getPlotItem().getViewBox()
        place_note(self._hover_label, vb, tuple(self.pos[i]), self._size_of(i) / 2)
        self.node_hovered.emit(self.graph.ids[i])

    def hover_node(self, unit_id: str | None) -> None:
        """Show the hover label as if the pointer were on `unit_id` (tests, keyboard)."""
        i = self.graph.index.get(unit_id) if unit_id else None
        points = [self.nodes.points()[i]] if i is not None else []
        self._on_hovered(self.nodes, points, None)

    def hover_text(self) -> str:
        return self._hover_label.textItem.toPlainText() if self._hover_label.isVisible() else ""

    def hover_rect(self) -> QRectF:
        """Where the hover note is drawn, in scene coordinates (tests: inside the view)."""
        item = self._hover_label.textItem
        return item.mapRectToScene(item.boundingRect())

    def find(self, text: str) -> list[str]:
        """Nodes whose text (or id) contains `text`, strongest first."""
        needle = text.strip().lower()
        if not needle:
            return []
        g = self.graph
        hits = [
            i for i in range(g.node_count) if needle in g.label(i).lower() or needle in g.ids[i]
        ]
        rank = self._levels if self._levels is not None else self._base_size
        hits.sort(key=lambda i: (-float(rank[i]) if i < len(rank) else 0.0, i))
        return [g.ids[i] for i in hits]

    def center_on(self, unit_id: str) -> None:
        """Pan (keeping the zoom) so `unit_id` is in the middle of the view."""
        i = self.graph.index.get(unit_id)
        if i is None:
            return
        vb = self.getPlotItem().getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        x, y = self.pos[i]
        w, h = (x1 - x0) / 2, (y1 - y0) / 2
        vb.setRange(xRange=(x - w, x + w), yRange=(y - h, y + h), padding=0)

    def node_scene_pos(self, unit_id: str) -> QPointF:
        i = self.graph.index[unit_id]
        vb = self.getPlotItem().getViewBox()
        return vb.mapViewToScene(QPointF(*self.pos[i]))
