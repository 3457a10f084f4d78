"""A 100,000-unit bank opens and scrolls by fetching the pages in view, never all of them."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from app.unit_model import PAGE_SIZE
from core import Engine, Network, NewUnit
from tests.app.conftest import unit_vectors, wait_idle

UNITS = 100_000
BATCH = 10_000

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def large_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100,000 units (25,000 per network) with precomputed vectors, built once per session."""
    home = tmp_path_factory.mktemp("large-home")
    networks = list(Network)
    start = datetime(2024, 1, 1)
    with Engine(home) as engine:
        bank = engine.create_bank("Large")
        for first in range(0, UNITS, BATCH):
            vectors = unit_vectors(BATCH, seed=first)
            bank.add_units(
                [
                    NewUnit(
                        text=f"Unit {first + i}: a note about topic {(first + i) % 97}",
                        network=networks[(first + i) % 4],
                        occurred_start=start + timedelta(minutes=first + i),
                        vector=tuple(vectors[i].tolist()),
                    )
                    for i in range(BATCH)
                ]
            )
    return home


def test_scrolling_a_100k_bank_fetches_only_the_pages_in_view(qtbot, make_window, large_home):
    engine = Engine(large_home)
    window = make_window(start=True, engine=engine)
    qtbot.waitUntil(lambda: window.state.bank is not None, timeout=30_000)
    pane = window.show_pane("world")
    model, table = pane.model, pane.table
    qtbot.waitUntil(lambda: model.counted and model.unit_at(0) is not None)
    wait_idle(qtbot, window.runner)
    assert model.rowCount() == UNITS // 4
    assert model.fetches == [0]
    assert model.count_fetches == 1

    # Jump to the middle, as a scrollbar drag would.
    bar = table.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)
    middle = table.rowAt(table.viewport().height() // 2)
    assert middle > 10_000
    qtbot.waitUntil(lambda: model.unit_at(middle) is not None)
    assert model.unit_at(middle).text.startswith("Unit ")
    assert middle // PAGE_SIZE in model.fetches

    # And to the end.
    bar.setValue(bar.maximum())
    last = model.rowCount() - 1
    qtbot.waitUntil(lambda: model.unit_at(last) is not None)
    wait_idle(qtbot, window.runner)
    assert last // PAGE_SIZE in model.fetches
    # A handful of pages, not the 250 a fetch-everything model would read.
    assert len(model.fetches) <= 8, model.fetches
    assert len(model.cached_pages()) <= 8
    assert model.count_fetches == 1


def test_sorting_and_filtering_a_100k_bank(qtbot, make_window, large_home):
    engine = Engine(large_home)
    window = make_window(start=True, engine=engine)
    qtbot.waitUntil(lambda: window.state.bank is not None, timeout=30_000)
    pane = window.show_pane("experience")
    model = pane.model
    qtbot.waitUntil(lambda: model.counted and model.unit_at(0) is not None)
    with qtbot.waitSignal(model.count_changed):
        pane.table.sortByColumn(
            1, pane.table.horizontalHeader().sortIndicatorOrder().DescendingOrder
        )
    qtbot.waitUntil(lambda: model.unit_at(0) is not None)
    assert model.unit_at(0).occurred_start > model.unit_at(1).occurred_start
    with qtbot.waitSignal(model.count_changed) as counted:
        pane.filter_bar.search.setText("topic 42")
    # "topic 42" is every 97th unit; a quarter of those are experiences.
    assert 0 < counted.args[0] < 1000
    qtbot.waitUntil(lambda: model.unit_at(0) is not None)
    assert "topic 42" in model.unit_at(0).text
