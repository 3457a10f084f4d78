"""Every pane opens with no bank, on an empty bank and on a populated (ingested) bank."""

from __future__ import annotations

import pytest

from app.panes.base import NO_BANK
from app.panes.entities import EntitiesPane
from app.panes.ingest import IngestPane
from app.panes.network import NetworkPane
from app.panes.settings import SettingsPane
from core import Network
from tests.app.conftest import wait_idle


def open_bank(qtbot, window, name):
    window.open_bank(name)
    qtbot.waitUntil(lambda: window.state.bank is not None and window.state.bank.name == name)
    wait_idle(qtbot, window.runner)


def visit_every_pane(qtbot, window):
    for i in range(window.tabs.count()):
        window.tabs.setCurrentIndex(i)
        wait_idle(qtbot, window.runner)


def test_every_pane_explains_that_no_bank_is_open(qtbot, make_window):
    window = make_window()
    visit_every_pane(qtbot, window)
    for pane in window.panes:
        if isinstance(pane, NetworkPane):
            assert pane.stack.currentWidget() is pane.empty
            assert pane.empty.text() == NO_BANK
        if isinstance(pane, EntitiesPane):
            assert pane.empty.text() == NO_BANK
        if isinstance(pane, IngestPane):
            assert pane.unavailable.text() == NO_BANK
            assert pane.unavailable.isVisibleTo(pane) and not pane.splitter.isVisibleTo(pane)
    assert not window.act_ingest.isEnabled()


@pytest.mark.slow
def test_every_pane_opens_on_an_empty_bank(qtbot, make_window, engine):
    engine.create_bank("Empty")
    window = make_window()
    open_bank(qtbot, window, "Empty")
    visit_every_pane(qtbot, window)
    for network, words in (
        (Network.WORLD, "No world facts yet"),
        (Network.EXPERIENCE, "No experiences yet"),
        (Network.OPINION, "No opinions yet"),
        (Network.OBSERVATION, "No observations yet"),
    ):
        pane = window.pane(network.value)
        assert pane.stack.currentWidget() is pane.empty
        assert words in pane.empty.text() and "Ctrl+I" in pane.empty.text()
    entities = window.pane("entities")
    assert entities.stack.currentWidget() is entities.empty
    assert "No entities yet" in entities.empty.text()
    ingest = window.pane("ingest")
    assert ingest.splitter.isVisibleTo(ingest) and not ingest.ingest_button.isEnabled()
    settings = window.pane("settings")
    assert isinstance(settings, SettingsPane)
    assert settings.params_box.isVisibleTo(settings)
    assert settings.agent_name.text() == ""


@pytest.mark.slow
def test_every_pane_opens_on_a_populated_bank(qtbot, make_window, demo_engine):
    window = make_window(start=True, engine=demo_engine)
    qtbot.waitUntil(lambda: window.state.bank is not None)
    wait_idle(qtbot, window.runner)
    visit_every_pane(qtbot, window)
    bank = window.state.bank
    for network in Network:
        pane = window.pane(network.value)
        expected = bank.count(network)
        assert expected > 0, network
        assert pane.model.rowCount() == expected
        assert pane.stack.currentWidget() is pane.table
        assert f"{expected:,} " in pane.count_label.text()
    # Rows show entity names, not ids, once the entity list is in.
    world = window.pane("world")
    qtbot.waitUntil(lambda: bool(world.model.entity_names))
    named = [world.model.index(r, 4).data() for r in range(world.model.rowCount())]
    assert any(n and not n.isdigit() for n in named)

    entities = window.pane("entities")
    qtbot.waitUntil(lambda: entities.model.rowCount() > 0)
    assert entities.model.rowCount() == len(bank.entities())
    window.show_pane("entities")
    qtbot.waitUntil(lambda: entities.current_entity() is not None)
    qtbot.waitUntil(lambda: "Loading" not in entities.facts.toPlainText())
    first = entities.current_entity()
    facts = bank.units(entity=first.id, network=None, limit=None)
    assert facts and facts[0].text in entities.facts.toPlainText()

    settings = window.pane("settings")
    qtbot.waitUntil(lambda: settings.profile is not None)
    assert settings.agent_name.text() == "Juniper"
    assert settings.param_values()["recall.rrf_k"] == bank.profile().config["recall.rrf_k"]
