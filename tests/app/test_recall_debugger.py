"""The recall debugger shows exactly what the trace says, and keeps every view in step."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from app.graph.neighbourhood import of_trace
from app.panes.recall_debugger import CHANNELS, FUSED_KEYS, RecallDebuggerPane, trace_view
from app.runner import Runner
from app.state import StudioState
from core import Network, RecallItem, RecallResult, RecallTrace


@pytest.fixture
def studio(qtbot, small_bank):
    runner = Runner()
    state = StudioState(small_bank.engine, runner)
    state.set_bank(small_bank)
    yield state
    runner.shutdown()


def make_result(bank) -> RecallResult:
    """A trace in recall's layout naming six real units of the bank."""
    units = bank.units(limit=6)
    u = [x.id for x in units]
    trace = RecallTrace(query="Atlas", budget=1024, level="mid").to_dict()
    trace["channels"] = {
        "semantic": {
            "ran": True,
            "ids": [u[0], u[1], u[2]],
            "scores": [0.91, 0.72, 0.5],
            "ms": 3.0,
            "note": "",
        },
        "lexical": {"ran": True, "ids": [u[2], u[3]], "scores": [7.5, 2.25], "ms": 1.0, "note": ""},
        "graph": {
            "ran": True,
            "ids": [u[4]],
            "scores": [0.52],
            "ms": 2.0,
            "note": "stopped: threshold",
        },
        "temporal": {
            "ran": False,
            "ids": [],
            "scores": [],
            "ms": 0.0,
            "note": "no time expression",
        },
    }
    trace["activation"] = {
        "seeds": [{"node": u[0], "activation": 0.91}],
        "steps": [
            {
                "step": 1,
                "node": u[4],
                "from": u[0],
                "edge": "entity",
                "weight": 0.8,
                "activation": 0.52,
            }
        ],
        "stopped": "threshold",
        "lit": 2,
    }

    def rrf(rank: int) -> float:
        return 1 / (60 + rank)

    trace["fused"] = [
        {  # spoken by a speaker the query names: speaker focus doubled it
            "id": u[2],
            "rank": 1,
            "score": 2 * (rrf(3) + rrf(1)),
            "factor": 2.0,
            "contributions": {
                "semantic": {"rank": 3, "value": rrf(3)},
                "lexical": {"rank": 1, "value": rrf(1)},
            },
        },
        {
            "id": u[0],
            "rank": 2,
            "score": rrf(1),
            "contributions": {"semantic": {"rank": 1, "value": rrf(1)}},
        },
        {
            "id": u[4],
            "rank": 3,
            "score": rrf(1),
            "contributions": {"graph": {"rank": 1, "value": rrf(1)}},
        },
        {
            "id": u[1],
            "rank": 4,
            "score": rrf(2),
            "contributions": {"semantic": {"rank": 2, "value": rrf(2)}},
        },
        {
            "id": u[3],
            "rank": 5,
            "score": rrf(2),
            "contributions": {"lexical": {"rank": 2, "value": rrf(2)}},
        },
    ]
    trace["rerank"] = {
        "name": "heuristic",
        "ms": 1.5,
        "scores": [
            {"id": f["id"], "score": 0.9 - 0.1 * i, "fused_rank": f["rank"]}
            for i, f in enumerate(trace["fused"])
        ],
        "order": [u[2], u[0], u[4], u[1], u[3]],
    }
    trace["packing"].update(
        order=[u[2], u[0], u[4], u[1], u[3]],
        tokens={u[2]: 400, u[0]: 300, u[4]: 700, u[1]: 200, u[3]: 90},
        packed=[u[2], u[0], u[1], u[3]],
        skipped=[{"id": u[4], "tokens": 700, "left": 324}],
        tokens_used=990,
        budget=1024,
    )
    by_id = {x.id: x for x in units}
    items = tuple(
        RecallItem(
            i, str(by_id[i].network), by_id[i].text, 0.5, trace["packing"]["tokens"][i], rank=r + 1
        )
        for r, i in enumerate(trace["packing"]["packed"])
    )
    return RecallResult("Atlas", items, "heuristic", RecallTrace.from_dict(trace), 1024, 990)


