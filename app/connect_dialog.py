"""File → Connect to server…: the URL, the token, and (for https) the CA file.

Connect tries the server first (its bank listing, off the UI thread) and
closes only when it answers; otherwise the dialog stays, with what the
server (or the network, or the certificate check) said, so nothing typed is
lost. The certificate of an https server is always verified: the CA file
adds the authority that signed it (or a self-signed certificate itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.connections import Connection, normalise_url
from app.runner import describe

if TYPE_CHECKING:
    from app.connections import TokenStore
    from app.runner import Runner

INTRO = (
    "Open the banks another computer serves with <code>engram serve</code> (or a studio "
    "serving its bank). They are listed beside your own, marked remote, and every pane "
    "works on them."
)


class ConnectDialog(QDialog):
    connected = Signal(object, str, bool)  # Connection, token, remember

    def __init__(
        self,
        runner: Runner,
        tokens: TokenStore,
        parent: QWidget | None = None,
        *,
        connection: Connection | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("connect-dialog")
        self.setWindowTitle("Connect to server")
        self.runner = runner
        self.tokens = tokens
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.RichText)
        self.url = QLineEdit(connection.url if connection else "")
        self.url.setObjectName("connect-url")
        self.url.setPlaceholderText("https://memory.example.com:8888")
        self.token = QLineEdit(tokens.get(connection.url) if connection else "")
        self.token.setObjectName("connect-token")
        self.token.setEchoMode(QLineEdit.EchoMode.Password)
        self.token.setPlaceholderText("the server's ENGRAM_API_TOKEN (or a named API token)")
        show = QAction("Show", self.token)
        show.setCheckable(True)
        show.toggled.connect(
            lambda on: self.token.setEchoMode(
                QLineEdit.EchoMode.Normal if on else QLineEdit.EchoMode.Password
            )
        )
        self.token.addAction(show, QLineEdit.ActionPosition.TrailingPosition)
        self.ca_file = QLineEdit(connection.ca_file if connection else "")
        self.ca_file.setObjectName("connect-ca")
        self.ca_file.setPlaceholderText("optional: the PEM file of the CA that signed it")
        self.ca_file.setToolTip(
            "For an https server whose certificate no system authority signed: its CA's"
            " certificate, or a self-signed certificate itself. The certificate is always"
            " verified."
        )
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        ca_row = QHBoxLayout()
        ca_row.addWidget(self.ca_file, 1)
        ca_row.addWidget(browse)
        self.remember = QCheckBox(f"Remember this server (the token is kept in {tokens.where})")
        self.remember.setObjectName("connect-remember")
        self.remember.setChecked(True)
        self.problem = QLabel()
        self.problem.setObjectName("connect-problem")
        self.problem.setProperty("role", "error")
        self.problem.setWordWrap(True)
        self.problem.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.connect_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.connect_button.setText("Connect")
        self.buttons.accepted.connect(self.try_connect)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("Server", self.url)
        form.addRow("Token", self.token)
        form.addRow("CA file", ca_row)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.remember)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self.url.textChanged.connect(self._check)
        self.token.textChanged.connect(self._check)
        self._check()
        self.resize(520, self.sizeHint().height())

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "CA certificate", "", "PEM certificates (*.pem *.crt *.cer);;All files (*)"
        )
        if path:
            self.ca_file.setText(path)

    def _check(self) -> None:
        self.problem.setText("")
        self.connect_button.setEnabled(bool(self.url.text().strip() and self.token.text()))

    def connection(self) -> Connection:
        """What was typed, normalised; InvalidInputError naming what is wrong."""
        return Connection(normalise_url(self.url.text()), self.ca_file.text().strip())

    def try_connect(self) -> None:
        """Ask the server for its banks; accepted once it answers."""
        try:
            connection = self.connection()
        except Exception as error:  # noqa: BLE001 - shown, the dialog stays
            self.problem.setText(describe(error))
            return
        token = self.token.text().strip()
        self.problem.setText(f"Connecting to {connection.label}…")
        self.connect_button.setEnabled(False)

        def probe() -> int:
            from core import RemoteEngine

            with RemoteEngine(connection.url, token, timeout=30, ca_file=connection.ca_file) as e:
                return len(e.banks())

        self.runner.run_query(
            probe,
            lambda _n: self._answered(connection, token),
            self._refused,
            latest=(self, "probe"),
        )

    def _answered(self, connection: Connection, token: str) -> None:
        self.connect_button.setEnabled(True)
        self.connected.emit(connection, token, self.remember.isChecked())
        self.accept()

    def _refused(self, error: BaseException) -> None:
        self.connect_button.setEnabled(True)
        self.problem.setText(f"Could not connect: {describe(error)}")
