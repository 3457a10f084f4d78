"""The main window: the bank list, the panes as tabs, menus, shortcuts, status bar.

The window owns the runner and the studio state. It opens and closes banks
(in the runner) — its own, and those of the servers File → Connect reached
(a `RemoteBank`, followed live by app/following.py) — forwards F5, Ctrl+F and Delete to the current pane, shows
errors (status bar, and a dialog for the engine's messages), shows the
running job with a cancel button, and saves its layout in QSettings. Closing
it cancels and joins running work before the banks are closed.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app import theme
from app.banks import BankList, CreateBankDialog, DeleteBankDialog, RenameBankDialog
from app.connections import RemoteListing
from app.following import LIVE, LOST, BankFollower, ConnectionBanner, followed
from app.jobs import JobsIndicator
from app.panes import PANES, Pane, PaneSpec
from app.runner import Job, Runner, describe
from app.serving import ServingIndicator, StudioServer, serving_enabled
from app.state import StudioState
from core import CancelledError, Change, EmbeddingMismatchError, Kind

if TYPE_CHECKING:
    from core import Bank, BankInfo, Engine

ORGANIZATION = "Engram"
APPLICATION = "Engram Studio"

# Shortcuts that are not menu actions, for the Help list.
OTHER_SHORTCUTS = [
    ("Go to pane 1–9", "Ctrl+1 … Ctrl+9"),
    ("Next / previous pane", "Ctrl+Tab / Ctrl+Shift+Tab"),
    ("Edit the selected unit's text", "F2 or double-click"),
    ("Select several units", "Shift+click, Ctrl+click, Ctrl+A"),
]


class MainWindow(QMainWindow):
    def __init__(self, engine: Engine, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("main-window")
        self.setWindowTitle(APPLICATION)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.engine = engine
        self.runner = Runner(self)
        self.state = StudioState(engine, runner=self.runner, parent=self)
        self.server = StudioServer(self.state, self)
        self.state.server = self.server
        self._closing_banks: dict[Path, Bank] = {}
        self._open_after_close: BankInfo | str | None = None
        self.follower: BankFollower | None = None  # the open remote bank's change stream
        # Start-up work that can wait for the first bank: probing the language
        # model and serving load the HTTP and web stacks, which would otherwise
        # take turns with the bank's stores for the interpreter (the GIL).
        self._after_first_open: list[Callable[[], None]] = []
        self._dialogs: list[QWidget] = []
        self.closed = False
        # Top-level widgets that existed before this window (see _delete_orphan_menus).
        self._top_levels_before = set(QApplication.topLevelWidgets())

        # -- banks --
        self.bank_list = BankList(self.state)
        self.bank_list.open_requested.connect(self.open_bank)
        self.bank_list.create_requested.connect(self.ask_create_bank)
        self.bank_list.rename_requested.connect(self.ask_rename_bank)
        self.bank_list.delete_requested.connect(self.ask_delete_bank)
        self.bank_list.connect_requested.connect(self.ask_connect)
        self.bank_list.disconnect_requested.connect(self.disconnect_server)
        self.bank_dock = QDockWidget("Banks", self)
        self.bank_dock.setObjectName("dock-banks")
        self.bank_dock.setWidget(self.bank_list)
        self.bank_dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.bank_dock)
        self.resizeDocks([self.bank_dock], [210], Qt.Orientation.Horizontal)

        # -- panes: every tab now, each pane built when first shown (app/panes) --
        self.tabs = QTabWidget()
        self.tabs.setObjectName("panes")
        self.tabs.setDocumentMode(False)
        self.pane_specs: list[PaneSpec] = list(PANES)
        self._built: dict[str, Pane] = {}
        for spec in self.pane_specs:
            self.tabs.addTab(_host(spec.slug), spec.title)
        # Above the panes: a remote bank's lost connection, and writes to retry.
        self.banner = ConnectionBanner(self.state)
        central = QWidget()
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.banner)
        column.addWidget(self.tabs, 1)
        self.setCentralWidget(central)

        # -- status bar --
        self.mode_label = QLabel()
        self.mode_label.setObjectName("mode")
        self.mode_label.setToolTip(
            "What extracts facts and answers: a local Ollama model, or the offline rules"
        )
        self.job_label = QLabel()
        self.job_label.setObjectName("job")
        self.job_progress = QProgressBar()
        self.job_progress.setFixedWidth(160)
        self.job_cancel = QPushButton("Cancel")
        self.job_cancel.setObjectName("job-cancel")
        self.job_cancel.clicked.connect(self.cancel_job)
        job = QWidget()
        jl = QHBoxLayout(job)
        jl.setContentsMargins(0, 0, 0, 0)
        jl.addWidget(self.job_label)
        jl.addWidget(self.job_progress)
        jl.addWidget(self.job_cancel)
        self.job_widget = job
        job.setVisible(False)
        self.jobs_indicator = JobsIndicator(self.state)
        status = self.statusBar()
        status.addPermanentWidget(job)
        status.addPermanentWidget(self.jobs_indicator)
        status.addPermanentWidget(self.mode_label)
        self.serving_indicator = ServingIndicator(self.server)
        status.addPermanentWidget(self.serving_indicator)
        self.remote_label = QLabel()
        self.remote_label.setObjectName("remote-status")
        self.remote_label.setVisible(False)
        status.addPermanentWidget(self.remote_label)
        self._show_mode(self.state.mode)

        self.runner.failed.connect(self.show_error)
        self.runner.write_failed.connect(self.banner.add_failed)
        self.runner.changed.connect(self._made_here)
        self.state.remotes.changed.connect(self._servers_changed)
        self.runner.job_started.connect(self._job_started)
        self.runner.job_finished.connect(self._job_finished)
        self.state.status.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.state.mode_changed.connect(self._show_mode)
        self.state.bank_changed.connect(self._bank_changed)
        self.state.changed.connect(self._on_change)

        self._build_menus()
        self._bank_changed(None)
        self.restore_layout()

    # -- menus and shortcuts -------------------------------------------------

    def _action(
        self,
        text: str,
        slot: Callable[[], Any],
        shortcut: QKeySequence | str | None = None,
        tip: str = "",
    ) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        action.triggered.connect(lambda *_: slot())
        self.addAction(action)  # shortcuts work even with the menu bar hidden
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        self.act_new = self._action("&New bank…", self.ask_create_bank, "Ctrl+N")
        self.act_ingest = self._action("&Ingest conversations…", self.ingest, "Ctrl+I")
        self.act_export = self._action("&Export snapshot…", self.export_snapshot, "Ctrl+E")
        self.act_connect = self._action(
            "&Connect to server…",
            self.ask_connect,
            tip="Open the banks another computer serves (engram serve)",
        )
        self.act_quit = self._action("&Quit", self.close, "Ctrl+Q")
        file = bar.addMenu("&File")
        file.setToolTipsVisible(True)
        for a in (self.act_new, self.act_ingest, self.act_export):
            file.addAction(a)
        file.addSeparator()
        file.addAction(self.act_connect)
        self.servers_menu = file.addMenu("&Servers")
        self.servers_menu.setObjectName("servers-menu")
        self._servers_changed()
        file.addSeparator()
        file.addAction(self.act_quit)

        self.act_undo = self._action("&Undo", self.undo, "Ctrl+Z")
        self.act_redo = self._action("&Redo", self.redo, "Ctrl+Shift+Z")
        self.act_find = self._action("&Find", self.focus_search, "Ctrl+F")
        self.act_delete = self._action(
            "&Delete selected", self.delete_selection, QKeySequence.StandardKey.Delete
        )
        # Delete belongs to the table that has focus; line edits keep their own Delete.
        self.act_delete.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        edit = bar.addMenu("&Edit")
        edit.setToolTipsVisible(True)
        for a in (self.act_undo, self.act_redo):
            edit.addAction(a)
        edit.addSeparator()
        edit.addAction(self.act_find)
        edit.addAction(self.act_delete)

        self.act_refresh = self._action("&Refresh", self.refresh, "F5")
        view = bar.addMenu("&View")
        view.addAction(self.act_refresh)
        view.addAction(self.bank_dock.toggleViewAction())
        view.addSeparator()
        self.pane_actions: list[QAction] = []
        for i, spec in enumerate(self.pane_specs):
            key = f"Ctrl+{i + 1}" if i < 9 else None
            act = self._action(spec.title, lambda i=i: self.tabs.setCurrentIndex(i), key)
            view.addAction(act)
            self.pane_actions.append(act)
        view.addSeparator()
        themes = view.addMenu("&Theme")
        group = QActionGroup(self)
        self.theme_actions: dict[str, QAction] = {}
        for choice, label in (
            ("system", "Follow the system"),
            ("light", "Light"),
            ("dark", "Dark"),
        ):
            act = QAction(label, self, checkable=True)
            act.triggered.connect(lambda *_, c=choice: self.set_theme(c))
            group.addAction(act)
            themes.addAction(act)
            self.theme_actions[choice] = act

        self.act_rename = self._action(
            "&Rename bank…", lambda: self.ask_rename_bank(self._bank_name())
        )
        self.act_delete_bank = self._action(
            "&Delete bank…", lambda: self.ask_delete_bank(self._bank_name())
        )
        self.act_verify = self._action("&Verify stores", self.verify)
        self.act_demo = self._action("Build the &demo bank", self.build_demo)
        bank = bar.addMenu("&Bank")
        for a in (self.act_rename, self.act_delete_bank, self.act_verify):
            bank.addAction(a)
        bank.addSeparator()
        bank.addAction(self.act_demo)

        self.act_shortcuts = self._action("&Keyboard shortcuts", self.show_shortcuts, "F1")
        self.act_about = self._action("&About Engram Studio", self.about)
        help_ = bar.addMenu("&Help")
        help_.addAction(self.act_shortcuts)
        help_.addAction(self.act_about)
        self.shortcut_actions = [
            self.act_new, self.act_ingest, self.act_export, self.act_quit, self.act_undo,
            self.act_redo, self.act_find, self.act_delete, self.act_refresh, self.act_shortcuts,
        ]  # fmt: skip

    def _update_actions(self) -> None:
        bank = self.state.bank
        has = bank is not None
        for action in (self.act_rename, self.act_delete_bank):
            action.setEnabled(has and not self.state.remote)  # done on its server
        self.act_verify.setEnabled(has)
        for action, verb in (
            (self.act_undo, "Undo the last curation action"),
            (self.act_redo, "Redo what was undone"),
            (self.act_export, "Export this bank to one .engram file"),
            (self.act_ingest, "Ingest conversation files into this bank"),
        ):
            action.setEnabled(has)
            action.setToolTip(verb if has else "Open a bank first")

    # -- banks ---------------------------------------------------------------

    def open_bank(self, target: BankInfo | RemoteListing | str) -> None:
        """Open a bank by name or BankInfo in the runner (or a server's bank, by the
        RemoteListing the bank list holds); the current one is closed after."""
        if isinstance(target, RemoteListing):
            self._open_remote(target)
            return
        name = target if isinstance(target, str) else target.name
        folder = None if isinstance(target, str) else target.folder
        ref = target if isinstance(target, str) else (target.id or target.name)
        closing = folder in self._closing_banks or any(
            b.name == name for b in self._closing_banks.values()
        )
        if closing:
            # The engine would hand back the very Bank being closed: open it after.
            self._open_after_close = target
            return
        self.statusBar().showMessage(f"Opening “{name}”…")
        self.state.set_opening(name)
        engine = self.engine
        # Off the UI thread: the first open also loads DuckDB, LanceDB and Tantivy.
        self.runner.run_query(
            lambda: engine.open_bank(ref), self._opened, lambda e: self._open_failed(e, name)
        )

    def _open_remote(self, listing: RemoteListing) -> None:
        engine = self.state.remotes.engine(listing.url)
        if engine is None:
            self.statusBar().showMessage(f"Not connected to {listing.url}.", 6000)
            return
        name = listing.name
        self.statusBar().showMessage(f"Opening “{name}” on {listing.url}…")
        self.state.set_opening(name)
        self.runner.run_query(
            lambda: followed(engine.open_bank(listing.id)),
            lambda bank: self._opened(bank, listing.url),
            lambda e: self._open_failed(e, name),
        )

    def _opened(self, bank: Bank, url: str = "") -> None:
        if bank.closed and not url:  # closed by a switch that raced this open: again
            self.open_bank(bank.id)
            return
        where = f" on {url}" if url else ""
        self.statusBar().showMessage(f"Opened “{bank.name}”{where}.", 4000)
        self.set_bank(bank, url)
        if self.state.opening == bank.name:  # not when another open was asked for since
            self.state.set_opening("")
        self._start_deferred()
        # The first recall on a large bank would otherwise wait for the link graph
        # (a remote bank's server prepares its own).
        if url:
            return
        self.runner.run_query(
            bank.prepare_recall,
            on_error=lambda e: self.statusBar().showMessage(
                f"Recall could not preload its link graph: {describe(e)}", 6000
            ),
            key=bank,
        )

    def _open_failed(self, error: BaseException, name: str) -> None:
        self.state.set_opening("")
        self._start_deferred()
        self.statusBar().clearMessage()  # "Opening …" is over either way
        if isinstance(error, EmbeddingMismatchError):
            self.statusBar().showMessage(f"“{name}” needs re-embedding before it opens.")
            self._offer_reembedding(name, error)
        elif not isinstance(error, CancelledError):  # as the runner reports a failed task
            self.runner.failed.emit(describe(error), "".join(traceback.format_exception(error)))

    def _offer_reembedding(self, name: str, error: EmbeddingMismatchError) -> None:
        """A bank recorded with another embedding model opens once it is re-embedded:
        offered here, run as a job (progress, cancel), then the bank opens."""
        box = QMessageBox(QMessageBox.Icon.Question, "Re-embed this bank?", "", parent=self)
        box.setObjectName("reembed-offer")
        box.setText(
            f"“{name}” was embedded with {error.recorded}; this studio uses {error.current}."
        )
        box.setInformativeText(
            f"Re-embed every memory of “{name}” with this studio's model now? Links,"
            " entities and opinions stay as they are. Cancelling leaves the bank untouched."
        )
        start = box.addButton("Re-embed and open", QMessageBox.ButtonRole.AcceptRole)
        box.addButton("Not now", QMessageBox.ButtonRole.RejectRole)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.buttonClicked.connect(lambda button: button is start and self.reembed_bank(name))
        box.open()

    def reembed_bank(self, name: str) -> None:
        engine = self.engine
        self.runner.run_job(
            f"Re-embedding “{name}”",
            lambda progress, cancel: engine.reembed_bank(name, progress, cancel),
            lambda change: self.open_bank(name),
        )

    def _start_deferred(self) -> None:
        """Run what start() left for after the first bank (once)."""
        waiting, self._after_first_open = self._after_first_open, []
        for step in waiting:
            step()

    def set_bank(self, bank: Bank | None, url: str = "") -> None:
        old, old_remote = self.state.bank, self.state.remote
        self.state.set_bank(bank, url)
        if old is not None and old is not bank and not old.closed:
            if old_remote:
                old.close()  # nothing of it is held here; its server keeps it open
            else:
                self._close_later(old)

    def _close_later(self, bank: Bank) -> None:
        """Close a bank once no work on it is running (an exclusive task on its key)."""
        self._closing_banks[bank.folder] = bank

        def closed(_: Any = None) -> None:
            self._closing_banks.pop(bank.folder, None)
            waiting, self._open_after_close = self._open_after_close, None
            if waiting is not None:
                self.open_bank(waiting)

        self.runner.run_query(bank.close, closed, lambda e: closed(), key=bank, exclusive=True)

    def _bank_name(self) -> str:
        return self.state.bank.name if self.state.bank is not None else ""

    def _bank_changed(self, bank: Bank | None) -> None:
        self.setWindowTitle(self._title(bank))
        self._update_actions()
        self._follow(bank if self.state.remote else None)
        self._show_mode(self.state.mode)

    def _title(self, bank: Bank | None) -> str:
        if bank is None:
            return APPLICATION
        server = self.state.remotes.servers.get(self.state.bank_url)
        where = f" (remote · {server.connection.label})" if server is not None else ""
        return f"{bank.name}{where} — {APPLICATION}"

    # -- remote servers ------------------------------------------------------

    def ask_connect(self, connection: Any = None) -> QDialog:
        """File → Connect to server…: non-blocking; connects when the server answered."""
        from app.connect_dialog import ConnectDialog

        dialog = ConnectDialog(self.runner, self.state.remotes.tokens, self, connection=connection)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.connected.connect(self.connect_to)
        dialog.open()
        return dialog

    def connect_to(self, connection: Any, token: str, remember: bool = True) -> None:
        self.state.remotes.connect_to(connection, token, remember=remember)
        self.statusBar().showMessage(f"Connected to {connection.label}.", 6000)

    def _servers_changed(self) -> None:
        menu = self.servers_menu
        menu.clear()
        servers = list(self.state.remotes.servers.values())
        menu.setEnabled(bool(servers))
        for server in servers:
            sub = menu.addMenu(server.connection.label)
            sub.addAction("List its banks again", lambda u=server.url: self.state.remotes.reload(u))
            sub.addAction("Disconnect", lambda u=server.url: self.disconnect_server(u))
            sub.addAction(
                "Forget (and its token)", lambda u=server.url: self.disconnect_server(u, True)
            )
        if self.state.bank is not None:
            self.setWindowTitle(self._title(self.state.bank))

    def disconnect_server(self, url: str, forget: bool = False) -> None:
        if self.state.remote and self.state.bank_url == url:
            self.set_bank(None)
        self.state.remotes.disconnect(url, keep=not forget)
        verb = "Forgot" if forget else "Disconnected from"
        self.statusBar().showMessage(f"{verb} {url}.", 6000)

    def _follow(self, bank: Bank | None) -> None:
        """Follow the open remote bank's changes (and its connection); stop following
        the one before."""
        if self.follower is not None:
            self.follower.stop()
            self.follower.deleteLater()
            self.follower = None
        if bank is not None:
            server = self.state.remotes.servers.get(self.state.bank_url)
            label = server.connection.label if server is not None else self.state.bank_url
            follower = BankFollower(bank, label, self)  # type: ignore[arg-type]
            follower.changed.connect(self.state.broadcast)
            follower.reloaded.connect(self._reload_remote)
            follower.status_changed.connect(self._remote_status)
            self.follower = follower
            follower.start()
        self.banner.follow(self.follower)
        self._remote_status()

    def _made_here(self, change: Change, _initiator: object) -> None:
        if self.follower is not None:
            self.follower.made_here(change)

    def _reload_remote(self) -> None:
        """Back after a loss (or told changes were missed): every pane reads again."""
        for pane in self.built_panes():
            pane.refresh()
        self.state.remotes.reload(self.state.bank_url)

    def _remote_status(self, *_: Any) -> None:
        follower = self.follower
        self.remote_label.setVisible(follower is not None)
        if follower is None:
            return
        live = follower.status == LIVE
        state = {LIVE: "live", LOST: "connection lost"}.get(
            follower.status, "reconnecting…" if follower.lost_once else "connecting…"
        )
        self.remote_label.setText(f"{'⇄' if live else '⚠'} Remote · {follower.label} · {state}")
        self.remote_label.setProperty("role", None if live else "error")
        self.remote_label.setToolTip(
            f"The open bank is served at {self.state.bank_url}."
            + ("" if live else f"\nNot answering: {follower.detail}")
        )
        self.remote_label.style().unpolish(self.remote_label)
        self.remote_label.style().polish(self.remote_label)
        if follower.status == LOST:
            self.statusBar().showMessage(
                f"Lost the connection to {follower.label}: trying again…", 8000
            )

    def _on_change(self, change: Change) -> None:
        bank = self.state.bank
        if bank is not None and change.touches(Kind.BANK):
            self.setWindowTitle(self._title(bank))
            self.bank_list.mark_current()
            if self.state.remote:
                self.state.remotes.reload(self.state.bank_url)

    def ask_create_bank(self) -> None:
        dialog = CreateBankDialog(self.bank_list.names(), self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.create_bank(*dialog.values())
        dialog.deleteLater()

    def create_bank(self, name: str, agent_name: str = "", background: str = "") -> None:
        engine = self.engine

        def create() -> _Opened:
            bank = engine.create_bank(name, agent_name=agent_name, background=background)
            return _Opened(bank, Change.of(added={Kind.BANK: [bank.id]}))

        self.runner.run_op(create, lambda opened: self.set_bank(opened.bank))

    def ask_rename_bank(self, name: str) -> None:
        if not name:
            return
        dialog = RenameBankDialog(name, self.bank_list.names(), self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.rename_bank(name, dialog.value())
        dialog.deleteLater()

    def rename_bank(self, old: str, new: str) -> None:
        engine = self.engine
        self.runner.run_op(
            lambda: engine.rename_bank(old, new),
            lambda _: self.statusBar().showMessage(f"Renamed “{old}” to “{new}”.", 6000),
        )

    def ask_delete_bank(self, name: str) -> None:
        if not name:
            return
        dialog = DeleteBankDialog(name, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.delete_bank(name)
        dialog.deleteLater()

    def delete_bank(self, name: str) -> None:
        engine, bank = self.engine, self.state.bank
        # Keyed by the open bank, so no read is running on it while it closes.
        key = next((b for b in self._closing_banks.values() if b.name == name), None)
        if bank is not None and bank.name == name:
            key = bank
            self.state.set_bank(None)  # the panes let go before the stores close
        self.runner.run_op(
            lambda: engine.delete_bank(name),
            lambda _: self.statusBar().showMessage(f"Deleted the bank “{name}”.", 6000),
            key=key,
            exclusive=True,
        )

    # -- commands ------------------------------------------------------------

    def current_pane(self) -> Pane | None:
        host = self.tabs.currentWidget()
        widget = host.widget() if isinstance(host, QScrollArea) else host
        return widget if isinstance(widget, Pane) else None

    def _index(self, slug: str) -> int:
        return next(i for i, spec in enumerate(self.pane_specs) if spec.slug == slug)

    def pane(self, slug: str) -> Pane:
        """The pane with this slug, built now if it has not been shown yet."""
        pane = self._built.get(slug)
        if pane is None:
            index = self._index(slug)
            pane = self.pane_specs[index].build(self.state)
            self._built[slug] = pane
            host = self.tabs.widget(index)
            assert isinstance(host, QScrollArea)
            shown = self.tabs.currentWidget()
            if host is not shown and isinstance(shown, QScrollArea):
                # Built on a hidden tab (a test, a screenshot, a menu action): lay it out
                # at the size it will have, as if it had been there from the start.
                pane.resize(shown.viewport().size())
            host.setWidget(pane)
            pane.show()  # a widget put in a visible scroll area is not shown by it
            pane.restore_state(self.settings())
            timeline = getattr(pane, "timeline_requested", None)
            if timeline is not None:  # the entity map's click-through
                timeline.connect(self.show_opinion_timeline)
            recall = getattr(pane, "recall_requested", None)
            if recall is not None:  # the Activity pane's click-through
                recall.connect(self.show_recorded_recall)
                pane.change_requested.connect(self.show_change)
        return pane

    def show_recorded_recall(self, entry) -> None:
        """The recall debugger, on the trace a journaled recall gave its caller."""
        self.show_pane("recall").show_recorded(entry)

    def show_change(self, change) -> None:
        """What a write produced, selected where it is shown: its units in their
        network's pane (only they listed), its document in Documents (shown when
        it wrote no units)."""
        bank = self.state.bank
        if bank is None:
            return
        units = change.added.get(Kind.UNIT) or change.updated.get(Kind.UNIT) or frozenset()
        documents = change.added.get(Kind.DOCUMENT) or change.updated.get(Kind.DOCUMENT) or ()
        if documents:
            pane = self.pane("documents") if units else self.show_pane("documents")
            pane.select_document(sorted(documents)[0])
        if not units:
            return
        ids = sorted(units)

        def read() -> dict[str, list[str]]:
            found: dict[str, list[str]] = {}
            for unit in bank.units(None, ids=ids, status=None, limit=None):
                found.setdefault(str(unit.network), []).append(unit.id)
            return found

        def shown(by_network: dict[str, list[str]]) -> None:
            if not by_network:
                self.statusBar().showMessage("What it wrote is no longer in the bank.", 6000)
                return
            network = max(by_network, key=lambda n: len(by_network[n]))
            self.show_pane(network).show_only(by_network[network])
            others = {n: len(v) for n, v in by_network.items() if n != network}
            if others:
                more = ", ".join(f"{c} in {n}" for n, c in others.items())
                self.statusBar().showMessage(f"It also wrote {more}.", 8000)

        self.runner.run_query(read, shown, key=bank)

    def show_opinion_timeline(self, entity: str) -> None:
        """The Opinion timelines pane, filtered to one entity's opinions."""
        self.show_pane("timelines").show_entity(entity)

    @property
    def panes(self) -> list[Pane]:
        """Every pane in tab order, building those not shown yet (tests, screenshots)."""
        return [self.pane(spec.slug) for spec in self.pane_specs]

    def built_panes(self) -> list[Pane]:
        """The panes built so far, in tab order: the others have nothing to refresh or save."""
        return [self._built[s.slug] for s in self.pane_specs if s.slug in self._built]

    def _tab_shown(self, index: int) -> None:
        if 0 <= index < len(self.pane_specs):
            self.pane(self.pane_specs[index].slug)

    def show_pane(self, slug: str) -> Pane:
        self.tabs.setCurrentIndex(self._index(slug))
        return self.pane(slug)

    def open_snapshot(self, path: Path) -> QMessageBox:
        """Offer to import a `.engram` file as a bank and open it (`engram --open FILE`,
        the desktop's "open with"): nothing is written before the user says so. The
        offer is window-modal, not a nested event loop, so the window keeps starting."""
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Import snapshot",
            f"Import “{path.name}” as a bank?",
            parent=self,
        )
        box.setObjectName("offer-import")
        box.setInformativeText(
            "Its memories are copied into a new bank in your data folder and opened; "
            f"the file itself is not changed.\n\n{path}"
        )
        box.addButton("Import", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(box.buttons()[0])

        def answered() -> None:
            if box.buttonRole(box.clickedButton()) == QMessageBox.ButtonRole.AcceptRole:
                self.show_pane("snapshots").import_from(path)
            else:
                self.statusBar().showMessage(f"Did not import {path.name}.", 4000)

        box.finished.connect(answered)
        box.open()
        return box

    def focus_search(self) -> None:
        pane = self.current_pane()
        if pane is not None:
            pane.focus_search()

    def refresh(self) -> None:
        for pane in self.built_panes():
            pane.refresh()
        self.bank_list.reload()
        self.update_mode()
        self.statusBar().showMessage("Refreshed.", 2000)

    def delete_selection(self) -> None:
        pane = self.current_pane()
        if pane is not None:
            pane.delete_selection()

    def ingest(self) -> None:
        from app.panes.ingest import IngestPane

        pane = self.show_pane("ingest")
        if isinstance(pane, IngestPane) and self.act_ingest.isEnabled() and not pane.running:
            pane.choose_files()

    def undo(self) -> None:
        self._curation("undo")

    def redo(self) -> None:
        self._curation("redo")

    def _curation(self, verb: str) -> None:
        bank = self.state.bank
        if bank is None:
            return
        self.runner.run_op(
            bank.undo if verb == "undo" else bank.redo,
            lambda _: self.statusBar().showMessage(f"{verb.capitalize()} done.", 4000),
            key=bank,
        )

    def export_snapshot(self) -> None:
        if self.state.bank is None:
            return
        from app.panes.snapshots import SnapshotsPane

        pane = self.show_pane("snapshots")
        if isinstance(pane, SnapshotsPane):
            pane.choose_export()

    def verify(self) -> None:
        bank = self.state.bank
        if bank is None:
            return
        self.runner.run_query(bank.verify, lambda report: self._verified(bank, report), key=bank)

    def _verified(self, bank: Bank, report: Any) -> None:
        if report.ok:
            text = f"“{bank.name}” is consistent: {report.units:,} units in all three stores."
        else:
            text = (
                f"“{bank.name}” needs repair: {len(report.missing_vectors)} vectors and "
                f"{len(report.missing_lexical)} text entries missing, {report.pending} pending. "
                "Run `engram repair` to rebuild the indexes."
            )
        self._message(
            "Verify stores",
            text,
            QMessageBox.Icon.Information if report.ok else QMessageBox.Icon.Warning,
        )

    def build_demo(self) -> None:
        from app.demo import DEMO_NAME, start_demo_build

        if DEMO_NAME in self.bank_list.names():
            self.open_bank(DEMO_NAME)
            return
        start_demo_build(self)

    # -- mode, jobs, errors --------------------------------------------------

    def update_mode(self) -> None:
        engine = self.engine
        self.runner.run_query(engine.mode, self.state.set_mode, lambda e: None)

    def _show_mode(self, mode: str) -> None:
        server = self.state.remotes.servers.get(self.state.bank_url) if self.state.remote else None
        if server is not None:
            # A remote bank's extraction and answers are its server's: its model or rules.
            self.mode_label.setText("Mode: the server's")
            self.mode_label.setToolTip(
                "The open bank is another computer's: its server extracts facts and answers"
                " with the language model it is configured with (or its offline rules)."
            )
            return
        self.mode_label.setText(f"Mode: {mode}")
        # A long reason is cut by the status bar's width: the tooltip has it whole.
        self.mode_label.setToolTip(
            f"Mode: {mode}\n\nWhat extracts facts and answers: a local Ollama model,"
            " or the offline rules"
        )

    def _job_started(self, job: Job) -> None:
        self._show_job(job)
        job.progressed.connect(lambda *_: self._show_job(job))

    def _job_finished(self, job: Job) -> None:
        running = [j for j in self.runner.jobs() if j is not job]
        if running:
            self._show_job(running[-1])
        else:
            self.job_widget.setVisible(False)
            self._job = None
        if job.cancelled:
            self.statusBar().showMessage(f"Cancelled: {job.label}.", 6000)

    def _show_job(self, job: Job) -> None:
        self._job = job
        others = len(self.runner.jobs()) - 1
        suffix = f" (+{others} more)" if others > 0 else ""
        self.job_label.setText(f"{job.label}{suffix}")
        self.job_label.setToolTip(job.message)
        if job.total:
            self.job_progress.setRange(0, job.total)
            self.job_progress.setValue(job.done)
        else:
            self.job_progress.setRange(0, 0)  # busy: total unknown
        self.job_widget.setVisible(True)

    def cancel_job(self) -> None:
        job = getattr(self, "_job", None)
        if job is not None:
            job.cancel()
            self.job_label.setText(f"Cancelling: {job.label}…")

    def show_error(self, message: str, details: str = "") -> None:
        self.statusBar().showMessage(f"Error: {message}", 15000)
        unexpected = message.startswith("Unexpected error")
        self._message(
            "Engram Studio", message, QMessageBox.Icon.Warning, details if unexpected else ""
        )

    def _message(self, title: str, text: str, icon: QMessageBox.Icon, details: str = "") -> None:
        box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        if details:
            box.setDetailedText(details)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.open()  # not exec(): errors must not block the runner's callbacks

    def show_shortcuts(self) -> None:
        dialog = ShortcutsDialog(self.shortcut_actions, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()

    def about(self) -> None:
        self._message(
            "About Engram Studio",
            "Engram Studio — a workbench for agent memory (retain, recall, reflect).\n"
            f"Data folder: {self.engine.home}",
            QMessageBox.Icon.Information,
        )

    # -- theme and layout ----------------------------------------------------

    def settings(self) -> QSettings:
        return QSettings()

    def set_theme(self, choice: str) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            theme.apply_theme(app, choice)
        self.settings().setValue("theme", choice)
        if choice in self.theme_actions:
            self.theme_actions[choice].setChecked(True)

    def _system_theme_changed(self, *_: Any) -> None:
        if self.settings().value("theme", "system") == "system":
            self.set_theme("system")

    def restore_layout(self) -> None:
        s = self.settings()
        choice = str(s.value("theme", "system"))
        self.theme_actions.get(choice, self.theme_actions["system"]).setChecked(True)
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._system_theme_changed)
        geometry = s.value("window/geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(1280, 800)
        state = s.value("window/state")
        if state is not None:
            self.restoreState(state)
        tab = s.value("window/tab")
        slugs = [spec.slug for spec in self.pane_specs]
        if tab in slugs:
            self.tabs.setCurrentIndex(slugs.index(tab))
        # Only the pane on screen is built now; each restores its own layout when built.
        self.tabs.currentChanged.connect(self._tab_shown)
        self._tab_shown(self.tabs.currentIndex())

    def save_layout(self) -> None:
        s = self.settings()
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        pane = self.current_pane()
        if pane is not None:
            s.setValue("window/tab", pane.slug)
        if self.state.bank is not None:
            # Its id finds it after a rename; its name is what "Opening …" says.
            s.setValue("window/bank", self.state.bank.name)
            s.setValue("window/bank_id", self.state.bank.id)
            s.setValue("window/bank_url", self.state.bank_url)
        for pane in self.built_panes():
            pane.save_state(s)
        s.sync()

    def last_bank(self) -> str | None:
        value = self.settings().value("window/bank")
        return str(value) if value else None

    # -- start and close -----------------------------------------------------

    def start(self, open_last: bool = True) -> None:
        """List banks, open the last bank (or the only one), then probe the mode and
        serve (unless Settings say not)."""
        self._after_first_open = [self.update_mode]
        if serving_enabled():
            self._after_first_open.append(self.server.start)
        engine = self.engine
        last = self.last_bank() if open_last else None
        if last:  # said at once, before the listing that confirms it arrives
            self.state.set_opening(last)
            self.statusBar().showMessage(f"Opening “{last}”…")

        last_id = self.settings().value("window/bank_id") if open_last else None
        last_url = str(self.settings().value("window/bank_url", "") or "") if open_last else ""
        self.state.remotes.reconnect_saved()
        if last_url and last_url in self.state.remotes.servers:
            # The last bank was a server's: opened once that server has listed it.
            self._open_when_listed(last_url, str(last_id or ""), last or "")
            open_last = False

        def listed(infos: list[BankInfo]) -> None:
            self.bank_list._show(infos)
            if open_last and self.state.bank is None and infos:
                found = next((i for i in infos if i.id == last_id), None) or next(
                    (i for i in infos if i.name == last), infos[0]
                )
                self.open_bank(found)
                return
            if last and self.state.opening == last:
                self.state.set_opening("")  # nothing to open after all
            self._start_deferred()

        self.runner.run_query(engine.banks, listed)

    def _open_when_listed(self, url: str, bank_id: str, name: str) -> None:
        remotes = self.state.remotes

        def connected(which: str) -> None:
            if which != url:
                return
            remotes.connected.disconnect(connected)
            server = remotes.servers.get(url)
            found = next(
                (i for i in (server.banks if server else []) if i.id == bank_id or i.name == name),
                None,
            )
            if found is not None and self.state.bank is None:
                self.open_bank(RemoteListing(url, found))
            elif self.state.opening == name:
                self.state.set_opening("")
            self._start_deferred()

        remotes.connected.connect(connected)

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.closed:
            self.save_layout()
            with contextlib.suppress(RuntimeError, TypeError):
                QGuiApplication.styleHints().colorSchemeChanged.disconnect(
                    self._system_theme_changed
                )
            # No more requests, then cancel and join engine work, before the stores close.
            self.server.shutdown()
            self._follow(None)
            self.runner.shutdown()
            self.state.set_bank(None)
            self.state.remotes.close()
            self.engine.close()
            self._delete_orphan_menus()
            self.closed = True
        super().closeEvent(event)

    def _delete_orphan_menus(self) -> None:
        """Delete parentless menus the panes made (pyqtgraph's ViewBox and plot menus
        are QMenus without a parent): otherwise they outlive the window."""
        for widget in QApplication.topLevelWidgets():
            if (
                widget not in self._top_levels_before
                and isinstance(widget, QMenu)
                and widget.parent() is None
                and not widget.isVisible()
            ):
                widget.deleteLater()


def _host(slug: str) -> QScrollArea:
    """A tab's scroll area, given its pane when the pane is built: one pane with a
    large minimum size must not make the whole window wider or taller than the
    screen; below its minimum it scrolls."""
    host = QScrollArea()
    host.setObjectName(f"host-{slug}")
    host.setWidgetResizable(True)
    host.setFrameShape(QFrame.Shape.NoFrame)
    return host


class _Opened:
    """What creating a bank returns: the bank, and the change record for the list."""

    def __init__(self, bank: Bank, change: Change) -> None:
        self.bank = bank
        self.change = change


class ShortcutsDialog(QDialog):
    def __init__(self, actions: list[QAction], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        rows = [
            (
                a.text().replace("&", "").rstrip("…"),
                a.shortcut().toString(QKeySequence.SequenceFormat.NativeText),
            )
            for a in actions
            if not a.shortcut().isEmpty()
        ] + OTHER_SHORTCUTS
        table = QTableWidget(len(rows), 2)
        table.setObjectName("shortcuts")
        table.setHorizontalHeaderLabels(["Action", "Shortcut"])
        table.verticalHeader().setVisible(False)
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for i, (what, keys) in enumerate(rows):
            table.setItem(i, 0, QTableWidgetItem(what))
            table.setItem(i, 1, QTableWidgetItem(keys))
        table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(table)
        layout.addWidget(buttons)
        self.table = table
        self.resize(460, 480)
