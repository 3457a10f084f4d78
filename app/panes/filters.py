"""The filter bar above a network table: text, entity, dates, confidence, mode, status.

It emits `changed` with keyword arguments for `bank.units`/`bank.count`
(text, entity, start, end, min_confidence, max_confidence, mode, status).
Typing is debounced so a 100,000-unit bank is not re-counted per keystroke.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from PySide6.QtCore import QDate, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QDateEdit,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from core import ExtractionMode, UnitStatus

DEBOUNCE_MS = 250
ANY = "any"


class FilterBar(QWidget):
    changed = Signal(dict)

    def __init__(self, show_confidence: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._show_confidence = show_confidence
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._emit)

        self.search = QLineEdit()
        self.search.setObjectName("search")
        self.search.setPlaceholderText("Search text (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.entity = QLineEdit()
        self.entity.setObjectName("entity")
        self.entity.setPlaceholderText("Entity name or alias")
        self.entity.setClearButtonEnabled(True)
        self.mode = QComboBox()
        self.mode.addItem("Any mode", None)
        for m in ExtractionMode:
            self.mode.addItem(m.value, m.value)
        self.mode.setToolTip("How the facts were extracted")
        self.status = QComboBox()
        self.status.addItem("Active", UnitStatus.ACTIVE.value)
        self.status.addItem("Retracted", UnitStatus.RETRACTED.value)
        self.status.addItem("Hidden", UnitStatus.HIDDEN.value)
        self.status.addItem("Stale (being rebuilt)", UnitStatus.STALE.value)
        self.status.addItem("Any status", ANY)

        self.use_from = QCheckBox("From")
        self.date_from = _date_edit()
        self.use_to = QCheckBox("to")
        self.date_to = _date_edit()
        self.date_from.setEnabled(False)
        self.date_to.setEnabled(False)
        self.use_from.setToolTip("Only facts whose occurrence overlaps this range")

        self.min_confidence = QDoubleSpinBox()
        self.min_confidence.setRange(0.0, 1.0)
        self.min_confidence.setSingleStep(0.05)
        self.min_confidence.setSpecialValueText("any")
        self.min_confidence.setToolTip("Lowest confidence shown (any: no lower bound)")
        self.max_confidence = QDoubleSpinBox()
        self.max_confidence.setRange(0.0, 1.0)
        self.max_confidence.setSingleStep(0.05)
        self.max_confidence.setValue(1.0)
        self.max_confidence.setToolTip("Highest confidence shown")

        self.clear_button = QPushButton("Clear filters")
        self.clear_button.clicked.connect(self.clear)
        self.clear_button.setEnabled(False)

        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(6)
        grid.addWidget(self.search, 0, 0, 1, 2)
        grid.addWidget(self.entity, 0, 2)
        grid.addWidget(self.mode, 0, 3)
        grid.addWidget(self.status, 0, 4)
        dates = QHBoxLayout()
        dates.setSpacing(6)
        dates.addWidget(self.use_from)
        dates.addWidget(self.date_from)
        dates.addWidget(self.use_to)
        dates.addWidget(self.date_to)
        dates.addStretch(1)
        grid.addLayout(dates, 1, 0, 1, 2)
        confidence = QHBoxLayout()
        confidence.setSpacing(6)
        self._confidence_label = QLabel("Confidence")
        confidence.addWidget(self._confidence_label)
        confidence.addWidget(self.min_confidence)
        confidence.addWidget(QLabel("–"))
        confidence.addWidget(self.max_confidence)
        confidence.addStretch(1)
        self._confidence_box = QWidget()
        self._confidence_box.setLayout(confidence)
        confidence.setContentsMargins(0, 0, 0, 0)
        self._confidence_box.setVisible(show_confidence)
        grid.addWidget(self._confidence_box, 1, 2, 1, 2)
        grid.addWidget(self.clear_button, 1, 4)
        grid.setColumnStretch(0, 3)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(2, 2)

        self.search.textChanged.connect(self._debounce)
        self.entity.textChanged.connect(self._debounce)
        for combo in (self.mode, self.status):
            combo.currentIndexChanged.connect(self._emit)
        for check, edit in ((self.use_from, self.date_from), (self.use_to, self.date_to)):
            check.toggled.connect(edit.setEnabled)
            check.toggled.connect(self._emit)
            edit.dateChanged.connect(self._emit_if(check))
        for spin in (self.min_confidence, self.max_confidence):
            spin.valueChanged.connect(self._debounce)

    # -- values --------------------------------------------------------------

    def filters(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if text := self.search.text().strip():
            out["text"] = text
        if entity := self.entity.text().strip():
            out["entity"] = entity
        if mode := self.mode.currentData():
            out["mode"] = mode
        status = self.status.currentData()
        out["status"] = None if status == ANY else status
        if self.use_from.isChecked():
            out["start"] = _to_datetime(self.date_from.date())
        if self.use_to.isChecked():
            # The end is exclusive: "to 12 March" includes all of 12 March.
            out["end"] = _to_datetime(self.date_to.date()) + timedelta(days=1)
        if self._show_confidence:
            if self.min_confidence.value() > 0.0:
                out["min_confidence"] = self.min_confidence.value()
            if self.max_confidence.value() < 1.0:
                out["max_confidence"] = self.max_confidence.value()
        return out

    @property
    def active(self) -> bool:
        """True when anything beyond the defaults (active units, everything) is set."""
        f = self.filters()
        return f.pop("status", UnitStatus.ACTIVE.value) != UnitStatus.ACTIVE.value or bool(f)

    def clear(self) -> None:
        widgets = (
            self.search, self.entity, self.mode, self.status, self.use_from, self.use_to,
            self.min_confidence, self.max_confidence,
        )  # fmt: skip
        for w in widgets:
            w.blockSignals(True)
        self.search.clear()
        self.entity.clear()
        self.mode.setCurrentIndex(0)
        self.status.setCurrentIndex(0)
        self.use_from.setChecked(False)
        self.use_to.setChecked(False)
        self.date_from.setEnabled(False)
        self.date_to.setEnabled(False)
        self.min_confidence.setValue(0.0)
        self.max_confidence.setValue(1.0)
        for w in widgets:
            w.blockSignals(False)
        self._emit()

    def reset_dates(self) -> None:
        """Turn the date filters off (a new bank: its own time line)."""
        for check in (self.use_from, self.use_to):
            blocked = check.blockSignals(True)
            check.setChecked(False)
            check.blockSignals(blocked)
        self.date_from.setEnabled(False)
        self.date_to.setEnabled(False)

    def set_date_span(self, first: datetime | None, last: datetime | None) -> None:
        """Offer the bank's own span in the date pickers: From its first day, To its
        last. Leaves a date filter a person has switched on alone."""
        for check, edit, value in (
            (self.use_from, self.date_from, first),
            (self.use_to, self.date_to, last),
        ):
            if value is None or check.isChecked():
                continue
            blocked = edit.blockSignals(True)
            edit.setDate(QDate(value.year, value.month, value.day))
            edit.blockSignals(blocked)

    def set_entity(self, name: str) -> None:
        self.entity.setText(name)
        self._emit()

    def set_entity_names(self, names: list[str]) -> None:
        completer = QCompleter(sorted(set(names), key=str.lower), self.entity)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.entity.setCompleter(completer)

    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    # -- signals -------------------------------------------------------------

    def _debounce(self, *_: Any) -> None:
        self._timer.start()

    def _emit_if(self, check: QCheckBox):
        return lambda *_: self._emit() if check.isChecked() else None

    def _emit(self, *_: Any) -> None:
        self._timer.stop()
        self.clear_button.setEnabled(self.active)
        self.changed.emit(self.filters())


def _date_edit() -> QDateEdit:
    edit = QDateEdit(QDate.currentDate())
    edit.setCalendarPopup(True)
    edit.setDisplayFormat("yyyy-MM-dd")
    return edit


def _to_datetime(date: QDate) -> datetime:
    return datetime(date.year(), date.month(), date.day())
