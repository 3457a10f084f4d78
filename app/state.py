"""The studio's shared state: which engine, which bank, which runner.

A plain state object in the glue style: panes read it and connect to its
signals; they never reach into each other. The window owns one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from app.runner import Runner

if TYPE_CHECKING:
    from core import Bank, Change, Engine


@dataclass(frozen=True)
class Building:
    """A bank being built in the runner (the demo bank on a first start): what the
    empty states say instead of "no bank yet", with how far it got."""

    name: str
    done: int = 0
    total: int = 0
    message: str = ""

    @property
    def percent(self) -> int | None:
        return min(100, 100 * self.done // self.total) if self.total else None


class StudioState(QObject):
    bank_changed = Signal(object)  # Bank | None
    # Change, re-broadcast from the runner, and the pane that asked for it (or None:
    # another part of the studio, or another process through the studio's server).
    changed = Signal(object, object)
    mode_changed = Signal(str)  # "offline rules" or "Ollama · <model>"
    status = Signal(str)  # a short message for the status bar
    opening_changed = Signal(str)  # the bank being opened in the runner ("" when none is)
    building_changed = Signal(object)  # Building | None: a bank being built, its progress

    def __init__(self, engine: Engine, runner: Runner, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.engine = engine
        self.runner = runner
        self._bank: Bank | None = None
        self._mode = "offline rules"
        self._opening = ""
        self._building: Building | None = None
        self.server = None  # the StudioServer (app/serving.py) once the window made one
        # The servers File → Connect reached (app/connections.py), and the one whose
        # bank is open ("" for a bank in this computer's data folder).
        from app.connections import RemoteServers

        self.remotes = RemoteServers(runner, engine.home, self)
        self._bank_url = ""
        runner.changed.connect(self._on_change)
        from app.activity_feed import ActivityFeed

        # The open bank's journal as it is written: marks, the status bar, the Activity pane.
        self.activity = ActivityFeed(self, self)

    @property
    def bank(self) -> Bank | None:
        return self._bank

    def set_bank(self, bank: Bank | None, url: str = "") -> None:
        """Show `bank` (None: none); `url` names the server it came from, for a bank
        another computer serves (a `RemoteBank`)."""
        if bank is self._bank:
            return
        self._bank = bank
        self._bank_url = url if bank is not None else ""
        self.bank_changed.emit(bank)

    @property
    def bank_url(self) -> str:
        """The server the open bank lives on, or "" when it is in the data folder."""
        return self._bank_url

    @property
    def remote(self) -> bool:
        """Whether the open bank is another computer's (every call a round trip)."""
        return bool(self._bank_url)

    def engine_for(self, bank: Bank | None = None) -> Engine:
        """The engine of the open bank (or `bank`, if it is the open one): the
        server's `RemoteEngine` for a remote bank (importing a snapshot uploads it
        there, its language model is the server's), else the data folder's."""
        if (bank is None or bank is self._bank) and self._bank_url:
            remote = self.remotes.engine(self._bank_url)
            if remote is not None:
                return remote  # type: ignore[return-value]
        return self.engine

    @property
    def opening(self) -> str:
        """The name of the bank being opened off the UI thread, or ""."""
        return self._opening

    def set_opening(self, name: str) -> None:
        if name != self._opening:
            self._opening = name
            self.opening_changed.emit(name)

    @property
    def building(self) -> Building | None:
        """The bank being built off the UI thread (its progress), or None."""
        return self._building

    def set_building(self, building: Building | None) -> None:
        if building != self._building:
            self._building = building
            self.building_changed.emit(building)

    @property
    def mode(self) -> str:
        return self._mode

    def set_mode(self, mode: str) -> None:
        if mode != self._mode:
            self._mode = mode
            self.mode_changed.emit(mode)

    def recheck_mode(self) -> None:
        """Probe the language model again (off the UI thread) and show what it is now.

        Called when work that used the model failed or fell back: the mode shown
        must not keep saying "Ollama" after the server died or the model went."""
        self.runner.run_query(self.engine.mode, self.set_mode, lambda _error: None)

    def _on_change(self, change: Change, initiator: object) -> None:
        self.changed.emit(change, initiator)

    def broadcast(self, change: Change) -> None:
        """A change made elsewhere (through the studio's server): the panes refresh
        as for the studio's own actions."""
        if not change.empty:
            self.changed.emit(change, None)
