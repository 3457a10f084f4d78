"""The graph package: model, layout, activation frames, the widget and its controls."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF, QRectF, Qt

from app.graph.activation import DEFAULT_PARAMS, Timeline, params_from_settings, rerun, timeline
from app.graph.animation import ActivationPlayer
from app.graph.layout import ASPECT, components, force_layout
from app.graph.model import LINK_KINDS, UNKNOWN_NETWORK, GraphData, trace_node_ids
from app.graph.rings import ring_guides, ring_layout
from app.graph.widget import GraphWidget
from app.runner import Runner
from core import adjacency, spread
from core.config import DEFAULTS
from tests.support.graphs import random_graph

MU = {"causal": 1.0, "entity": 0.9, "temporal": 0.6, "semantic": 0.6}


def chain() -> GraphData:
    """a -entity- b -causal- c -temporal- d, and e alone; f of an unknown network."""
    nodes = [("a", "world"), ("b", "experience"), ("c", "opinion"), ("d", "observation")]
    nodes += [("e", "world"), ("f", "mystery")]
    links = [
        ("a", "b", "entity", 1.0),
        ("b", "a", "entity", 0.5),  # the reverse row retain also stores: kept once
        ("b", "c", "causal", 0.8),
        ("c", "d", "temporal", 0.5),
        ("d", "zz", "semantic", 0.9),  # to a node not shown: dropped
        ("e", "e", "semantic", 1.0),  # self-loop: dropped
        ("a", "c", "nonsense", 1.0),  # unknown kind: dropped
    ]
    return GraphData.build(nodes, links, {"a": "Alice works at Google", "b": "I met Alice"})


# -- model and layout ---------------------------------------------------------------


def test_build_keeps_each_link_once_and_drops_what_it_cannot_show() -> None:
    g = chain()
    assert g.ids == ("a", "b", "c", "d", "e", "f")
    assert g.network[-1] == UNKNOWN_NETWORK
    assert g.edge_count == 3
    assert sorted(g.links()) == [
        ("a", "b", "entity", 1.0),
        ("b", "c", "causal", 0.8),
        ("c", "d", "temporal", 0.5),
    ]
    assert g.degree().tolist() == [1, 2, 2, 1, 0, 0]
    assert g.label(0) == "Alice works at Google" and g.label(2) == "c"


def test_trace_node_ids_orders_activation_then_channels_then_fused() -> None:
    trace = {
        "activation": {
            "seeds": [{"node": "s", "activation": 0.9}],
            "steps": [
                {
                    "step": 1,
                    "node": "n",
                    "from": "s",
                    "edge": "entity",
                    "weight": 1.0,
                    "activation": 0.7,
                }
            ],
        },
        "channels": {"semantic": {"ids": ["s", "x"]}, "lexical": {"ids": ["y"]}},
        "fused": [{"id": "z"}, {"id": "x"}],
    }
    assert trace_node_ids(trace) == ["s", "n", "x", "y", "z"]


def test_layout_is_stable_whatever_the_input_order() -> None:
    g = random_graph(120, 300)
    pos = force_layout(g)
    assert pos.shape == (120, 2)
    assert np.abs(pos[:, 1]).max() <= 1.0 + 1e-9
    assert np.abs(pos[:, 0]).max() <= ASPECT + 1e-9
    shuffled_nodes = [(u, "world") for u in reversed(g.ids)]
    g2 = GraphData.build(shuffled_nodes, list(reversed(g.links())))
    pos2 = force_layout(g2)
    by_id = {u: pos2[i] for i, u in enumerate(g2.ids)}
    assert np.array_equal(np.array([by_id[u] for u in g.ids]), pos)
    assert np.array_equal(force_layout(g), pos)  # and again: no hidden randomness


def test_layout_puts_linked_nodes_closer_than_unlinked_ones() -> None:
    # Two dense clusters joined by one edge: within-cluster distances are shorter.
    links = [(f"a{i}", f"a{j}", "entity", 1.0) for i in range(10) for j in range(i + 1, 10)]
    links += [(f"b{i}", f"b{j}", "entity", 1.0) for i in range(10) for j in range(i + 1, 10)]
    links.append(("a0", "b0", "semantic", 0.5))
    nodes = [(f"a{i}", "world") for i in range(10)] + [(f"b{i}", "opinion") for i in range(10)]
    g = GraphData.build(nodes, links)
    pos = force_layout(g)
    a, b = pos[:10], pos[10:]

    def mean_dist(p: np.ndarray, q: np.ndarray) -> float:
        return float(np.linalg.norm(p[:, None] - q[None], axis=2).mean())

    assert mean_dist(a, a) < 0.6 * mean_dist(a, b)
    assert mean_dist(b, b) < 0.6 * mean_dist(a, b)


def test_unlinked_nodes_do_not_squeeze_the_linked_part() -> None:
    # A linked core of 30 and 15 loose nodes, as a real recall trace gives.
    core = [(f"c{i:02d}", f"c{(i * 7 + 3) % 30:02d}", "entity", 1.0) for i in range(30)]
    core += [(f"c{i:02d}", f"c{i + 1:02d}", "temporal", 0.5) for i in range(29)]
    nodes = [(f"c{i:02d}", "world") for i in range(30)] + [
        (f"loose{i}", "opinion") for i in range(15)
    ]
    g = GraphData.build(nodes, core)
    labels = components(g.node_count, g.src, g.dst)
    assert len(set(labels[:30].tolist())) == 1 and len(set(labels[30:].tolist())) == 15
    pos = force_layout(g)
    core_span = pos[:30].max(axis=0) - pos[:30].min(axis=0)
    assert core_span[1] > 0.8  # the core fills a good part of the height (total 2)
    # Loose nodes sit apart from the core's bounding box, not inside it.
    low, high = pos[:30].min(axis=0), pos[:30].max(axis=0)
    inside = np.all((pos[30:] >= low) & (pos[30:] <= high), axis=1)
    assert not inside.any()


def test_layout_of_tiny_graphs() -> None:
    assert force_layout(GraphData.empty()).shape == (0, 2)
    assert force_layout(GraphData.build([("x", "world")], [])).tolist() == [[0.0, 0.0]]


# -- activation -------------------------------------------------------------------------


def test_rerun_is_the_engine_rule_over_the_graph_shown() -> None:
    g = chain()
    result = rerun(g, {"a": 1.0}, decay=0.8, mu=MU, threshold=0.01, max_steps=5, node_budget=50)
    engine = spread(
        {"a": 1.0},
        adjacency(g.links()),
        decay=0.8,
        mu=MU,
        threshold=0.01,
        max_steps=5,
        node_budget=50,
        step_budget=DEFAULT_PARAMS["step_budget"],
    )
    assert result == engine.to_dict()
    lit = {s["node"]: s["activation"] for s in result["steps"]}
    assert lit["b"] == pytest.approx(1.0 * 1.0 * 0.8 * 0.9)
    assert lit["c"] == pytest.approx(lit["b"] * 0.8 * 0.8 * 1.0)
    assert lit["d"] == pytest.approx(lit["c"] * 0.5 * 0.8 * 0.6)


def test_rerun_with_a_kind_filtered_out_stops_at_that_kind() -> None:
    g = chain()
    kinds = [k for k in LINK_KINDS if k != "causal"]
    result = rerun(g, {"a": 1.0}, decay=0.8, mu=MU, threshold=0.01, kinds=kinds)
    assert [s["node"] for s in result["steps"]] == ["b"]


def test_params_from_settings_reads_the_recall_keys() -> None:
    p = params_from_settings({"recall.activation_decay": 0.5, "recall.mu_causal": 1.5, "x": 1})
    assert p["decay"] == 0.5 and p["mu"]["causal"] == 1.5 and p["mu"]["entity"] == 0.9


def test_timeline_rows_follow_the_steps_and_carried_edges() -> None:
    g = chain()
    act = rerun(g, {"a": 1.0}, decay=0.8, mu=MU, threshold=0.01, max_steps=5)
    tl = timeline(g, act)
    assert tl.steps == 3
    assert tl.levels[0].tolist() == [1.0, 0, 0, 0, 0, 0]
    b, c, d = (g.index[x] for x in "bcd")
    assert tl.levels[1, b] > 0 and tl.levels[1, c] == 0
    assert tl.levels[3, d] > 0
    # Each step carried exactly the edge into the node it lit.
    carried = [[g.links()[e][:3] for e in tl.carried[s]] for s in range(1, 4)]
    assert carried == [[("a", "b", "entity")], [("b", "c", "causal")], [("c", "d", "temporal")]]
    # Halfway through step 1, b is half lit.
    levels, step, frac = tl.at(5, 10)
    assert (step, frac) == (1, 0.5)
    assert levels[b] == pytest.approx(tl.levels[1, b] / 2)
    assert Timeline.empty(3).steps == 0 and timeline(g, None).levels.shape == (1, 6)


# -- the player -----------------------------------------------------------------------------


def test_player_steps_scrubs_and_stops_at_the_end(qtbot) -> None:
    player = ActivationPlayer(frames_per_step=10)
    player.set_frame_count(31)
    seen: list[int] = []
    player.frame_changed.connect(seen.append)
    player.step()
    assert player.frame == 10
    player.step()
    player.step()
    player.step()
    assert player.frame == 30
    player.step_back()
    assert player.frame == 20
    player.seek(15)
    player.step_back()
    assert player.frame == 10
    player.set_speed(4.0)
    player.seek(0)
    player.advance()
    assert player.frame == 4
    assert seen[:2] == [10, 20]
    with qtbot.waitSignal(player.finished, timeout=5000):
        player.play()
    assert player.frame == 30 and not player.playing


# -- the widget -------------------------------------------------------------------------------


@pytest.fixture
def widget(qtbot) -> GraphWidget:
    w = GraphWidget()
    qtbot.addWidget(w)
    w.resize(900, 600)
    w.show()
    return w


def test_the_controls_start_at_the_engines_defaults(widget) -> None:
    """δ, every μ and the budgets read the engine's configuration spec (issue 15: the
    graph kept its own copy, μ temporal 0.6 where recall used 0.8)."""
    assert widget.decay_slider.value() == pytest.approx(DEFAULTS["recall.activation_decay"])
    for kind, slider in widget.mu_sliders.items():
        assert slider.value() == pytest.approx(DEFAULTS[f"recall.mu_{kind}"], abs=0.011), kind
    assert widget.node_budget.value() == DEFAULTS["recall.activation_node_budget"]
    assert widget.step_budget.value() == DEFAULTS["recall.activation_step_budget"]
    assert widget.max_steps.value() == DEFAULTS["recall.activation_steps"]
    assert widget.current_params()["threshold"] == DEFAULTS["recall.activation_threshold"]


@pytest.mark.slow
def test_animation_advances_frames_and_nodes_grow_with_activation(qtbot, widget) -> None:
    g = chain()
    act = rerun(g, {"a": 1.0}, decay=0.8, mu=MU, threshold=0.01, max_steps=5)
    with qtbot.waitSignal(widget.layout_ready):
        widget.show_graph(g, activation=act, marked=["b"])
    assert widget.player.frame == widget.player.last_frame  # shows the end state first
    widget.player.seek(0)
    sizes_start = widget.view.sizes()
    a, b = g.index["a"], g.index["b"]
    assert sizes_start[a] > sizes_start[b]  # only the seed is lit at frame 0
    widget.play_button.click()
    qtbot.waitUntil(lambda: widget.player.frame > widget.player.frames_per_step, timeout=5000)
    assert widget.play_button.text() == "Pause"
    qtbot.waitUntil(lambda: not widget.player.playing, timeout=10_000)
    assert widget.play_button.text() == "Play"
    assert widget.view.sizes()[b] > sizes_start[b]
    assert widget.step_label.text() == "wave 3 / 3 · 4 lit"
    assert widget.view.marked_ids() == ["b"]
    assert len(widget.view.rings.points()) == 1


def test_step_buttons_and_scrub_slider_move_the_frame(widget, qtbot) -> None:
    g = chain()
    act = rerun(g, {"a": 1.0}, decay=0.8, mu=MU, threshold=0.01, max_steps=5)
    widget.show_graph(g, activation=act)
    qtbot.waitSignal(widget.layout_ready, timeout=100, raising=False)
    widget.player.seek(0)
    widget.step_button.click()
    assert widget.player.frame == widget.player.frames_per_step
    # In step 1 the a–b entity edge lights up in the "active" curve.
    widget.scrub.setValue(widget.player.frames_per_step // 2)
    assert widget.player.frame == widget.player.frames_per_step // 2
    x, _y = widget.view.active_curves["entity"].getData()
    assert x is not None and len(x) == 2
    widget.back_button.click()
    assert widget.player.frame == 0


def test_decay_and_mu_sliders_rerun_the_activation(widget, qtbot) -> None:
    g = chain()
    act = rerun(g, {"a": 1.0}, decay=0.8, mu=MU, threshold=0.01, max_steps=5)
    widget.show_graph(g, activation=act, params={"threshold": 0.01, "max_steps": 5})
    b = g.index["b"]
    before = float(widget.timeline.levels[-1, b])
    with qtbot.waitSignal(widget.activation_changed, timeout=2000) as blocker:
        widget.decay_slider.slider.setValue(50)  # δ = 0.5
    lit = {s["node"]: s["activation"] for s in blocker.args[0]["steps"]}
    assert lit["b"] == pytest.approx(1.0 * 0.5 * 0.9)
    assert float(widget.timeline.levels[-1, b]) == pytest.approx(lit["b"]) != before
    with qtbot.waitSignal(widget.activation_changed, timeout=2000) as blocker:
        widget.mu_sliders["entity"].slider.setValue(25)  # μ(entity) = 0.5
    lit = {s["node"]: s["activation"] for s in blocker.args[0]["steps"]}
    assert lit["b"] == pytest.approx(0.5 * 0.5)


def test_link_filter_hides_the_kind_and_stops_it_carrying(widget, qtbot) -> None:
    g = chain()
    act = rerun(g, {"a": 1.0}, decay=0.8, mu=MU, threshold=0.01, max_steps=5)
    widget.show_graph(g, activation=act, params={"threshold": 0.01, "max_steps": 5})
    with qtbot.waitSignal(widget.activation_changed, timeout=2000) as blocker:
        widget.kind_boxes["causal"].setChecked(False)
    assert not widget.view.base_curves["causal"].isVisible()
    assert widget.view.base_curves["entity"].isVisible()
    assert [s["node"] for s in blocker.args[0]["steps"]] == ["b"]
    assert "causal" not in widget.visible_kinds()


def test_clicking_a_node_emits_its_unit_id(widget, qtbot) -> None:
    g = chain()
    widget.show_graph(g)
    qtbot.waitUntil(lambda: widget.view.graph is g)
    widget.view.getPlotItem().getViewBox().setRange(
        xRange=(-1.2, 1.2), yRange=(-1.2, 1.2), padding=0
    )
    qtbot.wait(1)  # let the view apply its range before mapping coordinates
    scene = widget.view.node_scene_pos("c")
    point = widget.view.mapFromScene(scene)
    with qtbot.waitSignal(widget.node_clicked, timeout=2000) as blocker:
        qtbot.mouseClick(widget.view.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert blocker.args == ["c"]


def test_hover_label_and_top_labels(widget) -> None:
    g = chain()
    act = rerun(g, {"a": 1.0}, decay=0.8, mu=MU, threshold=0.01, max_steps=5)
    widget.show_graph(g, activation=act)
    widget.view.hover_node("a")
    assert widget.view.hover_text().startswith("Alice works at Google")
    assert "activation 1.000" in widget.view.hover_text()
    widget.view.hover_node(None)
    assert widget.view.hover_text() == ""
    # Only the seed and the packed results are labelled; other nodes on hover.
    assert widget.view.labelled() == ["a"]
    widget.set_marked(["d", "f"])
    widget.fit_button.click()  # f, unlinked, sits apart: Fit brings the packed results in
    assert widget.view.labelled() == ["a", "d", "f"]


def test_play_pause_speed_and_fit_from_the_controls(widget, qtbot) -> None:
    """The widget's own buttons drive the player and the view (not only the player's API)."""
    g = fan_graph()
    act = rerun(g, {"S": 1.0}, decay=1.0, mu=MU, threshold=0.05, max_steps=9, step_budget=2)
    widget.show_graph(g, activation=act)
    widget.player.seek(0)
    widget.speed.setCurrentIndex(widget.speed.findData(4.0))
    assert widget.player.speed == 4.0
    with qtbot.waitSignal(widget.player.playing_changed) as started:
        widget.play_button.click()
    assert started.args == [True] and widget.play_button.text() == "Pause"
    qtbot.waitUntil(lambda: widget.player.frame > 0)
    with qtbot.waitSignal(widget.player.playing_changed) as stopped:
        widget.play_button.click()
    assert stopped.args == [False] and widget.play_button.text() == "Play"
    # Zoomed in on one corner, Fit brings every node back into view.
    vb = widget.view.getPlotItem().getViewBox()
    x, y = widget.view.pos[0]
    vb.setRange(xRange=(x - 0.01, x + 0.01), yRange=(y - 0.01, y + 0.01), padding=0)
    widget.fit_button.click()
    (x0, x1), (y0, y1) = vb.viewRange()
    pos = widget.view.pos
    assert (pos[:, 0] >= x0).all() and (pos[:, 0] <= x1).all()
    assert (pos[:, 1] >= y0).all() and (pos[:, 1] <= y1).all()


def test_labels_stay_inside_a_narrow_view(qtbot) -> None:
    """The recall debugger's graph at 1280x720 is ~300 px wide: labels at its edges
    ran out of it ("…erson; 136 facts", "Atlas (other; 57 facts, 01 March 20"). Each
    label now shifts in, drops under a node at the top, or is shortened."""
    w = GraphWidget()
    qtbot.addWidget(w)
    w.set_compact(True)  # as the recall debugger has it
    w.resize(300, 420)
    w.show()
    qtbot.waitExposed(w)
    qtbot.waitUntil(lambda: w.view.width() <= 300)
    nodes = [(x, "world") for x in ("top", "left", "right", "mid")]
    text = "Tomás (person; 136 facts, 03 March 2025 to 18 August 2025) is long"
    labels = {x: f"{x}: {text}" for x, _ in nodes}
    g = GraphData.build(
        nodes, [("mid", x, "entity", 1.0) for x in ("top", "left", "right")], labels
    )
    positions = np.array([[0.0, 1.0], [-1.0, 0.0], [1.0, -0.4], [0.0, -1.0]])
    act = rerun(g, {"mid": 1.0}, decay=0.8, mu=MU, threshold=0.01, max_steps=3)
    with qtbot.waitSignal(w.layout_ready):
        w.show_graph(g, activation=act, marked=["top", "left", "right"], positions=positions)
    w.grab()
    view = w.view.getPlotItem().getViewBox().sceneBoundingRect()
    rects = w.view.label_rects()
    assert len(rects) >= 3
    for rect in rects:
        assert view.adjusted(-1, -1, 1, 1).contains(rect), (rect, view)
    assert all(not a.intersects(b) for n, a in enumerate(rects) for b in rects[n + 1 :])
    # The hover note of a node at an edge stays whole inside the view too.
    for node in ("top", "left", "right"):
        w.view.hover_node(node)
        w.grab()
        assert w.view.hover_text().startswith(f"{node}: Tomás")
        assert view.adjusted(-1, -1, 1, 1).contains(w.view.hover_rect()), node


def fan_graph():
    """A seed with five neighbours and one node two links away (see the engine's test)."""
    nodes = [(x, "world") for x in ("S", "n1", "n2", "n3", "n4", "n5", "J", "far")]
    links = [
        ("S", "n1", "causal", 1.0),
        ("S", "n2", "entity", 0.9),
        ("S", "n3", "causal", 0.8),
        ("S", "n4", "temporal", 0.3),
        ("S", "n5", "causal", 0.25),
        ("n1", "J", "causal", 1.0),
        ("J", "far", "semantic", 0.1),
    ]
    return GraphData.build(nodes, links, {x: f"fact {x}" for x, _ in nodes})


def test_step_and_scrub_replay_the_recorded_waves(widget, qtbot) -> None:
    g = fan_graph()
    act = rerun(
        g, {"S": 1.0}, decay=1.0, mu=MU, threshold=0.05, max_steps=9, node_budget=50, step_budget=2
    )
    assert [w["lit"] for w in act["waves"]][:2] == [["n1", "n2"], ["J", "n3"]]
    widget.show_graph(g, activation=act)
    fps = widget.player.frames_per_step
    widget.player.seek(0)
    assert widget.step_label.text().startswith("wave 0 / ") and "1 lit" in widget.step_label.text()
    lit_at = []
    for _ in range(3):
        widget.step_button.click()
        lit_at.append(int((widget.view._levels > 0).sum()))
    assert lit_at == [3, 5, 7]  # two new nodes a step: the waves, not one burst
    # Halfway through step 2 the energy travels n1 -> J (causal, red) as a pulse,
    # the frontier (n1, n2) wears a halo, and step 1's links are the trail.
    widget.scrub.setValue(fps + fps // 2)
    x, _y = widget.view.active_curves["causal"].getData()
    assert x is not None and len(x) >= 2
    pulses = widget.view.pulses.points()
    assert len(pulses) >= 2
    halo = sorted((round(p.pos().x(), 6), round(p.pos().y(), 6)) for p in widget.view.halo.points())
    frontier = sorted(
        (round(widget.positions[g.index[n], 0], 6), round(widget.positions[g.index[n], 1], 6))
        for n in ("n1", "n2")
    )
    assert halo == frontier
    tx, _ty = widget.view.trail_curves["entity"].getData()
    assert tx is not None and len(tx) == 2  # S-n2 carried in step 1
    # Pulses are sized by the energy they carry: J gets 1.0, n3 (waited) 0.8.
    assert sorted(p.size() for p in pulses) == [15.0, 16.0]
    # Scrubbing back to the start clears the pulses and the trail.
    widget.scrub.setValue(0)
    assert len(widget.view.pulses.points()) == 0
    tx, _ty = widget.view.trail_curves["entity"].getData()
    assert tx is None or len(tx) == 0


def test_weight_and_kind_filters_say_what_is_not_drawn(widget) -> None:
    g = fan_graph()
    widget.show_graph(g)  # no recall: no link carried energy, so none is drawn regardless
    assert widget.view.edge_counts()["below_weight"] == 3  # the default 0.5 hides 0.3, 0.25, 0.1
    widget.weight_slider.slider.setValue(0)
    assert widget.view.edge_counts() == {
        "total": 7,
        "drawn": 7,
        "below_weight": 0,
        "beyond_strongest": 0,
        "hidden_kind": 0,
    }
    widget.weight_slider.slider.setValue(50)  # min weight 0.5
    counts = widget.view.edge_counts()
    assert counts["drawn"] == 4 and counts["below_weight"] == 3
    assert "4 of 7 links drawn (3 below 0.50)" in widget.info.text()
    x, _y = widget.view.base_curves["temporal"].getData()
    assert x is None or len(x) == 0  # S-n4 (0.3) is not drawn
    widget.kind_boxes["causal"].setChecked(False)
    counts = widget.view.edge_counts()
    assert counts["hidden_kind"] == 4 and counts["drawn"] == 1  # only S-n2 (entity 0.9)
    assert "of hidden kinds" in widget.info.text()


def clique(n: int = 8, weight: float = 0.8) -> GraphData:
    """n facts all sharing one entity: every pair linked, as retain links them."""
    ids = [f"c{i}" for i in range(n)]
    links = [(a, b, "entity", weight) for i, a in enumerate(ids) for b in ids[i + 1 :]]
    return GraphData.build([(x, "world") for x in ids], links, {x: f"fact {x}" for x in ids})


def test_each_node_draws_its_strongest_links_and_every_link_that_carried_energy(widget) -> None:
    g = clique()  # 28 links of equal weight: the hairball in small
    assert widget.per_node.value() == 3
    widget.show_graph(g)
    counts = widget.view.edge_counts()
    assert counts["total"] == 28
    assert counts["drawn"] <= 8 * 3 // 2 + 8 and counts["drawn"] < 28
    assert counts["beyond_strongest"] == 28 - counts["drawn"]
    drawn = widget.view._drawn
    ends = np.bincount(g.src[drawn], minlength=8) + np.bincount(g.dst[drawn], minlength=8)
    assert ends.min() >= 3  # every node keeps its three
    beyond = counts["beyond_strongest"]
    assert f"{counts['drawn']} of 28 links drawn ({beyond} beyond each node's 3 strongest)" in (
        widget.info.text()
    )
    # A link recall's energy ran along is drawn even when it is not among the strongest.
    hidden = int(np.flatnonzero(~drawn)[0])
    a, b = g.ids[g.src[hidden]], g.ids[g.dst[hidden]]
    pair = GraphData.build([(a, "world"), (b, "world")], [(a, b, "entity", 0.8)])
    act = rerun(pair, {a: 1.0}, decay=1.0, mu=MU, threshold=0.05)
    assert [w["lit"] for w in act["waves"]] == [[b]]
    widget.show_graph(g, activation=act)
    assert widget.view._drawn[hidden]
    # "all" draws every link.
    widget.per_node.setValue(0)
    assert widget.view.edge_counts()["drawn"] == 28
    assert "28 of 28 links drawn" in widget.info.text()


def test_find_selects_and_budgets_re_run(widget, qtbot) -> None:
    g = fan_graph()
    act = rerun(g, {"S": 1.0}, decay=1.0, mu=MU, threshold=0.05, step_budget=2)
    widget.show_graph(g, activation=act, params={"threshold": 0.05, "decay": 1.0})
    widget.find.setText("fact J")
    with qtbot.waitSignal(widget.node_clicked) as blocker:
        widget.find.returnPressed.emit()
    assert blocker.args == ["J"] and widget.view.selected_id == "J"
    widget.find.setText("nothing like this")
    assert widget.find_next() is None
    # Without an owner, a new step budget re-runs the rule over the graph shown.
    with qtbot.waitSignal(widget.activation_changed, timeout=2000) as changed:
        widget.step_budget.setValue(1)
        widget.step_budget.editingFinished.emit()
    assert all(len(w["lit"]) == 1 for w in changed.args[0]["waves"])
    # With an owner (the Graph pane), it asks for recall again instead.
    asked: list[dict] = []
    widget.recall_rerun = asked.append
    widget.node_budget.setValue(3)
    widget.node_budget.editingFinished.emit()
    assert asked == [
        {
            "recall.activation_node_budget": 3,
            "recall.activation_step_budget": 1,
            "recall.activation_steps": widget.max_steps.value(),
        }
    ]


def test_selection_ring_follows_the_selected_node(widget) -> None:
    widget.show_graph(chain())
    widget.select("d")
    assert widget.view.selected_id == "d"
    pos = widget.view.selection.points()[0].pos()
    i = widget.view.graph.index["d"]
    assert (pos.x(), pos.y()) == pytest.approx(tuple(widget.positions[i]))
    widget.select(None)
    assert len(widget.view.selection.points()) == 0


def test_layout_runs_in_the_runner(qtbot) -> None:
    runner = Runner()
    w = GraphWidget(runner=runner)
    qtbot.addWidget(w)
    g = random_graph(300, 900)
    with qtbot.waitSignal(w.layout_ready, timeout=30_000):
        w.show_graph(g)
    assert runner.submitted == 1
    # Laid out by the links it can draw (each node's strongest), not every link.
    assert np.array_equal(w.positions, force_layout(g.with_edges(w._skeleton(g))))
    # A graph replaced while it was being laid out never shows.
    g2 = chain()
    with qtbot.waitSignal(w.layout_ready, timeout=30_000):
        w.show_graph(g)
        w.show_graph(g2)
    qtbot.waitUntil(lambda: not runner.busy, timeout=30_000)
    assert w.view.graph is g2
    runner.shutdown()


def test_screenshot_of_the_graph_mid_animation(qtbot, widget, tmp_path) -> None:
    g = random_graph(160, 320, seed=11)
    seeds = {g.ids[i]: 0.95 - 0.1 * i for i in range(3)}
    act = rerun(g, seeds, decay=0.85, mu=MU, threshold=0.05, max_steps=4)
    widget.show_graph(g, activation=act, marked=[s["node"] for s in act["steps"][:5]])
    widget.player.seek(int(widget.player.frames_per_step * 2.5))
    out = tmp_path / "graph.png"
    assert widget.grab().save(str(out))
    assert out.stat().st_size > 10_000
    _ = QPointF  # imported for the click test's coordinates


# -- readable at its defaults: waves, rings, context, Fit, labels (issue 29) ---------------


def waves_graph(unlinked: int = 0) -> tuple[GraphData, dict]:
    """fan_graph's spreading (two new nodes a wave), a unit one weak link beyond
    it, and `unlinked` units no link reaches (as an entity's profile found by
    its name)."""
    g = fan_graph()
    nodes = [(x, "world") for x in (*g.ids, "z")]
    nodes += [(f"u{i}", "observation") for i in range(unlinked)]
    labels = {x: f"fact {x}" for x, _ in nodes}
    # z hangs off "far" by a link too weak to carry: it is never lit (one-hop context).
    graph = GraphData.build(nodes, [*g.links(), ("far", "z", "temporal", 0.1)], labels)
    act = rerun(graph, {"S": 1.0}, decay=1.0, mu=MU, threshold=0.05, max_steps=9, step_budget=2)
    return graph, act


def lit_by_wave(act: dict) -> list[set[str]]:
    """The nodes lit by the end of each wave (index 0: the seeds)."""
    lit = {s["node"] for s in act["seeds"]}
    out = [set(lit)]
    for wave in act["waves"]:
        lit |= set(wave["lit"])
        out.append(set(lit))
    return out


def test_ring_layout_puts_each_wave_on_its_own_ring_and_the_rest_apart() -> None:
    g, act = waves_graph(unlinked=3)
    tl = timeline(g, act)
    pos = ring_layout(g, tl, aspect=1.6)
    assert np.array_equal(pos, ring_layout(g, tl, aspect=1.6))  # no hidden randomness
    assert max(np.abs(pos[:, 1]).max(), np.abs(pos[:, 0]).max() / 1.6) == pytest.approx(1.0)
    wave = tl.first_lit()
    centre = pos[wave == 0].mean(axis=0)
    radius = np.hypot((pos[:, 0] - centre[0]) / 1.6, pos[:, 1] - centre[1])
    rings = [radius[wave == t] for t in range(wave.max() + 1)]
    for inner, outer in zip(rings, rings[1:], strict=False):
        assert inner.max() < outer.min()  # wave after wave, outward
    z = g.index["z"]  # never lit, linked to "far": on a ring outside the last wave
    assert wave[z] == -1 and radius[z] > rings[-1].max()
    # A unit with no link into the lit region sits in a row under it, not round a ring.
    alone = [g.index[f"u{i}"] for i in range(3)]
    lit = np.flatnonzero(wave >= 0)
    assert (pos[alone, 1] < pos[lit, 1].min()).all()
    assert np.ptp(pos[alone, 1]) == pytest.approx(0.0)
    # Each node sits in the direction of the node that lit it (J beside n1).
    angle = np.arctan2(pos[:, 1] - centre[1], (pos[:, 0] - centre[0]) / 1.6)
    j, n1 = g.index["J"], g.index["n1"]
    assert abs(np.angle(np.exp(1j * (angle[j] - angle[n1])))) < np.pi / 4
    guide_centre, radii = ring_guides(pos, wave, 1.6)
    assert np.allclose(guide_centre, centre) and len(radii) == wave.max()
    assert [round(ry, 6) for _rx, ry in radii] == [round(float(r.mean()), 6) for r in rings[1:]]


def test_unlit_nodes_are_not_drawn_until_their_wave(widget) -> None:
    g, act = waves_graph()
    widget.show_graph(g, activation=act, marked=["J"])
    fps = widget.player.frames_per_step
    expected = lit_by_wave(act)
    widget.player.seek(0)
    assert set(widget.view.drawn_ids()) == {"S"}  # the seed, alone
    x, _y = widget.view.base_curves["causal"].getData()
    assert x is None or len(x) == 0  # no link drawn to a node not drawn
    for t in range(1, len(expected)):
        widget.player.seek(t * fps)
        if t * fps < widget.player.last_frame:
            assert set(widget.view.drawn_ids()) == expected[t], t
    # Once the spreading is over, what it never reached shows too, faint and small.
    widget.player.seek(widget.player.last_frame)
    assert set(widget.view.drawn_ids()) == set(g.ids)
    assert set(widget.view.lit_ids()) == expected[-1] != set(g.ids)
    z, s = g.index["z"], g.index["S"]
    assert widget.view.sizes()[z] < widget.view.sizes()[s]
    assert widget.view.nodes.points()[z].brush().color() != (
        widget.view.nodes.points()[g.index["J"]].brush().color()
    )


def test_waves_appear_one_after_another(qtbot) -> None:
    """Played from its seeds (as the panes do on a new recall), each wave adds its
    own nodes in its own step: never everything in one burst."""
    w = GraphWidget(autoplay=True)
    qtbot.addWidget(w)
    w.resize(700, 500)
    w.show()
    w.speed.setCurrentIndex(w.speed.findData(4.0))
    g, act = waves_graph()
    counts: list[int] = []
    w.frame_shown.connect(lambda _f: counts.append(len(w.view.lit_ids())))
    with qtbot.waitSignal(w.player.finished, timeout=20_000):
        w.show_graph(g, activation=act)
    assert w.player.frame == w.player.last_frame
    seen = [c for n, c in enumerate(counts) if n == 0 or c != counts[n - 1]]
    assert seen == [len(lit) for lit in lit_by_wave(act)]  # 1, 3, 5, 7: wave by wave
    assert len(seen) >= 4


def test_fit_frames_what_is_lit_and_the_packed_results(widget) -> None:
    """Unlinked units (thirty here) once squeezed the lit part into a corner and
    Fit framed them all; now Fit frames the lit nodes and the packed results."""
    g, act = waves_graph(unlinked=30)
    widget.show_graph(g, activation=act, marked=["J", "u0"])
    vb = widget.view.getPlotItem().getViewBox()
    vb.setRange(xRange=(5, 6), yRange=(5, 6), padding=0)  # looking elsewhere
    widget.fit_button.click()
    (x0, x1), (y0, y1) = vb.viewRange()
    pos = widget.positions
    lit = [g.index[n] for n in lit_by_wave(act)[-1]]
    framed = pos[[*lit, g.index["u0"]]]
    assert (framed[:, 0] >= x0).all() and (framed[:, 0] <= x1).all()
    assert (framed[:, 1] >= y0).all() and (framed[:, 1] <= y1).all()
    # ... tightly: the framed nodes span most of the view in one direction at least.
    span = framed.max(axis=0) - framed.min(axis=0)
    assert max(span[0] / (x1 - x0), span[1] / (y1 - y0)) > 0.75


def test_packed_results_are_ringed_once_drawn(widget) -> None:
    g, act = waves_graph(unlinked=2)
    packed = ["S", "J", "u1"]
    widget.show_graph(g, activation=act, marked=packed)

    def ringed() -> set[tuple[float, float]]:
        return {(round(p.pos().x(), 6), round(p.pos().y(), 6)) for p in widget.view.rings.points()}

    def at(*names: str) -> set[tuple[float, float]]:
        return {tuple(round(float(v), 6) for v in widget.positions[g.index[n]]) for n in names}

    widget.player.seek(0)
    assert ringed() == at("S")  # J is not lit yet, u1 not shown yet
    widget.player.seek(widget.player.last_frame)
    assert ringed() == at(*packed)


def clear_of(rects: list[QRectF], centre: QPointF, r: float) -> bool:
    """Whether no rectangle reaches into the disc of radius `r` about `centre`."""
    for rect in rects:
        dx = centre.x() - min(max(centre.x(), rect.left()), rect.right())
        dy = centre.y() - min(max(centre.y(), rect.top()), rect.bottom())
        if dx * dx + dy * dy < r * r:
            return False
    return True


def test_labels_never_cover_another_label_or_a_lit_node(qtbot) -> None:
    """A seed with thirty packed neighbours, long texts, a small view: each label
    sits beside its node where it covers no other label and no lit node; the
    rest go without (hovering names them)."""
    w = GraphWidget()
    qtbot.addWidget(w)
    w.resize(640, 420)
    w.show()
    qtbot.waitExposed(w)
    names = [f"n{i:02d}" for i in range(30)]
    nodes = [("hub", "world")] + [(x, "experience") for x in names]
    text = "said that the Atlas outage on June 23 came from a schema change"
    labels = {x: f"{x} {text}" for x, _ in nodes}
    g = GraphData.build(nodes, [("hub", x, "entity", 0.9) for x in names], labels)
    act = rerun(g, {"hub": 1.0}, decay=0.8, mu=MU, threshold=0.05, max_steps=3)
    w.show_graph(g, activation=act, marked=names)
    w.grab()
    view = w.view
    rects = view.label_rects()
    assert len(rects) >= 3 and "hub" in view.labelled()
    assert all(not a.intersects(b) for n, a in enumerate(rects) for b in rects[n + 1 :])
    vb = view.getPlotItem().getViewBox()
    for unit in view.lit_ids():
        centre = vb.mapViewToScene(QPointF(*view.pos[g.index[unit]]))
        assert clear_of(rects, centre, view.sizes()[g.index[unit]] / 2), unit


def test_labels_keep_clear_of_the_wave_captions(qtbot) -> None:
    """The seed's middle child sits at the top of the first wave's ring, where its
    caption ("wave 1") is: no label goes over the caption."""
    w = GraphWidget()
    qtbot.addWidget(w)
    w.resize(640, 420)
    w.show()
    qtbot.waitExposed(w)
    names = [f"c{i}" for i in range(7)]  # in this order round the ring: c3 at the top
    nodes = [("hub", "world")] + [(x, "experience") for x in names]
    labels = {x: f"{x}: the outage came from a schema change" for x, _ in nodes}
    g = GraphData.build(nodes, [("hub", x, "entity", 0.9) for x in names], labels)
    act = rerun(g, {"hub": 1.0}, decay=0.8, mu=MU, threshold=0.05, max_steps=2)
    w.show_graph(g, activation=act, marked=names)
    w.grab()
    view = w.view
    captions = view.caption_rects()
    box = view.getPlotItem().getViewBox().sceneBoundingRect()
    assert len(captions) == 1 and box.contains(captions[0])
    assert len(view.labelled()) >= 4
    assert not any(label.intersects(c) for label in view.label_rects() for c in captions)


@pytest.mark.parametrize("size", [(900, 600), (260, 180)])
def test_wave_captions_never_overlap(qtbot, size) -> None:
    """Every wave's ring is captioned in a roomy view; in a small one (the recall
    debugger's) the rings' tops are pixels apart and a caption that would
    overlap an inner one is left out."""
    w = GraphWidget()
    qtbot.addWidget(w)
    w.resize(*size)
    w.show()
    qtbot.waitExposed(w)
    chain = [f"n{i}" for i in range(10)]  # one new node a wave: ten rings
    graph = GraphData.build(
        [(x, "world") for x in chain],
        [(a, b, "causal", 0.9) for a, b in zip(chain, chain[1:], strict=False)],
        {x: f"fact {x}" for x in chain},
    )
    act = rerun(graph, {"n0": 1.0}, decay=1.0, mu=MU, threshold=0.01, max_steps=9)
    w.show_graph(graph, activation=act)
    w.grab()
    captions = w.view.caption_rects()
    waves = len(act["waves"])
    assert waves == 9 and 1 <= len(captions) <= waves
    assert all(not a.intersects(b) for n, a in enumerate(captions) for b in captions[n + 1 :])
    if size[0] >= 900:
        assert len(captions) == waves
    else:
        assert len(captions) < waves
