"""The bank list: every bank in the data folder; create, rename, delete; and
under them the banks of each server File → Connect reached, marked remote.

Listing reads only each bank's label file (no database is opened), so it is
cheap; it still runs in the runner, with everything else that touches disk.
Deleting asks for the bank's name typed in full. A remote bank is renamed or
deleted on its server, not from here; a server's heading has a menu to list
it again, disconnect from it, or forget it (its token too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.connections import RemoteListing
from app.panes.base import building_text, muted_label
from app.state import Building, StudioState
from core import Kind

if TYPE_CHECKING:
    from core import BankInfo, Change

NO_BANKS = "No banks yet.\nCreate one with New (Ctrl+N)."

InfoRole = Qt.ItemDataRole.UserRole + 1  # BankInfo, or RemoteListing for a server's bank
ServerRole = Qt.ItemDataRole.UserRole + 2  # a server heading's URL
REMOTE_MARK = "⇄"
LOST_COLOR = "#dc2626"


class BankList(QWidget):
    open_requested = Signal(object)  # BankInfo, or RemoteListing
    create_requested = Signal()
    rename_requested = Signal(str)
    delete_requested = Signal(str)
    connect_requested = Signal()
    disconnect_requested = Signal(str, bool)  # a server's URL, and whether to forget it

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("bank-list")
        self.state = state
        self.infos: list[BankInfo] = []
        self.list = QListWidget()
        self.list.setObjectName("banks")
        self.list.itemActivated.connect(self._activated)
        self.list.itemClicked.connect(self._activated)
        self.list.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._context_menu)
        self.empty = muted_label(NO_BANKS)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.new_button = QPushButton("New…")
        self.new_button.setToolTip("Create a bank (Ctrl+N)")
        self.new_button.clicked.connect(self.create_requested)
        self.rename_button = QPushButton("Rename…")
        self.rename_button.clicked.connect(lambda: self._with_current(self.rename_requested))
        self.delete_button = QPushButton("Delete…")
        self.delete_button.setProperty("danger", True)
        self.delete_button.clicked.connect(lambda: self._with_current(self.delete_requested))
        buttons = QHBoxLayout()
        buttons.setSpacing(4)
        buttons.addWidget(self.new_button)
        buttons.addWidget(self.rename_button)
        buttons.addWidget(self.delete_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.empty, 1)
        layout.addLayout(buttons)
        self._current: tuple[str, str] | None = None  # (server url or "", bank id)
        state.bank_changed.connect(lambda _bank: self.mark_current())
        state.changed.connect(self._on_change)
        state.building_changed.connect(self._building_changed)
        state.remotes.changed.connect(self._render)
        self._show([])
        self._listed = False
        # Until the first listing arrives (from the runner), claim nothing: "No banks
        # yet" would be wrong for a moment on every start.
        self.list.setVisible(True)
        self.empty.setVisible(False)

    def reload(self) -> None:
        engine = self.state.engine
        self.state.runner.run_query(engine.banks, self._show)

    def _on_change(self, change: Change) -> None:
        if change.touches(Kind.BANK):
            self.reload()

    def _show(self, infos: list[BankInfo]) -> None:
        self.infos = list(infos)
        self._listed = True
        self._render()

    def _render(self) -> None:
        """The local banks, then each server's heading and banks."""
        self.list.blockSignals(True)
        self.list.clear()
        for info in self.infos:
            item = QListWidgetItem(info.name)
            item.setData(InfoRole, info)
            item.setToolTip(f"{info.name}\n{info.folder}")
            self.list.addItem(item)
        servers = list(self.state.remotes.servers.values())
        for server in servers:
            heading = QListWidgetItem(self._heading(server))
            heading.setData(ServerRole, server.url)
            heading.setFlags(Qt.ItemFlag.ItemIsEnabled)
            font = heading.font()
            font.setBold(True)
            heading.setFont(font)
            if server.error:
                heading.setForeground(QBrush(QColor(LOST_COLOR)))
            heading.setToolTip(
                f"{server.url}\n"
                + (f"Not answering: {server.error}\n" if server.error else "")
                + "Right-click to list it again, disconnect, or forget it."
            )
            self.list.addItem(heading)
            for info in server.banks:
                item = QListWidgetItem(f"  {REMOTE_MARK} {info.name}")
                item.setData(InfoRole, RemoteListing(server.url, info))
                item.setToolTip(
                    f"{info.name} — remote: served at {server.url}\n"
                    "Every call goes to that server; its changes show here as they happen."
                )
                self.list.addItem(item)
        self.list.blockSignals(False)
        shown = bool(self.infos or servers) or not self._listed
        self.list.setVisible(shown)
        self.empty.setVisible(not shown)
        self.mark_current()

    @staticmethod
    def _heading(server) -> str:
        if server.error:
            state = "not answering"
        elif not server.listed:
            state = "connecting…"
        else:
            state = f"{len(server.banks)} bank{'s' if len(server.banks) != 1 else ''}"
        return f"{REMOTE_MARK} {server.connection.label} · {state}"

    def _building_changed(self, building: Building | None) -> None:
        """While a bank is built (the demo on a first start), the empty list says so."""
        self.empty.setText(NO_BANKS if building is None else building_text(building))

    def names(self) -> list[str]:
        return [i.name for i in self.infos]

    def info(self, name: str) -> BankInfo | None:
        return next((i for i in self.infos if i.name == name), None)

    def mark_current(self, _name: str | None = None) -> None:
        """Bold the open bank (matched by server and id: a server's bank may share a
        local bank's name)."""
        bank = self.state.bank
        self._current = (self.state.bank_url, bank.id) if bank is not None else None
        self.list.blockSignals(True)
        for row in range(self.list.count()):
            item = self.list.item(row)
            key = _key(item.data(InfoRole))
            if key is None:
                continue
            font = item.font()
            font.setBold(key == self._current)
            item.setFont(font)
            if key == self._current:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)
        self._update_buttons()

    def _update_buttons(self) -> None:
        item = self.list.currentItem()
        local = item is not None and not isinstance(item.data(InfoRole), RemoteListing | None)
        for button in (self.rename_button, self.delete_button):
            button.setEnabled(local)
            button.setToolTip(
                "A remote bank is renamed or deleted on its server"
                if item is not None and not local
                else ""
            )

    def _activated(self, item: QListWidgetItem) -> None:
        info = item.data(InfoRole)
        if info is not None and _key(info) != self._current:
            self.open_requested.emit(info)

    def _with_current(self, signal: Signal) -> None:
        item = self.list.currentItem()
        info = item.data(InfoRole) if item is not None else None
        if info is not None and not isinstance(info, RemoteListing):
            signal.emit(info.name)

    def _context_menu(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        if item is None:
            return
        url = item.data(ServerRole)
        listing = item.data(InfoRole)
        if url is None and isinstance(listing, RemoteListing):
            url = listing.url
        menu = QMenu(self)
        if url is None:
            menu.addAction("Connect to server…", self.connect_requested.emit)
        else:
            remotes = self.state.remotes
            menu.addAction("List its banks again", lambda: remotes.reload(url))
            menu.addAction("Disconnect", lambda: self.disconnect_requested.emit(url, False))
            menu.addAction(
                "Forget this server and its token",
                lambda: self.disconnect_requested.emit(url, True),
            )
        menu.exec(self.list.viewport().mapToGlobal(pos))
        menu.deleteLater()

    def item_for(self, url: str, bank_id: str) -> QListWidgetItem | None:
        """The row of a server's bank (or a local one, with url "")."""
        for row in range(self.list.count()):
            item = self.list.item(row)
            if _key(item.data(InfoRole)) == (url, bank_id):
                return item
        return None


def _key(info: BankInfo | RemoteListing | None) -> tuple[str, str] | None:
    if info is None:
        return None
    if isinstance(info, RemoteListing):
        return (info.url, info.info.id)
    return ("", info.id)


class _BankNameDialog(QDialog):
    """A dialog around a bank name that must be new: says why OK is disabled."""

    def __init__(
        self, title: str, ok_text: str, existing: set[str], parent: QWidget | None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.existing = existing
        self.name = QLineEdit()
        self.problem = QLabel()
        self.problem.setProperty("role", "error")
        self.form = QFormLayout()
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText(ok_text)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(self.form)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self.name.textChanged.connect(self._check)

    def _acceptable(self, name: str) -> bool:
        return bool(name)

    def _check(self) -> None:
        name = self.name.text().strip()
        problem = "A bank with this name already exists." if name in self.existing else ""
        self.problem.setText(problem)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setEnabled(self._acceptable(name) and not problem)


class CreateBankDialog(_BankNameDialog):
    def __init__(self, existing: list[str], parent: QWidget | None = None) -> None:
        super().__init__("New bank", "Create", set(existing), parent)
        self.name.setPlaceholderText("e.g. Support agent")
        self.agent = QLineEdit()
        self.agent.setPlaceholderText("the speaker who is “I” in conversations")
        self.background = QPlainTextEdit()
        self.background.setPlaceholderText("Who the agent is, in its own words (optional)")
        self.background.setFixedHeight(80)
        self.form.addRow("Name", self.name)
        self.form.addRow("Agent", self.agent)
        self.form.addRow("Background", self.background)
        self._check()
        self.resize(440, self.sizeHint().height())

    def values(self) -> tuple[str, str, str]:
        return (
            self.name.text().strip(),
            self.agent.text().strip(),
            self.background.toPlainText().strip(),
        )


class RenameBankDialog(_BankNameDialog):
    def __init__(self, name: str, existing: list[str], parent: QWidget | None = None) -> None:
        super().__init__("Rename bank", "Rename", set(existing) - {name}, parent)
        self.old = name
        self.name.setText(name)
        self.name.selectAll()
        self.form.addRow("New name", self.name)
        self._check()
        self.resize(400, self.sizeHint().height())

    def _acceptable(self, name: str) -> bool:
        return bool(name) and name != self.old

    def value(self) -> str:
        return self.name.text().strip()


class DeleteBankDialog(QDialog):
    """Deleting a bank is for good: the name must be typed to confirm."""

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Delete bank")
        self.bank_name = name
        text = QLabel(
            f"Delete the bank <b>{_escape(name)}</b> and everything in it: its units, "
            "entities, links, opinions and documents. This cannot be undone.<br><br>"
            "Type the bank's name to confirm:"
        )
        text.setWordWrap(True)
        text.setTextFormat(Qt.TextFormat.RichText)
        self.confirm = QLineEdit()
        self.confirm.setPlaceholderText(name)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.delete_button = self.buttons.addButton(
            "Delete bank", QDialogButtonBox.ButtonRole.DestructiveRole
        )
        self.delete_button.setProperty("danger", True)
        self.delete_button.setEnabled(False)
        self.delete_button.clicked.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.confirm)
        layout.addWidget(self.buttons)
        self.confirm.textChanged.connect(
            lambda t: self.delete_button.setEnabled(t == self.bank_name)
        )
        self.resize(440, self.sizeHint().height())


def _escape(text: str) -> str:
    import html

    return html.escape(text)
