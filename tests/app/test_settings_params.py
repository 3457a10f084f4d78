"""The settings pane's parameters come from the engine's spec: every key has help,
each editor keeps to its key's type and range, and a bad value is refused."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox, QStyleOptionViewItem

from app.panes.settings import SettingsPane
from core import CONFIG_SPEC
from tests.app.conftest import wait_idle


def row_of(pane: SettingsPane, key: str) -> int:
    keys = [pane.params.item(r, 0).text() for r in range(pane.params.rowCount())]
    return keys.index(key)


def editor_for(pane: SettingsPane, key: str):
    index = pane.params.model().index(row_of(pane, key), 2)
    return pane.delegate.createEditor(pane.params.viewport(), QStyleOptionViewItem(), index), index


def test_every_parameter_has_help_and_a_bounded_editor(qtbot, make_window):
    window = make_window(start=True)
    window.create_bank("Tuning")
    qtbot.waitUntil(lambda: window.state.bank is not None)
    pane = window.pane("settings")
    qtbot.waitUntil(lambda: pane.profile is not None)
    assert pane.params.rowCount() == len(CONFIG_SPEC)
    for row in range(pane.params.rowCount()):
        assert pane.params.item(row, 0).toolTip().strip(), pane.params.item(row, 0).text()

    decay, _ = editor_for(pane, "recall.activation_decay")
    assert isinstance(decay, QDoubleSpinBox) and (decay.minimum(), decay.maximum()) == (0, 1)
    rrf, _ = editor_for(pane, "recall.rrf_k")
    assert isinstance(rrf, QSpinBox) and rrf.minimum() == 0
    fan, index = editor_for(pane, "recall.entity_fan")
    assert isinstance(fan, QComboBox)
    fan.setCurrentText("false")
    pane.delegate.setModelData(fan, pane.params.model(), index)
    assert pane.param_values()["recall.entity_fan"] is False

    pane.params.setCurrentCell(row_of(pane, "recall.rrf_k"), 2)
    assert "Reciprocal Rank Fusion" in pane.param_help.text()

    # Text that is no value of the key is refused with the spec's words.
    index = pane.params.model().index(row_of(pane, "recall.mu_entity"), 2)
    typed = QLineEdit("lots")
    with qtbot.waitSignal(pane.delegate.refused) as refused:
        pane.delegate.setModelData(typed, pane.params.model(), index)
    assert "recall.mu_entity" in refused.args[0]
    assert index.data(Qt.ItemDataRole.EditRole) == CONFIG_SPEC["recall.mu_entity"].default

    pane.params_save.click()
    wait_idle(qtbot, window.runner)
    assert window.state.bank.profile().config["recall.entity_fan"] is False
