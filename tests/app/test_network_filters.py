"""Filters tell the truth: nothing listed means nothing in the detail; "From" respects
an interval's exclusive end; date pickers follow each bank's own time line."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from core import Network, NewUnit
from tests.app.conftest import make_units, unit_vectors, wait_idle


def _interval_units():
    v = unit_vectors(3, seed=7)
    return [
        # Ends (exclusive) at midnight on 1 June: it is over before 1 June.
        NewUnit("Maya worked in Berlin in May 2025.", Network.WORLD,
                occurred_start=datetime(2025, 5, 1), occurred_end=datetime(2025, 6, 1),
                vector=tuple(v[0].tolist())),
        # Covers 1 June.
        NewUnit("Maya moved to Lisbon on 1 June 2025.", Network.WORLD,
                occurred_start=datetime(2025, 6, 1), occurred_end=datetime(2025, 6, 2),
                vector=tuple(v[1].tolist())),
        # An instant at exactly midnight on 1 June.
        NewUnit("The Lisbon office opened at midnight.", Network.WORLD,
                occurred_start=datetime(2025, 6, 1), vector=tuple(v[2].tolist())),
    ]  # fmt: skip


def test_from_a_date_leaves_out_an_interval_that_ends_there(engine):
    bank = engine.create_bank("Intervals")
    bank.add_units(_interval_units())
    texts = {u.text for u in bank.units(start=datetime(2025, 6, 1))}
    assert texts == {
        "Maya moved to Lisbon on 1 June 2025.",
        "The Lisbon office opened at midnight.",
    }
    before = {u.text for u in bank.units(end=datetime(2025, 6, 1))}
    assert before == {"Maya worked in Berlin in May 2025."}
    assert bank.time_span(Network.WORLD) == (
        datetime(2025, 5, 1),
        datetime(2025, 6, 1, 23, 59, 59, 999999),
    )


@pytest.mark.slow
def test_a_filter_matching_nothing_clears_the_detail(qtbot, make_window, small_bank):
    window = make_window(start=True)
    qtbot.waitUntil(lambda: window.state.bank is not None)
    wait_idle(qtbot, window.runner)
    pane = window.show_pane("world")
    qtbot.waitUntil(lambda: pane.model.unit_at(0) is not None)
    pane.select_row(0)
    qtbot.waitUntil(lambda: pane.detail.unit is not None)
    pane.filter_bar.search.setText("no fact says this")
    qtbot.waitUntil(lambda: pane.model.counted and pane.model.rowCount() == 0)
    wait_idle(qtbot, window.runner)
    assert pane.detail.unit is None
    assert not pane.detail.delete_button.isVisible() or not pane.detail.delete_button.isEnabled()
    assert not pane.delete_button.isEnabled()
    assert "match these filters" in pane.empty.text()


def test_date_pickers_follow_each_banks_own_dates(qtbot, make_window, engine):
    engine.create_bank("From 2023").add_units(make_units(24, start=datetime(2023, 3, 5)))
    engine.create_bank("From 2025").add_units(make_units(24, start=datetime(2025, 8, 1), seed=3))
    window = make_window()
    window.start(open_last=False)
    window.open_bank("From 2023")
    qtbot.waitUntil(lambda: window.state.bank is not None)
    pane = window.show_pane("world")
    bar = pane.filter_bar
    qtbot.waitUntil(lambda: bar.date_from.date().toPython() == date(2023, 3, 5))
    assert bar.date_to.date().toPython() == date(2023, 3, 5)  # 24 hours from 00:00
    bar.use_from.setChecked(True)
    window.open_bank("From 2025")
    qtbot.waitUntil(lambda: window.state.bank is not None and window.state.bank.name == "From 2025")
    qtbot.waitUntil(lambda: bar.date_from.date().toPython() == date(2025, 8, 1))
    # The filter switched on for the other bank does not carry over.
    assert not bar.use_from.isChecked() and "start" not in bar.filters()
    wait_idle(qtbot, window.runner)
    assert pane.model.rowCount() == window.state.bank.count(Network.WORLD)


def test_editing_an_undated_unit_offers_when_it_was_said(qtbot, engine):
    """Issue 13, item 12: ticking "Known" on an undated unit of a 2023 bank
    offered today's date; it offers the time the unit was said."""
    from app.panes.detail import UnitDetail
    from app.runner import Runner
    from app.state import StudioState

    bank = engine.create_bank("Undated")
    said = datetime(2023, 5, 1, 10, 0)
    vector = tuple(unit_vectors(1)[0].tolist())
    bank.add_units([NewUnit("Alice owns hiking poles.", mentioned_at=said, vector=vector)])
    [unit] = bank.units(Network.WORLD, limit=1)
    assert unit.occurred_start is None
    runner = Runner()
    try:
        state = StudioState(engine, runner)
        state.set_bank(bank)
        detail = UnitDetail(state)
        qtbot.addWidget(detail)
        detail.show_unit(unit)
        detail.start_edit()
        assert not detail.occurred_known.isChecked()
        assert detail.occurred.dateTime().toPython() == said
    finally:
        runner.shutdown()