def test_trace_view_reads_every_stage() -> None:
    trace = RecallTrace().to_dict()  # a saved trace: JSON
    trace["channels"] = {
        "semantic": {"ran": True, "ids": ["a"], "scores": [0.5], "ms": 2.0, "note": "x"}
    }
    trace["fused"] = [
        {
            "id": "a",
            "rank": 1,
            "score": 0.1,
            "contributions": {"semantic": {"rank": 1, "value": 0.1}},
        }
    ]
    trace["packing"].update(
        packed=[], skipped=[{"id": "a", "tokens": 9, "left": 3}], tokens={"a": 9}, budget=5
    )
    view = trace_view(trace)
    assert view.channels["semantic"][0].unit_id == "a"
    assert view.channel_notes["semantic"] == "2 ms · x"
    assert view.channel_notes["temporal"] == "not requested"
    # The time window the query was read as is beside the temporal channel.
    trace["channels"]["temporal"] = {"ran": True, "ids": [], "scores": [], "ms": 1.0, "note": ""}
    trace["interval"] = {
        "start": "2023-08-18T00:00:00",
        "end": "2023-09-01T00:00:00",
        "text": "the last two weeks of August 2023",
        "confidence": 0.9,
    }
    assert trace_view(trace).channel_notes["temporal"] == (
        "1 ms · window 2023-08-18 to 2023-08-31 (read from 'the last two weeks of August"
        " 2023', confidence 0.90)"
    )
    row = view.fused[0]
    assert (row.status, row.left, row.tokens, row.rerank_score) == ("skipped", 3, 9, None)


def test_the_lists_match_the_trace(qtbot, studio, small_bank) -> None:
    pane = RecallDebuggerPane(studio)
    qtbot.addWidget(pane)
    result = make_result(small_bank)
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=10_000):  # laid out in the runner
        pane.show_result(result, of_trace(small_bank, result.trace, result.unit_ids))
    trace = result.trace.to_dict()
    for name in CHANNELS:
        table = pane.channel_tables[name]
        assert table.unit_ids() == trace["channels"][name]["ids"]
        scores = [table.item(r, 1).text() for r in range(table.rowCount())]
        assert scores == [f"{s:.4f}" for s in trace["channels"][name]["scores"]]
        ranks = [int(table.item(r, 0).text()) for r in range(table.rowCount())]
        assert ranks == list(range(1, table.rowCount() + 1))
    assert pane.channel_notes["temporal"].text().startswith("did not run")
    # The fact column shows the unit's text, read from the bank.
    first = trace["channels"]["semantic"]["ids"][0]
    assert pane.channel_tables["semantic"].item(0, 2).text() == small_bank.unit(first).text

    fused = pane.fused_table
    assert fused.unit_ids() == [f["id"] for f in trace["fused"]]
    headers = list(FUSED_KEYS)
    for r, f in enumerate(trace["fused"]):
        focus = f" ×{f['factor']:g}" if f.get("factor", 1.0) != 1.0 else ""
        assert fused.item(r, headers.index("rrf")).text() == f"{f['score']:.4f}{focus}"
    assert fused.item(0, headers.index("rrf")).text().endswith(" ×2")
    for r, f in enumerate(trace["fused"]):
        for name in CHANNELS:
            cell = fused.item(r, headers.index(name)).text()
            c = f["contributions"].get(name)
            assert cell == (f"#{c['rank']}" if c else "—")
            if c:
                assert f"adds {c['value']:.5f}" in fused.item(r, headers.index(name)).toolTip()
        rerank = next(s for s in trace["rerank"]["scores"] if s["id"] == f["id"])
        assert fused.item(r, headers.index("rerank")).text() == f"{rerank['score']:.4f}"
        assert (
            int(fused.item(r, headers.index("final")).text())
            == trace["rerank"]["order"].index(f["id"]) + 1
        )
        status = fused.item(r, headers.index("budget")).text()
        assert status == ("packed" if f["id"] in trace["packing"]["packed"] else "skipped")
        if status == "skipped":
            assert "324 tokens left" in fused.item(r, headers.index("budget")).toolTip()
    assert "heuristic" in pane.fused_title.text()

    bar = pane.budget_bar
    assert bar.summary() == "Budget 1,024 tokens · 990 used by 4 packed facts · 1 did not fit"
    bar.resize(1000, bar.minimumHeight())
    segments = [(unit_id, kind) for _rect, unit_id, kind in bar.segments()]
    packed = [(u, "packed") for u in trace["packing"]["packed"]]
    assert segments == [*packed, (trace["packing"]["skipped"][0]["id"], "skipped")]
    # Widths follow tokens: the budget's 1,024 tokens span the bar.
    rects = {u: r for r, u, _k in bar.segments()}
    first = trace["packing"]["packed"][0]
    assert rects[first].width() == pytest.approx(400 / 1024 * (1000 - 16))
    assert bar.unit_at(rects[first].center().x(), rects[first].center().y()) == first
    assert sorted(pane.graph.view.marked_ids()) == sorted(trace["packing"]["packed"])


