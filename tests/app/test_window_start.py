"""The window's start: every tab at once, each pane built when first shown, and the
bank opened off the UI thread with the panes saying so until it is in."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from app.panes import PANES
from app.panes.base import NO_BANK
from tests.app.conftest import wait_idle


@pytest.mark.slow
def test_only_the_tab_on_screen_is_built_and_the_others_when_shown(qtbot, make_window):
    window = make_window()
    assert [window.tabs.tabText(i) for i in range(window.tabs.count())] == [
        spec.title for spec in PANES
    ]
    assert [p.slug for p in window.built_panes()] == ["world"]
    window.tabs.setCurrentIndex([s.slug for s in PANES].index("graph"))
    assert [p.slug for p in window.built_panes()] == ["world", "graph"]
    assert window.current_pane() is window.pane("graph")
    # Built on demand, every pane is the one its tab promised, in its tab.
    for i, (spec, pane) in enumerate(zip(PANES, window.panes, strict=True)):
        assert (pane.slug, pane.title) == (spec.slug, spec.title)
        assert window.tabs.widget(i).widget() is pane


def test_the_restored_tab_is_the_only_pane_built(qtbot, make_window):
    QSettings().setValue("window/tab", "reflect")
    window = make_window()
    assert window.current_pane() is window.pane("reflect")
    assert [p.slug for p in window.built_panes()] == ["reflect"]


def test_panes_say_the_bank_is_opening_until_it_is_in(qtbot, make_window, small_bank):
    window = make_window()
    world = window.pane("world")
    seen: list[tuple[str, str, str]] = []

    def opening(name: str) -> None:
        # A pane built while the bank opens says so too (audit: not built before).
        seen.append((name, world.empty.text(), window.pane("audit").empty.text()))

    window.state.opening_changed.connect(opening)
    assert world.empty.text() == NO_BANK
    window.start()
    qtbot.waitUntil(lambda: window.state.bank is not None)
    wait_idle(qtbot, window.runner)
    (name, world_text, audit_text), closed = seen[0], seen[-1]
    assert name == "Small"
    assert "Opening the bank <b>Small</b>" in world_text
    assert "Opening the bank <b>Small</b>" in audit_text
    assert closed[0] == "" and window.state.opening == ""
    assert world.stack.currentWidget() is world.table and world.model.rowCount() == 60


def test_a_bank_that_fails_to_open_leaves_the_opening_state(qtbot, make_window, engine):
    window = make_window()
    world = window.pane("world")
    with qtbot.waitSignal(window.runner.failed):
        window.open_bank("No such bank")
    assert window.state.opening == ""
    assert world.empty.text() == NO_BANK


def test_the_last_bank_is_said_to_be_opening_at_once(qtbot, make_window, small_bank):
    QSettings().setValue("window/bank", "Small")
    window = make_window()
    assert not window.bank_list.empty.isVisibleTo(window.bank_list)  # not "No banks yet"
    window.start()
    world = window.pane("world")
    # Before any runner task came back: the saved name is shown, not "No bank is open".
    assert window.state.opening == "Small"
    assert "Opening the bank <b>Small</b>" in world.empty.text()
    assert window.statusBar().currentMessage() == "Opening “Small”…"
    qtbot.waitUntil(lambda: window.state.bank is not None)
    wait_idle(qtbot, window.runner)
    assert window.state.opening == "" and window.bank_list.names() == ["Small"]


def test_a_saved_bank_that_is_gone_does_not_stay_opening(qtbot, make_window, engine):
    QSettings().setValue("window/bank", "Deleted since")
    window = make_window()
    window.start()
    wait_idle(qtbot, window.runner)
    assert window.state.opening == "" and window.state.bank is None
    assert window.pane("world").empty.text() == NO_BANK
    assert window.bank_list.empty.isVisibleTo(window.bank_list)  # now it is known


@pytest.mark.slow
def test_serving_and_the_mode_probe_wait_for_the_first_bank(
    qtbot, make_window, small_bank, monkeypatch
):
    """The web stack and the model probe would take turns with the bank's stores
    for the interpreter: they start once the first bank is in, not before."""
    monkeypatch.setenv("ENGRAM_API_TOKEN", "start-order-token-" + "z" * 20)
    QSettings().setValue("serving/enabled", True)
    QSettings().setValue("serving/port", 0)
    window = make_window()
    bank_in_when: dict[str, bool] = {}
    for name, owner in (("serve", window.server), ("probe", window)):
        attribute = "start" if name == "serve" else "update_mode"
        real = getattr(owner, attribute)

        def spy(*args, _real=real, _name=name, **kwargs):
            bank_in_when[_name] = window.state.bank is not None
            return _real(*args, **kwargs)

        monkeypatch.setattr(owner, attribute, spy)
    window.start()
    qtbot.waitUntil(lambda: window.state.bank is not None)
    qtbot.waitUntil(lambda: window.server.running, timeout=60_000)
    assert bank_in_when == {"serve": True, "probe": True}
    window.server.stop()
    wait_idle(qtbot, window.runner)


def test_while_a_bank_is_built_every_empty_state_says_so(qtbot, make_window, engine):
    """The first start's demo build: not "No banks yet / create one" but the bank
    being built and how far it got, in the bank list and every pane, until it opens."""
    from app.banks import NO_BANKS
    from app.state import Building

    window = make_window(start=True)
    wait_idle(qtbot, window.runner)
    world = window.pane("world")
    assert window.bank_list.empty.text() == NO_BANKS and world.empty.text() == NO_BANK
    window.state.set_building(Building("Demo: Juniper", 420, 1000, "03-may.json: chunk 3/9"))
    for text in (world.empty.text(), window.pane("audit").empty.text()):  # audit built now
        assert "Building the bank <b>Demo: Juniper</b>… 42%" in text
        assert "03-may.json: chunk 3/9" in text
    listed = window.bank_list.empty.text()
    assert "Building the bank “Demo: Juniper”… 42%" in listed and "Create one" not in listed
    assert window.bank_list.empty.isVisible()
    window.state.set_building(None)
    assert window.bank_list.empty.text() == NO_BANKS and world.empty.text() == NO_BANK
