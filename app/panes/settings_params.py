"""The settings pane's parameter table: one row per key of the engine's spec.

Each row's editor is built from the spec (core/config.py): a spin box bounded
by the key's range for numbers, true/false for switches, a line for text; what
is typed is checked by the spec's `setting_value` before it reaches the table,
so a bad value is refused in the cell with the spec's own words.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QLineEdit,
    QSpinBox,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from core import CONFIG_SPEC, SettingError, setting_value

# What a spin box reaches when the spec sets no bound.
OPEN_BOUND = 1_000_000_000
DECIMALS = 4

Index = QModelIndex | QPersistentModelIndex


def key_at(index: Index) -> str:
    return str(index.siblingAtColumn(0).data(Qt.ItemDataRole.DisplayRole))


class SettingDelegate(QStyledItemDelegate):
    """Edits a value cell with the editor its key's type and range call for."""

    refused = Signal(str)  # the spec's message, for the pane to show

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem, index: Index) -> QWidget:
        setting = CONFIG_SPEC[key_at(index)]
        low = -OPEN_BOUND if setting.minimum is None else setting.minimum
        high = OPEN_BOUND if setting.maximum is None else setting.maximum
        if setting.kind is bool:
            editor = QComboBox(parent)
            editor.addItems(["true", "false"])
        elif setting.kind is int:
            editor = QSpinBox(parent)
            editor.setRange(int(low), int(min(high, 2**31 - 1)))
        elif setting.kind is float:
            editor = QDoubleSpinBox(parent)
            editor.setDecimals(DECIMALS)
            step = 10 ** -(DECIMALS - 1) if setting.exclusive_minimum else 0.0
            editor.setRange(low + step, high)
            editor.setSingleStep(0.05 if high <= 2 else 1.0)
        else:
            editor = QLineEdit(parent)
        editor.setToolTip(setting.describe())
        return editor

    def setEditorData(self, editor: QWidget, index: Index) -> None:
        value = index.data(Qt.ItemDataRole.EditRole)
        if isinstance(editor, QComboBox):
            editor.setCurrentText("true" if value else "false")
        elif isinstance(editor, QSpinBox | QDoubleSpinBox):
            editor.setValue(value)
        elif isinstance(editor, QLineEdit):
            editor.setText("" if value is None else str(value))

    def setModelData(self, editor: QWidget, model: QAbstractItemModel, index: Index) -> None:
        raw: Any
        if isinstance(editor, QComboBox):
            raw = editor.currentText()
        elif isinstance(editor, QSpinBox | QDoubleSpinBox):
            raw = editor.value()
        else:
            raw = editor.text()  # type: ignore[attr-defined]
        try:
            value = setting_value(key_at(index), raw)
        except SettingError as error:
            self.refused.emit(str(error))
            return
        model.setData(index, value, Qt.ItemDataRole.EditRole)

    def displayText(self, value: Any, locale: Any) -> str:
        return shown(value)


def shown(value: Any) -> str:
    """A setting's value as the table and the help line write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return "" if value is None else str(value)
