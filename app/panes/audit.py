"""Audit: every curation action (who, when, what), newest first, with undo and redo.

Who is the actor of the request that did it: the studio, the CLI, or an agent
by its API token's name; the list filters by it. Undo and redo act on the
latest action, as the engine defines them; entries that cannot be undone
(purges) say so. A selection stays on its entry as new ones arrive above it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import Pane, empty_label, muted_label
from app.state import StudioState
from app.unit_model import fmt_time

if TYPE_CHECKING:
    from core import AuditEntry, Bank, Change

LIMIT = 500
HEADERS = ("When", "Who", "Action", "What", "State")


def entry_state(entry: AuditEntry) -> str:
    if entry.undone:
        return "undone"
    return "can be undone" if entry.undoable else "permanent"


class AuditPane(Pane):
    title = "Audit"
    slug = "audit"

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self.entries: list[AuditEntry] = []
        self.table = QTableWidget(0, len(HEADERS))
        self.table.setObjectName("audit")
        self.table.setHorizontalHeaderLabels(HEADERS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        for col in (0, 1, 2, 4):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.empty = self.no_bank_label(empty_label())
        self.empty.setObjectName("empty-state")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.table)
        self.stack.addWidget(self.empty)
        self.undo_button = QPushButton("Undo latest")
        self.undo_button.setToolTip("Undo the latest curation action (Ctrl+Z)")
        self.undo_button.clicked.connect(lambda: self._curation("undo"))
        self.redo_button = QPushButton("Redo")
        self.redo_button.setToolTip("Redo what was undone (Ctrl+Shift+Z)")
        self.redo_button.clicked.connect(lambda: self._curation("redo"))
        self.count_label = muted_label()
        self.actor = QComboBox()
        self.actor.setObjectName("audit-actor")
        self.actor.addItem("Everyone", "")
        self.actor.setToolTip("Only this actor's actions (the studio, the CLI, an agent's token)")
        self.actor.currentIndexChanged.connect(lambda _: self.refresh())
        row = QHBoxLayout()
        row.addWidget(self.actor)
        row.addWidget(self.count_label, 1)
        row.addWidget(self.undo_button)
        row.addWidget(self.redo_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.stack, 1)
        layout.addLayout(row)
        self.set_bank(state.bank)

    def set_bank(self, bank: Bank | None) -> None:
        self.actor.blockSignals(True)
        self.actor.setCurrentIndex(0)
        while self.actor.count() > 1:
            self.actor.removeItem(1)
        self.actor.blockSignals(False)
        self._show([])
        if bank is None:
            self._empty(self.no_bank_text())
        else:
            self.refresh()

    def apply_change(self, change: Change, initiator: object = None) -> None:
        # Every curation action writes an audit entry, whatever it touched.
        if self.bank is not None and not change.empty:
            self.refresh()

    def refresh(self) -> None:
        bank = self.bank
        if bank is None:
            return
        actor = self.actor.currentData() or None

        def read() -> tuple[list[AuditEntry], list[AuditEntry]]:
            shown = bank.audit(limit=LIMIT, actor=actor)
            return shown, shown if actor is None else bank.audit(limit=LIMIT)

        self.state.runner.run_query(
            read, lambda got: self._loaded(*got), key=bank, latest=(self, "list")
        )

    def selected_seq(self) -> int | None:
        row = self.table.currentRow()
        return self.entries[row].seq if 0 <= row < len(self.entries) else None

    def _loaded(self, entries: list[AuditEntry], every: list[AuditEntry]) -> None:
        kept = self.selected_seq()
        known = {self.actor.itemData(i) for i in range(self.actor.count())}
        for who in dict.fromkeys(e.actor for e in every):
            if who not in known:
                self.actor.addItem(who, who)
        self._show(entries)
        rows = [i for i, e in enumerate(entries) if e.seq == kept]
        if rows:  # on its entry, wherever the new ones put it
            self.table.selectRow(rows[0])
        else:  # never on another entry that took its row
            self.table.clearSelection()
            self.table.setCurrentCell(-1, -1)
        if not entries:
            self._empty(
                "No curation actions yet.<br>Edits, deletes, renames, merges, splits and "
                "retracts appear here, newest first, with undo."
            )

    def _empty(self, text: str) -> None:
        self.empty.setText(text)
        self.stack.setCurrentWidget(self.empty)

    def _show(self, entries: list[AuditEntry]) -> None:
        self.entries = list(entries)
        self.table.setRowCount(len(entries))
        for row, e in enumerate(entries):
            values = (fmt_time(e.recorded_at), e.actor, e.action, e.summary, entry_state(e))
            for col, value in enumerate(values):
                item = QTableWidgetItem(str(value))
                if col == 3:
                    item.setToolTip(str(value))
                self.table.setItem(row, col, item)
        self.stack.setCurrentWidget(self.table)
        more = f" (the latest {LIMIT})" if len(entries) >= LIMIT else ""
        self.count_label.setText(f"{len(entries):,} actions{more}" if entries else "")
        # The engine marks what its undo and redo stacks hold now; an undone entry
        # whose redo a later action cleared is not redoable.
        self.undo_button.setEnabled(any(e.undoable for e in entries))
        self.redo_button.setEnabled(any(e.redoable for e in entries))

    def _curation(self, what: str) -> None:
        bank = self.bank
        if bank is None:
            return
        self.state.runner.run_op(
            bank.undo if what == "undo" else bank.redo,
            lambda _: self.state.status.emit(f"{what.capitalize()} done."),
            key=bank,
        )
