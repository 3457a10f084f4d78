"""How many engine calls one user action costs (issue 25, item 4): each is a round
trip once the bank is remote. The panes run here on a bank whose calls are
counted, as a user drives them: opening a fact's detail and each kind of graph
view. benchmarks/calls_per_action.py reports the same counts, with the
505-document bank the detail used to give up on."""

from __future__ import annotations

import pytest

from app.graph.pane import GraphPane
from app.panes.detail import UnitDetail
from app.runner import Runner
from app.state import StudioState
from tests.support.counting import Counting

QUERY = "What went wrong with Atlas in June?"
A_HANDFUL = 4  # the issue: "no pane makes more than a handful of engine calls per action"


@pytest.fixture
def counted(qtbot, demo_engine):
    """(state, counting bank): a studio state showing the demo bank through the counter."""
    runner = Runner()
    bank = Counting(demo_engine.open_bank("Demo"))
    state = StudioState(demo_engine, runner)
    state.set_bank(bank)
    yield state, bank
    runner.shutdown()


def test_opening_a_facts_detail_is_three_calls(qtbot, counted):
    state, bank = counted
    unit = next(u for u in bank.units(limit=50) if u.source_ids and len(bank.links(u.id)))
    title = bank.unit_context(unit.id).title
    detail = UnitDetail(state)
    qtbot.addWidget(detail)
    bank.take()
    detail.show_unit(unit)
    qtbot.waitUntil(lambda: "Loading" not in detail.links.text(), timeout=20_000)
    qtbot.waitUntil(lambda: not state.runner.busy, timeout=20_000)
    calls = bank.take()
    assert calls["by_method"] == {"unit_context": 1, "links": 1, "units": 1}
    assert calls["total"] <= A_HANDFUL
    # What the calls brought is shown: the conversation, and the unit's links.
    assert title and title in detail.provenance.toHtml()
    assert detail.links.text() and "No links." not in detail.links.text()


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("query", {"recall": 1, "subgraph": 1, "units": 1, "config": 1}),
        ("unit", {"subgraph": 1, "config": 1}),
        ("entity", {"units": 1, "subgraph": 1, "config": 1}),
    ],
)
def test_one_graph_view_is_a_handful_of_calls(qtbot, counted, mode, expected):
    state, bank = counted
    text = {
        "query": QUERY,
        "unit": bank.units(limit=1)[0].id,
        "entity": max(bank.entities(), key=lambda e: e.mention_count).name,
    }[mode]
    pane = GraphPane(state)
    qtbot.addWidget(pane)
    bank.take()
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=60_000):
        pane.request(mode, text)
    qtbot.waitUntil(lambda: not state.runner.busy, timeout=20_000)
    calls = bank.take()
    assert calls["by_method"] == expected and calls["total"] <= A_HANDFUL
    assert len(pane.neighbourhood.graph.ids) > 1 and pane.neighbourhood.graph.links()
