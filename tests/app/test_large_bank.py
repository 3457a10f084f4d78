"""A 100,000-unit bank opens and scrolls by fetching the pages in view, never all of them."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from app.unit_model import PAGE_SIZE
from core import Engine, Network, NewUnit
from core.store.bank_store import utcnow
from core.store.units import insert_units
from tests.app.conftest import wait_idle
from tests.support.embedders import HashEmbedder

UNITS = 100_000
# The tables page through DuckDB; vectors only have to be there, so they are
# 8-d (the store and its vector index cost ~3x less than at the model's 384).
EMBEDDER = HashEmbedder(name="tests/hash-8d", dim=8)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def large_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100,000 units (25,000 per network) with precomputed vectors, built once per session.

    Written in one transaction through the store's bulk insert (the one
    `Bank.add_units` uses per 1,000-unit batch), then indexed as an import is
    (`rebuild_indexes`: appended to empty indexes from DuckDB): the same rows
    and indexes, without a hundred index commits or the delete-before-add an
    update of the indexes does per chunk (15.7 -> 14.2 s of CPU for the build)."""
    home = tmp_path_factory.mktemp("large-home")
    networks = list(Network)
    start = datetime(2024, 1, 1)
    vectors = np.random.default_rng(0).standard_normal((UNITS, EMBEDDER.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    units = [
        NewUnit(
            text=f"Unit {i}: a note about topic {i % 97}",
            network=networks[i % 4],
            occurred_start=start + timedelta(minutes=i),
        ).with_id()
        for i in range(UNITS)
    ]
    with Engine(home, embedder=EMBEDDER) as engine:
        bank = engine.create_bank("Large")
        with bank.store.transaction() as tx:
            insert_units(tx.con, units, vectors, bank.store.embedding_model, utcnow())
        bank.store.rebuild_indexes()
        report = bank.verify()
        assert report.ok and report.units == report.vectors == report.lexical == UNITS, report
    return home


def test_scrolling_a_100k_bank_fetches_only_the_pages_in_view(qtbot, make_window, large_home):
    engine = Engine(large_home, embedder=EMBEDDER)
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
    engine = Engine(large_home, embedder=EMBEDDER)
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
