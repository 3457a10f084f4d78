"""Watching an agent work: its recall in the Activity pane, the trace it got in the
recall debugger, Replay now after a retract; and curating while it writes is
safe — a selection follows its fact through inserts and re-sorts, and a
confirmation names what it deletes."""

from __future__ import annotations

from datetime import datetime

import pytest
from PySide6.QtCore import Qt

from core import Caller, Kind, Network, acting_as
from core.server.token import add_token
from tests.app.conftest import make_units, wait_idle

pytestmark = pytest.mark.slow  # windows on real banks; the first test serves them too

TOKEN = "live-activity-token-" + "q" * 20


@pytest.fixture
def window(qtbot, make_window, small_bank):
    window = make_window(start=True)
    qtbot.waitUntil(lambda: window.state.bank is not None)
    wait_idle(qtbot, window.runner)
    return window


def agent_writes_above(window, n: int, seed: int) -> None:
    """An agent's write that sorts above every row (it happened earlier), as the
    studio's server delivers one: the bank changes, the change is broadcast."""
    bank = window.state.bank
    units = make_units(
        n,
        networks=[Network.WORLD],
        start=datetime(2025, 1, 1),
        seed=seed,
        text="Agent fact {i}, dated before the rest",
    )
    with acting_as(Caller("support-bot", "http")):
        change = bank.add_units(units)
    window.state.broadcast(change)


def test_a_selection_follows_its_fact_while_an_agent_writes_above_it(qtbot, window, monkeypatch):
    bank = window.state.bank
    pane = window.show_pane("world")
    qtbot.waitUntil(lambda: pane.model.unit_at(5) is not None)
    pane.select_row(5)
    chosen = pane.model.unit_at(5)
    qtbot.waitUntil(lambda: pane.detail.unit is not None and pane.detail.unit.id == chosen.id)

    agent_writes_above(window, 2, seed=7)
    qtbot.waitUntil(lambda: (u := pane.model.unit_at(7)) is not None and u.id == chosen.id)
    # The selection moved with the fact: two rows down, the detail unchanged.
    assert pane.selected_rows() == [7]
    assert pane.detail.unit.id == chosen.id
    # The rows the agent wrote are marked, and say who wrote them.
    top = pane.model.index(0, 0)
    qtbot.waitUntil(lambda: pane.model.data(top, Qt.ItemDataRole.BackgroundRole) is not None)
    assert "support-bot" in pane.model.data(top, Qt.ItemDataRole.ToolTipRole)
    assert pane.model.data(pane.model.index(7, 0), Qt.ItemDataRole.BackgroundRole) is None

    # Delete is pressed; while its confirmation is open the agent writes again.
    asked = []

    def confirm(title: str, text: str) -> bool:
        asked.append(text)
        agent_writes_above(window, 3, seed=11)
        qtbot.waitUntil(lambda: pane.selected_rows() == [10], timeout=10_000)
        return True

    monkeypatch.setattr(pane, "_confirm", confirm)
    with qtbot.waitSignal(window.state.changed, timeout=30_000):
        pane.delete_selection()
    wait_idle(qtbot, window.runner)
    assert chosen.text in asked[0]  # the confirmation names the fact
    assert not bank.units(ids=[chosen.id], status=None)  # that one went...
    assert bank.count(Network.WORLD) == 60 + 5 - 1  # ...and only that one

    # A new order reads the rows again: the selection comes back on its fact.
    other = pane.model.unit_at(20)
    pane.select_row(20)
    pane.model.sort(0, Qt.SortOrder.DescendingOrder)  # by text, Z to A
    qtbot.waitUntil(lambda: [pane.model.unit_at(r).id for r in pane.selected_rows()] == [other.id])
    assert pane.detail.unit.id == other.id


