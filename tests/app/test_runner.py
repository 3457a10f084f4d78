"""The runner: work off the UI thread, results on it, changes broadcast, cancel and join."""

from __future__ import annotations

import threading

import pytest
import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, QObject, QThread

from app.runner import change_of
from core import CancelledError, Change, EngramError, Kind


def test_query_runs_off_the_ui_thread_and_answers_on_it(qtbot, runner):
    ui = QThread.currentThread()
    seen = {}

    def work():
        seen["worker"] = QThread.currentThread()
        return 42

    def done(result):
        seen["callback"] = QThread.currentThread()
        seen["result"] = result

    runner.run_query(work, done)
    qtbot.waitUntil(lambda: "result" in seen)
    assert seen["result"] == 42
    assert seen["worker"] is not ui
    assert seen["callback"] is ui


class _Work:
    """A task's function whose freeing is recorded (with what it holds, it is
    what a pane's task keeps alive: possibly the last reference to a Qt object)."""

    freed_on: list[threading.Thread] = []

    def __init__(self, fails: bool = False) -> None:
        self.fails = fails

    def __call__(self) -> int:
        if self.fails:
            raise ValueError("no")
        return 1

    def __del__(self) -> None:
        _Work.freed_on.append(threading.current_thread())


@pytest.mark.parametrize("fails", [False, True])
def test_what_a_task_holds_is_let_go_on_the_ui_thread(qtbot, runner, monkeypatch, fails):
    """A worker that is slow to return after handing over its result (descheduled,
    on a busy machine) must not be the one to drop the task's last reference."""
    from app import runner as runner_module

    emit = runner_module._Runnable._emit

    def slow_emit(signal, *args):
        emit(signal, *args)
        threading.Event().wait(0.3)  # the UI thread finishes the task meanwhile

    monkeypatch.setattr(runner_module._Runnable, "_emit", staticmethod(slow_emit))
    _Work.freed_on.clear()
    with qtbot.waitSignal(runner.idle):
        runner.run_query(_Work(fails), on_error=lambda error: None)
    qtbot.waitUntil(lambda: bool(_Work.freed_on), timeout=5_000)
    assert _Work.freed_on == [threading.main_thread()]


def test_op_broadcasts_its_change_before_on_done(qtbot, runner):
    order = []
    change = Change.of(updated={Kind.UNIT: ["u1"]})
    runner.changed.connect(lambda c: order.append(("changed", c)))
    with qtbot.waitSignal(runner.idle):
        runner.run_op(lambda: change, lambda r: order.append(("done", r)))
    assert order == [("changed", change), ("done", change)]


def test_an_empty_change_is_not_broadcast(qtbot, runner):
    seen = []
    runner.changed.connect(lambda change, _initiator: seen.append(change))
    with qtbot.waitSignal(runner.idle):
        runner.run_op(lambda: Change())
    assert seen == []


def test_a_result_carrying_a_change_is_broadcast(qtbot, runner):
    class Report:
        change = Change.of(added={Kind.UNIT: ["a", "b"]})

    seen = []
    runner.changed.connect(lambda change, _initiator: seen.append(change))
    with qtbot.waitSignal(runner.idle):
        runner.run_op(Report)
    assert seen and seen[0].ids(Kind.UNIT) == {"a", "b"}
    assert change_of(object()) is None


def test_engine_errors_are_reported_in_words(qtbot, runner):
    def fail():
        raise EngramError("no unit 'x' in bank 'b'")

    with qtbot.waitSignal(runner.failed) as blocker:
        runner.run_query(fail, lambda r: None)
    assert blocker.args[0] == "no unit 'x' in bank 'b'"


def test_unexpected_errors_carry_the_traceback(qtbot, runner):
    def fail():
        raise ZeroDivisionError("oops")

    with qtbot.waitSignal(runner.failed) as blocker:
        runner.run_query(fail)
    assert blocker.args[0].startswith("Unexpected error: ZeroDivisionError")
    assert "ZeroDivisionError" in blocker.args[1]


def test_on_error_takes_the_error_instead_of_the_status_bar(qtbot, runner):
    reported, handled = [], []
    runner.failed.connect(lambda *a: reported.append(a))

    def fail():
        raise EngramError("bad")

    with qtbot.waitSignal(runner.idle):
        runner.run_query(fail, None, handled.append)
    assert [str(e) for e in handled] == ["bad"]
    assert reported == []


def test_job_reports_progress_and_cancels_quietly(qtbot, runner):
    started = threading.Event()
    reported = []
    runner.failed.connect(lambda *a: reported.append(a))

    def work(progress, cancel):
        progress(1, 10, "first step")
        started.set()
        while not cancel.cancelled:
            cancel_seen = cancel._event.wait(5)
            assert cancel_seen
        cancel.raise_if_cancelled()

    job = runner.run_job("long job", work)
    with qtbot.waitSignal(job.progressed) as progressed:
        pass
    assert progressed.args == [1, 10, "first step"]
    assert runner.jobs() == [job]
    finished = []
    job.finished.connect(finished.append)
    job.cancel()
    qtbot.waitUntil(lambda: finished == [False])
    assert reported == []  # a cancel is not an error
    assert not runner.busy


def test_cancelled_error_reaches_on_error(qtbot, runner):
    errors = []

    def work(progress, cancel):
        raise CancelledError("cancelled")

    runner.run_job("job", work, None, errors.append)
    qtbot.waitUntil(lambda: bool(errors))
    assert isinstance(errors[0], CancelledError)


def test_exclusive_task_waits_for_work_on_the_same_key(qtbot, runner):
    key = object()
    release = threading.Event()
    order = []

    def slow_read():
        release.wait(10)
        order.append("read")

    runner.run_query(slow_read, key=key)
    runner.run_query(lambda: order.append("close"), key=key, exclusive=True)
    runner.run_query(lambda: order.append("after"), key=key)
    # Work on other keys is not held up by the exclusive task.
    other = []
    runner.run_query(lambda: "free", other.append, key=object())
    qtbot.waitUntil(lambda: other == ["free"])
    assert order == []
    release.set()
    qtbot.waitUntil(lambda: len(order) == 3)
    assert order == ["read", "close", "after"]


def test_callback_of_a_deleted_object_is_skipped(qtbot, runner):
    calls = []

    class Receiver(QObject):
        def done(self, result):
            calls.append(result)

    receiver = Receiver()
    release = threading.Event()
    runner.run_query(lambda: release.wait(10), receiver.done)
    receiver.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert not shiboken6.isValid(receiver)
    with qtbot.waitSignal(runner.idle):
        release.set()
    # No "wrapped C/C++ object has been deleted": the callback was never made.
    assert calls == []


def test_shutdown_cancels_and_joins_running_jobs(qtbot, runner):
    running = threading.Event()
    ended = threading.Event()

    def work(progress, cancel):
        running.set()
        cancel._event.wait(10)
        ended.set()
        cancel.raise_if_cancelled()

    runner.run_job("endless", work)
    assert running.wait(10)
    assert runner.shutdown(timeout_ms=10_000)
    assert ended.is_set()
    # Nothing is started after shutdown.
    calls = []
    runner.run_query(lambda: calls.append(1))
    assert not runner.busy and calls == []
