"""A bank recorded with another embedding model: the studio offers to re-embed it
(a job with progress and cancel) and then opens it, instead of an error that
only names a command (issue 14: re-embedded on request, not refused for ever)."""

from __future__ import annotations

import dataclasses

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

from core import EmbeddingMismatchError, Engine
from tests.app.conftest import make_units, wait_idle
from tests.support.embedders import HashEmbedder

OLD_MODEL = "old-model"


def _old_bank(home) -> None:
    with Engine(home, embedder=HashEmbedder(name=OLD_MODEL, dim=16)) as old:
        units = [dataclasses.replace(u, vector=None) for u in make_units(8)]
        old.create_bank("Old").add_units(units)


def _offer(qtbot) -> QMessageBox:
    def find():
        boxes = [w for w in QApplication.topLevelWidgets() if w.objectName() == "reembed-offer"]
        assert boxes and boxes[0].isVisible()
        return boxes[0]

    qtbot.waitUntil(lambda: find() is not None)
    return find()


def _click(box: QMessageBox, text: str) -> None:
    next(b for b in box.buttons() if b.text() == text).click()


def test_opening_offers_a_re_embedding_that_then_opens_the_bank(
    qtbot, make_window, tmp_path, embedder
):
    home = tmp_path / "home"
    _old_bank(home)
    with Engine(home, embedder=embedder) as engine:
        window = make_window(engine=engine)
        window.open_bank("Old")
        box = _offer(qtbot)
        assert f"embedded with {OLD_MODEL} (16-d)" in box.text()
        assert f"uses {embedder.name} (384-d)" in box.text()
        _click(box, "Re-embed and open")
        qtbot.waitUntil(lambda: window.state.bank is not None, timeout=30_000)
        wait_idle(qtbot, window.runner)
        bank = window.state.bank
        assert bank.name == "Old" and bank.verify().ok
        assert [i.text for i in bank.recall("Fact 4 about the Atlas project").items][:1] == [
            "Fact 4 about the Atlas project"
        ]
        window.close()


def test_not_now_leaves_the_bank_as_it_was(qtbot, make_window, tmp_path, embedder):
    home = tmp_path / "home"
    _old_bank(home)
    with Engine(home, embedder=embedder) as engine:
        window = make_window(engine=engine)
        window.open_bank("Old")
        _click(_offer(qtbot), "Not now")
        wait_idle(qtbot, window.runner)
        assert window.state.bank is None and not window.runner.jobs()
        window.close()
    with Engine(home, embedder=embedder) as engine:
        with pytest.raises(EmbeddingMismatchError) as refused:
            engine.open_bank("Old")
        assert refused.value.recorded == f"{OLD_MODEL} (16-d)"