def test_an_agents_recall_is_watched_opened_and_replayed_after_a_retract(
    qtbot, make_window, engine, embedder, monkeypatch
):
    from hindsight_client import Hindsight

    monkeypatch.setenv("ENGRAM_API_TOKEN", TOKEN)
    agent_token = add_token(engine.home, "support-bot")
    engine.create_bank("Live")
    window = make_window(start=True)
    qtbot.waitUntil(lambda: window.state.bank is not None)
    window.server.start(port=0)
    qtbot.waitUntil(lambda: window.server.running, timeout=60_000)
    wait_idle(qtbot, window.runner)
    activity = window.show_pane("activity")

    client = Hindsight(base_url=window.server.url, api_key=agent_token)
    try:
        for text in (
            "Maya moved to Lisbon in March 2025 to lead the Atlas team.",
            "Maya keeps her sailing boat in the Lisbon marina.",
            "Oren runs the Atlas data pipeline from Berlin.",
        ):
            client.retain("Live", text)
        recalled = client.recall("Live", "Where does Maya live?", max_tokens=400)
    finally:
        client.close()
    lisbon_facts = {r.id for r in recalled.results if "Lisbon" in r.text}
    assert lisbon_facts

    # The recall is in the feed, newest first, under the agent's token's name.
    qtbot.waitUntil(
        lambda: bool(activity.model.entries) and activity.model.entries[0].operation == "recall",
        timeout=10_000,
    )
    entry = activity.model.entries[0]
    assert (entry.actor, entry.transport) == ("support-bot", "http")
    assert entry.summary.startswith("“Where does Maya live?”")
    assert [e.actor for e in activity.model.entries].count("support-bot") == 4
    assert "support-bot" in window.serving_indicator.text()  # requests/min · last actor

    # A retain opened: its facts listed alone in their pane, its document selected.
    retained = next(e for e in activity.model.entries if e.operation == "ingest")
    [document_id] = retained.change.added[Kind.DOCUMENT]
    activity.select_entry(retained.id)
    assert activity.open_button.text() == "Show what it changed"
    activity.open_button.click()
    world, documents = window.pane("world"), window.pane("documents")
    written = set(retained.change.added[Kind.UNIT])
    qtbot.waitUntil(
        lambda: (
            world.model.rowCount() > 0
            and all(
                (u := world.model.unit_at(r)) is not None and u.id in written
                for r in range(world.model.rowCount())
            )
        )
    )
    qtbot.waitUntil(lambda: (d := documents.current_document()) is not None and d.id == document_id)
    assert "Oren" in documents.current_document().title
    world.show_only(None)

    # Opened: the recall debugger shows the trace the agent got.
    activity.select_entry(entry.id)
    activity.open_button.click()
    debugger = window.pane("recall")
    qtbot.waitUntil(lambda: debugger.recorded is not None and debugger.result is not None)
    assert debugger.result.unit_ids == [r.id for r in recalled.results]
    assert debugger.query.text() == "Where does Maya live?"
    assert "Recorded recall" in debugger.recorded_label.text()

    # A curator retracts Lisbon; Replay now shows the facts about it gone.
    bank = window.state.bank
    lisbon = bank.resolve_entity("Lisbon")
    window.runner.run_op(lambda: bank.retract_entity(lisbon), key=bank)
    wait_idle(qtbot, window.runner)
    debugger.replay_button.click()
    qtbot.waitUntil(lambda: debugger.replay is not None, timeout=30_000)
    lost = {item.unit_id for item in debugger.replay.lost}
    assert lisbon_facts <= lost
    assert not lisbon_facts & set(debugger.result.unit_ids)
    assert "replayed now" in debugger.recorded_label.text()
    # The retract is in the feed too, the studio's.
    qtbot.waitUntil(lambda: any(e.operation == "retract_entity" for e in activity.model.entries))
    assert next(e for e in activity.model.entries if e.operation == "retract_entity").actor == (
        "studio"
    )


def test_the_feed_filters_and_pauses(qtbot, window):
    bank = window.state.bank
    pane = window.show_pane("activity")
    qtbot.waitUntil(lambda: len(pane.model.entries) == 1)  # the fixture's add_units
    pane.set_paused(True)
    agent_writes_above(window, 1, seed=3)
    qtbot.waitUntil(lambda: len(pane.held) == 1)
    assert len(pane.model.entries) == 1 and "paused, 1 new" in pane.count_label.text()
    pane.set_paused(False)
    assert [e.actor for e in pane.model.entries] == ["support-bot", "user"]
    qtbot.waitUntil(lambda: pane.actor.findData("support-bot") >= 0)
    pane.actor.setCurrentIndex(pane.actor.findData("support-bot"))
    qtbot.waitUntil(lambda: [e.actor for e in pane.model.entries] == ["support-bot"])
    # A write selects what it made.
    pane.select_entry(pane.model.entries[0].id)
    assert pane.open_button.text() == "Show what it changed"
    pane.open_button.click()
    world = window.pane("world")
    qtbot.waitUntil(
        lambda: world.model.rowCount() == 1 and len(world.selected_rows()) == 1, timeout=20_000
    )
    assert "one write made" in world.only_label.text()
    assert world.model.unit_at(0).created_by == "support-bot"
    world.show_only(None)
    qtbot.waitUntil(lambda: world.model.rowCount() == bank.count(Network.WORLD), timeout=20_000)


def test_the_audit_says_who_and_keeps_its_selection(qtbot, window):
    bank = window.state.bank
    pane = window.show_pane("audit")
    units = bank.units(Network.WORLD, limit=3)
    window.runner.run_op(lambda: bank.hide_units([units[0].id]), key=bank)
    qtbot.waitUntil(lambda: len(pane.entries) == 1)
    pane.table.selectRow(0)
    studio_seq = pane.selected_seq()
    with acting_as(Caller("support-bot", "http")):
        change = bank.hide_units([units[1].id])
    window.state.broadcast(change)
    qtbot.waitUntil(lambda: len(pane.entries) == 2)
    assert [e.actor for e in pane.entries] == ["support-bot", "studio"]
    assert pane.table.item(0, 1).text() == "support-bot"
    assert pane.selected_seq() == studio_seq and pane.table.currentRow() == 1
    pane.actor.setCurrentIndex(pane.actor.findData("support-bot"))
    qtbot.waitUntil(lambda: [e.actor for e in pane.entries] == ["support-bot"])
    assert pane.selected_seq() is None  # its entry is filtered out: nothing else selected
