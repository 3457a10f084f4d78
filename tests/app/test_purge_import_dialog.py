"""The Snapshots pane says that a snapshot made before a purge would bring the
purged back, and asks before it does (issue 27, item 14): the question is a
real window-modal box, found, rendered and answered as a user would."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.app.conftest import wait_idle
from tests.core.test_purge_exact import _leaks, _zorblax_bank

QUESTION = "restore-purged-question"


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


def _questions() -> list[QMessageBox]:
    return [
        w for w in QApplication.topLevelWidgets() if w.objectName() == QUESTION and w.isVisible()
    ]


def _asked(qtbot) -> QMessageBox:
    qtbot.waitUntil(lambda: len(_questions()) == 1, timeout=60_000)
    return _questions()[0]


def _click(box: QMessageBox, text: str) -> None:
    next(b for b in box.buttons() if b.text() == text).click()


def _import_in_place(pane, path: Path) -> None:
    pane.import_name.setText("z")
    pane.import_replace.setChecked(True)
    pane.import_from(path)


@pytest.mark.slow
def test_the_import_says_so_and_asks_before_bringing_back_a_purge(qtbot, window, tmp_path):
    shots = Path(os.environ.get("ENGRAM_SHOTS", tmp_path))
    window.resize(1280, 800)
    pane = window.show_pane("snapshots")
    assert "before a purge" in pane.import_result.text()
    engine = window.state.engine_for()

    # Cancel (the default) imports nothing: the purge holds.
    _import_in_place(pane, window.old_snapshot)
    box = _asked(qtbot)
    assert box.windowModality() == Qt.WindowModality.WindowModal  # no nested event loop
    assert "was made before a purge" in box.text() and "in place of “z”" in box.text()
    assert "1 name(s) of entities that bank 'z' purged" in box.informativeText()
    assert "Zorblax" not in box.text() + box.informativeText()  # the name is gone for good
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.Cancel)
    assert "asking" in pane.import_result.text()
    assert box.grab().save(str(shots / "dialog-restore-purged.png"))
    assert window.grab().save(str(shots / "snapshots-asking.png"))
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: pane.import_result.text().startswith("Nothing imported"))
    wait_idle(qtbot, window.runner)
    assert _leaks(engine.open_bank("z"), "zorblax") == []

    # Asked again, and told to: the snapshot comes back whole.
    _import_in_place(pane, window.old_snapshot)
    _click(_asked(qtbot), "Bring them back")
    qtbot.waitUntil(lambda: pane.import_result.text().startswith("Imported"), timeout=60_000)
    wait_idle(qtbot, window.runner)
    assert not _questions()
    assert _leaks(window.state.engine_for().open_bank("z"), "zorblax")
