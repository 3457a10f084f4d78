"""Switching banks: no pane asks the new bank for what it showed of the old one."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from app.panes.network import NetworkPane
from app.panes.timelines import TimelinesPane
from core import Network
from tests.app.conftest import make_units, wait_idle


def _bank_named(qtbot, window, name):
    qtbot.waitUntil(lambda: window.state.bank is not None and window.state.bank.name == name)
    wait_idle(qtbot, window.runner)
    return window.state.bank


def _select_and_focus(qtbot, window, pane) -> None:
    """Give the pane a selection and the keyboard focus, as a person clicking in it would."""
    window.show_pane(pane.slug)
    wait_idle(qtbot, window.runner)
    if isinstance(pane, NetworkPane):
        qtbot.waitUntil(lambda: pane.model.unit_at(1) is not None)
        pane.table.setFocus()
        pane.select_row(1)
        qtbot.waitUntil(lambda: pane.detail.unit is not None)
    elif isinstance(pane, TimelinesPane):
        qtbot.waitUntil(lambda: pane.list.count() > 2)
        pane.list.setFocus()
        pane.list.setCurrentRow(2)
    wait_idle(qtbot, window.runner)


@pytest.mark.slow
def test_switching_banks_from_every_pane_with_a_selection_raises_no_error(
    qtbot, make_window, engine
):
    engine.create_bank("First").add_units(make_units(40, seed=1))
    engine.create_bank("Empty")
    engine.create_bank("Second").add_units(
        make_units(40, seed=2, text="Other fact {i} about the Beacon launch")
    )
    window = make_window()
    failures: list[str] = []
    window.runner.failed.connect(lambda message, _details: failures.append(message))
    window.start(open_last=False)

    for pane in window.panes:
        for name in ("First", "Empty", "Second"):
            window.open_bank(name)
            _bank_named(qtbot, window, name)
            if name != "Empty":
                _select_and_focus(qtbot, window, pane)
            else:
                window.show_pane(pane.slug)
        assert failures == [], f"switching banks on the {pane.slug} pane"
        assert not [b for b in window.findChildren(QMessageBox) if b.isVisible()]

    timelines = next(p for p in window.panes if isinstance(p, TimelinesPane))
    ids = {u.id for u in window.state.bank.units(Network.OPINION, limit=100)}
    shown = {timelines.list.item(i).data(256) for i in range(timelines.list.count())}
    assert shown and shown <= ids
