"""The studio serves the bank it has open, so agents and `engram` commands use it live.

`StudioServer` owns the `ServedBanks` and the HTTP server (loopback only).
It adopts the bank the studio opens and releases it when the studio closes
or switches it, advertising the address in the bank's lock file so other
processes' commands are routed here. Writes made through the server come
back as the same `Change` broadcast the studio's own actions produce: the
server thread emits `changed`, Qt queues it to the UI thread, and the state
fans it out to the panes. The runner takes the bank's lock (`lock_for`), so
the studio's engine work and the server's never run on one bank at once.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QSettings, QSignalBlocker, Qt, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QCheckBox, QFormLayout, QGroupBox, QLabel, QSpinBox, QToolButton

if TYPE_CHECKING:
    from core import Bank, Change

HOST = "127.0.0.1"
DEFAULT_PORT = 8888  # Hindsight's port: an agent written for it finds us there
ENABLED_KEY = "serving/enabled"
PORT_KEY = "serving/port"


def serving_enabled() -> bool:
    return str(QSettings().value(ENABLED_KEY, True)).lower() not in ("false", "0")


def serving_port() -> int:
    try:
        return int(QSettings().value(PORT_KEY, DEFAULT_PORT))
    except (TypeError, ValueError):
        return DEFAULT_PORT


class StudioServer(QObject):
    changed = Signal(str, object)  # bank id, Change: emitted on a server thread
    status_changed = Signal()  # started, stopped, or failed to start
    _started = Signal(int, object, object, str)  # generation, handle or None, served, error

    def __init__(self, state, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = state
        # Made on the first start, off the UI thread: the web stack loads with it.
        self.served = None
        self.handle = None
        self.port_wanted = DEFAULT_PORT
        self.error = ""
        self._bank: Bank | None = None
        self._generation = 0
        self._starting: threading.Thread | None = None
        self._undelivered: list = []  # servers started whose news has not reached the UI yet
        # Queued: the slot runs on this object's (the UI) thread, never the server's.
        self.changed.connect(self._broadcast, Qt.ConnectionType.QueuedConnection)
        self._started.connect(self._on_started, Qt.ConnectionType.QueuedConnection)
        state.bank_changed.connect(self._bank_changed)
        state.runner.changed.connect(self._studio_changed)
        state.runner.lock_for = self.lock_for

    # -- what the status bar and Settings show --------------------------------

    @property
    def running(self) -> bool:
        return self.handle is not None

    @property
    def url(self) -> str:
        return self.handle.url if self.handle is not None else ""

    @property
    def fell_back(self) -> bool:
        """Serving on another port because the one asked for was taken."""
        return (
            self.running and self.port_wanted != 0 and not self.url.endswith(f":{self.port_wanted}")
        )

    def token_file(self) -> str | None:
        """Where a client finds the token; None when ENGRAM_API_TOKEN sets it."""
        import os

        from core import token_file

        if os.environ.get("ENGRAM_API_TOKEN", "").strip():
            return None
        return str(token_file(self.state.engine.home))

    def how_to_connect(self) -> str:
        where = self.token_file() or "the ENGRAM_API_TOKEN variable"
        return (
            f"Agents and other processes reach the open bank at {self.url}.\n"
            f"Send the token in {where} as 'Authorization: Bearer …'.\n"
            f"hindsight-client: Hindsight(base_url='{self.url}', api_key=TOKEN).\n"
            "engram commands on this bank are routed here automatically."
        )

    # -- start and stop --------------------------------------------------------

    def start(self, port: int | None = None) -> None:
        """Serve on `port` (default: Settings), or on a free port if it is taken.

        Starts on a thread (loading the web stack takes a moment; the window must
        not wait for it); `status_changed` tells when it is up or has failed."""
        self.stop()
        self.port_wanted = serving_port() if port is None else port
        self.error = ""
        self._generation += 1
        generation, wanted, home = self._generation, self.port_wanted, self.state.engine.home

        served, engine, on_change = self.served, self.state.engine, self._from_server

        def run() -> None:
            from core import ServedBanks, TokenRing, start_server

            nonlocal served
            try:
                served = served or ServedBanks(engine, open_on_demand=False, on_change=on_change)
                token = TokenRing.for_home(home)
                try:
                    handle = start_server(served, HOST, wanted, token)
                except OSError:  # taken (another studio, Hindsight, engram serve)
                    handle = start_server(served, HOST, 0, token)
            except Exception as error:  # noqa: BLE001 - shown in the indicator
                self._started.emit(generation, None, served, str(error) or type(error).__name__)
            else:
                self._undelivered.append(handle)
                self._started.emit(generation, handle, served, "")

        self._starting = threading.Thread(target=run, name="engram-serve-start", daemon=True)
        self._starting.start()

    @Slot(int, object, object, str)
    def _on_started(self, generation: int, handle: Any, served: Any, error: str) -> None:
        if handle in self._undelivered:
            self._undelivered.remove(handle)
        if generation != self._generation:  # stopped or restarted meanwhile
            if handle is not None:
                handle.stop()
            return
        if self.served is None and served is not None:
            self.served = served
            if self._bank is not None:
                served.adopt(self._bank)
        self.handle, self.error = handle, error
        if handle is not None:
            served.advertise(handle.url, self.token_file())
        self.status_changed.emit()

    def shutdown(self) -> None:
        """Stop serving for good (the studio is closing). A start still loading the web
        stack is waited for and what it started stopped: a thread left inside an
        extension module while the interpreter exits aborts the process."""
        self.stop()
        if self._starting is not None:
            self._starting.join()
        for handle in self._undelivered:
            handle.stop()
        self._undelivered.clear()

    def stop(self) -> None:
        self._generation += 1  # a start still on its way is stopped when it arrives
        if self.handle is None:
            return
        handle, self.handle = self.handle, None
        self.served.advertise(None)  # withdrawn first: no new routed calls
        handle.stop()
        self.status_changed.emit()

    # -- the open bank ---------------------------------------------------------

    @Slot(object)
    def _bank_changed(self, bank: Bank | None) -> None:
        if self.state.remote:
            bank = None  # another computer's bank: its own server serves it
        old, self._bank = self._bank, bank
        if self.served is None:
            return  # adopted when the server starts
        if old is not None and old is not bank:
            self.served.release(old.id)  # also withdraws its address
        if bank is not None:
            self.served.adopt(bank)

    def lock_for(self, key: Any, mutating: bool) -> AbstractContextManager | None:
        """The lock a runner task takes: its bank's, or for a write without a key
        the open bank's (the server may be writing to it)."""
        if self.served is None:
            return None  # never served: nobody else works on the bank
        from core import Bank  # loaded with the server (not at start-up: see app/panes)

        bank = key if isinstance(key, Bank) else (self._bank if mutating and key is None else None)
        return self.served.lock(bank.id) if bank is not None else None

    # -- writes made through the server, and the studio's own ---------------------

    @Slot(object, object)
    def _studio_changed(self, change: Change, _initiator: object) -> None:
        """The studio changed the open bank: clients following it hear of it too."""
        if self.served is not None and self._bank is not None:
            self.served.published(self._bank.id, change)

    def _from_server(self, bank_id: str, change: Change) -> None:
        self.changed.emit(bank_id, change)  # any thread; delivered queued

    @Slot(str, object)
    def _broadcast(self, bank_id: str, change: Change) -> None:
        bank = self.state.bank
        if bank is not None and bank.id == bank_id:
            self.state.broadcast(change)


