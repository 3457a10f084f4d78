"""A remote bank kept live: its server's change stream, its connection's health.

`BankFollower` reads the open remote bank's change stream
(`RemoteBank.changes`) on a thread of its own (it blocks between changes, so
it is not runner work). What another client changes reaches the panes as the
studio's own changes do (`StudioState.broadcast`); the changes this studio
made itself come back on the stream too and are not refreshed twice. When the
stream breaks (the server stopped, the network went, 45 s without even a
heartbeat) the follower says the connection is lost and tries again, sooner
and then less often (1 s doubling to 30 s; "Reconnect now" at once); once it is
back every pane reloads what it shows (reads failed meanwhile, and changes
may have been missed), and the stream goes on from the last change it saw.

`ConnectionBanner` is the strip above the panes that says so, and offers to
retry the writes that failed for want of a connection (the runner's
`write_failed`): nothing is thrown away, the person decides.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

if TYPE_CHECKING:
    from app.runner import FailedWrite
    from app.state import StudioState
    from core import Change, RemoteBank

FIRST_RETRY = 1.0  # seconds before the first reconnection attempt
LAST_RETRY = 30.0  # the longest wait between attempts
OWN_ECHOES = 64  # changes this studio made, remembered to skip their echo
ECHO_SECONDS = 60.0

LIVE, LOST, CONNECTING = "live", "lost", "connecting"


def followed(bank: RemoteBank) -> RemoteBank:
    """Mark a just-opened remote bank as followed (no request is made): from now on
    its `name` is kept current by the follower instead of asked of its server each
    time, so the UI thread reads it without a round trip. Call it in the runner."""
    bank.changes()  # an unstarted stream: it only marks the bank
    return bank


class BankFollower(QObject):
    changed = Signal(object)  # a Change someone else made
    reloaded = Signal()  # back after a loss, or told some changes were missed: reload all
    status_changed = Signal(str, str)  # LIVE | LOST | CONNECTING, and what was said

    def __init__(self, bank: RemoteBank, label: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bank = bank
        self.label = label  # host:port
        self.status = CONNECTING
        self.detail = ""
        self.retry_in = 0.0
        self.lost_once = False  # "reconnecting", not "connecting", from the first loss on
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._own: deque[tuple[float, Change]] = deque(maxlen=OWN_ECHOES)
        queued = Qt.ConnectionType.QueuedConnection
        self._event.connect(self._on_event, queued)
        self._thread = threading.Thread(target=self._run, name="engram-follow", daemon=True)

    _event = Signal(str, object)  # from the thread: ("change", Change) | ("reset", None) | ...

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop following (the bank was switched or closed): the stream is closed
        under its reader, which ends at once."""
        self._stop.set()
        self._wake.set()
        self.bank.stop_following()

    def join(self, timeout: float = 5.0) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    def retry_now(self) -> None:
        self._wake.set()

    def made_here(self, change: Change) -> None:
        """A change this studio made (through the runner): its echo is not news."""
        self._own.append((time.monotonic(), change))

    # -- the thread ---------------------------------------------------------------------

    def _run(self) -> None:
        after: int | None = None
        epoch: str | None = None
        delay = FIRST_RETRY
        lost = False
        while not self._stop.is_set():
            started = False
            try:
                for event in self.bank.changes(after, epoch):
                    if self._stop.is_set():
                        return
                    if not started:  # the stream's first line: connected
                        started = True
                        delay = FIRST_RETRY
                        self._event.emit(LIVE, "")
                        if lost or event.reset:
                            self._event.emit("reset", None)
                        lost = False
                    elif event.reset:
                        self._event.emit("reset", None)
                    elif not event.change.empty:
                        self._event.emit("change", event.change)
                    after, epoch = event.seq, event.epoch
                reason = "the server closed the connection" if started else "no answer"
            except Exception as error:  # noqa: BLE001 - said in the banner, retried
                reason = str(error) or type(error).__name__
            if self._stop.is_set():
                return
            lost = True
            self._event.emit(LOST, f"{reason}\n{delay:.0f}")
            self._wake.wait(delay)
            self._wake.clear()
            delay = min(delay * 2, LAST_RETRY)
            if not self._stop.is_set():
                self._event.emit(CONNECTING, "")

    # -- back on the UI thread ------------------------------------------------------------

    @Slot(str, object)
    def _on_event(self, what: str, value: Any) -> None:
        if self._stop.is_set():
            return
        if what == "change":
            if not self._echo(value):
                self.changed.emit(value)
        elif what == "reset":
            self.reloaded.emit()
        else:
            detail, _, retry = str(value or "").partition("\n")
            self.status, self.detail = what, detail
            self.lost_once = self.lost_once or what == LOST
            self.retry_in = float(retry or 0)
            self.status_changed.emit(what, detail)

    def _echo(self, change: Change) -> bool:
        now = time.monotonic()
        while self._own and now - self._own[0][0] > ECHO_SECONDS:
            self._own.popleft()
        for i, (_, own) in enumerate(self._own):
            if own == change:
                del self._own[i]
                return True
        return False


