"""One network's units (world, experience, opinion, observation): filter, read, edit, delete.

One class serves the four networks. The table is a lazy model over the bank
(pages of 100 in the runner), so a 100,000-unit bank opens and scrolls
without stalls; the detail panel beside it shows the selected unit in full.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QItemSelectionModel, QSettings, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QMenu,
    QMessageBox,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import Pane, empty_label, muted_label
from app.panes.detail import UnitDetail
from app.panes.filters import FilterBar
from app.runner import describe
from app.state import StudioState
from app.unit_model import COLUMN, COLUMNS, UnitTableModel
from core import Change, Kind, Network

if TYPE_CHECKING:
    from core import Bank, Unit

# title, what one unit is called (singular, plural), and the empty state.
NETWORK_TEXT = {
    Network.WORLD: (
        "World",
        ("world fact", "world facts"),
        "No world facts yet — ingest a conversation with <b>Ctrl+I</b>.<br>"
        "World facts are objective statements about the outside world.",
    ),
    Network.EXPERIENCE: (
        "Experience",
        ("experience", "experiences"),
        "No experiences yet — ingest a conversation with <b>Ctrl+I</b>.<br>"
        "Experiences are the agent's own first-person history.",
    ),
    Network.OPINION: (
        "Opinions",
        ("opinion", "opinions"),
        "No opinions yet — ingest a conversation with <b>Ctrl+I</b>.<br>"
        "Opinions are the agent's beliefs, each with a confidence that moves with evidence.",
    ),
    Network.OBSERVATION: (
        "Observations",
        ("observation", "observations"),
        "No observations yet — ingest a conversation with <b>Ctrl+I</b>.<br>"
        "Observations are neutral profiles of entities, synthesised from the facts that mention them.",
    ),
}

# Shown from the header's context menu.
HIDDEN_COLUMNS = ("mentioned", "updated")
DEFAULT_WIDTHS = {
    "occurred": 128,
    "mentioned": 128,
    "confidence": 84,
    "entities": 170,
    "mode": 70,
    "updated": 128,
}


class NetworkPane(Pane):
    def __init__(self, state: StudioState, network: Network, parent: QWidget | None = None) -> None:
        super().__init__(state, parent, slug=Network(network).value)
        self.network = Network(network)
        self.title, (self.singular, self.plural), self.empty_text = NETWORK_TEXT[self.network]

        self.model = UnitTableModel(state.runner, self.network, self)
        self.model.count_changed.connect(self._counted)
        # A row selected before its page arrived: its unit is shown when the page is.
        self._awaiting_row: int | None = None
        self.model.page_loaded.connect(self._page_loaded)
        # A reset clears the selection without selectionChanged: update the buttons.
        self.model.modelReset.connect(self._update_actions)
        # A new order or filter reads the rows again: what was selected is selected
        # again where it is now (the model moves a selection itself on a refresh).
        self._reselect: list[str] = []
        self.model.modelAboutToBeReset.connect(self._hold_selection)
        # Rows another actor just wrote are marked for a while.
        self.model.marks = state.activity
        state.activity.marks_changed.connect(self.model.mark_all)
        self.model.edit_requested.connect(self.edit_unit)
        self.model.failed.connect(state.status.emit)

        self.filter_bar = FilterBar(show_confidence=self.network == Network.OPINION)
        self.filter_bar.changed.connect(self._filters_changed)
        # "Only the facts one write made" (the Activity pane's Show what it changed).
        self.only_label = muted_label()
        self.only_label.setObjectName("only-these")
        self.only_label.setTextFormat(Qt.TextFormat.RichText)
        self.only_label.linkActivated.connect(lambda _: self.show_only(None))
        self.only_label.setVisible(False)
        self._only: list[str] | None = None

        self.table = QTableView()
        self.table.setObjectName(f"table-{self.slug}")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        vheader = self.table.verticalHeader()
        vheader.setVisible(False)
        # Fixed row heights: the view never measures 100,000 rows.
        vheader.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vheader.setDefaultSectionSize(self.fontMetrics().height() + 10)
        header = self.table.horizontalHeader()
        header.setSectionsMovable(True)
        header.setHighlightSections(False)
        header.setStretchLastSection(False)
        for key, width in DEFAULT_WIDTHS.items():
            self.table.setColumnWidth(COLUMN[key], width)
        # The text takes what the other columns leave: no horizontal scrolling.
        header.setSectionResizeMode(COLUMN["text"], QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(60)
        for key in HIDDEN_COLUMNS:
            self.table.setColumnHidden(COLUMN[key], True)
        if self.network != Network.OPINION:
            self.table.setColumnHidden(COLUMN["confidence"], True)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._header_menu)
        header.setSortIndicator(COLUMN["occurred"], Qt.SortOrder.AscendingOrder)
        self.table.setSortingEnabled(True)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)

        self.empty = self.no_bank_label(empty_label())
        self.empty.setObjectName("empty-state")
        self.empty.linkActivated.connect(lambda _: self.filter_bar.clear())
        self.stack = QStackedWidget()
        self.stack.addWidget(self.table)
        self.stack.addWidget(self.empty)

        self.detail = UnitDetail(state)
        self.detail.collapsible = True
        self.detail.save_requested.connect(self.edit_unit)
        self.detail.delete_requested.connect(self.delete_units)
        self.detail.hide_requested.connect(self.set_hidden)
        self.detail.entity_clicked.connect(self.filter_bar.set_entity)

        self.count_label = muted_label()
        self.count_label.setWordWrap(False)
        self.delete_button = QPushButton("Delete selected")
        self.delete_button.setProperty("danger", True)
        self.delete_button.setToolTip("Delete the selected units (Del)")
        self.delete_button.clicked.connect(self.delete_selection)
        self.move_button = QPushButton("Move to…")
        self.move_button.setToolTip("Move the selected units to another network")
        move_menu = QMenu(self.move_button)
        for n in Network:
            if n != self.network:
                move_menu.addAction(n.value.capitalize(), lambda n=n: self.move_selection(n))
        self.move_button.setMenu(move_menu)
        self.add_button = QPushButton("Add memory…")
        self.add_button.setToolTip("Add a memory by hand (Undo takes it back)")
        self.add_button.clicked.connect(self.ask_add_memory)
        # Observations are the engine's profiles, never written by hand.
        self.add_button.setVisible(self.network != Network.OBSERVATION)
        footer = QHBoxLayout()
        footer.addWidget(self.count_label, 1)
        footer.addWidget(self.add_button)
        footer.addWidget(self.move_button)
        footer.addWidget(self.delete_button)

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(self.stack, 1)
        lv.addLayout(footer)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName(f"splitter-{self.slug}")
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setSizes([640, 400])

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.filter_bar)
        layout.addWidget(self.only_label)
        layout.addWidget(self.splitter, 1)

        self._update_actions()
        self.set_bank(state.bank)

    # -- Pane interface ------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self.detail.show_unit(None)
        self._reselect = []
        self._only = None
        self.only_label.setVisible(False)
        # Date filters belong to a bank's own time line: off, and offered over
        # this bank's span (not today, not the previous bank's dates).
        self.filter_bar.reset_dates()
        self.model.set_bank(bank, self.filter_bar.filters())
        self._show_state()
        if bank is not None:
            network = self.network
            self.state.runner.run_query(
                lambda: bank.time_span(network),
                lambda span: self._spanned(bank, span),
                lambda error: None,
                key=bank,
            )
        if bank is not None:
            self.state.runner.run_query(
                lambda: {e.id: e.name for e in bank.entities()},
                lambda names: self._entity_names(bank, names),
                lambda error: None,
                key=bank,
            )

    def apply_change(self, change: Change, initiator: object = None) -> None:
        if self.bank is None:
            return
        if change.touches(Kind.UNIT):
            self.model.apply_change(change)
            unit = self.detail.unit
            if unit is not None and unit.id in change.removed.get(Kind.UNIT, ()):
                self.detail.show_unit(None)
            elif unit is not None and unit.id in change.ids(Kind.UNIT):
                self._reload_detail(unit.id)
        if change.touches(Kind.ENTITY):
            self.set_bank_entities()

    def refresh(self) -> None:
        if self.bank is not None:
            self.model.refresh()
            if self.detail.unit is not None:
                self._reload_detail(self.detail.unit.id)

    def focus_search(self) -> bool:
        self.filter_bar.focus_search()
        return True

    # -- selection -----------------------------------------------------------

    def selected_rows(self) -> list[int]:
        return sorted(i.row() for i in self.table.selectionModel().selectedRows())

    def select_row(self, row: int) -> None:
        index = self.model.index(row, 0)
        flags = (
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows
        )
        self.table.selectionModel().setCurrentIndex(index, flags)

    def _filters_changed(self, filters: dict[str, Any]) -> None:
        if self._only is not None:
            filters = {**filters, "ids": self._only}
        self.model.set_filters(filters)

    def show_only(self, unit_ids: list[str] | None) -> None:
        """List only these units, all selected (None: list them all again)."""
        self._only = list(unit_ids) if unit_ids else None
        if self._only:
            n = len(self._only)
            self.only_label.setText(
                f"Showing only the {n:,} {self.singular if n == 1 else self.plural} one write made"
                " · <a href='all'>show all</a>"
            )
            self._reselect = list(self._only)
        self.only_label.setVisible(self._only is not None)
        self._filters_changed(self.filter_bar.filters())

    def _hold_selection(self) -> None:
        held = [u.id for u in (self.model.unit_at(r) for r in self.selected_rows()) if u]
        if held:
            self._reselect = held

    def _selection_changed(self, *_: Any) -> None:
        rows = self.selected_rows()
        if rows:
            self._reselect = []  # the person chose: nothing to bring back
        elif self._reselect:
            self._update_actions()
            return  # a reset cleared it; it comes back with the rows (_page_loaded)
        unit = self.model.unit_at(rows[0]) if len(rows) == 1 else None
        self._awaiting_row = rows[0] if len(rows) == 1 and unit is None else None
        if len(rows) == 1 and (
            self.detail.unit is None or unit is None or unit.id != self.detail.unit.id
        ):
            self.detail.show_unit(unit)
        elif not rows:
            self.detail.show_unit(None)
        self._update_actions()

    def _page_loaded(self, _page: int) -> None:
        if self._reselect:
            wanted, self._reselect = self._reselect, []
            if self.model.select_ids(self.table.selectionModel(), wanted) == 0:
                self._reselect = wanted  # not in the rows read yet
            else:
                self.table.scrollTo(self.table.currentIndex())
        if self._awaiting_row is not None and self.selected_rows() == [self._awaiting_row]:
            self._selection_changed()

    def _update_actions(self) -> None:
        n = len(self.selected_rows()) if self.table.selectionModel() else 0
        self.delete_button.setEnabled(n > 0)
        self.move_button.setEnabled(n > 0)
        self.delete_button.setText(f"Delete {n} selected" if n > 1 else "Delete selected")
        self._update_count()

    def _header_menu(self, pos) -> None:
        menu = QMenu(self)
        for i, column in enumerate(COLUMNS):
            if column.key == "text":
                continue
            action = menu.addAction(column.title)
            action.setCheckable(True)
            action.setChecked(not self.table.isColumnHidden(i))
            action.toggled.connect(lambda on, i=i: self.table.setColumnHidden(i, not on))
        menu.exec(self.table.horizontalHeader().mapToGlobal(pos))
        menu.deleteLater()

    def save_state(self, settings: QSettings) -> None:
        super().save_state(settings)
        settings.setValue(f"panes/{self.slug}/header", self.table.horizontalHeader().saveState())

    def restore_state(self, settings: QSettings) -> None:
        super().restore_state(settings)
        value = settings.value(f"panes/{self.slug}/header")
        if value is not None:
            self.table.horizontalHeader().restoreState(value)
            # The sort shown must be the model's: restoring may have moved the indicator.
            header = self.table.horizontalHeader()
            self.model.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())

    def _context_menu(self, pos) -> None:
        rows = self.selected_rows()
        if not rows:
            return
        menu = QMenu(self)
        if len(rows) == 1:
            menu.addAction("Edit text", lambda: self.table.edit(self.model.index(rows[0], 0)))
        move = menu.addMenu("Move to")
        for n in Network:
            if n != self.network:
                move.addAction(n.value.capitalize(), lambda n=n: self.move_selection(n))
        menu.addSeparator()
        menu.addAction(f"Delete {len(rows)} selected", self.delete_selection)
        menu.exec(self.table.viewport().mapToGlobal(pos))
        menu.deleteLater()

    # -- actions -------------------------------------------------------------

    def edit_unit(self, unit_id: str, edits: dict[str, Any]) -> None:
        bank = self.bank
        if bank is None or not edits:
            return
        self.state.status.emit("Saving…" + (" (re-embedding)" if "text" in edits else ""))
        self.detail.save_button.setEnabled(False)

        def saved(change: Change) -> None:
            self.state.status.emit("Saved.")
            current = self.detail.unit
            if current is not None and current.id == unit_id and self.detail.editing:
                self.detail.finish_edit()
                self._reload_detail(unit_id)
            self.detail.save_button.setEnabled(True)

        def failed(error: BaseException) -> None:
            self.detail.save_button.setEnabled(True)  # still editing: the person can fix it
            self.state.runner.failed.emit(describe(error), "")

        self.state.runner.run_op(lambda: bank.edit_unit(unit_id, **edits), saved, failed, key=bank)

    def set_hidden(self, unit_id: str, hidden: bool) -> None:
        """Hide a fact without deleting it (or bring a hidden one back)."""
        bank = self.bank
        if bank is None:
            return
        verb = "Hidden" if hidden else "Unhidden"

        def done(change: Change) -> None:
            self.state.status.emit(f"{verb} (Undo takes it back).")
            self._reload_detail(unit_id)

        self.state.runner.run_op(
            lambda: bank.hide_units([unit_id]) if hidden else bank.unhide_units([unit_id]),
            done,
            key=bank,
        )

    def ask_add_memory(self) -> None:
        bank = self.bank
        if bank is None:
            return

        def read() -> tuple[list, Any]:
            latest = bank.units(None, order="occurred_start", descending=True, limit=1)
            return bank.entities(), latest[0].occurred_start if latest else None

        self.state.runner.run_query(read, lambda got: self._add_memory_dialog(*got), key=bank)

    def _add_memory_dialog(self, entities: list, when: Any) -> None:
        from app.panes.memory_dialog import AddMemoryDialog

        network = self.network if self.network != Network.OBSERVATION else Network.WORLD
        dialog = AddMemoryDialog(entities, network, when, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.add_memory(**dialog.values())
        dialog.deleteLater()

    def add_memory(self, **values: Any) -> None:
        bank = self.bank
        if bank is None:
            return
        self.state.runner.run_op(
            lambda: bank.add_memory(**values),
            lambda change: self.state.status.emit("Memory added (Undo takes it back)."),
            key=bank,
        )

    def delete_selection(self) -> bool:
        rows = self.selected_rows()
        if not rows or self.bank is None:
            return False
        bank = self.bank
        resolve = self.model.ids_for_rows(rows)
        self.state.runner.run_query(resolve, self.delete_units, key=bank)
        return True

    def delete_units(self, unit_ids: list[str], confirm: bool = True) -> None:
        bank = self.bank
        if bank is None or not unit_ids:
            return
        what = self.singular if len(unit_ids) == 1 else f"{len(unit_ids):,} {self.plural}"
        # The confirmation names what it deletes: never a row number, always the facts.
        named = self._texts_of(unit_ids)
        listed = "\n".join(f"• {_short(t)}" for t in named[:5])
        if len(unit_ids) > len(named[:5]):
            listed += f"\n… and {len(unit_ids) - len(named[:5]):,} more"
        if confirm and not self._confirm(
            f"Delete {what}?",
            f"Delete {what} from “{bank.name}”?\n\n{listed}\n\nTheir links and entity "
            "mentions go with them. Undo (Ctrl+Z) brings them back.",
        ):
            return
        self.state.status.emit(f"Deleting {what}…")
        self.state.runner.run_op(
            lambda: bank.delete_units(unit_ids),
            lambda change: self.state.status.emit(f"Deleted {what}."),
            key=bank,
        )

    def _texts_of(self, unit_ids: list[str]) -> list[str]:
        """The texts of these units as the pane knows them (its rows, its detail)."""
        known = {}
        detail = self.detail.unit
        if detail is not None:
            known[detail.id] = detail.text
        for unit_id in unit_ids:
            row = self.model.row_of(unit_id)
            unit = self.model.unit_at(row) if row is not None else None
            if unit is not None:
                known[unit.id] = unit.text
        return [known.get(u, f"unit {u}") for u in unit_ids]

    def move_selection(self, network: Network) -> None:
        rows = self.selected_rows()
        bank = self.bank
        if not rows or bank is None:
            return
        resolve = self.model.ids_for_rows(rows)

        def move() -> Change:
            change = Change()
            for unit_id in resolve():
                change = change | bank.edit_unit(unit_id, network=network)
            return change

        self.state.runner.run_op(
            move,
            lambda change: self.state.status.emit(
                f"Moved {len(change.ids(Kind.UNIT)):,} to {network.value}."
            ),
            key=bank,
        )

    def _confirm(self, title: str, text: str) -> bool:
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, parent=self)
        box.setStandardButtons(QMessageBox.StandardButton.Cancel)
        ok = box.addButton("Delete", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        accepted = box.clickedButton() is ok
        box.deleteLater()
        return accepted

    # -- state ---------------------------------------------------------------

    def _reload_detail(self, unit_id: str) -> None:
        bank = self.bank
        if bank is None:
            return

        def shown(unit: Unit | None) -> None:
            current = self.detail.unit
            if current is not None and current.id == unit_id and not self.detail.editing:
                self.detail.show_unit(unit if unit and unit.network == self.network else None)

        self.state.runner.run_query(
            lambda: next(iter(bank.units(ids=[unit_id], network=None, status=None, limit=1)), None),
            shown,
            key=bank,
        )

    def set_bank_entities(self) -> None:
        bank = self.bank
        if bank is not None:
            self.state.runner.run_query(
                lambda: {e.id: e.name for e in bank.entities()},
                lambda names: self._entity_names(bank, names),
                lambda error: None,
                key=bank,
            )

    def _entity_names(self, bank: Bank, names: dict[str, str]) -> None:
        if bank is not self.bank:
            return
        self.model.set_entity_names(names)
        self.detail.set_entity_names(names)
        self.filter_bar.set_entity_names(list(names.values()))

    def _spanned(self, bank: Bank, span: tuple[datetime | None, datetime | None]) -> None:
        if bank is self.bank:
            self.filter_bar.set_date_span(*span)

    def _counted(self, rows: int) -> None:
        if rows == 0 and self.detail.unit is not None:
            # Nothing is listed (a filter matching nothing): a unit left in the
            # detail, with live Edit and Delete, would be one no row stands for.
            self.detail.show_unit(None)
        self._show_state()
        self._update_count()

    def _show_state(self) -> None:
        self._show_stack_state()
        empty = self.stack.currentWidget() is self.empty
        self.move_button.setVisible(not empty)
        self.delete_button.setVisible(not empty)

    def _show_stack_state(self) -> None:
        if self.bank is None:
            self.empty.setText(self.no_bank_text())
            self.stack.setCurrentWidget(self.empty)
        elif self.model.counted and self.model.rowCount() == 0:
            if self.filter_bar.active:
                self.empty.setText(
                    f"No {self.plural} match these filters. <a href='clear'>Clear filters</a>"
                )
            else:
                self.empty.setText(self.empty_text)
            self.stack.setCurrentWidget(self.empty)
        else:
            self.stack.setCurrentWidget(self.table)

    def _update_count(self) -> None:
        if self.bank is None or not self.model.counted:
            self.count_label.setText("")
            return
        rows = self.model.rowCount()
        text = f"{rows:,} {self.singular if rows == 1 else self.plural}"
        if self.filter_bar.active:
            text += " match"
        selected = len(self.selected_rows())
        if selected:
            text += f" · {selected:,} selected"
        self.count_label.setText(text)


def _short(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
