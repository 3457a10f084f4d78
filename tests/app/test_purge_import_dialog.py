"""The Snapshots pane says that a snapshot made before a purge would bring the
purged back, and asks before it does (issue 27, item 14)."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from tests.app.conftest import wait_idle
from tests.core.test_purge_exact import _leaks, _zorblax_bank


@pytest.fixture
def window(qtbot, make_window, engine, tmp_path):
    bank, zid = _zorblax_bank(engine)
    old = tmp_path / "before.engram"
    bank.export_snapshot(old)
    bank.purge_entity(zid, confirm=True)
    window = make_window(start=True, engine=engine)
    qtbot.waitUntil(lambda: window.state.bank is not None)
    wait_idle(qtbot, window.runner)
    window.old_snapshot = old
    return window


def test_the_import_says_so_and_asks_before_bringing_back_a_purge(
    qtbot, window, monkeypatch, tmp_path
):
    pane = window.show_pane("snapshots")
    assert "before a purge" in pane.import_result.text()
    pane.resize(1100, 700)
    assert pane.grab().save(str(tmp_path / "snapshots_pane.png"))

    asked: list[str] = []

    def answer(reply):
        def question(_parent, _title, text, *_args):
            asked.append(text)
            return reply

        monkeypatch.setattr(QMessageBox, "question", question)

    pane.import_name.setText("z")
    pane.import_replace.setChecked(True)
    answer(QMessageBox.StandardButton.No)
    pane.import_from(window.old_snapshot)
    qtbot.waitUntil(
        lambda: pane.import_result.text().startswith("Nothing imported"), timeout=60_000
    )
    assert asked and "purged since" in asked[0]
    engine = window.state.engine_for()
    assert _leaks(engine.open_bank("z"), "zorblax") == []

    answer(QMessageBox.StandardButton.Yes)
    pane.import_from(window.old_snapshot)
    qtbot.waitUntil(lambda: pane.import_result.text().startswith("Imported"), timeout=60_000)
    wait_idle(qtbot, window.runner)
    assert len(asked) == 2
    assert _leaks(window.state.engine_for().open_bank("z"), "zorblax")