class ConnectionBanner(QFrame):
    """Above the panes: the open remote bank's connection when it is not live, and
    the writes that failed for want of it (Send again retries them)."""

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("connection-banner")
        self.setProperty("role", "warning")
        self.state = state
        self.follower: BankFollower | None = None
        self.failed: list[FailedWrite] = []
        self.text = QLabel()
        self.text.setObjectName("connection-text")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.retry_connect = QPushButton("Reconnect now")
        self.retry_connect.setObjectName("connection-retry")
        self.retry_connect.clicked.connect(self._retry_connect)
        self.retry_writes = QPushButton("Send again")
        self.retry_writes.setObjectName("connection-retry-writes")
        self.retry_writes.clicked.connect(self.retry_failed)
        self.dismiss = QPushButton("Dismiss")
        self.dismiss.setObjectName("connection-dismiss")
        self.dismiss.clicked.connect(self.dismiss_failed)
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 6, 10, 6)
        row.addWidget(self.text, 1)
        row.addWidget(self.retry_connect)
        row.addWidget(self.retry_writes)
        row.addWidget(self.dismiss)
        self.update_view()

    def follow(self, follower: BankFollower | None) -> None:
        self.follower = follower
        if follower is not None:
            follower.status_changed.connect(lambda *_: self.update_view())
        self.update_view()

    def add_failed(self, write: FailedWrite) -> None:
        self.failed.append(write)
        self.update_view()

    def retry_failed(self) -> None:
        waiting, self.failed = self.failed, []
        for write in waiting:
            write.retry()
        self.update_view()

    def dismiss_failed(self) -> None:
        self.failed = []
        self.update_view()

    def _retry_connect(self) -> None:
        if self.follower is not None:
            self.follower.retry_now()

    def update_view(self) -> None:
        follower = self.follower
        lines = []
        lost = follower is not None and (
            follower.status == LOST or (follower.status == CONNECTING and follower.lost_once)
        )
        if lost and follower is not None:
            if follower.status == LOST:
                lines.append(
                    f"<b>Lost the connection to {follower.label}</b> ({_escape(follower.detail)})."
                    f" Trying again in {follower.retry_in:.0f} s; what is shown may be out of"
                    " date, and what you type is kept."
                )
            else:
                lines.append(f"<b>Reconnecting to {follower.label}…</b>")
        if self.failed:
            n = len(self.failed)
            what = self.failed[-1].label or "a change"
            more = f" and {n - 1} more" if n > 1 else ""
            lines.append(
                f"<b>Not saved:</b> {_escape(what)}{more} — {_escape(self.failed[-1].message)}."
                " <i>Send again</i> retries it once the server answers."
            )
        self.text.setText("<br>".join(lines))
        self.retry_connect.setVisible(lost)
        self.retry_writes.setVisible(bool(self.failed))
        self.dismiss.setVisible(bool(self.failed))
        self.setVisible(bool(lines))


def _escape(text: str) -> str:
    import html

    return html.escape(text)
