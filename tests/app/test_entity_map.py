"""The entity map on the demo subset: co-mentions, click-through, drag-to-merge, retract."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from app.graph.entity_pane import EntityMapPane, EntityMapView
from app.graph.entitymap import EntityMap, build, strongest_pairs
from app.panes.entity_dialogs import RetractEntityDialog
from app.runner import Runner
from app.state import StudioState
from core import FACT_NETWORKS, Entity
from tests.app.conftest import wait_idle


@pytest.fixture
def map_state(qtbot, demo_engine):
    runner = Runner()
    state = StudioState(demo_engine, runner)
    state.set_bank(demo_engine.open_bank("Demo"))
    yield state
    runner.shutdown()


def test_co_mentions_are_counted_from_active_facts(map_state) -> None:
    bank = map_state.bank
    pairs = bank.entity_comentions()
    assert pairs, "the demo mentions entities together"
    a, b, n = pairs[0]
    both = {u.id for u in bank.units(entity=a, limit=None)} & {
        u.id for u in bank.units(entity=b, limit=None)
    }
    assert a < b and n == len(both)
    emap = build(bank.entities(), pairs)
    assert len(emap.entities) == len(bank.entities())
    assert emap.graph.edge_count == len(strongest_pairs(pairs)) <= len(pairs)


def test_strongest_pairs_keep_each_entitys_best() -> None:
    pairs = [("a", f"x{i}", 10 - i) for i in range(8)] + [("y", "z", 1)]
    kept = strongest_pairs(pairs, per_entity=3)
    assert [p[1] for p in kept if p[0] == "a"] == ["x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"]
    # every x keeps its only link (its own best), and y-z survives though weakest
    assert ("y", "z", 1) in kept
    # b-c is neither b's nor c's best: dropped.
    triangle = [("a", "b", 2), ("a", "c", 1), ("b", "c", 1)]
    assert strongest_pairs(triangle, per_entity=1) == [("a", "b", 2), ("a", "c", 1)]


@pytest.mark.slow
def test_click_shows_facts_and_drag_merges_through_the_engine(qtbot, map_state) -> None:
    map_state.bank.process_jobs()  # observations exist: they are not facts to list
    pane = EntityMapPane(map_state)
    qtbot.addWidget(pane)
    pane.resize(1280, 720)
    pane.show()
    qtbot.waitUntil(lambda: pane.map is not None, timeout=60_000)
    bank = map_state.bank
    entities = pane.map.entities
    first, second = entities[0], entities[1]
    view = pane.view
    qtbot.wait(1)
    # A click (press and release on the same node) opens its facts, in time order.
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.view_pos(first.id))
    assert pane.selected == first.id and pane.side.isVisible()
    facts = bank.units(FACT_NETWORKS, entity=first.id, limit=None)
    qtbot.waitUntil(lambda: pane.facts.count() == len(facts), timeout=30_000)
    profile = bank.observation(first.id)
    assert profile is not None
    listed = [pane.facts.item(i).text() for i in range(pane.facts.count())]
    assert not [text for text in listed if profile.text in text], "an observation is no fact"
    # Drag the second onto the first: asks, then merges with the engine.
    asked: list[str] = []
    pane.confirm = lambda title, text: asked.append(text) or True
    qtbot.mousePress(view.viewport(), Qt.MouseButton.LeftButton, pos=view.view_pos(second.id))
    qtbot.mouseMove(view.viewport(), pos=view.view_pos(first.id))
    qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=view.view_pos(first.id))
    assert asked and second.name in asked[0] and first.name in asked[0]
    qtbot.waitUntil(
        lambda: pane.map is not None and len(pane.map.entities) == len(entities) - 1,
        timeout=60_000,
    )
    assert second.id not in {e.id for e in bank.entities()}
    assert pane.selected == first.id  # selection stays on the merged entity
    # Retract from the map: the review lists the facts it hides, not only counts.
    reviewed = []

    def review(preview) -> bool:
        dialog = RetractEntityDialog(preview, pane)
        qtbot.addWidget(dialog)
        reviewed.extend(dialog.facts.item(i).text() for i in range(dialog.facts.count()))
        return True

    pane.review_retract = review
    hidden = {u.text for u in bank.units(entity=first.id, limit=None)}  # its profile too
    had = {u.text for u in bank.units(FACT_NETWORKS, entity=first.id, limit=None)}
    pane.request_retract()
    qtbot.waitUntil(lambda: first.id not in {e.id for e in bank.entities()}, timeout=60_000)
    qtbot.waitUntil(lambda: first.id not in pane.map.graph.index, timeout=60_000)
    assert reviewed and [t for t in reviewed if t.split("] ", 1)[1] not in hidden] == []
    # Off the map, the entity stays selected, its panel showing what it had.
    assert pane.selected == first.id and pane.side.isVisible()
    assert "(retracted)" in pane.name.text() and pane.retract_button.text() == "Restore entity"
    qtbot.waitUntil(lambda: pane.facts.count() == len(had), timeout=30_000)
    assert {pane.facts.item(i).text().split("  ", 1)[-1] for i in range(pane.facts.count())} == had
    # Restore brings it back onto the map, still selected.
    pane.request_retract()
    qtbot.waitUntil(lambda: first.id in pane.map.graph.index, timeout=60_000)
    assert pane.selected == first.id and pane.retract_button.text() == "Retract entity…"


def _crowded_map() -> EntityMap:
    """Three big entities nearly on top of each other, two small ones apart."""
    entities = [
        Entity("e1", "Northwind Analytics", "org", mention_count=40),
        Entity("e2", "Tomás Ferreira", "person", mention_count=38),
        Entity("e5", "Beacon Mobile", "org", mention_count=30),
        Entity("e3", "Lisbon", "place", mention_count=12),
        Entity("e4", "Docker Compose", "other", mention_count=1),
    ]
    pairs = [("e1", "e2", 5), ("e1", "e5", 4), ("e1", "e3", 2), ("e3", "e4", 1)]
    emap = build(entities, pairs)
    at = {"e1": (0.0, 0.0), "e2": (0.02, 0.01), "e5": (-0.02, 0.0), "e3": (1.0, 1.0)}
    at["e4"] = (-1.0, 1.0)
    return replace(emap, positions=np.array([at[e.id] for e in emap.entities]))


def test_labels_never_cover_each_other_and_hover_names_every_entity(qtbot) -> None:
    view = EntityMapView()
    qtbot.addWidget(view)
    view.resize(500, 400)
    view.show()
    qtbot.waitExposed(view)
    emap = _crowded_map()
    view.set_map(emap)
    # Three crowded names: the biggest above its disc, the next under its own,
    # the third (it would cover one of them) only on hover.
    assert {"Northwind Analytics", "Tomás Ferreira"} <= set(view.labelled())
    assert "Beacon Mobile" not in view.labelled()
    rects = view.label_rects()
    assert all(not a.intersects(b) for n, a in enumerate(rects) for b in rects[n + 1 :])
    # A label sits above or under its own disc, never on it (the demo's "Juniper"
    # label covered its node).
    vb = view.getPlotItem().getViewBox()
    for name, rect in zip(view.labelled(), rects, strict=True):
        i = next(j for j, e in enumerate(emap.entities) if e.name == name)
        centre, radius = vb.mapViewToScene(QPointF(*emap.positions[i])), view.sizes[i] / 2
        clear = (
            rect.bottom() <= centre.y() - radius + 0.5 or rect.top() >= centre.y() + radius - 0.5
        )
        assert clear, name
    # Zoomed in far enough, all three fit and are named.
    view.getPlotItem().getViewBox().setRange(xRange=(-0.06, 0.07), yRange=(-0.05, 0.06))
    qtbot.waitUntil(lambda: "Beacon Mobile" in view.labelled())
    view.getPlotItem().getViewBox().autoRange(padding=0.05)
    qtbot.waitUntil(lambda: "Beacon Mobile" not in view.labelled())
    # The pointer on an unlabelled entity names it, with its type and facts.
    qtbot.mouseMove(view.viewport(), pos=view.view_pos("e5"))
    qtbot.waitUntil(lambda: view.hover_text() != "")
    assert view.hover_text() == "Beacon Mobile · org · 30 facts"
    qtbot.mouseMove(view.viewport(), pos=view.view_pos("e4"))
    qtbot.waitUntil(lambda: view.hover_text() == "Docker Compose · other · 1 fact")
    # ...drawn by its entity, inside the view (it once painted far off screen).
    view.grab()
    note, seen = view.hover_rect(), vb.sceneBoundingRect()
    e4 = vb.mapViewToScene(QPointF(-1.0, 1.0))
    assert seen.contains(note) and note.left() <= e4.x() <= note.right(), (note, e4)
    assert note.bottom() <= e4.y() - view.sizes[emap.graph.index["e4"]] / 2 + 0.5


def test_the_legend_names_the_colour_of_each_type(qtbot, engine) -> None:
    runner = Runner()
    state = StudioState(engine, runner)
    pane = EntityMapPane(state)
    qtbot.addWidget(pane)
    pane._arrived(_crowded_map())
    legend = pane.legend.text()
    for kind, brush in pane.view.type_brushes.items():
        assert f'color:{brush.color().name()}">●</span>&nbsp;{kind}' in legend
    assert len(pane.view.type_brushes) == 4
    runner.shutdown()


@pytest.mark.slow
def test_an_entity_clicks_through_to_its_opinion_timeline(qtbot, make_window, demo_engine) -> None:
    window = make_window(start=True, engine=demo_engine)
    window.resize(1280, 720)
    window.set_bank(demo_engine.open_bank("Demo"))
    bank = window.state.bank
    held = {e for u in bank.opinions(None, limit=2000) for e in u.entity_ids}
    entity = next(e for e in bank.entities() if e.id in held)  # the most mentioned with opinions
    emap = window.show_pane("entity-map")
    qtbot.waitUntil(lambda: emap.map is not None, timeout=60_000)
    assert emap.select_entity(entity.name) and emap.timeline_button.isEnabled()
    emap.timeline_button.click()
    timelines = window.current_pane()
    assert timelines.slug == "timelines" and timelines.entity.text() == entity.name
    about = {u.id for u in bank.opinions(entity.id, limit=2000)}
    qtbot.waitUntil(lambda: set(timelines.listed_ids(visible_only=False)) == about, timeout=30_000)
    wait_idle(qtbot, window.state.runner)  # the plot's histories, read after the list
