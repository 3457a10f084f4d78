"""The runner knows who asked: an operation's initiator reaches the change handlers,
and a newer query of the same owner and topic supersedes an older one, whose
result never reaches the owner."""

from __future__ import annotations

import threading
from dataclasses import replace

from PySide6.QtCore import QObject

from app.panes.reflect import ReflectPane
from app.runner import Runner
from app.state import StudioState
from core import Change, Disposition, Kind
from tests.app.conftest import wait_idle


def blocked(value, gate: threading.Event, started: threading.Event | None = None):
    def work():
        if started is not None:
            started.set()
        assert gate.wait(30), "the test never opened the gate"
        return value

    return work


def test_a_superseded_result_never_reaches_its_owner(qtbot, runner):
    owner, answers, failures = QObject(), [], []
    gate, started = threading.Event(), threading.Event()
    runner.run_query(
        blocked("old", gate, started), answers.append, failures.append, latest=(owner, "list")
    )
    qtbot.waitUntil(started.is_set)  # the old query is running, not waiting to start
    runner.run_query(lambda: "new", answers.append, latest=(owner, "list"))
    qtbot.waitUntil(lambda: answers == ["new"])
    with qtbot.waitSignal(runner.idle, timeout=10_000):
        gate.set()  # the old query ends only now, after the newer one answered
    assert answers == ["new"] and failures == []


def test_a_superseded_failure_is_dropped_too_and_other_topics_are_untouched(qtbot, runner):
    owner, answers, errors = QObject(), [], []
    gate = threading.Event()

    def fails():
        gate.wait(30)
        raise ValueError("stale")

    runner.run_query(fails, answers.append, errors.append, latest=(owner, "list"))
    runner.run_query(blocked("detail", gate), answers.append, latest=(owner, "detail"))
    runner.run_query(lambda: "list", answers.append, latest=(owner, "list"))
    qtbot.waitUntil(lambda: "list" in answers)
    gate.set()
    qtbot.waitUntil(lambda: "detail" in answers)
    wait_idle(qtbot, runner)
    assert sorted(answers) == ["detail", "list"] and errors == []


def test_supersede_drops_what_an_owner_still_waits_for(qtbot, runner):
    owner, other, answers = QObject(), QObject(), []
    gate = threading.Event()
    runner.run_query(blocked("mine", gate), answers.append, latest=(owner, "list"))
    runner.run_query(blocked("theirs", gate), answers.append, latest=(other, "list"))
    runner.supersede(owner)  # e.g. the owner's bank was switched
    gate.set()
    qtbot.waitUntil(lambda: answers == ["theirs"])
    wait_idle(qtbot, runner)
    assert answers == ["theirs"]


def test_a_queued_superseded_query_never_runs(qtbot, qapp):
    runner = Runner(max_threads=2)
    try:
        gate, ran, owner = threading.Event(), [], QObject()
        # Fill the pool so the next queries wait in the queue.
        for _ in range(runner._pool.maxThreadCount()):
            runner.run_query(blocked(None, gate))
        runner.run_query(lambda: ran.append("old"), latest=(owner, "list"))
        runner.run_query(lambda: ran.append("new"), latest=(owner, "list"))
        gate.set()
        wait_idle(qtbot, runner)
        assert ran == ["new"]
    finally:
        runner.shutdown()


def test_the_initiator_reaches_change_handlers(qtbot, runner, engine):
    state = StudioState(engine, runner)
    pane = QObject()
    change = Change.of(updated={Kind.PROFILE: ["b"]})
    with qtbot.waitSignal(state.changed, timeout=10_000) as signal:
        runner.run_op(lambda: change, initiator=pane)
    assert signal.args[0] is change and signal.args[1] is pane
    with qtbot.waitSignal(state.changed, timeout=10_000) as signal:
        runner.run_op(lambda: change)
    assert signal.args[1] is None
    # A superseded operation that had started still happened: its change is
    # broadcast, its result dropped.
    gate, started, done = threading.Event(), threading.Event(), []
    runner.run_op(
        blocked(change, gate, started), done.append, initiator=pane, latest=(pane, "save")
    )
    qtbot.waitUntil(started.is_set)
    runner.run_op(lambda: Change.of(), done.append, latest=(pane, "save"))
    with qtbot.waitSignal(state.changed, timeout=10_000) as signal:
        gate.set()
    assert signal.args == [change, pane]
    wait_idle(qtbot, runner)
    assert len(done) == 1 and done[0].empty


def test_committing_a_reflection_reloads_its_history_once(qtbot, demo_engine):
    runner = Runner()
    state = StudioState(demo_engine, runner)
    bank = demo_engine.open_bank("Demo")
    state.set_bank(bank)
    pane = ReflectPane(state)
    qtbot.addWidget(pane)
    try:
        qtbot.waitUntil(lambda: pane.profile is not None, timeout=10_000)
        wait_idle(qtbot, runner)
        comparison = bank.compare(
            "What went wrong with Atlas in June?",
            [Disposition(5, 5, 1, 0.8), Disposition(1, 1, 5, 0.8)],
            budget_tokens=512,
        )
        pane.show_comparison(comparison)
        loads = []
        reflections = bank.reflections
        bank.reflections = lambda **kw: loads.append(kw) or reflections(**kw)
        with qtbot.waitSignal(pane.committed, timeout=30_000):
            pane.columns[0].commit_button.click()
        wait_idle(qtbot, runner)
        assert len(loads) == 1  # was 2: the broadcast change and the pane's own reload
        assert pane.history.rowCount() == 1
        # A reflection committed elsewhere (no initiator) still reloads the history.
        state.broadcast(Change.of(added={Kind.REFLECTION: ["x"]}))
        wait_idle(qtbot, runner)
        assert len(loads) == 2
    finally:
        runner.shutdown()


def test_a_stale_recall_never_reaches_the_recall_debugger(qtbot, small_bank, monkeypatch):
    from app.panes.recall_debugger import RecallDebuggerPane
    from tests.app.test_recall_debugger import make_result

    base = make_result(small_bank)
    gate, started = threading.Event(), threading.Event()

    def recall(query, **_options):
        if query == "old":
            started.set()
            assert gate.wait(30)
        return replace(base, query=query)

    monkeypatch.setattr(small_bank, "recall", recall)
    runner = Runner()
    state = StudioState(small_bank.engine, runner)
    state.set_bank(small_bank)
    pane = RecallDebuggerPane(state)
    qtbot.addWidget(pane)
    shown: list[str] = []
    pane.recalled.connect(lambda result: shown.append(result.query))
    try:
        pane.query.setText("old")
        pane.run()
        qtbot.waitUntil(started.is_set)
        pane.query.setText("new")
        with qtbot.waitSignal(pane.recalled, timeout=20_000):
            pane.run()
        with qtbot.waitSignal(runner.idle, timeout=20_000):
            gate.set()  # the older question answers last
        assert shown == ["new"] and pane.result.query == "new"
    finally:
        gate.set()
        runner.shutdown()
