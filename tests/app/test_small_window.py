"""At 1280x720 every pane fits its tab without scrolling, and every tab is reachable."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QModelIndex

from app.panes.recall_debugger import FUSED_KEYS
from tests.app.conftest import wait_idle


@pytest.mark.slow
def test_every_pane_fits_a_1280x720_window(qtbot, make_window, small_bank) -> None:
    window = make_window(start=True)
    window.resize(1280, 720)
    wait_idle(qtbot, window.state.runner)
    recall = next(p for p in window.panes if p.slug == "recall")
    recall.query.setText("What is the Atlas project and who works on it, and when did it ship?")
    with qtbot.waitSignal(recall.recalled, timeout=20_000):
        recall.run()
    bar = window.tabs.tabBar()
    assert bar.usesScrollButtons()  # 15 tabs overflow: the bar scrolls to each of them
    too_big = []
    for i in range(window.tabs.count()):
        window.tabs.setCurrentIndex(i)
        host = window.tabs.widget(i)
        qtbot.waitUntil(lambda host=host: host.viewport().width() > 0)
        pane = host.widget()
        need, room = pane.minimumSizeHint(), host.viewport().size()
        if need.width() > room.width() or need.height() > room.height():
            too_big.append((pane.slug, need.toTuple(), room.toTuple()))
    assert too_big == []
    # In the window itself the fused table still fits, its fact column readable.
    window.tabs.setCurrentWidget(next(h for h in _hosts(window) if h.widget() is recall))
    fused = recall.fused_table
    qtbot.waitUntil(lambda: fused.viewport().width() > 0)
    header = fused.horizontalHeader()
    assert header.length() <= fused.viewport().width()
    assert header.sectionSize(FUSED_KEYS.index("fact")) >= 180
    # Its graph fits beside the table without scrolling sideways: the tools on a
    # second row, the parameters folded behind Controls.
    graph = recall.graph
    assert not graph.parameters.isVisible()
    qtbot.waitUntil(lambda: recall.graph_scroll.viewport().width() > 0)
    qtbot.waitUntil(lambda: recall.graph_scroll.horizontalScrollBar().maximum() == 0)
    assert graph.width() <= recall.graph_scroll.viewport().width()
    graph.controls_button.click()
    assert graph.parameters.isVisible()


def _hosts(window):
    return [window.tabs.widget(i) for i in range(window.tabs.count())]


@pytest.mark.parametrize("size", [(1280, 720), (1440, 900)])
@pytest.mark.slow
def test_empty_detail_panels_collapse_and_come_back_on_selection(
    qtbot, make_window, demo_engine, size
) -> None:
    """A detail panel with nothing to show takes no room from its list."""
    window = make_window(start=True, engine=demo_engine)
    window.resize(*size)
    window.set_bank(demo_engine.open_bank("Demo"))
    wait_idle(qtbot, window.state.runner)
    for slug in ("world", "experience", "opinion", "observation", "entities", "documents"):
        pane = window.pane(slug)
        window.show_pane(slug)
        table = pane.table
        qtbot.waitUntil(lambda table=table: table.model().rowCount() > 0, timeout=20_000)
        table.clearSelection()
        table.setCurrentIndex(QModelIndex())
        qtbot.waitUntil(lambda pane=pane: not pane.detail.isVisible())
        # The list has the pane's width (less a splitter handle).
        qtbot.waitUntil(lambda t=table, p=pane: t.width() >= p.splitter.width() - 40)
        if slug == "entities":  # with the room, every column shows
            qtbot.waitUntil(lambda t=table: not t.isColumnHidden(1))
        table.selectRow(0)
        # Back with room to read in (a splitter can bring a hidden side back at width 0).
        qtbot.waitUntil(lambda pane=pane: pane.detail.isVisible(), timeout=20_000)
        qtbot.waitUntil(lambda pane=pane: pane.detail.width() > 300)
        if slug == "entities":  # beside it, no column is pushed out of sight
            qtbot.waitUntil(lambda t=table: t.horizontalScrollBar().maximum() == 0)
