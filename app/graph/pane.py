"""The Graph pane: the neighbourhood of a query, a unit or an entity, animated.

A query runs recall (in the runner) and shows every unit its trace names,
with the spreading activation it recorded; a unit or an entity shows the
units within a few links, with activation spread from it. Clicking a node
shows its unit beside the graph and emits `unit_requested` for the shell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.graph import neighbourhood
from app.graph.detail import ReadOnlyUnitDetail
from app.graph.neighbourhood import Neighbourhood
from app.graph.widget import GraphWidget
from app.panes.base import Pane, empty_label, muted_label
from app.runner import describe
from app.state import StudioState
from core import Kind

if TYPE_CHECKING:
    from core import Bank, Change

MODES = (
    (
        "query",
        "Query",
        "What the recall of a question reaches, e.g. “What did Alice say about Atlas?”",
    ),
    ("unit", "Unit id", "The units within two links of one unit (paste its id)"),
    ("entity", "Entity", "The units that mention an entity (name or id) and their neighbours"),
)
EMPTY = (
    "Type a question and press <b>Enter</b> to see the units recall reaches,<br>"
    "the seeds first, then each wave of the spreading activation as it reaches new ones."
)


class GraphPane(Pane):
    title = "Graph"
    slug = "graph"
    unit_requested = Signal(str)  # a node was clicked: the shell may open the unit

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self._last: tuple[str, str] | None = None
        self.neighbourhood: Neighbourhood | None = None

        self.mode = QComboBox()
        for key, label, tip in MODES:
            self.mode.addItem(label, key)
            self.mode.setItemData(self.mode.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        self.mode.currentIndexChanged.connect(self._mode_changed)
        self.search = QLineEdit()
        self.search.setClearButtonEnabled(True)
        self.search.returnPressed.connect(self.show_current)
        self.show_button = QPushButton("Show")
        self.show_button.setProperty("primary", True)
        self.show_button.clicked.connect(self.show_current)
        self.status = muted_label()
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        bar = QHBoxLayout()
        bar.addWidget(self.mode)
        bar.addWidget(self.search, 1)
        bar.addWidget(self.show_button)

        self.graph = GraphWidget(runner=state.runner, autoplay=True)
        self.graph.recall_rerun = self._recall_with
        self._settings: dict[str, Any] = {}  # recall overrides from the graph's budgets
        self.graph.node_clicked.connect(self._node_clicked)
        self.graph.layout_ready.connect(self._laid_out)
        self.detail = ReadOnlyUnitDetail(state)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.graph)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 4)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([900, 300])
        self.detail.hide()  # until a node is clicked: an empty panel only takes room

        self.empty = empty_label(EMPTY)
        self.no_bank = self.no_bank_label(empty_label())
        self.stack = QStackedWidget()
        for widget in (self.no_bank, self.empty, self.splitter):
            self.stack.addWidget(widget)

        root = QVBoxLayout(self)
        root.addLayout(bar)
        root.addWidget(self.status)
        root.addWidget(self.stack, 1)
        self._mode_changed()
        self.set_bank(state.bank)

    # -- pane interface --------------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self._last = None
        self.neighbourhood = None
        self.detail.load(None)
        self.detail.hide()
        self.status.setText("")
        for widget in (self.mode, self.search, self.show_button):
            widget.setEnabled(bank is not None)
        self.stack.setCurrentWidget(self.no_bank if bank is None else self.empty)

    def refresh(self) -> None:
        if self._last is not None:
            self.request(*self._last)

    def apply_change(self, change: Change, initiator: object = None) -> None:
        # Only a change to something shown (units, links) is worth re-reading.
        nb = self.neighbourhood
        if nb is None or self._last is None:
            return
        if change.ids(Kind.UNIT) & set(nb.graph.ids) or change.touches(Kind.LINK):
            self.refresh()

    def focus_search(self) -> bool:
        self.search.setFocus()
        self.search.selectAll()
        return True

    # -- requests --------------------------------------------------------------------------

    def _mode_changed(self, *_: Any) -> None:
        key = self.mode.currentData()
        tip = next(t for k, _label, t in MODES if k == key)
        self.search.setPlaceholderText(tip)

    def show_current(self) -> None:
        text = self.search.text().strip()
        if text:
            self.request(self.mode.currentData(), text)

    def show_query(self, query: str) -> None:
        self._set_request("query", query)

    def show_unit(self, unit_id: str) -> None:
        self._set_request("unit", unit_id)

    def show_entity(self, entity: str) -> None:
        self._set_request("entity", entity)

    def _set_request(self, mode: str, text: str) -> None:
        self.mode.setCurrentIndex(self.mode.findData(mode))
        self.search.setText(text)
        self.request(mode, text)

    def _recall_with(self, settings: dict[str, Any]) -> None:
        """The budgets changed: run the query's recall again with them (other
        modes spread over the shown graph, in the widget)."""
        self._settings = dict(settings)
        if self._last is not None and self._last[0] == "query":
            self.request(*self._last)
        else:
            self.graph.rerun()

    def request(self, mode: str, text: str) -> None:
        bank = self.bank
        if bank is None:
            return
        settings = dict(self._settings)
        self._last = (mode, text)
        if mode == "query":

            def work() -> Neighbourhood:
                # Looking at recall is not using it: the access counts stay.
                result = bank.recall(text, settings=settings, count_access=False)
                return neighbourhood.of_trace(bank, result.trace, result.unit_ids)

        elif mode == "unit":

            def work() -> Neighbourhood:
                return neighbourhood.of_unit(bank, text)

        else:

            def work() -> Neighbourhood:
                return neighbourhood.of_entity(bank, text)

        self.status.setText("Reading the neighbourhood…")
        self.state.runner.run_query(
            work,
            self._arrived,
            self._failed,
            key=bank,
            latest=(self, "neighbourhood"),
        )

    def _arrived(self, nb: Neighbourhood) -> None:
        self.neighbourhood = nb
        if nb.graph.node_count == 0:
            self.status.setText(f"{nb.title} — nothing to show: no unit matched.")
            self.stack.setCurrentWidget(self.empty)
            return
        self.stack.setCurrentWidget(self.splitter)
        notes = " · ".join(nb.notes)
        self.status.setText(f"{nb.title}" + (f" — {notes}" if notes else "") + " — laying out…")
        self.graph.show_graph(
            nb.graph, activation=nb.activation, params=nb.params, marked=nb.packed
        )

    def _laid_out(self) -> None:
        nb = self.neighbourhood
        if nb is None:
            return
        notes = " · ".join(nb.notes)
        text = nb.title + (f" — {notes}" if notes else "")
        if nb.packed:
            text += f" — {len(nb.packed)} packed results ringed"
        self.status.setText(text)

    def _failed(self, error: BaseException) -> None:
        self.status.setText(f"Could not read the neighbourhood: {describe(error)}")

    def prepare_screenshot(self, idle) -> None:
        """For `engram screenshot`: a demo query's neighbourhood, mid-animation."""
        self.show_query("What caused the Atlas outage on June 23?")
        idle()
        player = self.graph.player
        player.pause()  # a still picture: the replay started by itself
        player.seek(min(player.last_frame, int(player.frames_per_step * 2.5)))
        idle()

    def _node_clicked(self, unit_id: str) -> None:
        self.detail.show()
        self.graph.select(unit_id)
        self.detail.load(unit_id)
        self.unit_requested.emit(unit_id)
