"""Colours, pens and brushes of the graph, built once and reused every frame.

pyqtgraph caches each rendered node symbol by the identity of its pen and
brush, so a frame must hand it the same QBrush objects again, never fresh
ones: the lookup tables here are indexed by whole arrays per frame.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QPen

from app.graph.model import LINK_KINDS, NETWORKS
from app.theme import NETWORK_COLORS

LEVELS = 16  # brightness steps of a node between unlit and fully lit
UNKNOWN_COLOR = "#9aa3af"

KIND_COLORS = {
    "entity": "#14b8a6",
    "temporal": "#eab308",
    "semantic": "#94a3b8",
    "causal": "#ef4444",
}
KIND_STYLES = {
    "entity": Qt.PenStyle.SolidLine,
    "temporal": Qt.PenStyle.DashLine,
    "semantic": Qt.PenStyle.DotLine,
    "causal": Qt.PenStyle.SolidLine,
}
KIND_WIDTHS = {"entity": 1.0, "temporal": 1.0, "semantic": 1.0, "causal": 1.6}
RING_COLOR = "#f97316"
SELECTED_COLOR = "#e11d48"
HALO_COLOR = "#6366f1"  # the frontier spreading in the current step


def network_color(index: int) -> QColor:
    if 0 <= index < len(NETWORKS):
        return QColor(NETWORK_COLORS[NETWORKS[index]])
    return QColor(UNKNOWN_COLOR)


def _blend(a: QColor, b: QColor, t: float) -> QColor:
    return QColor(
        round(a.red() + (b.red() - a.red()) * t),
        round(a.green() + (b.green() - a.green()) * t),
        round(a.blue() + (b.blue() - a.blue()) * t),
    )


class GraphStyle:
    """Every pen and brush the graph draws with, for one background colour."""

    def __init__(self, background: QColor) -> None:
        self.background = QColor(background)
        self.dark = self.background.lightnessF() < 0.5
        self.text = QColor("#e5e8ed" if self.dark else "#1d2430")
        # brushes[network, level]: an object array, so a frame's brushes are one fancy index.
        self.brushes = np.empty((len(NETWORKS) + 1, LEVELS), dtype=object)
        for net in range(len(NETWORKS) + 1):
            color = network_color(net)
            for level in range(LEVELS):
                t = 0.28 + 0.72 * level / (LEVELS - 1)
                self.brushes[net, level] = QBrush(_blend(self.background, color, t))
        # Nodes the spreading never reached, drawn once it is over: faint, apart.
        self.context_brushes = np.empty(len(NETWORKS) + 1, dtype=object)
        for net in range(len(NETWORKS) + 1):
            self.context_brushes[net] = QBrush(_blend(self.background, network_color(net), 0.22))
        outline = QColor(self.background)
        self.node_pen = QPen(outline.darker(130) if not self.dark else outline.lighter(160))
        self.node_pen.setWidthF(0.8)
        self.node_pen.setCosmetic(True)
        self.context_pen = QPen(_blend(self.background, self.node_pen.color(), 0.45))
        self.context_pen.setWidthF(0.8)
        self.context_pen.setCosmetic(True)
        self.base_pens = {kind: self._pen(kind, 55 if not self.dark else 70) for kind in LINK_KINDS}
        # The links from the lit region to its context: one faint grey, whatever the kind.
        context_link = QColor(self.node_pen.color())
        context_link.setAlpha(45 if not self.dark else 60)
        self.context_link_pen = QPen(context_link)
        self.context_link_pen.setWidthF(0.8)
        self.context_link_pen.setCosmetic(True)
        self.context_link_pen.setStyle(Qt.PenStyle.DotLine)
        self.active_pens = {
            kind: self._pen(kind, 255, width=3.2, solid=True) for kind in LINK_KINDS
        }
        self.trail_pens = {kind: self._pen(kind, 95, width=1.2, solid=True) for kind in LINK_KINDS}
        self.offered_pens = {
            kind: self._pen(kind, 90, width=0.9, solid=True) for kind in LINK_KINDS
        }
        # pulse_brushes[kind]: the energy dots, in the link kind's colour.
        self.pulse_brushes = np.empty(len(LINK_KINDS), dtype=object)
        for k, kind in enumerate(LINK_KINDS):
            self.pulse_brushes[k] = QBrush(QColor(KIND_COLORS[kind]))
        halo = QColor(HALO_COLOR)
        halo.setAlpha(170)
        self.halo_pen = QPen(halo)
        self.halo_pen.setWidthF(1.8)
        self.halo_pen.setCosmetic(True)
        ring = QPen(QColor(RING_COLOR))
        ring.setWidthF(2.2)
        ring.setCosmetic(True)
        self.ring_pen = ring
        selected = QPen(QColor(SELECTED_COLOR))
        selected.setWidthF(3.0)
        selected.setCosmetic(True)
        self.selected_pen = selected
        self.no_brush = QBrush(Qt.BrushStyle.NoBrush)
        guide = QColor(HALO_COLOR)
        guide.setAlpha(40 if not self.dark else 60)
        self.guide_pen = QPen(guide)
        self.guide_pen.setWidthF(1.0)
        self.guide_pen.setCosmetic(True)
        self.guide_pen.setStyle(Qt.PenStyle.DashLine)
        self.guide_text = _blend(self.background, QColor(HALO_COLOR), 0.6)
        label_fill = QColor(self.background)
        label_fill.setAlpha(215)
        self.label_fill = QBrush(label_fill)

    @staticmethod
    def _pen(kind: str, alpha: int, width: float | None = None, solid: bool = False) -> QPen:
        color = QColor(KIND_COLORS[kind])
        color.setAlpha(alpha)
        pen = QPen(color)
        pen.setWidthF(KIND_WIDTHS[kind] if width is None else width)
        pen.setCosmetic(True)  # the same width in pixels at any zoom
        pen.setStyle(Qt.PenStyle.SolidLine if solid else KIND_STYLES[kind])
        return pen
