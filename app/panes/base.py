"""What every pane is: a widget bound to the studio state.

The window builds panes from `app.panes.PANES` and talks to them only through
this interface, so new panes (graph, recall debugger, reflect, timelines) are
added by appending a factory there.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from app.state import Building, StudioState

if TYPE_CHECKING:
    from core import Bank, Change


class Pane(QWidget):
    title = "Pane"
    # Object name for screenshots and QSettings keys: short, stable, lower case.
    slug = "pane"

    def __init__(
        self, state: StudioState, parent: QWidget | None = None, *, slug: str | None = None
    ) -> None:
        super().__init__(parent)
        self.state = state
        if slug is not None:
            self.slug = slug
        self.setObjectName(f"pane-{self.slug}")
        self._no_bank_labels: list[QLabel] = []
        # First: what is still on its way for the old bank never arrives.
        state.bank_changed.connect(self._drop_pending)
        state.bank_changed.connect(self.set_bank)
        state.changed.connect(self.apply_change)
        state.opening_changed.connect(self._opening_changed)
        state.building_changed.connect(self._opening_changed)

    @property
    def bank(self) -> Bank | None:
        return self.state.bank

    def _drop_pending(self, _bank: Bank | None) -> None:
        self.state.runner.supersede(self)

    def set_bank(self, bank: Bank | None) -> None:
        """The bank shown changed (None: no bank open). Results of this pane's
        `latest=(self, topic)` queries asked for the old bank are dropped."""

    def no_bank_text(self) -> str:
        """What the pane says while it has no bank: the one being built or opened, or
        how to open one."""
        if self.state.building is not None:
            return building_text(self.state.building, "<br>")
        name = self.state.opening
        return OPENING.format(name=html.escape(name)) if name else NO_BANK

    def no_bank_label(self, label: QLabel) -> QLabel:
        """Register the label that shows `no_bank_text()`: it follows a bank being opened."""
        self._no_bank_labels.append(label)
        label.setText(self.no_bank_text())
        return label

    def _opening_changed(self, _what: object) -> None:
        if self.state.bank is None:  # with a bank shown, its own texts stay until it changes
            for label in self._no_bank_labels:
                label.setText(self.no_bank_text())

    def apply_change(self, change: Change, initiator: object = None) -> None:
        """The engine changed something; refresh only what this pane shows.
        `initiator` is the pane that asked for the change (the runner's
        `run_op(initiator=...)`): a pane that refreshes itself when its own
        operation is done can skip the refresh here."""

    def refresh(self) -> None:
        """F5: re-read everything this pane shows."""

    def focus_search(self) -> bool:
        """Ctrl+F: put the cursor in this pane's search field; False if it has none."""
        return False

    def save_state(self, settings: QSettings) -> None:
        """Keep the layout (splitters, columns) between runs; keys under the pane's slug."""
        splitter = getattr(self, "splitter", None)
        if isinstance(splitter, QSplitter):
            settings.setValue(f"panes/{self.slug}/splitter", splitter.saveState())

    def restore_state(self, settings: QSettings) -> None:
        splitter = getattr(self, "splitter", None)
        value = settings.value(f"panes/{self.slug}/splitter")
        if isinstance(splitter, QSplitter) and value is not None:
            splitter.restoreState(value)

    # `engram screenshot` calls `prepare_screenshot(idle)` when a pane defines it:
    # stage the pane for its picture; call idle() to let the runner finish.

    def delete_selection(self) -> bool:
        """Delete: remove what is selected in this pane; False if it has nothing to delete."""
        return False


def list_and_detail(
    pane: Pane, left: QWidget, detail: QWidget, stretch: tuple[int, int] = (3, 2)
) -> QSplitter:
    """A pane's list beside its detail, in a splitter the layout is saved for."""
    splitter = QSplitter(Qt.Orientation.Horizontal)
    splitter.setObjectName(f"splitter-{pane.slug}")
    splitter.addWidget(left)
    splitter.addWidget(detail)
    splitter.setStretchFactor(0, stretch[0])
    splitter.setStretchFactor(1, stretch[1])
    splitter.setChildrenCollapsible(False)
    layout = QVBoxLayout(pane)
    layout.setContentsMargins(8, 8, 8, 8)
    layout.addWidget(splitter)
    return splitter


def detail_column(*rows: QWidget | QHBoxLayout, body: QWidget) -> QWidget:
    """A detail panel: its heading rows (widgets or button rows) over a body
    that takes the rest of the height."""
    detail = QWidget()
    column = QVBoxLayout(detail)
    column.setContentsMargins(0, 0, 0, 0)
    for row in rows:
        if isinstance(row, QHBoxLayout):
            column.addLayout(row)
        else:
            column.addWidget(row)
    column.addWidget(body, 1)
    return detail


def empty_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    """The explanation a pane shows instead of an empty view."""
    label = QLabel(text, parent)
    label.setProperty("role", "empty")
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setTextFormat(Qt.TextFormat.RichText)
    return label


def muted_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    label = QLabel(text, parent)
    label.setProperty("role", "muted")
    label.setWordWrap(True)
    # A long path or id cannot wrap; it must not widen the whole window.
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    label.setMinimumWidth(80)
    return label


def read_only_table(headers: list[str], *, stretch: int) -> QTableWidget:
    """A list a person reads and picks rows from, never edits in place: one
    column (`stretch`) takes the spare width, the others fit their contents."""
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.verticalHeader().setVisible(False)
    header = table.horizontalHeader()
    for col in range(len(headers)):
        mode = (
            QHeaderView.ResizeMode.Stretch
            if col == stretch
            else QHeaderView.ResizeMode.ResizeToContents
        )
        header.setSectionResizeMode(col, mode)
    return table


def building_text(building: Building, newline: str = "\n") -> str:
    """ "Building the demo bank … 42% — 03-may-beacon-beta.json: chunk 3/9" (rich text
    with newline="<br>")."""
    rich = newline == "<br>"
    name = html.escape(building.name) if rich else building.name
    name = f"<b>{name}</b>" if rich else f"“{name}”"
    percent = building.percent
    done = f"{percent}%" if percent is not None else "starting"
    step = html.escape(building.message) if rich else building.message
    return (
        f"Building the bank {name}… {done}{newline}"
        + (f"{step}{newline}" if step else "")
        + "It opens here as soon as it is built."
    )


NO_BANK = "No bank is open.<br>Create one with <b>Ctrl+N</b> or pick one in the Banks list."
# While the stores load off the UI thread (the window is already usable).
OPENING = (
    "Opening the bank <b>{name}</b>…<br>Its memories appear here as soon as its stores are loaded."
)
