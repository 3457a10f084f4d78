"""The one place engine work leaves the UI thread.

Two helpers, as in Anki: `run_query(fn, on_done)` for reads, `run_op(fn, on_done)`
for mutations. A mutation returns a `Change` (or an object carrying one in
`.change`); the runner broadcasts it on `changed` so each pane refreshes only
what it shows. `run_job` is a mutation or read that takes a while: it gets a
progress callback and a `CancelToken`, and is shown in the status bar with a
cancel button.

Tasks run on a private QThreadPool. Results travel back through a small
signals QObject created on the UI thread, so callbacks always run on the UI
thread. A callback bound to a Qt object that has since been deleted is
skipped rather than called ("wrapped C/C++ object has been deleted").

A task may name a `key` (a bank): an `exclusive` task waits until no other task
with that key runs, and later tasks with that key wait for it. Closing or
deleting a bank uses this, so no read is mid-flight on a store being closed.

Who asked: `run_op(..., initiator=pane)` hands the pane to every `changed`
handler with the Change (as Anki's OpChanges handlers get theirs), so the pane
that made a change can skip the refresh its own `on_done` does anyway.

Latest result only: a task may name `latest=(owner, topic)`. A newer task
with the same pair supersedes it: if it has not started it never runs, if it
is a job it is cancelled, and whatever it returns or raises is dropped (a
mutation's Change is still broadcast: it happened). `supersede(owner)` drops
an owner's pending results without asking again (its bank was switched).

A write that failed because the bank's server did not answer (a remote bank
whose connection dropped) is offered again: `write_failed` carries a
`FailedWrite` whose `retry()` submits the very same task (its callbacks too),
so what the person asked for is not lost with the connection.

`shutdown()` cancels every job and joins the pool: the window calls it on close.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import traceback
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal, Slot

from core import STUDIO_CALLER, CancelledError, CancelToken, Change, EngramError, acting_as

log = logging.getLogger(__name__)

OnDone = Callable[[Any], None]
OnError = Callable[[BaseException], None]
Latest = tuple[Any, str]  # (owner, topic): only the newest task's result is delivered


class _Signals(QObject):
    """Lives on the UI thread; workers emit on it, Qt queues the calls across."""

    ended = Signal(int)  # the task's outcome is in the runner's `outcomes`
    progressed = Signal(int, int, int, str)


# (completed, the result or the error, the traceback's text)
_Outcome = tuple[bool, Any, str]


class _Runnable(QRunnable):
    def __init__(
        self,
        task_id: int,
        fn: Callable[[], Any],
        signals: _Signals,
        outcomes: dict[int, _Outcome],
    ) -> None:
        super().__init__()
        self._id = task_id
        self._fn: Callable[[], Any] | None = fn
        self._signals = signals
        self._outcomes = outcomes

    def run(self) -> None:
        # This thread lets go of everything before the UI thread hears of the end:
        # the function, its result or its error (whose traceback's frames hold what
        # the function held) pass to the runner's `outcomes`, and the task on the UI
        # thread keeps the function alive. Otherwise a Qt object whose last reference
        # went on this thread would be deleted off its thread, and a timer of its
        # would fire on freed memory (a segfault in the UI thread's event loop).
        fn, self._fn = self._fn, None
        try:
            outcome: _Outcome = (True, fn(), "")
        except BaseException as error:  # every failure goes to the UI
            outcome = (False, error, traceback.format_exc())
        del fn
        self._outcomes[self._id] = outcome  # a dict's item assignment is atomic
        del outcome
        self._emit(self._signals.ended, self._id)

    @staticmethod
    def _emit(signal, *args: Any) -> None:
        # RuntimeError: the runner is gone (only without shutdown()); nobody listens.
        with contextlib.suppress(RuntimeError):
            signal.emit(*args)


class Job(QObject):
    """A long task the user can see and cancel."""

    progressed = Signal(int, int, str)
    finished = Signal(bool)  # True when it completed, False on error or cancel

    def __init__(self, label: str, token: CancelToken, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.label = label
        self.token = token
        self.done = 0
        self.total = 0
        self.message = ""

    def cancel(self) -> None:
        self.token.cancel()

    @property
    def cancelled(self) -> bool:
        return self.token.cancelled


@dataclass(eq=False)
class _Task:
    id: int
    fn: Callable[[], Any]
    on_done: OnDone | None
    on_error: OnError | None
    mutating: bool
    key: Any = None
    exclusive: bool = False
    job: Job | None = None
    label: str = ""
    latest: Latest | None = None
    initiator: Any = None


@dataclass(frozen=True)
class FailedWrite:
    """A mutation the server never answered, ready to be sent again."""

    label: str
    message: str
    retry: Callable[[], int]


def unreachable(error: BaseException) -> bool:
    """Whether the error says the bank's server did not answer (it may come back)."""
    return getattr(error, "kind", "") == "Unreachable"


def change_of(result: Any) -> Change | None:
    """The change record a mutation returned, directly or as `.change`."""
    if isinstance(result, Change):
        return result
    change = getattr(result, "change", None)
    return change if isinstance(change, Change) else None