def test_selecting_a_fact_selects_it_everywhere(qtbot, studio, small_bank) -> None:
    pane = RecallDebuggerPane(studio)
    qtbot.addWidget(pane)
    result = make_result(small_bank)
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=10_000):
        pane.show_result(result, of_trace(small_bank, result.trace, result.unit_ids))
    target = result.trace.to_dict()["channels"]["lexical"]["ids"][
        0
    ]  # also semantic #3 and fused #1
    pane.channel_tables["lexical"].selectRow(0)
    assert pane.selected == target
    assert pane.channel_tables["semantic"].selected_unit() == target
    assert pane.channel_tables["graph"].selected_unit() is None
    assert pane.fused_table.selected_unit() == target
    assert pane.budget_bar.selected == target
    assert pane.graph.view.selected_id == target
    # And from the graph: a node click selects it in the lists.
    node = result.trace.to_dict()["activation"]["steps"][0]["node"]
    pane.graph.node_clicked.emit(node)
    assert pane.channel_tables["graph"].selected_unit() == node
    assert pane.channel_tables["lexical"].selected_unit() is None


def test_a_new_recall_starts_with_nothing_selected_and_selects_nothing(
    qtbot, studio, small_bank
) -> None:
    """Showing a second recall while a fact of the first is selected empties the lists
    first: no selection is carried into (or re-announced by) the new rows, which
    re-selecting per replaced cell did (seconds for a real recall's lists)."""
    pane = RecallDebuggerPane(studio)
    qtbot.addWidget(pane)
    result = make_result(small_bank)
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=10_000):
        pane.show_result(result, of_trace(small_bank, result.trace, result.unit_ids))
    pane.fused_table.selectRow(0)
    assert pane.selected is not None
    announced: list[str] = []
    for table in (*pane.channel_tables.values(), pane.fused_table):
        table.unit_selected.connect(announced.append)
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=10_000):
        pane.show_result(result, of_trace(small_bank, result.trace, result.unit_ids))
    assert announced == []
    assert pane.selected is None
    for table in (*pane.channel_tables.values(), pane.fused_table):
        assert table.selected_unit() is None
    assert pane.fused_table.unit_ids() == [f["id"] for f in result.trace.to_dict()["fused"]]


def test_recall_runs_in_the_runner_with_the_form_options(
    qtbot, studio, small_bank, monkeypatch
) -> None:
    result = make_result(small_bank)
    calls = []

    def fake_recall(query, **options):
        calls.append((query, options))
        return result

    monkeypatch.setattr(small_bank, "recall", fake_recall)
    pane = RecallDebuggerPane(studio)
    qtbot.addWidget(pane)
    assert pane.stack.currentWidget() is pane.empty
    pane.query.setText("Atlas")
    pane.budget.setValue(512)
    pane.level.setCurrentIndex(0)
    pane.network_boxes["opinion"].setChecked(False)
    pane.use_now.setChecked(True)
    pane.now.setDateTime(datetime(2025, 6, 30, 12, 0))
    pane.reranker.setCurrentIndex(pane.reranker.findData("none"))
    with qtbot.waitSignal(pane.recalled, timeout=20_000):
        pane.run_button.click()
    query, options = calls[0]
    assert query == "Atlas"
    assert options == {
        "budget_tokens": 512,
        "networks": [Network.WORLD, Network.EXPERIENCE, Network.OBSERVATION],
        "level": "low",
        "now": datetime(2025, 6, 30, 12, 0),
        "reranker": "none",
        # An inspection run: it does not count as the units being recalled.
        "count_access": False,
    }
    assert pane.stack.currentWidget() is pane.body
    assert "4 facts packed" in pane.status.text()


