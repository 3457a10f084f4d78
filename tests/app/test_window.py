"""The main window: banks, shortcuts, errors, undo, themes, layout, and a clean close."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QKeySequence, QPalette
from PySide6.QtWidgets import QApplication, QMessageBox

from app import theme
from app.banks import DeleteBankDialog
from app.studio import run_studio
from app.window import ShortcutsDialog
from core import EngramError, Network
from tests.app.conftest import make_units, process_deletes, wait_idle


def bank_named(qtbot, window, name):
    qtbot.waitUntil(lambda: window.state.bank is not None and window.state.bank.name == name)
    wait_idle(qtbot, window.runner)
    return window.state.bank


def test_create_rename_and_delete_banks(qtbot, make_window, engine):
    window = make_window(start=True)
    wait_idle(qtbot, window.runner)
    assert window.bank_list.empty.isVisibleTo(window.bank_list)
    window.create_bank("Support agent", agent_name="Sam")
    bank = bank_named(qtbot, window, "Support agent")
    assert bank.profile().agent_name == "Sam"
    qtbot.waitUntil(lambda: window.bank_list.names() == ["Support agent"])
    assert window.windowTitle().startswith("Support agent")

    window.rename_bank("Support agent", "Helpdesk")
    qtbot.waitUntil(lambda: window.bank_list.names() == ["Helpdesk"])
    assert [b.name for b in engine.banks()] == ["Helpdesk"]
    assert window.windowTitle().startswith("Helpdesk")

    window.create_bank("Second")
    bank_named(qtbot, window, "Second")
    window.open_bank("Helpdesk")
    bank_named(qtbot, window, "Helpdesk")
    window.delete_bank("Helpdesk")
    qtbot.waitUntil(lambda: window.bank_list.names() == ["Second"])
    wait_idle(qtbot, window.runner)
    assert window.state.bank is None
    assert [b.name for b in engine.banks()] == ["Second"]


def test_a_duplicate_name_is_an_error_shown_to_the_person(qtbot, make_window, engine):
    engine.create_bank("Taken")
    window = make_window(start=True)
    bank_named(qtbot, window, "Taken")
    with qtbot.waitSignal(window.runner.failed):
        window.create_bank("Taken")
    assert "already exists" in window.statusBar().currentMessage()
    boxes = [b for b in window.findChildren(QMessageBox) if b.isVisible()]
    assert boxes and "already exists" in boxes[0].text()
    boxes[0].close()


def test_deleting_a_bank_needs_its_name_typed(qtbot):
    dialog = DeleteBankDialog("Demo: Juniper")
    qtbot.addWidget(dialog)
    assert not dialog.delete_button.isEnabled()
    qtbot.keyClicks(dialog.confirm, "Demo: Junipe")
    assert not dialog.delete_button.isEnabled()
    qtbot.keyClicks(dialog.confirm, "r")
    assert dialog.delete_button.isEnabled()


@pytest.mark.slow
def test_undo_and_redo_a_deletion(qtbot, make_window, small_bank, monkeypatch):
    window = make_window(start=True)
    bank = bank_named(qtbot, window, "Small")
    assert window.act_undo.isEnabled() and window.act_undo.shortcut() == QKeySequence("Ctrl+Z")
    assert window.act_redo.shortcut() == QKeySequence("Ctrl+Shift+Z")
    pane = window.show_pane("world")
    qtbot.waitUntil(lambda: pane.model.unit_at(0) is not None)
    pane.select_row(0)
    monkeypatch.setattr(pane, "_confirm", lambda *a: True)
    with qtbot.waitSignal(window.state.changed):
        pane.delete_selection()
    qtbot.waitUntil(lambda: pane.model.rowCount() == 59)
    with qtbot.waitSignal(window.state.changed):
        window.act_undo.trigger()
    assert bank.count(Network.WORLD) == 60
    qtbot.waitUntil(lambda: pane.model.rowCount() == 60)
    with qtbot.waitSignal(window.state.changed):
        window.act_redo.trigger()
    qtbot.waitUntil(lambda: pane.model.rowCount() == 59)


def test_shortcut_list_under_help(qtbot, make_window):
    window = make_window()
    dialog = ShortcutsDialog(window.shortcut_actions, window)
    rows = {
        dialog.table.item(r, 0).text(): dialog.table.item(r, 1).text()
        for r in range(dialog.table.rowCount())
    }
    dialog.deleteLater()
    for action, keys in (
        ("Find", "Ctrl+F"),
        ("Undo", "Ctrl+Z"),
        ("Redo", "Ctrl+Shift+Z"),
        ("Refresh", "F5"),
        ("Ingest conversations", "Ctrl+I"),
        ("Export snapshot", "Ctrl+E"),
        ("New bank", "Ctrl+N"),
        ("Keyboard shortcuts", "F1"),
    ):
        assert rows[action] == QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText)


def test_status_bar_shows_mode_and_the_running_job_with_cancel(qtbot, make_window):
    window = make_window(start=True)
    qtbot.waitUntil(lambda: window.mode_label.text().startswith("Mode: "))
    assert "offline rules" in window.mode_label.text() or "Ollama" in window.mode_label.text()
    started = threading.Event()

    def work(progress, cancel):
        progress(3, 10, "step three")
        started.set()
        cancel._event.wait(10)
        cancel.raise_if_cancelled()

    job = window.runner.run_job("Long thing", work)
    qtbot.waitUntil(
        lambda: window.job_widget.isVisibleTo(window) and window.job_progress.value() == 3
    )
    assert window.job_label.text() == "Long thing"
    qtbot.mouseClick(window.job_cancel, Qt.MouseButton.LeftButton)
    assert job.cancelled
    qtbot.waitUntil(lambda: not window.job_widget.isVisibleTo(window))
    assert "Cancelled" in window.statusBar().currentMessage()


def test_unexpected_errors_show_a_dialog_with_details(qtbot, make_window):
    window = make_window()

    def broken():
        raise EngramError("the store said no")

    with qtbot.waitSignal(window.runner.failed):
        window.runner.run_op(broken)
    assert window.statusBar().currentMessage() == "Error: the store said no"
    box = next(b for b in window.findChildren(QMessageBox) if b.isVisible())
    assert box.text() == "the store said no"
    box.close()


def test_closing_with_a_running_job_cancels_and_joins_it(qtbot, make_window, capfd):
    window = make_window()
    running, ended = threading.Event(), threading.Event()

    def work(progress, cancel):
        running.set()
        cancel._event.wait(30)
        ended.set()
        cancel.raise_if_cancelled()

    window.runner.run_job("Endless", work)
    assert running.wait(10)
    window.close()
    assert ended.is_set()  # joined before close returned
    process_deletes()
    err = capfd.readouterr().err
    assert "QThread: Destroyed" not in err
    assert "has been deleted" not in err


@pytest.mark.slow
def test_no_top_level_widget_leaks_after_close(qtbot, make_window, small_bank):
    before = set(QApplication.topLevelWidgets())
    window = make_window(start=True)
    bank_named(qtbot, window, "Small")
    for i in range(window.tabs.count()):
        window.tabs.setCurrentIndex(i)
        wait_idle(qtbot, window.runner)
    dialog = ShortcutsDialog(window.shortcut_actions, window)
    dialog.open()
    window.close()
    process_deletes()
    leaked = [w for w in QApplication.topLevelWidgets() if w not in before]
    assert leaked == []


@pytest.mark.slow
def test_layout_and_last_bank_are_restored(qtbot, make_window, engine):
    engine.create_bank("Alpha")
    bank = engine.create_bank("Beta")
    bank.add_units(make_units(8))
    window = make_window(start=True)
    bank_named(qtbot, window, "Alpha")
    window.open_bank("Beta")
    bank_named(qtbot, window, "Beta")
    # The offscreen screen is 800x800: a height between the window's minimum and that.
    height = min(window.minimumSizeHint().height() + 30, 760)
    window.resize(window.width(), height)
    window.bank_dock.hide()
    window.show_pane("opinion")
    window.close()
    process_deletes()
    assert QSettings().value("window/bank") == "Beta"

    again = make_window(start=True)
    bank_named(qtbot, again, "Beta")
    assert again.current_pane().slug == "opinion"
    assert again.height() == height
    assert not again.bank_dock.isVisible()  # the window state (docks) came back too


def test_theme_follows_the_choice(qtbot, make_window):
    window = make_window()
    window.set_theme("dark")
    app = QApplication.instance()
    assert app.palette().color(QPalette.ColorRole.Window).name() == theme.THEMES["dark"]["window"]
    assert QSettings().value("theme") == "dark"
    window.set_theme("light")
    assert app.palette().color(QPalette.ColorRole.Window).name() == theme.THEMES["light"]["window"]
    assert "@" not in theme.stylesheet_for("dark")  # every token was filled
    window.set_theme("system")
    assert theme.current_theme() == theme.system_scheme()


def test_no_display_prints_how_to_run_and_returns_2(monkeypatch, capsys):
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    assert run_studio([]) == 2
    err = capsys.readouterr().err
    assert "xvfb-run engram" in err and "QT_QPA_PLATFORM=offscreen" in err


def test_refresh_shortcut_rereads_every_pane(qtbot, make_window, small_bank):
    window = make_window(start=True)
    bank = bank_named(qtbot, window, "Small")
    pane = window.show_pane("world")
    qtbot.waitUntil(lambda: pane.model.rowCount() == 60)
    bank.add_units(make_units(4, networks=[Network.WORLD], seed=9))  # behind the studio's back
    assert window.act_refresh.shortcut() == QKeySequence("F5")
    window.act_refresh.trigger()
    qtbot.waitUntil(lambda: pane.model.rowCount() == 64)


@pytest.mark.slow
def test_switching_banks_quickly_ends_on_an_open_bank(qtbot, make_window, engine):
    for name in ("A", "B"):
        engine.create_bank(name).add_units(make_units(12, seed=len(name)))
    window = make_window(start=True)
    bank_named(qtbot, window, "A")
    window.open_bank("B")
    bank_named(qtbot, window, "B")
    window.open_bank("A")  # while B's predecessor A may still be closing
    window.open_bank("B")
    window.open_bank("A")
    bank = bank_named(qtbot, window, "A")
    wait_idle(qtbot, window.runner)
    assert window.state.bank is bank and not bank.closed
    pane = window.show_pane("world")
    qtbot.waitUntil(lambda: pane.model.rowCount() == bank.count(Network.WORLD))


def test_opening_a_bank_preloads_recalls_link_graph(qtbot, make_window, engine):
    bank = engine.create_bank("A")
    bank.add_units(make_units(6, seed=3))
    with bank.store.transaction() as tx:  # one link, both directions
        a, b = [u.id for u in bank.units(limit=2)]
        tx.con.execute(
            "INSERT INTO links VALUES (?, ?, 'temporal', 1.0, NULL, NULL),"
            " (?, ?, 'temporal', 1.0, NULL, NULL)",
            [a, b, b, a],
        )
    window = make_window(start=True)
    opened = bank_named(qtbot, window, "A")
    wait_idle(qtbot, window.runner)
    # Loaded in the runner after the open: the bank's first recall finds it current.
    assert opened.prepare_recall() == "current"
    result = opened.recall("anything at all", channels=["graph"])
    assert result.trace.to_dict()["channels"]["graph"]["links"]["state"] == "current"