class ServingIndicator(QToolButton):
    """The status bar's "Serving · address": click to copy the address; the
    tooltip says how to connect."""

    def __init__(self, server: StudioServer, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("serving")
        self.setAutoRaise(True)
        self.server = server
        self.clicked.connect(self.copy_address)
        server.status_changed.connect(self.update_status)
        # Agents at work: how many requests in the last minute, and whose the last.
        server.state.activity.pulse.connect(self.update_status)
        self.update_status()

    def update_status(self) -> None:
        server = self.server
        feed = server.state.activity
        busy = feed.requests_last_minute()
        active = (
            f" · {busy} request{'s' if busy != 1 else ''}/min · {feed.last_actor}" if busy else ""
        )
        if server.running:
            address = server.url.removeprefix("http://")
            taken = f" ({server.port_wanted} was taken)" if server.fell_back else ""
            self.setText(f"⇄ Serving · {address}{taken}{active}")
            last = (
                f"\n\nIn the last minute: {busy} request(s); the last from {feed.last_actor}"
                " (the Activity pane lists them)."
                if busy
                else ""
            )
            self.setToolTip(server.how_to_connect() + last + "\n\nClick to copy the address.")
        elif server.error:
            self.setText("⇄ Not serving (failed)")
            self.setToolTip(f"The server could not start: {server.error}")
        else:
            self.setText("⇄ Not serving")
            self.setToolTip("Turn serving on in Settings to let agents use the open bank.")
        self.setProperty("role", "muted" if not server.running else ("busy" if busy else None))
        self.style().unpolish(self)
        self.style().polish(self)

    def copy_address(self) -> None:
        if not self.server.running:
            return
        QGuiApplication.clipboard().setText(self.server.url)
        window = self.window()
        if hasattr(window, "statusBar"):
            window.statusBar().showMessage(
                f"Copied {self.server.url}: agents send the token in "
                f"{self.server.token_file() or 'ENGRAM_API_TOKEN'} as a bearer token.",
                10000,
            )


class ServingSettings(QGroupBox):
    """Settings' "Agents and other processes" box: the switch, the port, the address."""

    def __init__(self, server: StudioServer, parent=None) -> None:
        super().__init__("Agents and other processes", parent)
        self.server = server
        self.enabled = QCheckBox("Serve the open bank over HTTP on this computer (loopback only)")
        self.enabled.setObjectName("serving-enabled")
        self.enabled.setChecked(serving_enabled())
        self.enabled.toggled.connect(self._toggled)
        self.port = QSpinBox()
        self.port.setObjectName("serving-port")
        self.port.setRange(1024, 65535)
        self.port.setMaximumWidth(120)
        self.port.setValue(serving_port())
        self.port.setToolTip(f"Default {DEFAULT_PORT}, Hindsight's; a free port is used if taken")
        self.port.editingFinished.connect(self._port_set)
        self.status = QLabel()
        self.status.setObjectName("serving-status")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form = QFormLayout(self)
        form.addRow(self.enabled)
        form.addRow("Port", self.port)
        form.addRow("", self.status)
        server.status_changed.connect(self.update_status)
        self.update_status()

    def update_status(self) -> None:
        server = self.server
        if server.running != self.enabled.isChecked() and (server.running or not server.error):
            with QSignalBlocker(self.enabled):  # started or stopped elsewhere: show it
                self.enabled.setChecked(server.running)
        if server.running:
            taken = (
                f"Port {server.port_wanted} was taken, so a free one is used. " * server.fell_back
            )
            self.status.setText(taken + server.how_to_connect())
        elif server.error:
            self.status.setText(f"The server could not start: {server.error}")
        else:
            self.status.setText(
                "Off: other processes get “open in another process” for the open bank."
            )

    def _toggled(self, on: bool) -> None:
        QSettings().setValue(ENABLED_KEY, on)
        if on:
            self.server.start()
        else:
            self.server.stop()

    def _port_set(self) -> None:
        if self.port.value() == serving_port():
            return
        QSettings().setValue(PORT_KEY, self.port.value())
        if self.server.running:
            self.server.start()
