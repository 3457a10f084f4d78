"""The Entity map pane: entities as nodes, co-mentions as edges.

Size by facts, colour by type; click an entity for its facts in time order;
drag one entity onto another to merge them; retract from the side panel
(after the same review the Entities pane gives: the facts it hides, listed),
which then keeps the retracted entity selected, showing what it had, with Restore.
Merge and retract are the engine's operations (`Bank.merge_entities`,
`Bank.retract_entity`), run through the runner like every mutation; the map
re-reads itself from the `Change` they return.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetrics
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QMessageBox,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.graph.entitymap import EntityMap, read
from app.graph.notes import place_note
from app.panes.base import Pane, empty_label, muted_label
from app.panes.entity_dialogs import RetractEntityDialog
from app.runner import describe
from app.state import StudioState
from core import FACT_NETWORKS, Kind

if TYPE_CHECKING:
    from core import Bank, Change

TYPE_COLORS = ("#3b82f6", "#10b981", "#f59e0b", "#8b5cf6", "#ef4444", "#14b8a6", "#64748b")
LABELS = 25  # the most mentioned entities are named (where their names fit); others on hover
LABEL_MARGIN = 8.0  # a text item's margins around its text, in pixels
PICK_PX = 12.0  # how near (in pixels) the pointer must be to pick a node


class EntityMapView(pg.PlotWidget):
    entity_clicked = Signal(str)
    merge_requested = Signal(str, str)  # dragged entity id, entity it was dropped on

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, background=QColor("#ffffff"))
        plot = self.getPlotItem()
        plot.hideAxis("left")
        plot.hideAxis("bottom")
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.setAspectLocked(True)
        self.map: EntityMap | None = None
        self.edges = pg.PlotCurveItem(
            pen=pg.mkPen(QColor(100, 116, 139, 70), width=1), connect="pairs"
        )
        self.edges.setSegmentedLineMode("on")
        self.nodes = pg.ScatterPlotItem(pxMode=True, pen=pg.mkPen("#ffffff", width=0.8))
        self.ghost = pg.ScatterPlotItem(pxMode=True, pen=pg.mkPen("#e11d48", width=2), brush=None)
        self.selection = pg.ScatterPlotItem(
            pxMode=True, pen=pg.mkPen("#e11d48", width=3), brush=None
        )
        for item in (self.edges, self.nodes, self.selection, self.ghost):
            self.addItem(item)
        self.edges.setZValue(-10)
        self._labels: list[pg.TextItem] = []
        self._label_order: list[int] = []  # most mentioned first: who gets a label first
        self._drag: int | None = None
        self._hovered: int | None = None
        self.type_brushes: dict[str, QBrush] = {}
        # Every entity is named when the pointer rests on it (only the biggest carry a label).
        self.hover_label = pg.TextItem(
            "", color="#1d2430", fill=QColor(255, 255, 255, 230), anchor=(0.5, 1.2)
        )
        self.hover_label.setZValue(30)
        self.hover_label.hide()
        self.addItem(self.hover_label, ignoreBounds=True)
        self.getPlotItem().getViewBox().sigRangeChanged.connect(self._place_labels)

    def set_map(self, emap: EntityMap) -> None:
        self.map = emap
        pos = emap.positions
        g = emap.graph
        x = np.column_stack((pos[g.src, 0], pos[g.dst, 0])).ravel()
        y = np.column_stack((pos[g.src, 1], pos[g.dst, 1])).ravel()
        self.edges.setData(x, y, connect="pairs")
        self.type_brushes = {
            t: QBrush(QColor(TYPE_COLORS[i % len(TYPE_COLORS)])) for i, t in enumerate(emap.types)
        }
        facts = np.array([e.mention_count for e in emap.entities], dtype=np.float64)
        top = facts.max() if facts.size and facts.max() > 0 else 1.0
        self.sizes = np.rint(6.0 + 22.0 * np.sqrt(facts / top))
        brushes = [self.type_brushes[e.type] for e in emap.entities]
        self.nodes.setData(pos=pos, size=self.sizes, brush=brushes, data=np.arange(len(pos)))
        for label in self._labels:
            self.removeItem(label)
        self._labels = []
        self._label_order = np.argsort(-facts, kind="stable")[:LABELS].tolist()
        for i in self._label_order:
            label = pg.TextItem(emap.entities[i].name, color="#1d2430", anchor=(0.5, 0.0))
            self.addItem(label)
            self._labels.append(label)
        self.selection.setData([], [])
        self.ghost.setData([], [])
        self._hovered = None
        self.hover_label.hide()
        self.getPlotItem().getViewBox().autoRange(padding=0.05)
        self._place_labels()

    def _place_labels(self, *_: object) -> None:
        """Each label just above its entity's disc (in pixels, whatever the zoom), or
        just under it when above would cover a bigger entity's label; hidden when
        both would: overlapping names are unreadable (hidden ones are named on hover)."""
        if self.map is None or not self._labels:
            return
        vb = self.getPlotItem().getViewBox()
        metrics = QFontMetrics(self._labels[0].textItem.font())
        placed: list[QRectF] = []
        for i, label in zip(self._label_order, self._labels, strict=True):
            at = vb.mapViewToScene(QPointF(*self.map.positions[i]))
            box = metrics.boundingRect(self.map.entities[i].name)
            w, h = box.width() + LABEL_MARGIN, box.height() + LABEL_MARGIN
            gap = self.sizes[i] / 2 + 1.0
            above = QRectF(at.x() - w / 2, at.y() - gap - h, w, h)
            below = QRectF(at.x() - w / 2, at.y() + gap, w, h)
            free = [r for r in (above, below) if not any(r.intersects(o) for o in placed)]
            label.setVisible(bool(free))
            if free:
                rect = free[0]
                placed.append(rect)
                label.setAnchor((0.5, 0.0))  # the rectangle's top-centre is the label's place
                label.setPos(vb.mapSceneToView(QPointF(rect.center().x(), rect.top())))

    def labelled(self) -> list[str]:
        """The names drawn as labels now (tests)."""
        return [label.textItem.toPlainText() for label in self._labels if label.isVisible()]

    def label_rects(self) -> list[QRectF]:
        """The drawn labels' rectangles in scene coordinates (tests: none overlap)."""
        return [
            label.textItem.mapRectToScene(label.textItem.boundingRect())
            for label in self._labels
            if label.isVisible()
        ]

    def hover(self, i: int | None) -> None:
        """Name the entity under the pointer (None hides the note)."""
        if i == self._hovered:
            return
        self._hovered = i
        if i is None or self.map is None:
            self.hover_label.hide()
            return
        entity = self.map.entities[i]
        facts = f"{entity.mention_count} fact{'' if entity.mention_count == 1 else 's'}"
        self.hover_label.setText(f"{entity.name} · {entity.type} · {facts}")
        vb = self.getPlotItem().getViewBox()
        place_note(self.hover_label, vb, tuple(self.map.positions[i]), self.sizes[i] / 2)

    def hover_text(self) -> str:
        return self.hover_label.textItem.toPlainText() if self.hover_label.isVisible() else ""

    def hover_rect(self) -> QRectF:
        """Where the hover note is drawn, in scene coordinates (tests: by its entity)."""
        item = self.hover_label.textItem
        return item.mapRectToScene(item.boundingRect())

    def select(self, i: int | None) -> None:
        if i is None or self.map is None:
            self.selection.setData([], [])
        else:
            self.selection.setData(pos=self.map.positions[[i]], size=[self.sizes[i] + 10])

    # -- picking and dragging ---------------------------------------------------------

    def node_at(self, point) -> int | None:
        """The node under a viewport point (within PICK_PX pixels), if any."""
        if self.map is None or not len(self.map.positions):
            return None
        vb = self.getPlotItem().getViewBox()
        scene = self.mapToScene(point)
        ends = [vb.mapViewToScene(QPointF(*p)) for p in self.map.positions]
        xy = np.array([(p.x(), p.y()) for p in ends])
        d = np.hypot(xy[:, 0] - scene.x(), xy[:, 1] - scene.y())
        i = int(np.argmin(d))
        return i if d[i] <= max(PICK_PX, self.sizes[i] / 2) else None

    def view_pos(self, entity_id: str):
        """The viewport point of an entity (tests drive the mouse with it)."""
        assert self.map is not None
        vb = self.getPlotItem().getViewBox()
        i = self.map.graph.index[entity_id]
        return self.mapFromScene(vb.mapViewToScene(QPointF(*self.map.positions[i])))

    def mousePressEvent(self, ev) -> None:  # noqa: N802 (Qt's name)
        i = (
            self.node_at(ev.position().toPoint())
            if ev.button() == Qt.MouseButton.LeftButton
            else None
        )
        if i is None:
            super().mousePressEvent(ev)
            return
        self._drag = i
        ev.accept()

    def mouseMoveEvent(self, ev) -> None:  # noqa: N802
        if self._drag is None:
            self.hover(self.node_at(ev.position().toPoint()))
            super().mouseMoveEvent(ev)
            return
        vb = self.getPlotItem().getViewBox()
        at = vb.mapSceneToView(self.mapToScene(ev.position().toPoint()))
        self.ghost.setData(pos=[(at.x(), at.y())], size=[self.sizes[self._drag]])
        ev.accept()

    def leaveEvent(self, ev) -> None:  # noqa: N802
        self.hover(None)
        super().leaveEvent(ev)

    def mouseReleaseEvent(self, ev) -> None:  # noqa: N802
        if self._drag is None:
            super().mouseReleaseEvent(ev)
            return
        source, self._drag = self._drag, None
        self.ghost.setData([], [])
        target = self.node_at(ev.position().toPoint())
        assert self.map is not None
        ids = self.map.graph.ids
        if target is None or target == source:
            self.entity_clicked.emit(ids[source])
        else:
            self.merge_requested.emit(ids[source], ids[target])
        ev.accept()


