"""The status bar's pending-jobs indicator, and the studio running them at once.

Curation hides what it made stale in its own transaction and queues the
observation rebuilds; this widget runs them as soon as a curation change
arrives (one visible, cancellable job in the runner), shows how many are
still pending, and has a button to run them by hand (after a cancel, or when
another process queued them). The Ingest pane runs its own at the end of its
queue, so the changes it makes are left to it; an agent's retain through the
studio's server is rebuilt at once like a curation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from app.runner import Job
from app.state import StudioState
from core import Kind

if TYPE_CHECKING:
    from core import Bank, Change


class JobsIndicator(QWidget):
    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("jobs-indicator")
        self.state = state
        self.pending = 0
        self.job: Job | None = None
        self._again = False  # more were queued while a run was under way
        self.label = QLabel()
        self.label.setObjectName("pending-jobs")
        self.label.setToolTip(
            "Observation rebuilds queued by curation or ingest. What they rebuild is"
            " already hidden from recall until they run."
        )
        self.run_button = QPushButton("Run now")
        self.run_button.setObjectName("run-jobs")
        self.run_button.clicked.connect(lambda: self.run())
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.run_button)
        state.bank_changed.connect(lambda *_: self.recount())
        state.changed.connect(self._changed)
        self._show()

    def _changed(self, change: Change, initiator: object = None) -> None:
        # The Ingest pane runs its own at the end of its queue; everything else
        # (curation, a document re-ingested, an agent's retain through the
        # studio's server) is rebuilt at once.
        queued = bool(change.added.get(Kind.JOB)) and not getattr(
            initiator, "runs_observation_jobs", False
        )
        if self.job is not None:
            # Queued after the running job read its queue: run again when it ends.
            self._again = self._again or queued
            return
        if queued:
            self.run()
        else:
            self.recount()

    def recount(self) -> None:
        bank = self.state.bank
        if bank is None:
            self.pending = 0
            self._show()
            return
        self.state.runner.run_query(
            bank.pending_jobs, lambda n: self._counted(bank, n), lambda e: None, key=bank
        )

    def _counted(self, bank: Bank, pending: int) -> None:
        if bank is self.state.bank:
            self.pending = int(pending)
            self._show()

    def run(self) -> Job | None:
        """Run the pending jobs now (the configured model, else rules)."""
        bank = self.state.bank
        if bank is None or self.job is not None:
            return None
        self._again = False

        def body(progress: Any, cancel: Any) -> Any:
            return bank.rebuild_observations(progress=progress, cancel=cancel)

        self.job = self.state.runner.run_job(
            "Rebuilding observations", body, self._done, self._failed, key=bank
        )
        self._show()
        return self.job

    def _done(self, report: Any) -> None:
        self.job = None
        if self._again:
            self._again = False
            self.run()
            return
        if report is not None:
            failed = f", {len(report.failed)} failed" if report.failed else ""
            # A profile the model could not write was written by rules: say so.
            fell_back = f"; {report.fallback_note()}" if report.fallback_note() else ""
            self.state.status.emit(
                f"Observations rebuilt: {report.observations_written} written,"
                f" {report.observations_removed} removed{failed}{fell_back}."
            )
            if fell_back or report.failed:
                self.state.recheck_mode()  # the model may have gone: show what is now
        self.recount()

    def _failed(self, error: BaseException) -> None:
        self.job = None
        self._again = False
        self.state.recheck_mode()
        self.recount()

    def _show(self) -> None:
        running = self.job is not None
        if running:
            self.label.setText("Jobs: running…")
        else:
            self.label.setText(f"Jobs: {self.pending:,} pending" if self.pending else "Jobs: none")
        self.label.setProperty("pending", bool(self.pending) and not running)
        self.run_button.setVisible(bool(self.pending) and not running)
        self.run_button.setEnabled(self.state.bank is not None)
