"""Editing and deleting through a network pane change the engine and every view."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from app.panes.network import NetworkPane
from core import Network
from tests.app.conftest import wait_idle


@pytest.fixture
def window(qtbot, make_window, small_bank):
    window = make_window(start=True)
    qtbot.waitUntil(lambda: window.state.bank is not None)
    wait_idle(qtbot, window.runner)
    return window


def select(qtbot, window, pane: NetworkPane, row: int):
    qtbot.waitUntil(lambda: pane.model.unit_at(row) is not None)
    pane.select_row(row)
    unit = pane.model.unit_at(row)
    qtbot.waitUntil(lambda: pane.detail.unit is not None and pane.detail.unit.id == unit.id)
    return unit


@pytest.mark.slow
def test_edit_text_in_the_detail_panel_re_embeds_and_updates_the_views(qtbot, window, embedder):
    pane = window.show_pane("world")
    bank = window.state.bank
    unit = select(qtbot, window, pane, 0)
    pane.detail.start_edit()
    assert pane.detail.editors.isVisibleTo(pane.detail)
    pane.detail.text.setPlainText("Maya moved to the Lisbon office in March.")
    with qtbot.waitSignal(window.state.changed):
        qtbot.mouseClick(pane.detail.save_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, window.runner)
    assert bank.unit(unit.id).text == "Maya moved to the Lisbon office in March."
    row = pane.model.row_of(unit.id)
    qtbot.waitUntil(
        lambda: pane.model.index(row, 0).data() == "Maya moved to the Lisbon office in March."
    )
    qtbot.waitUntil(lambda: pane.detail.unit.text == "Maya moved to the Lisbon office in March.")
    assert not pane.detail.editing
    # Re-embedded and re-indexed: the three stores agree about the edited unit.
    assert bank.verify().ok


@pytest.mark.slow
def test_edit_text_in_the_table(qtbot, window, embedder):
    pane = window.show_pane("experience")
    bank = window.state.bank
    unit = select(qtbot, window, pane, 1)
    index = pane.model.index(1, 0)
    with qtbot.waitSignal(window.state.changed):
        pane.model.setData(index, "I booked the design review.")
    wait_idle(qtbot, window.runner)
    assert bank.unit(unit.id).text == "I booked the design review."


@pytest.mark.slow
def test_move_an_opinion_to_world_and_change_its_confidence(qtbot, window):
    bank = window.state.bank
    opinions = window.show_pane("opinion")
    unit = select(qtbot, window, opinions, 0)
    opinions.detail.start_edit()
    opinions.detail.network.setCurrentIndex(opinions.detail.network.findData("world"))
    opinions.detail.confidence_set.setChecked(False)
    assert opinions.detail.edits() == {"network": "world", "confidence": None}
    with qtbot.waitSignal(window.state.changed):
        opinions.detail.save_button.click()
    wait_idle(qtbot, window.runner)
    moved = bank.unit(unit.id)
    assert moved.network == Network.WORLD and moved.confidence is None
    # Cached rows stay on screen until their page is read again: wait for that too.
    qtbot.waitUntil(
        lambda: opinions.model.rowCount() == 59 and opinions.model.row_of(unit.id) is None
    )
    assert opinions.detail.unit is None  # it left this network
    world = window.pane("world")
    qtbot.waitUntil(lambda: world.model.rowCount() == 61)


@pytest.mark.slow
def test_delete_one_unit_from_the_detail_panel(qtbot, window, monkeypatch):
    bank = window.state.bank
    pane = window.show_pane("world")
    unit = select(qtbot, window, pane, 3)
    asked = []
    monkeypatch.setattr(pane, "_confirm", lambda title, text: asked.append(title) or True)
    with qtbot.waitSignal(window.state.changed):
        pane.detail.delete_button.click()
    wait_idle(qtbot, window.runner)
    assert asked == ["Delete world fact?"]
    assert bank.count(Network.WORLD) == 59
    qtbot.waitUntil(lambda: pane.model.rowCount() == 59)
    assert pane.detail.unit is None
    assert "59 world facts" in pane.count_label.text()
    with pytest.raises(Exception, match="no unit"):
        bank.unit(unit.id)


def test_declining_the_confirmation_deletes_nothing(qtbot, window, monkeypatch):
    pane = window.show_pane("world")
    select(qtbot, window, pane, 0)
    monkeypatch.setattr(pane, "_confirm", lambda title, text: False)
    pane.delete_selection()
    wait_idle(qtbot, window.runner)
    assert window.state.bank.count(Network.WORLD) == 60


@pytest.mark.slow
def test_bulk_delete_of_a_multi_selection(qtbot, window, monkeypatch):
    bank = window.state.bank
    pane = window.show_pane("experience")
    qtbot.waitUntil(lambda: pane.model.unit_at(0) is not None)
    pane.table.selectAll()
    assert len(pane.selected_rows()) == 60
    assert "60 selected" in pane.count_label.text()
    assert pane.delete_button.text() == "Delete 60 selected"
    monkeypatch.setattr(pane, "_confirm", lambda title, text: True)
    with qtbot.waitSignal(window.state.changed):
        window.delete_selection()  # the Edit menu's Delete goes to the current pane
    wait_idle(qtbot, window.runner)
    assert bank.count(Network.EXPERIENCE) == 0
    qtbot.waitUntil(lambda: pane.stack.currentWidget() is pane.empty)
    assert "No experiences yet" in pane.empty.text()
    # Other networks were not touched.
    assert bank.count(Network.WORLD) == 60


@pytest.mark.slow
def test_bulk_move_to_another_network(qtbot, window):
    bank = window.state.bank
    pane = window.show_pane("observation")
    qtbot.waitUntil(lambda: pane.model.unit_at(0) is not None)
    pane.table.selectRow(0)
    pane.table.selectionModel().select(
        pane.model.index(1, 0),
        pane.table.selectionModel().SelectionFlag.Select
        | pane.table.selectionModel().SelectionFlag.Rows,
    )
    assert pane.selected_rows() == [0, 1]
    with qtbot.waitSignal(window.state.changed):
        pane.move_selection(Network.WORLD)
    wait_idle(qtbot, window.runner)
    assert bank.count(Network.OBSERVATION) == 58
    assert bank.count(Network.WORLD) == 62


@pytest.mark.slow
def test_filter_bar_and_search_shortcut(qtbot, window):
    pane = window.show_pane("world")
    window.focus_search()
    qtbot.waitUntil(lambda: pane.filter_bar.search.hasFocus() or not window.isActiveWindow())
    with qtbot.waitSignal(pane.model.count_changed) as counted:
        qtbot.keyClicks(pane.filter_bar.search, "Fact 4")
    # World units are every 4th: 4, 40, 44, 48, 400... -> "Fact 4", "Fact 40", "Fact 44", "Fact 48"
    assert counted.args[0] == 4
    assert pane.filter_bar.clear_button.isEnabled()
    with qtbot.waitSignal(pane.model.count_changed) as counted:
        pane.filter_bar.search.setText("no such text")
    assert pane.stack.currentWidget() is pane.empty
    assert "match these filters" in pane.empty.text()
    with qtbot.waitSignal(pane.model.count_changed) as counted:
        pane.filter_bar.clear()
    assert counted.args[0] == 60


def test_mode_and_status_filters(qtbot, window):
    pane = window.show_pane("world")
    with qtbot.waitSignal(pane.model.count_changed) as counted:
        pane.filter_bar.mode.setCurrentIndex(pane.filter_bar.mode.findData("rules"))
    assert counted.args[0] == 0  # everything here was added by hand
    with qtbot.waitSignal(pane.model.count_changed) as counted:
        pane.filter_bar.mode.setCurrentIndex(pane.filter_bar.mode.findData("manual"))
    assert counted.args[0] == 60
    with qtbot.waitSignal(pane.model.count_changed) as counted:
        pane.filter_bar.status.setCurrentIndex(pane.filter_bar.status.findData("retracted"))
    assert counted.args[0] == 0
