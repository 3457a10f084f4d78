"""The Graph pane on a real (ingested) bank: a query's, a unit's and an entity's
neighbourhood, the packed results ringed, a click showing the unit."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import QPointF

from app.graph.neighbourhood import of_entity, of_trace, of_unit
from app.graph.pane import GraphPane
from app.runner import Runner
from app.state import StudioState
from core import STOP_REASONS
from tests.app.test_graph import clear_of

QUERY = "What went wrong with Atlas in June?"


@pytest.fixture
def demo_state(qtbot, demo_engine):
    runner = Runner()
    state = StudioState(demo_engine, runner)
    state.set_bank(demo_engine.open_bank("Demo"))
    yield state
    runner.shutdown()


@pytest.mark.slow
def test_neighbourhoods_hold_the_trace_and_the_links_between_its_units(demo_state) -> None:
    bank = demo_state.bank
    result = bank.recall(QUERY)
    nb = of_trace(bank, result.trace, result.unit_ids)
    ids = set(nb.graph.ids)
    assert set(result.unit_ids) <= ids and set(nb.packed) == set(result.unit_ids)
    for step in result.trace.to_dict()["activation"]["steps"]:
        assert step["node"] in ids and step["from"] in ids
    # Spreading is a process: on this demo subset the default settings light the
    # query in several waves (the full demo bank takes five), each lighting at
    # most the per-step budget, exactly that many while candidates wait.
    activation = result.trace.to_dict()["activation"]
    budget = activation["step_budget"]
    assert len({s["step"] for s in activation["steps"]}) >= 2
    seen = {s["node"] for s in activation["seeds"]}
    for wave in activation["waves"]:  # a wave may also raise nodes lit before
        new = set(wave["lit"]) - seen
        assert len(new) <= budget
        if wave["waiting"] and len(seen) + len(new) < activation["node_budget"]:
            assert len(new) == budget
        seen |= new
    # The activated subgraph and a bounded one-hop context, not every unit the trace names.
    lit = {s["node"] for s in result.trace.to_dict()["activation"]["steps"]}
    assert set(nb.context).isdisjoint(lit) and len(nb.context) <= 80
    # Every edge shown is a real link of the bank.
    for source, target, kind, _w in nb.graph.links()[:50]:
        assert any(link.target == target and str(link.kind) == kind for link in bank.links(source))
    unit = result.unit_ids[0]
    around = of_unit(bank, unit)
    assert unit in around.graph.index and around.activation["seeds"][0]["node"] == unit
    entity = bank.entities()[0]
    mentioned = of_entity(bank, entity.name)
    assert {u.id for u in bank.units(entity=entity.id, limit=None)} <= set(mentioned.graph.ids)


def test_a_query_shows_its_neighbourhood_and_a_click_shows_the_unit(qtbot, demo_state) -> None:
    pane = GraphPane(demo_state)
    qtbot.addWidget(pane)
    pane.resize(1200, 800)
    pane.show()
    assert pane.stack.currentWidget() is pane.empty
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=60_000):
        pane.show_query(QUERY)
    nb = pane.neighbourhood
    assert pane.stack.currentWidget() is pane.splitter
    assert pane.graph.view.graph is nb.graph
    assert sorted(pane.graph.view.marked_ids()) == sorted(nb.packed)
    assert "packed results ringed" in pane.status.text()
    target = nb.packed[0]
    with qtbot.waitSignal(pane.unit_requested, timeout=5000) as blocker:
        pane.graph.node_clicked.emit(target)
    assert blocker.args == [target]
    assert pane.graph.view.selected_id == target
    qtbot.waitUntil(lambda: pane.detail.unit is not None and pane.detail.unit.id == target)
    assert not pane.detail.edit_button.isVisibleTo(pane.detail)
    # The node's links name the entity that carries them ("via Atlas"), never its id.
    bank = demo_state.bank
    linked = next(u for u in nb.packed if any(link.entity_id for link in bank.links(u)))
    pane.graph.node_clicked.emit(linked)
    qtbot.waitUntil(lambda: "via " in pane.detail.links.text(), timeout=10_000)
    names = {e.name for e in bank.entities(include_retracted=True)}
    vias = re.findall(r"via (.+?) · ", pane.detail.links.text())
    assert vias and set(vias) <= names, vias


def test_unit_and_entity_modes(qtbot, demo_state) -> None:
    bank = demo_state.bank
    pane = GraphPane(demo_state)
    qtbot.addWidget(pane)
    unit = bank.units(limit=1)[0]
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=60_000):
        pane.show_unit(unit.id)
    assert unit.id in pane.graph.view.graph.index
    assert pane.mode.currentData() == "unit"
    entity = bank.entities()[0]
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=60_000):
        pane.show_entity(entity.name)
    assert pane.neighbourhood.title == f"entity: {entity.name}"
    pane.show_unit("no-such-unit")
    qtbot.waitUntil(lambda: "Could not read" in pane.status.text(), timeout=10_000)


def test_entity_links_are_drawn_by_how_specific_their_entity_is(demo_state) -> None:
    """A link through an entity few facts mention weighs more than one through
    an entity most facts mention (the weight recall's spreading gives it)."""
    bank = demo_state.bank
    result = bank.recall(QUERY)
    nb = of_trace(bank, result.trace, result.unit_ids)
    specificity = bank.entity_specificity()
    common = max(bank.entities(), key=lambda e: e.mention_count)
    assert specificity[common.id] < 0.5 < max(specificity.values())
    drawn = {(s, t): w for s, t, kind, w in nb.graph.links() if kind == "entity"}
    assert drawn and max(drawn.values()) < 1.0  # stored at 1.0, every one of them
    # Each drawn entity link weighs its most specific shared entity.
    checked = 0
    for (source, target), weight in list(drawn.items())[:40]:
        through = [
            specificity.get(link.entity_id, 1.0)
            for link in bank.links(source, kinds=["entity"])
            if link.target == target
        ] + [
            specificity.get(link.entity_id, 1.0)
            for link in bank.links(target, kinds=["entity"])
            if link.target == source
        ]
        if through:
            assert weight == pytest.approx(max(through), abs=1e-6) or weight >= max(through)
            checked += 1
    assert checked


def test_a_recall_at_the_defaults_reads_wave_by_wave(qtbot, demo_state) -> None:
    """#29 at the pane's defaults, on a real recall at 1280×720: the replay starts
    by itself from the seeds alone; each wave draws exactly the nodes lit by
    then; the context appears (faint) only once spreading ends; Fit frames what
    is lit and packed and fills the view with it (the lit rings, not the faint context); labels name seeds and packed
    results where they cover no label, no wave's caption and no lit node; the line under the graph
    counts waves and says why spreading stopped, in words."""
    pane = GraphPane(demo_state)
    qtbot.addWidget(pane)
    pane.resize(1280, 720)
    pane.show()
    qtbot.waitExposed(pane)
    player = pane.graph.player
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=60_000):
        pane.show_query(QUERY)
    qtbot.waitUntil(lambda: player.playing or player.frame > 0, timeout=5000)  # autoplay
    player.pause()
    nb, view = pane.neighbourhood, pane.graph.view
    activation = nb.activation
    lit = {s["node"] for s in activation["seeds"]}
    by_wave = [set(lit)]
    for wave in activation["waves"]:
        lit |= set(wave["lit"])
        by_wave.append(set(lit))
    assert len(by_wave) >= 3  # seeds and at least two waves on this bank
    for t, expected in enumerate(by_wave[:-1]):
        player.seek(t * player.frames_per_step)
        assert set(view.drawn_ids()) == expected, t
        assert f"wave {t} / {len(by_wave) - 1}" in pane.graph.step_label.text()
    player.seek(player.last_frame)  # the last wave's end: spreading is over
    assert set(view.lit_ids()) == lit
    assert set(view.drawn_ids()) == set(nb.graph.ids) > lit  # the context, faint, at last
    # Fit frames what is lit and packed, and fills most of the view with it.
    view.fit()
    pane.grab()
    vb = view.getPlotItem().getViewBox()
    box = vb.sceneBoundingRect()
    framed = [view.pos[nb.graph.index[u]] for u in lit | set(nb.packed) if u in nb.graph.index]
    scene = [vb.mapViewToScene(QPointF(*p)) for p in framed]
    assert all(box.contains(p) for p in scene)
    xs, ys = [p.x() for p in scene], [p.y() for p in scene]
    fill = sorted(((max(xs) - min(xs)) / box.width(), (max(ys) - min(ys)) / box.height()))
    assert fill[1] > 0.8 and fill[0] > 0.6, fill  # not a blob in the middle third
    # Labels: seeds and packed results only, none over another label or a lit node.
    labelled = view.labelled()
    seeds = {s["node"] for s in activation["seeds"]}
    assert len(labelled) >= 3 and set(labelled) <= seeds | set(nb.packed)
    rects = view.label_rects()
    assert all(not a.intersects(b) for n, a in enumerate(rects) for b in rects[n + 1 :])
    captions = view.caption_rects()  # "wave 1" … on top of the ring of each wave that lit new nodes
    assert len(captions) == sum(bool(b - a) for a, b in zip(by_wave, by_wave[1:], strict=False))
    assert not any(a.intersects(b) for a in rects for b in captions)
    for unit in lit:
        centre = vb.mapViewToScene(QPointF(*view.pos[nb.graph.index[unit]]))
        assert clear_of(rects, centre, view.sizes()[nb.graph.index[unit]] / 2), unit
    info = pane.graph.info.text()
    waves = len(by_wave) - 1
    assert f"lit in {waves} wave{'' if waves == 1 else 's'}" in info
    assert f"stopped: {STOP_REASONS[activation['stopped']]}" in info