def _alive(callback: Callable | None) -> bool:
    """False when the callback is bound to a Qt object whose C++ side is gone."""
    owner = getattr(callback, "__self__", None)
    return not (isinstance(owner, QObject) and not shiboken6.isValid(owner))


class Runner(QObject):
    # Change, after every mutation that changed something, and who asked (or None).
    changed = Signal(object, object)
    failed = Signal(str, str)  # a message for a person, and the details (traceback)
    job_started = Signal(object)  # Job
    job_finished = Signal(object)  # Job
    idle = Signal()  # no task running or queued
    write_failed = Signal(object)  # FailedWrite: a mutation the server never answered

    def __init__(self, parent: QObject | None = None, max_threads: int = 4) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(
            max(2, min(max_threads, QThreadPool.globalInstance().maxThreadCount() + 1))
        )
        self._ids = itertools.count(1)
        self._running: dict[int, _Task] = {}
        self._queue: deque[_Task] = deque()
        self._newest: dict[Latest, int] = {}  # (owner, topic) -> the task whose result counts
        self._closing = False
        self.submitted = 0  # for tests and benchmarks: tasks ever submitted
        # (key, mutating) -> a lock the task holds while it runs, or None: the studio's
        # server sets it so the runner and the server never work on one bank at once.
        self.lock_for: Callable[[Any, bool], AbstractContextManager | None] | None = None
        # Who the studio's work is done as (the audit's and the journal's actor).
        self.caller = STUDIO_CALLER
        self._signals = _Signals(self)
        queued = Qt.ConnectionType.QueuedConnection
        self._outcomes: dict[int, _Outcome] = {}
        self._signals.ended.connect(self._on_ended, queued)
        self._signals.progressed.connect(self._on_progress, queued)

    # -- the three helpers ---------------------------------------------------

    def run_query(
        self,
        fn: Callable[[], Any],
        on_done: OnDone | None = None,
        on_error: OnError | None = None,
        *,
        key: Any = None,
        exclusive: bool = False,
        latest: Latest | None = None,
    ) -> int:
        """Run a read off the UI thread; `on_done(result)` runs on the UI thread.
        With `latest`, only the newest query of that (owner, topic) is answered."""
        task = _Task(next(self._ids), fn, on_done, on_error, False, key, exclusive, latest=latest)
        return self._submit(task)

    def run_op(
        self,
        fn: Callable[[], Any],
        on_done: OnDone | None = None,
        on_error: OnError | None = None,
        *,
        key: Any = None,
        exclusive: bool = False,
        label: str = "",
        initiator: Any = None,
        latest: Latest | None = None,
    ) -> int:
        """Run a mutation; its Change is broadcast on `changed` with `initiator`
        (the pane that asked) before `on_done`."""
        task = _Task(
            next(self._ids),
            fn,
            on_done,
            on_error,
            True,
            key,
            exclusive,
            label=label,
            latest=latest,
            initiator=initiator,
        )
        return self._submit(task)

    def run_job(
        self,
        label: str,
        fn: Callable[[Callable[[int, int, str], None], CancelToken], Any],
        on_done: OnDone | None = None,
        on_error: OnError | None = None,
        *,
        mutating: bool = True,
        key: Any = None,
        initiator: Any = None,
        latest: Latest | None = None,
    ) -> Job:
        """Run `fn(progress, cancel)` as a visible, cancellable job."""
        token = CancelToken()
        job = Job(label, token, self)
        task_id = next(self._ids)
        signals = self._signals

        def progress(done: int, total: int, message: str = "") -> None:
            signals.progressed.emit(task_id, int(done), int(total), str(message))

        def body() -> Any:
            return fn(progress, token)

        task = _Task(
            task_id,
            body,
            on_done,
            on_error,
            mutating,
            key,
            job=job,
            label=label,
            latest=latest,
            initiator=initiator,
        )
        self._submit(task)
        return job

    # -- state ---------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return bool(self._running or self._queue)

    def jobs(self) -> list[Job]:
        return [t.job for t in [*self._running.values(), *self._queue] if t.job is not None]

    def cancel_jobs(self) -> None:
        for job in self.jobs():
            job.cancel()

    def supersede(self, owner: Any, topic: str | None = None) -> None:
        """Drop the pending results of `owner` (of one topic, or all): queued tasks
        never run, running jobs are cancelled, and what they return is not delivered."""
        gone = {k for k in self._newest if k[0] is owner and (topic is None or k[1] == topic)}
        for latest in gone:
            del self._newest[latest]
        self._drop_superseded(gone)

    def _drop_superseded(self, keys: set[Latest]) -> None:
        kept = deque()
        for task in self._queue:
            if task.latest in keys and self._newest.get(task.latest) != task.id:
                if task.job is not None:  # never started: it ends here, cancelled
                    task.job.cancel()
                    task.job.finished.emit(False)
                    task.job.deleteLater()
                continue
            kept.append(task)
        self._queue = kept
        for task in self._running.values():
            stale = task.latest in keys and self._newest.get(task.latest) != task.id
            if stale and task.job is not None:
                task.job.cancel()

    def _unless_superseded(self, task: _Task, fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            # Read on the worker (a dict lookup, atomic): a task that waited in the
            # pool while a newer one of its owner came is not worth running.
            if not self._current(task):
                return None
            return fn()

        return run

    def _current(self, task: _Task) -> bool:
        """Whether the task's result is still wanted (no newer one of its owner's)."""
        return task.latest is None or self._newest.get(task.latest) == task.id

    def shutdown(self, timeout_ms: int = -1) -> bool:
        """Cancel every job, drop queued work, and wait for running work to end."""
        self._closing = True
        for task in self._queue:
            if task.job is not None:
                task.job.cancel()
        self._queue.clear()
        self.cancel_jobs()
        finished = self._pool.waitForDone(timeout_ms)
        self._running.clear()
        self._outcomes.clear()
        return finished

    # -- scheduling ----------------------------------------------------------

    def _submit(self, task: _Task) -> int:
        if self._closing:
            return task.id
        self.submitted += 1
        if task.latest is not None:
            self._newest[task.latest] = task.id
            self._drop_superseded({task.latest})
        self._queue.append(task)
        self._drain()
        return task.id

    def _blocked(self, task: _Task, ahead: list[_Task]) -> bool:
        if task.key is None:
            return False
        same = [t for t in [*self._running.values(), *ahead] if t.key is task.key]
        if task.exclusive:
            return bool(same)
        return any(t.exclusive for t in same)

    def _drain(self) -> None:
        waiting: list[_Task] = []
        while self._queue:
            task = self._queue.popleft()
            if self._blocked(task, waiting):
                waiting.append(task)
            else:
                self._start(task)
        self._queue.extend(waiting)

    def _start(self, task: _Task) -> None:
        self._running[task.id] = task
        if task.job is not None:
            self.job_started.emit(task.job)
        fn = task.fn
        lock = self.lock_for(task.key, task.mutating) if self.lock_for is not None else None
        if lock is not None:
            fn = _holding(lock, fn)
        if task.latest is not None:
            fn = self._unless_superseded(task, fn)
        fn = _acting(self.caller, fn)
        self._pool.start(_Runnable(task.id, fn, self._signals, self._outcomes))

    @Slot(int, int, int, str)
    def _on_progress(self, task_id: int, done: int, total: int, message: str) -> None:
        task = self._running.get(task_id)
        if task is None or task.job is None or self._closing:
            return
        job = task.job
        job.done, job.total, job.message = done, total, message
        job.progressed.emit(done, total, message)

    @Slot(int)
    def _on_ended(self, task_id: int) -> None:
        outcome = self._outcomes.pop(task_id, None)
        if outcome is None:
            return  # shut down meanwhile
        completed, value, tb = outcome
        if completed:
            self._finish(task_id, value, None, "")
        else:
            self._finish(task_id, None, value, tb)

    def _finish(self, task_id: int, result: Any, error: BaseException | None, tb: str) -> None:
        task = self._running.pop(task_id, None)
        if task is None or self._closing:
            return
        wanted = self._current(task)
        if task.latest is not None and wanted:
            del self._newest[task.latest]
        try:
            if error is None:
                change = change_of(result) if task.mutating else None
                if change is not None and not change.empty:
                    self.changed.emit(change, task.initiator)
                if wanted and task.on_done is not None and _alive(task.on_done):
                    task.on_done(result)
            elif wanted:
                self._report(task, error, tb)
        except Exception:  # a broken callback must not wedge the runner
            log.exception("callback of a runner task failed")
            self.failed.emit("An internal error occurred in the studio.", traceback.format_exc())
        finally:
            if task.job is not None:
                task.job.finished.emit(error is None)
                self.job_finished.emit(task.job)
                task.job.deleteLater()
            self._drain()
            if not self.busy:
                self.idle.emit()

    def _report(self, task: _Task, error: BaseException, tb: str) -> None:
        if task.mutating and task.job is None and unreachable(error):
            again = dataclasses.replace(task, id=next(self._ids))
            self.write_failed.emit(
                FailedWrite(task.label, describe(error), lambda: self._submit(again))
            )
            if task.on_error is None:
                return  # the window's banner says so, with Retry: no dialog on top
        if task.on_error is not None:
            if _alive(task.on_error):
                task.on_error(error)
            return
        if isinstance(error, CancelledError):
            return  # the job's own finished(False) tells the status bar
        self.failed.emit(describe(error), tb)


def _holding(lock: AbstractContextManager, fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with lock:
            return fn()

    return run


def _acting(caller: Any, fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with acting_as(caller):
            return fn()

    return run


def describe(error: BaseException) -> str:
    """A message for a person: the engine's own words, else the kind of failure."""
    if isinstance(error, EngramError):
        return str(error)
    if isinstance(error, KeyError | ValueError) and error.args:
        return str(error.args[0])
    return f"Unexpected error: {type(error).__name__}: {error}"