def test_the_trace_saves_as_json(qtbot, studio, small_bank, tmp_path) -> None:
    pane = RecallDebuggerPane(studio)
    qtbot.addWidget(pane)
    with pytest.raises(ValueError):
        pane.save_trace(tmp_path / "none.json")
    result = make_result(small_bank)
    pane.show_result(result, of_trace(small_bank, result.trace, result.unit_ids))
    path = pane.save_trace(tmp_path / "trace.json")
    assert json.loads(path.read_text(encoding="utf-8")) == result.trace.to_dict()


def test_the_now_picker_starts_at_each_banks_own_time(qtbot, studio, small_bank) -> None:
    """Issue 13, item 12: the reference-time picker started at today's date on a
    bank whose facts are from 2025 (checking "Now:" then recalled in the wrong
    year), and kept the previous bank's time."""
    from tests.app.conftest import make_units

    pane = RecallDebuggerPane(studio)
    qtbot.addWidget(pane)
    latest = small_bank.reference_time()  # the last of 240 hourly facts from 1 March 2025
    assert latest == datetime(2025, 3, 10, 23, 0)
    qtbot.waitUntil(lambda: pane.now.dateTime().toPython() == latest)
    older = small_bank.engine.create_bank("Older")
    older.add_units(make_units(8, start=datetime(2023, 5, 1), seed=1))
    studio.set_bank(older)
    qtbot.waitUntil(lambda: pane.now.dateTime().toPython() == datetime(2023, 5, 1, 7, 0))


def test_no_bank_is_explained(qtbot, studio) -> None:
    studio.set_bank(None)
    pane = RecallDebuggerPane(studio)
    qtbot.addWidget(pane)
    assert pane.stack.currentWidget() is pane.no_bank
    assert not pane.run_button.isEnabled()


@pytest.mark.parametrize("size", [(1280, 720), (1440, 900)])
def test_the_fused_table_fits_its_width_with_final_rank_tokens_and_budget(
    qtbot, studio, small_bank, size
) -> None:
    pane = RecallDebuggerPane(studio)
    qtbot.addWidget(pane)
    pane.resize(*size)
    pane.show()
    result = make_result(small_bank)
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=10_000):
        pane.show_result(result, of_trace(small_bank, result.trace, result.unit_ids))
    fused = pane.fused_table
    qtbot.waitUntil(lambda: fused.viewport().width() > 0)
    header = fused.horizontalHeader()
    assert header.length() <= fused.viewport().width()
    assert not fused.horizontalScrollBar().isVisible()
    for key in ("final", "tokens", "budget", "fact"):
        col = FUSED_KEYS.index(key)
        assert not header.isSectionHidden(col)
        assert header.sectionViewportPosition(col) + header.sectionSize(col) <= (
            fused.viewport().width()
        )
    assert header.sectionSize(FUSED_KEYS.index("fact")) >= 160  # still readable


def test_selecting_a_fact_shows_its_full_text_in_the_detail_strip(
    qtbot, studio, small_bank
) -> None:
    pane = RecallDebuggerPane(studio)
    qtbot.addWidget(pane)
    pane.show()
    result = make_result(small_bank)
    with qtbot.waitSignal(pane.graph.layout_ready, timeout=10_000):
        pane.show_result(result, of_trace(small_bank, result.trace, result.unit_ids))
    assert not pane.fact_strip.isVisible()  # nothing selected: the strip is collapsed
    table = pane.channel_tables["lexical"]
    table.selectRow(0)
    unit = small_bank.unit(table.unit_ids()[0])
    assert pane.fact_strip.isVisible()
    assert pane.fact_strip.text().startswith(unit.text)
    assert "lexical #1" in pane.fact_strip.text()
