"""Adding a memory by hand: its text, network, entities, time and (opinions) confidence.

The dialog only collects the memory; the network pane runs `Bank.add_memory`
in the runner (audited: Undo takes it back). Entities are named as the bank
knows them (a name or an alias); a name it does not know is refused here,
before anything is written.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QDateTime, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QDateTimeEdit,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from core import Network

if TYPE_CHECKING:
    from core import Entity

HAND_NETWORKS = (Network.WORLD, Network.EXPERIENCE, Network.OPINION)


def entity_lookup(entities: list[Entity]) -> dict[str, str]:
    """Lower-cased names and aliases -> entity id (a name wins over an alias)."""
    out: dict[str, str] = {}
    for e in entities:
        for alias in e.aliases:
            out.setdefault(alias.casefold(), e.id)
    for e in entities:
        out[e.name.casefold()] = e.id
    return out


class AddMemoryDialog(QDialog):
    def __init__(
        self,
        entities: list[Entity],
        network: Network = Network.WORLD,
        when: datetime | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add a memory")
        self.lookup = entity_lookup(entities)
        self.text = QPlainTextEdit()
        self.text.setObjectName("memory-text")
        self.text.setPlaceholderText(
            "One self-contained fact, e.g. “Maya moved to the Lisbon office in March 2025.”"
        )
        self.network = QComboBox()
        for n in HAND_NETWORKS:
            self.network.addItem(n.value.capitalize(), n.value)
        self.network.setCurrentIndex(max(0, self.network.findData(Network(network).value)))
        self.entities = QLineEdit()
        self.entities.setPlaceholderText("names the bank knows, comma separated")
        completer = QCompleter(sorted({e.name for e in entities}, key=str.lower), self)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.entities.setCompleter(completer)
        self.when_known = QCheckBox("Known")
        self.when = QDateTimeEdit()
        self.when.setCalendarPopup(True)
        self.when.setDisplayFormat("yyyy-MM-dd HH:mm")
        # The bank's own time (its latest fact), not today: a 2023 bank stays in 2023.
        if when is not None:
            self.when.setDateTime(QDateTime(when))
        self.when.setEnabled(False)
        self.when_known.toggled.connect(self.when.setEnabled)
        row = QHBoxLayout()
        row.addWidget(self.when_known)
        row.addWidget(self.when, 1)
        self.confidence = QDoubleSpinBox()
        self.confidence.setRange(0.0, 1.0)
        self.confidence.setSingleStep(0.05)
        self.confidence.setDecimals(2)
        self.confidence.setValue(0.5)
        self.problem = QLabel()
        self.problem.setObjectName("memory-problem")
        self.problem.setProperty("role", "muted")
        self.problem.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Network", self.network)
        form.addRow("Entities", self.entities)
        form.addRow("Happened", row)
        form.addRow("Confidence", self.confidence)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.ok = box.addButton("Add memory", QDialogButtonBox.ButtonRole.AcceptRole)
        self.ok.setProperty("primary", True)
        box.accepted.connect(self.accept)
        box.rejected.connect(self.reject)
        note = QLabel("Added by hand: audited, and Undo (Ctrl+Z) takes it back.")
        note.setProperty("role", "muted")
        layout = QVBoxLayout(self)
        layout.addWidget(self.text, 1)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addWidget(note)
        layout.addWidget(box)
        self.text.textChanged.connect(self._check)
        self.entities.textChanged.connect(self._check)
        self.network.currentIndexChanged.connect(self._check)
        self._check()
        self.resize(560, 420)

    def entity_ids(self) -> tuple[list[str], list[str]]:
        """(ids of the names given, names the bank does not know)."""
        ids, unknown = [], []
        for name in (n.strip() for n in self.entities.text().split(",")):
            if not name:
                continue
            found = self.lookup.get(name.casefold())
            (ids if found else unknown).append(found or name)
        return ids, unknown

    def _check(self, *_: Any) -> None:
        opinion = self.network.currentData() == Network.OPINION.value
        self.confidence.setEnabled(opinion)
        _, unknown = self.entity_ids()
        problem = ""
        if unknown:
            problem = f"Not an entity of this bank: {', '.join(unknown)}"
        self.problem.setText(problem)
        self.ok.setEnabled(bool(self.text.toPlainText().strip()) and not unknown)

    def values(self) -> dict[str, Any]:
        opinion = self.network.currentData() == Network.OPINION.value
        when = self.when.dateTime().toPython() if self.when_known.isChecked() else None
        return {
            "text": self.text.toPlainText().strip(),
            "network": self.network.currentData(),
            "entity_ids": self.entity_ids()[0],
            "occurred_start": when,
            "confidence": self.confidence.value() if opinion else None,
        }