def _ask(parent: QWidget, title: str, text: str) -> bool:
    answer = QMessageBox.question(parent, title, text)
    return answer == QMessageBox.StandardButton.Yes


class EntityMapPane(Pane):
    title = "Entity map"
    slug = "entity-map"
    timeline_requested = Signal(str)  # an entity's name: the shell opens its opinion timeline

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self.map: EntityMap | None = None
        self.selected: str | None = None
        # Asks before a merge or a retraction; tests replace it.
        self.confirm: Callable[[str, str], bool] = lambda title, text: _ask(self, title, text)
        # The retract review (the facts it hides, listed); tests replace it.
        self.review_retract: Callable[[Any], bool] = lambda preview: (
            RetractEntityDialog(preview, self).exec() == QDialog.DialogCode.Accepted
        )
        self._retracted: dict[str, str] = {}  # retracted here: id -> name, kept selected

        self.find = QLineEdit(placeholderText="Find an entity by name…")
        self.find.setClearButtonEnabled(True)
        self.find.returnPressed.connect(lambda: self.select_entity(self.find.text()))
        self.status = muted_label()
        bar = QHBoxLayout()
        bar.addWidget(self.find, 1)
        bar.addWidget(self.status, 2)

        self.view = EntityMapView()
        self.view.entity_clicked.connect(self.select_entity)
        self.view.merge_requested.connect(self.request_merge)
        self.name = QLabel()
        self.name.setWordWrap(True)
        self.facts = QListWidget()
        self.facts.setWordWrap(True)
        self.retract_button = QPushButton("Retract entity…")
        self.retract_button.clicked.connect(self.request_retract)
        self.timeline_button = QPushButton("Opinion timeline")
        self.timeline_button.setToolTip("The opinions about this entity, over time")
        self.timeline_button.clicked.connect(self._timeline_clicked)
        side = QWidget()
        sv = QVBoxLayout(side)
        sv.addWidget(self.name)
        sv.addWidget(QLabel("Facts, in time order:"))
        sv.addWidget(self.facts, 1)
        actions = QHBoxLayout()
        actions.addWidget(self.timeline_button)
        actions.addWidget(self.retract_button)
        sv.addLayout(actions)
        side.setMinimumWidth(260)
        self.side = side
        self.side.hide()
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.view)
        self.splitter.addWidget(side)
        self.splitter.setSizes([900, 340])

        self.no_bank = self.no_bank_label(empty_label())
        self.empty = empty_label(
            "No entities yet: ingest conversations to see who and what they mention."
        )
        self.stack = QStackedWidget()
        for widget in (self.no_bank, self.empty, self.splitter):
            self.stack.addWidget(widget)
        root = QVBoxLayout(self)
        root.addLayout(bar)
        root.addWidget(self.stack, 1)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self._show_legend({})
        root.addWidget(self.legend)
        self.set_bank(state.bank)

    # -- pane interface ----------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self.map = None
        self.selected = None
        self.side.hide()
        self.stack.setCurrentWidget(self.no_bank if bank is None else self.empty)
        if bank is not None:
            self.refresh()

    def refresh(self) -> None:
        bank = self.bank
        if bank is None:
            return
        self.status.setText("Reading entities…")
        self.state.runner.run_query(
            lambda: read(bank),
            self._arrived,
            lambda error: self.status.setText(f"Could not read entities: {describe(error)}"),
            key=bank,
            latest=(self, "map"),
        )

    def apply_change(self, change: Change, initiator: object = None) -> None:
        if change.touches(Kind.ENTITY) or change.touches(Kind.UNIT):
            self.refresh()

    def focus_search(self) -> bool:
        self.find.setFocus()
        return True

    def _arrived(self, emap: EntityMap) -> None:
        self.map = emap
        if not emap.entities:
            self.stack.setCurrentWidget(self.empty)
            self.status.setText("")
            return
        self.stack.setCurrentWidget(self.splitter)
        g = emap.graph
        self.status.setText(
            f"{len(emap.entities)} entities · {g.edge_count} of {emap.pairs_total} co-mention "
            f"links drawn (each entity's strongest)"
        )
        self.view.set_map(emap)
        self._show_legend(self.view.type_brushes)
        if self.selected and self.selected in g.index:
            self.select_entity(self.selected)
        elif self.selected in self._retracted:
            self._show_retracted(self.selected)  # off the map, still selected
        else:
            self.selected = None
            self.side.hide()

    def _show_legend(self, brushes: dict[str, QBrush]) -> None:
        """What size, colour and edges mean, with each type's colour named."""
        types = " ".join(
            f'<span style="color:{brush.color().name()}">●</span>&nbsp;{escape(kind)}'
            for kind, brush in brushes.items()
        )
        self.legend.setText(
            "Size: facts mentioning the entity · colour: type"
            + (f" ({types})" if types else "")
            + " · edge: facts mentioning both · hover an entity for its name · "
            "drag an entity onto another to merge them"
        )

    # -- selection ----------------------------------------------------------------

    def select_entity(self, name_or_id: str) -> bool:
        emap = self.map
        i = emap.index_of(name_or_id) if emap is not None else None
        if i is None or emap is None:
            return False
        entity = emap.entities[i]
        self.selected = entity.id
        self.view.select(i)
        self.side.show()
        self.retract_button.setText("Retract entity…")
        self.timeline_button.setEnabled(True)
        seen = ""
        if entity.first_seen and entity.last_seen:
            seen = f"<br>{entity.first_seen:%d %b %Y} – {entity.last_seen:%d %b %Y}"
        self.name.setText(
            f"<b>{entity.name}</b> · {entity.type} · {entity.mention_count} facts{seen}"
        )
        self.facts.clear()
        self.facts.addItem("Loading…")
        bank = self.bank
        if bank is not None:
            self.state.runner.run_query(
                lambda: bank.units(FACT_NETWORKS, entity=entity.id, limit=None),
                lambda units: self._facts(entity.id, units),
                key=bank,
            )
        return True

    def _show_retracted(self, entity_id: str) -> None:
        """A retracted entity is off the map; its panel stays, with what it had."""
        self.side.show()
        self.view.select(None)
        self.name.setText(
            f"<b>{self._retracted[entity_id]}</b> (retracted) · hidden from recall, reflect "
            f"and the default views; Restore (or Undo) brings it back. It had:"
        )
        self.retract_button.setText("Restore entity")
        self.timeline_button.setEnabled(False)  # retracted: its opinions are hidden
        self.facts.clear()
        self.facts.addItem("Loading…")
        bank = self.bank
        if bank is not None:
            self.state.runner.run_query(
                lambda: bank.units(FACT_NETWORKS, entity=entity_id, status=None, limit=None),
                lambda units: self._facts(entity_id, units),
                key=bank,
            )

    def _facts(self, entity_id: str, units) -> None:
        if entity_id != self.selected:
            return
        self.facts.clear()
        timed = sorted(units, key=lambda u: (u.occurred_start is None, u.occurred_start or 0))
        for unit in timed:
            when = f"{unit.occurred_start:%d %b %Y}  " if unit.occurred_start else ""
            self.facts.addItem(f"{when}{unit.text}")

    def _timeline_clicked(self) -> None:
        if self.selected is not None and self.selected not in self._retracted:
            self.timeline_requested.emit(self._name(self.selected))

    # -- curation through the engine -----------------------------------------------

    def _name(self, entity_id: str) -> str:
        emap = self.map
        i = emap.graph.index.get(entity_id) if emap is not None else None
        return emap.entities[i].name if emap is not None and i is not None else entity_id

    def request_merge(self, source_id: str, target_id: str) -> None:
        bank = self.bank
        if bank is None:
            return
        source, target = self._name(source_id), self._name(target_id)
        if not self.confirm(
            "Merge entities",
            f"Merge “{source}” into “{target}”? Its facts will mention “{target}”. (Undoable.)",
        ):
            return
        self.selected = target_id
        self.status.setText(f"Merging {source} into {target}…")
        self.state.runner.run_op(
            lambda: bank.merge_entities(source_id, target_id),
            on_error=lambda error: self.status.setText(f"Merge failed: {describe(error)}"),
            key=bank,
            label=f"merge {source} into {target}",
        )

    def request_retract(self) -> None:
        """Retract the selected entity after the review (or restore it, once retracted)."""
        bank, entity_id = self.bank, self.selected
        if bank is None or entity_id is None:
            return
        if entity_id in self._retracted:
            self._restore(bank, entity_id)
            return
        name = self._name(entity_id)
        self.status.setText(f"Reading what retracting {name} hides…")
        self.state.runner.run_query(
            lambda: bank.retract_preview(entity_id),
            lambda preview: self._reviewed(bank, entity_id, preview),
            lambda error: self.status.setText(f"Retract failed: {describe(error)}"),
            key=bank,
        )

    def _reviewed(self, bank: Bank, entity_id: str, preview: Any) -> None:
        if bank is not self.bank or entity_id != self.selected:
            return
        if not self.review_retract(preview):
            self.status.setText("")
            return
        self._retracted[entity_id] = preview.name
        self.status.setText(f"Retracting {preview.name}…")
        self.state.runner.run_op(
            lambda: bank.retract_entity(entity_id),
            on_error=lambda error: self.status.setText(f"Retract failed: {describe(error)}"),
            key=bank,
            label=f"retract {preview.name}",
        )

    def _restore(self, bank: Bank, entity_id: str) -> None:
        name = self._retracted.pop(entity_id)
        self.status.setText(f"Restoring {name}…")
        self.state.runner.run_op(
            lambda: bank.restore_entity(entity_id),
            on_error=lambda error: self.status.setText(f"Restore failed: {describe(error)}"),
            key=bank,
            label=f"restore {name}",
        )

    def prepare_screenshot(self, idle) -> None:
        idle()
        if self.map is not None and self.map.entities:
            self.select_entity(self.map.entities[0].id)
            idle()
