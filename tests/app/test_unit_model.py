"""The lazy unit model on a real bank: counts, pages on demand, sorting, filters, refresh."""

from __future__ import annotations

from datetime import datetime

import pytest
from PySide6.QtCore import Qt

from app.unit_model import COLUMN, PAGE_SIZE, UnitRole, UnitTableModel
from core import Change, Kind, Network
from tests.app.conftest import wait_idle


@pytest.fixture
def loaded(qtbot, runner, small_bank):
    model = UnitTableModel(runner, Network.WORLD)
    with qtbot.waitSignal(model.count_changed):
        model.set_bank(small_bank)
    wait_idle(qtbot, runner)
    return model


def texts(model, rows):
    return [model.index(r, COLUMN["text"]).data() for r in rows]


def test_counts_and_fetches_only_the_first_page(loaded):
    assert loaded.rowCount() == 60
    assert loaded.fetches == [0]
    assert loaded.count_fetches == 1
    unit = loaded.index(0, 0).data(UnitRole)
    assert unit.network == Network.WORLD
    assert loaded.index(0, COLUMN["occurred"]).data() == "2025-03-01"


def test_unloaded_rows_ask_for_their_page(qtbot, runner, engine):
    from tests.app.conftest import make_units

    bank = engine.create_bank("Pages")
    bank.add_units(make_units(350, networks=[Network.WORLD]))
    model = UnitTableModel(runner, Network.WORLD)
    with qtbot.waitSignal(model.count_changed):
        model.set_bank(bank)
    wait_idle(qtbot, runner)
    assert model.rowCount() == 350 and model.fetches == [0]
    assert model.index(310, 0).data() == "Loading…"
    with qtbot.waitSignal(model.page_loaded) as loaded:
        pass
    assert loaded.args == [3]
    assert model.index(310, 0).data() == "Fact 310 about the Atlas project"
    assert model.fetches == [0, 3]  # pages 1 and 2 were never needed


def test_sorting_by_a_column_reorders_through_the_engine(qtbot, runner, loaded):
    with qtbot.waitSignal(loaded.count_changed):
        loaded.sort(COLUMN["occurred"], Qt.SortOrder.DescendingOrder)
    wait_idle(qtbot, runner)
    first = loaded.unit_at(0)
    last = loaded.unit_at(59)
    assert first.occurred_start > last.occurred_start
    assert loaded.order == ("occurred_start", True)
    # A column the engine cannot sort by leaves the order as it was.
    loaded.sort(COLUMN["mode"], Qt.SortOrder.AscendingOrder)
    assert loaded.order == ("occurred_start", True)


def test_filters_narrow_the_rows(qtbot, runner, loaded):
    with qtbot.waitSignal(loaded.count_changed) as counted:
        loaded.set_filters({"text": "Fact 1"})
    # World units are 0, 4, 8, ...: "Fact 1..." among them are 12, 16, 100, 104, ...
    wait_idle(qtbot, runner)
    rows = counted.args[0]
    assert rows == loaded.rowCount() > 0
    assert all(t.startswith("Fact 1") for t in texts(loaded, range(rows)))
    with qtbot.waitSignal(loaded.count_changed) as counted:
        loaded.set_filters({"start": datetime(2025, 3, 2), "end": datetime(2025, 3, 3)})
    assert counted.args[0] == 6  # one world unit every 4 hours


def test_confidence_filter_on_opinions(qtbot, runner, small_bank):
    model = UnitTableModel(runner, Network.OPINION)
    with qtbot.waitSignal(model.count_changed):
        model.set_bank(small_bank)
    with qtbot.waitSignal(model.count_changed) as counted:
        model.set_filters({"min_confidence": 0.7})
    wait_idle(qtbot, runner)
    assert 0 < counted.args[0] < 60
    assert all(model.unit_at(r).confidence >= 0.7 for r in range(counted.args[0]))


def test_a_change_refreshes_in_place_and_keeps_rows_until_new_ones_arrive(qtbot, runner, loaded):
    bank = loaded.bank
    doomed = [loaded.unit_at(r).id for r in range(5)]
    bank.delete_units(doomed)
    before = loaded.unit_at(0)
    resets = []
    loaded.modelReset.connect(lambda: resets.append(1))
    with qtbot.waitSignal(loaded.count_changed):
        loaded.apply_change(Change.of(removed={Kind.UNIT: doomed}))
    assert loaded.rowCount() == 55
    assert resets == []  # no reset: selection and scroll position survive
    # The view asks for the stale page again and gets fresh rows.
    loaded.index(0, 0).data()
    qtbot.waitUntil(lambda: loaded.unit_at(0) is not None and loaded.unit_at(0).id != before.id)
    assert loaded.unit_at(0).id not in doomed


def test_setdata_on_text_asks_for_an_edit(qtbot, loaded):
    index = loaded.index(2, COLUMN["text"])
    unit = loaded.unit_at(2)
    with qtbot.waitSignal(loaded.edit_requested) as asked:
        assert loaded.setData(index, "  A new text  ")
    assert asked.args == [unit.id, {"text": "A new text"}]
    assert index.data() == "A new text"  # shown at once
    assert not loaded.setData(index, "")  # empty text is refused


def test_ids_for_rows_reads_pages_that_are_not_cached(qtbot, runner, engine):
    from tests.app.conftest import make_units

    bank = engine.create_bank("Ids")
    bank.add_units(make_units(250, networks=[Network.WORLD]))
    model = UnitTableModel(runner, Network.WORLD)
    with qtbot.waitSignal(model.count_changed):
        model.set_bank(bank)
    wait_idle(qtbot, runner)
    rows = [1, PAGE_SIZE + 5, 2 * PAGE_SIZE + 7]
    ids = model.ids_for_rows(rows)()
    expected = [u.id for u in bank.units(Network.WORLD, offset=0, limit=None)]
    assert ids == [expected[r] for r in rows]


def test_a_page_that_arrives_before_the_count_names_no_row_yet(qtbot, runner, small_bank):
    """The page and the count are read in parallel: a row exists once it is counted,
    not before (a view or a caller given its unit could not select that row)."""
    model = UnitTableModel(runner, Network.WORLD)
    model.set_bank(small_bank)
    # The page's read comes back first (the count's is still running).
    model._page_loaded(0, small_bank.units(Network.WORLD, limit=PAGE_SIZE))
    assert model.rowCount() == 0 and model.unit_at(0) is None
    qtbot.waitUntil(lambda: model.rowCount() == 60)
    assert model.unit_at(0) is not None and model.unit_at(60) is None
    wait_idle(qtbot, runner)
