"""A note (a pyqtgraph TextItem) beside a node, kept whole inside the view.

Shared by the graph and the entity map: the note goes above the node's disc,
under it when the top edge is too close, shifts in from the sides, and wraps
when wider than the view (the recall debugger's graph is ~300 px wide).
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QPointF


def place_note(note: pg.TextItem, vb: pg.ViewBox, at: tuple[float, float], radius: float) -> None:
    """Show `note` by the node at view point `at`, `radius` pixels across half its disc."""
    view = vb.sceneBoundingRect()
    centre = vb.mapViewToScene(QPointF(*at))
    note.setTextWidth(-1)  # its own width, unless wider than the view: then it wraps
    if note.textItem.boundingRect().width() > view.width():
        note.setTextWidth(max(view.width(), 60.0))
    size = note.textItem.boundingRect()
    w, h, gap = size.width(), size.height(), radius + 1.0
    left = min(max(centre.x() - w / 2, view.left()), max(view.right() - w, view.left()))
    above = centre.y() - gap - h >= view.top()
    note.setAnchor(((centre.x() - left) / w if w else 0.5, 1.0 if above else 0.0))
    foot = QPointF(centre.x(), centre.y() - gap if above else centre.y() + gap)
    note.setPos(vb.mapSceneToView(foot))
    note.show()
    # A note hidden while the view was laid out keeps a stale transform and paints
    # nowhere (off every screen) until it is placed again: place it now.
    note.updateTransform(force=True)
