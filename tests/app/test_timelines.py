"""Opinion timelines: the plotted points are the opinion's events, filters narrow the
list, hover explains a step and a click opens its evidence."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QImage, QPainter

from app.panes.timelines import Point, TimelinePlot, TimelinesPane, points_of, step_xy
from app.runner import Runner
from app.state import StudioState
from core import Network
from core.retain.opinions import OpinionEvent, write_events
from tests.app.conftest import wait_idle

T0 = datetime(2025, 3, 1, 9, 0)


def ev(opinion_id, n, when, relation, before, after, evidence=None, reason="", old=None):
    return OpinionEvent(
        f"{opinion_id}-e{n}", opinion_id, when, relation, before, after, evidence, reason, old
    )


@pytest.fixture
def history(small_bank):
    """Two opinions with real events in the bank: A moves four times, B twice."""
    opinions = small_bank.units(Network.OPINION, limit=2)
    a, b = opinions[0].id, opinions[1].id
    world = small_bank.units(Network.WORLD, limit=3)
    events = [
        ev(a, 0, datetime(2025, 3, 1), "formed", None, 0.5, reason="formed from turns"),
        ev(a, 1, datetime(2025, 3, 10), "reinforce", 0.5, 0.6, world[0].id, "Alice confirmed it"),
        ev(
            a,
            2,
            datetime(2025, 4, 2),
            "contradict",
            0.6,
            0.4,
            world[1].id,
            "the launch slipped",
            old="old A",
        ),
        ev(a, 3, datetime(2025, 4, 20), "weaken", 0.4, 0.3, world[2].id, "another delay"),
        ev(b, 0, datetime(2025, 5, 5), "formed", None, 0.7),
        ev(b, 1, datetime(2025, 5, 9), "reinforce", 0.7, 0.8, world[0].id, "seen again"),
    ]
    with small_bank.store.transaction() as tx:
        write_events(tx.con, events)
    return small_bank, a, b, world


@pytest.fixture
def pane(qtbot, history):
    bank = history[0]
    runner = Runner()
    state = StudioState(bank.engine, runner)
    state.set_bank(bank)
    pane = TimelinesPane(state)
    qtbot.addWidget(pane)
    pane.resize(1400, 800)
    pane.show()
    wait_idle(qtbot, runner)
    yield pane
    runner.shutdown()


def test_step_xy_holds_each_value_until_the_next_event(history) -> None:
    bank, a, _b, _w = history
    points = points_of(bank.opinion_history(a))
    x, y = step_xy(points, until=datetime(2025, 5, 1).timestamp())
    t = [p.when.timestamp() for p in points]
    assert x.tolist() == [
        t[0],
        t[1],
        t[1],
        t[2],
        t[2],
        t[3],
        t[3],
        datetime(2025, 5, 1).timestamp(),
    ]
    assert y.tolist() == [0.5, 0.5, 0.6, 0.6, 0.4, 0.4, 0.3, 0.3]


@pytest.mark.slow
def test_timeline_points_match_the_opinions_events(qtbot, pane, history) -> None:
    bank, a, b, _w = history
    with qtbot.waitSignal(pane.shown, timeout=10_000):
        pane.set_checked([a, b])
    for opinion_id in (a, b):
        events = bank.opinion_events(opinion_id)
        assert pane.plot.plotted(opinion_id) == [
            (e.happened_at.timestamp(), e.confidence_after) for e in events
        ]
    # The y axis is fixed to [0, 1] and does not read confidences as milli-units.
    ymin, ymax = pane.plot.getPlotItem().getViewBox().viewRange()[1]
    assert -0.05 <= ymin <= 0.0 and 1.0 <= ymax <= 1.05
    assert not pane.plot.getPlotItem().getAxis("left").autoSIPrefix
    assert len(pane.plot.lines) == 2


@pytest.mark.slow
def test_hover_shows_evidence_and_reason_and_click_opens_the_evidence(qtbot, pane, history) -> None:
    bank, a, _b, world = history
    with qtbot.waitSignal(pane.shown, timeout=10_000):
        pane.set_checked([a])
    contradict = pane.plot.points[a][2]
    assert not pane.detail.isVisible()  # no evidence open: the panel takes no room
    pane.plot.hover(contradict)
    text = pane.plot.hover_text()
    assert "contradicted · 0.60 → 0.40" in text
    assert "reason: the launch slipped" in text
    assert f"evidence: {world[1].text}" in text
    with qtbot.waitSignal(pane.unit_requested, timeout=5000) as blocker:
        pane.plot.point_clicked.emit(contradict)
    assert blocker.args == [world[1].id]
    qtbot.waitUntil(lambda: pane.detail.unit is not None and pane.detail.unit.id == world[1].id)
    assert pane.detail.isVisible()


@pytest.mark.slow
def test_side_panel_shows_current_confidence_past_texts_and_steps(qtbot, pane, history) -> None:
    bank, a, _b, _w = history
    row = next(i for i in range(pane.list.count()) if pane.list.item(i).data(256) == a)
    pane.list.setCurrentRow(row)
    qtbot.waitUntil(lambda: pane.steps.rowCount() == 4, timeout=10_000)
    opinion = bank.unit(a)
    assert f"{opinion.confidence:.2f}" in pane.current.text()
    assert "old A" in pane.past_texts.toPlainText()
    assert [pane.steps.item(r, 1).text() for r in range(4)] == [
        "formed", "reinforced", "contradicted", "weakened",
    ]  # fmt: skip
    with qtbot.waitSignal(pane.unit_requested, timeout=5000):
        pane.steps.cellDoubleClicked.emit(1, 0)
    # With no opinion selected the side panel folds away and the plot takes its room.
    assert pane.side.isVisible()
    plot_width = pane.plot.width()
    pane.list.setCurrentItem(None)
    qtbot.waitUntil(lambda: not pane.side.isVisible())
    qtbot.waitUntil(lambda: pane.plot.width() > plot_width)


@pytest.mark.slow
def test_filters_by_time_and_entity(qtbot, pane, history) -> None:
    _bank, a, b, _w = history
    assert pane.list.count() == 60  # every opinion of the bank
    pane.use_range.setChecked(True)
    pane.start.setDate(datetime(2025, 5, 1).date())
    pane.end.setDate(datetime(2025, 5, 31).date())
    pane.apply_button.click()
    qtbot.waitUntil(lambda: pane.list.count() == 1, timeout=10_000)
    assert pane.list.item(0).data(256) == b
    pane.use_range.setChecked(False)
    pane.entity.setText("Nobody At All")
    pane.apply_button.click()
    qtbot.waitUntil(
        lambda: pane.list_status.text() == "No opinion matches the filters.", timeout=10_000
    )
    assert pane.list.count() == 0
    _ = a


def test_a_time_filter_does_not_carry_over_to_another_bank(qtbot, pane, history) -> None:
    """Issue 13, item 12: the From–to range set on one bank filtered the next
    bank's opinions by the first bank's dates (a 2023 bank listed none)."""
    from tests.app.conftest import make_units

    bank = history[0]
    pane.use_range.setChecked(True)
    pane.start.setDate(datetime(2025, 5, 1).date())
    pane.end.setDate(datetime(2025, 5, 31).date())
    pane.apply_button.click()
    qtbot.waitUntil(lambda: pane.list.count() == 1, timeout=10_000)
    older = bank.engine.create_bank("Older")
    older.add_units(make_units(8, start=datetime(2023, 5, 1), seed=2))
    pane.state.set_bank(older)
    opinions = len(older.opinions(None, limit=100))
    assert opinions == 2
    qtbot.waitUntil(lambda: pane.list.count() == opinions, timeout=10_000)
    assert not pane.use_range.isChecked() and pane.time_range() == (None, None)


def test_no_bank_and_empty_bank_are_explained(qtbot, engine) -> None:
    runner = Runner()
    state = StudioState(engine, runner)
    pane = TimelinesPane(state)
    qtbot.addWidget(pane)
    assert pane.stack.currentWidget() is pane.no_bank
    state.set_bank(engine.create_bank("Empty"))
    qtbot.waitUntil(lambda: pane.stack.currentWidget() is pane.empty, timeout=10_000)
    assert "No opinions" in pane.empty.text()
    runner.shutdown()


@pytest.mark.slow
def test_movers_are_listed_first_by_movement_and_the_toggle_shows_the_rest(
    qtbot, pane, history
) -> None:
    bank, a, b, _w = history
    everyone = {u.id for u in bank.opinions(None, limit=2000)}
    assert len(everyone) > 2  # the small bank has opinions that never moved
    # A moved 0.1 + 0.2 + 0.1, B only 0.1: A on top, and only the movers shown.
    assert pane.listed_ids() == [a, b]
    assert pane.list.item(0).text().startswith("↕0.40")
    assert "2 moved" in pane.list_status.text()
    assert set(pane.checked_ids()) >= {a, b}
    pane.show_all.setChecked(True)
    assert pane.listed_ids()[:2] == [a, b]
    assert set(pane.listed_ids()) == everyone
    pane.show_all.setChecked(False)
    assert pane.listed_ids() == [a, b]


@pytest.mark.slow
def test_hover_cards_stay_inside_a_small_plot(qtbot, pane, history) -> None:
    _bank, a, b, _w = history
    pane.resize(1010, 600)  # the pane's room in a 1280x720 window
    with qtbot.waitSignal(pane.shown, timeout=10_000):
        pane.set_checked([a, b])
    pane.list.setCurrentRow(0)  # the side panel open: the plot at its narrowest
    vb = pane.plot.getPlotItem().getViewBox()
    qtbot.waitUntil(lambda: pane.side.isVisible() and 250 < vb.width() < 330)
    box = vb.sceneBoundingRect()
    for opinion_id in (a, b):
        for point in pane.plot.points[opinion_id]:
            pane.plot.hover(point)
            pane.plot.grab()  # the note places itself when painted
            card = pane.plot.hover_rect()
            assert box.adjusted(-2, -2, 2, 2).contains(card), (point.relation, card, box)
    # A point a little left of the middle (where the demo's card was cut off at
    # 1280x720): the note goes to the roomier side, no wider than that room.
    point = pane.plot.points[a][1]
    t, span = point.when.timestamp(), 30 * 86400.0
    for offset in (0.47, 0.53):
        pane.plot.set_time_range(t - offset * span, t + (1 - offset) * span)
        pane.plot.hover(point)
        pane.plot.grab()
        card = pane.plot.hover_rect()
        assert box.adjusted(-2, -2, 2, 2).contains(card), (offset, card, box)


def _drawn_date_labels(plot: TimelinePlot) -> list[str]:
    """The texts the bottom axis draws (pyqtgraph drops labels that do not fit)."""
    axis = plot.getPlotItem().getAxis("bottom")
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _axis, _ticks, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _rect, _flags, text in texts]


@pytest.mark.parametrize("width", [600, 900])
def test_a_span_of_two_years_names_both_years_and_its_months(qtbot, width):
    """pyqtgraph's own axis drew one label, "2026", for March 2025 to December 2026
    on a narrow plot: everything read as if it had happened in 2026."""
    plot = TimelinePlot()
    qtbot.addWidget(plot)
    plot.resize(width, 300)
    dates = [datetime(2025, 3, 1), datetime(2025, 6, 1), datetime(2026, 12, 1)]
    points = [
        Point("a", i, d, 0.5 + 0.1 * i, "formed" if i == 0 else "reinforce", None, "", None, "")
        for i, d in enumerate(dates)
    ]
    plot.show_opinions([("a", "An opinion", points)])
    plot.set_time_range(None, None)
    plot.show()
    qtbot.waitExposed(plot)
    labels = _drawn_date_labels(plot)
    assert any("2025" in label for label in labels), labels
    assert any("2026" in label for label in labels), labels
    assert len(labels) >= 4, labels  # months between the years


def test_the_legend_stays_inside_a_narrow_plot(qtbot) -> None:
    """In a 1280x720 window the plot is ~300 px wide: each legend line is elided to
    it (the demo's ran past the plot's right edge), and widens back with the plot."""
    plot = TimelinePlot()
    qtbot.addWidget(plot)
    plot.resize(330, 500)
    plot.show()
    qtbot.waitExposed(plot)
    text = "Juniper is fairly sure the Beacon launch will slip past June 16 (16 June 2025)."
    when = datetime(2025, 6, 16)
    points = [Point("o1", 0, when, 0.8, "formed", None, "", None, "")]
    plot.show_opinions(
        [("o1", text, points), ("o2", "Short one", [replace(points[0], opinion_id="o2")])]
    )
    vb = plot.getPlotItem().getViewBox()
    qtbot.waitUntil(lambda: vb.width() < 330)
    plot.grab()
    assert vb.sceneBoundingRect().contains(plot.legend_rect())
    labels = [label.text for _sample, label in plot.legend.items]
    assert labels[0].endswith("…") and text.startswith(labels[0][:-1])
    assert labels[1] == "Short one"
    plot.resize(1000, 500)
    qtbot.waitUntil(lambda: len(plot.legend.items[0][1].text) > len(labels[0]))


def test_a_steps_reason_wraps_in_full_in_the_narrow_side_panel(qtbot, history) -> None:
    """The side panel's step table cut a reason to one line ("similarity 0.76, …");
    each row now grows to show its reason in full."""
    bank, _a, b, world = history
    reason = "similarity 0.76, reversal cue 'was wrong' in what Alice said about the launch"
    when = datetime(2025, 5, 20)
    with bank.store.transaction() as tx:
        write_events(tx.con, [ev(b, 2, when, "contradict", 0.8, 0.5, world[1].id, reason)])
    runner = Runner()
    state = StudioState(bank.engine, runner)
    state.set_bank(bank)
    pane = TimelinesPane(state)
    qtbot.addWidget(pane)
    pane.resize(1010, 600)  # the pane's room in a 1280x720 window
    pane.show()
    wait_idle(qtbot, runner)
    row = next(i for i in range(pane.list.count()) if pane.list.item(i).data(256) == b)
    pane.list.setCurrentRow(row)
    qtbot.waitUntil(lambda: pane.steps.rowCount() == 3, timeout=10_000)
    steps = pane.steps
    assert steps.item(2, 3).text() == reason
    qtbot.waitUntil(lambda: steps.columnWidth(3) > 0)
    column = steps.columnWidth(3)
    flags = Qt.TextFlag.TextWordWrap
    needed = steps.fontMetrics().boundingRect(QRect(0, 0, column - 8, 10_000), flags, reason)
    assert needed.height() > steps.fontMetrics().height()  # it does wrap here
    assert steps.rowHeight(2) >= needed.height()
    runner.shutdown()
