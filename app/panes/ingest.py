"""Ingest: conversation files into the bank, one document at a time, with progress and cancel.

Files are added with the button, Ctrl+I, or dropped on the pane. Each file is
one job in the runner; its change record refreshes the other panes as soon as
it is written, and a cancel stops the file in progress (the engine leaves the
bank as it was before that file) and the files after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import Pane, empty_label, muted_label
from app.runner import Job, describe
from app.state import StudioState
from app.unit_model import fmt_time
from core import (
    INGEST_FORMATS,
    INGEST_MODES,
    CancelledError,
    load_documents,
)

if TYPE_CHECKING:
    from core import (
        Bank,
        Document,
        IngestReport,
    )

PREVIEW_TURNS = 40
STATUS_REASON_CHARS = 90
FAILED_COLOR = "#dc2626"  # the red the reflect pane uses for errors
FILE_FILTER = "Conversations (*.txt *.md *.markdown *.json *.jsonl *.ndjson);;All files (*)"

MODE_HELP = {
    "auto": "auto — the language model when one is configured and answers, else rules",
    "llm": "llm — facts extracted by the Ollama model",
    "rules": "rules — deterministic offline extraction",
    "verbatim": "verbatim — each turn stored as one unit, no extraction",
}


def failure_status(report: IngestReport) -> str:
    """The Files table's status of a file with failed chunks: how many, and the first reason."""
    failed = len(report.failures)
    chunks = sum(d.failed_chunks for d in report.documents) or failed
    whole = all(d.status in ("failed", "skipped") for d in report.documents)
    head = "failed" if whole else f"partly failed ({chunks} chunk{'s' if chunks != 1 else ''})"
    # The table shows the cause; which turns, and the whole message, are in the summary.
    reason = report.failures[0].reason.rsplit(": ", 1)[-1]
    if len(reason) > STATUS_REASON_CHARS:
        reason = reason[: STATUS_REASON_CHARS - 1] + "…"
    return f"{head}: {reason}"


@dataclass
class _File:
    path: Path
    status: str = "queued"
    facts: int | None = None
    report: IngestReport | None = None


class IngestPane(Pane):
    title = "Ingest"
    slug = "ingest"
    # The pending-jobs indicator leaves the rebuilds an ingest queues to this
    # pane, which runs them once at the end of its queue (not after each file).
    runs_observation_jobs = True

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self.setAcceptDrops(True)
        self.files: list[_File] = []
        self.job: Job | None = None
        self._queue: list[int] = []
        self._current: int | None = None
        self._run_bank: Bank | None = None
        self.reports: list[IngestReport] = []
        # Files that failed outright (an error rather than a report), for the status bar.
        self.errors: list[str] = []
        self.observations_done = False

        self.drop_hint = muted_label(
            "Drop conversation files here (.txt, .md, .json, .jsonl, LoCoMo), or add them."
        )
        self.add_button = QPushButton("Add files…")
        self.add_button.setToolTip("Choose conversation files (Ctrl+I)")
        self.add_button.clicked.connect(self.choose_files)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self._remove_selected)
        self.clear_button = QPushButton("Clear")
        self.clear_button.clicked.connect(self.clear_files)

        self.table = QTreeWidget()
        self.table.setObjectName("ingest-files")
        self.table.setHeaderLabels(["File", "Status", "Facts"])
        self.table.setRootIsDecorated(False)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        # The status takes the spare width (elided, whole in its tooltip): a long
        # failure reason must not push the Facts column out of sight.
        self.table.header().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.table.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.header().setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.table.header().setStretchLastSection(False)
        self.table.currentItemChanged.connect(lambda *_: self._preview_current())
        self.table.itemSelectionChanged.connect(self._update_buttons)

        self.format = QComboBox()
        self.format.setObjectName("ingest-format")
        for f in ("auto", *INGEST_FORMATS):
            self.format.addItem(f, f)
        self.format.setToolTip("auto: detected from the file name and content")
        self.format.currentIndexChanged.connect(lambda *_: self._preview_current())
        self.mode = QComboBox()
        self.mode.setObjectName("ingest-mode")
        for i, m in enumerate(INGEST_MODES):
            self.mode.addItem(m, m)
            self.mode.setItemData(i, MODE_HELP[m], Qt.ItemDataRole.ToolTipRole)
        self.mode_help = muted_label(MODE_HELP["auto"])
        self.mode.currentIndexChanged.connect(
            lambda *_: self.mode_help.setText(MODE_HELP[self.mode.currentData()])
        )

        self.ingest_button = QPushButton("Ingest")
        self.ingest_button.setProperty("primary", True)
        self.ingest_button.clicked.connect(self.start)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress_label = muted_label()

        files_box = QGroupBox("Files")
        fv = QVBoxLayout(files_box)
        fv.addWidget(self.drop_hint)
        fv.addWidget(self.table, 1)
        row = QHBoxLayout()
        row.addWidget(self.add_button)
        row.addWidget(self.remove_button)
        row.addWidget(self.clear_button)
        row.addStretch(1)
        fv.addLayout(row)
        options = QHBoxLayout()
        options.addWidget(QLabel("Format"))
        options.addWidget(self.format)
        options.addSpacing(12)
        options.addWidget(QLabel("Mode"))
        options.addWidget(self.mode)
        options.addStretch(1)
        fv.addLayout(options)
        fv.addWidget(self.mode_help)
        run = QHBoxLayout()
        run.addWidget(self.progress, 1)
        run.addWidget(self.cancel_button)
        run.addWidget(self.ingest_button)
        fv.addLayout(run)
        fv.addWidget(self.progress_label)

        self.preview = QTableWidget(0, 3)
        self.preview.setObjectName("ingest-preview")
        self.preview.setHorizontalHeaderLabels(["Time", "Speaker", "Text"])
        self.preview.verticalHeader().setVisible(False)
        self.preview.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.preview.setWordWrap(False)
        self.preview.setAlternatingRowColors(True)
        ph = self.preview.horizontalHeader()
        ph.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        ph.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        ph.setStretchLastSection(True)
        self.preview_label = muted_label("Select a file to preview its first turns.")
        preview_box = QGroupBox("Preview")
        pv = QVBoxLayout(preview_box)
        pv.addWidget(self.preview_label)
        pv.addWidget(self.preview, 1)

        self.summary = QPlainTextEdit()
        self.summary.setObjectName("ingest-summary")
        self.summary.setReadOnly(True)
        self.summary.setPlaceholderText(
            "A summary appears here after ingest: facts per network, entities new and merged, failures with reasons."
        )
        summary_box = QGroupBox("Summary")
        sv = QVBoxLayout(summary_box)
        sv.addWidget(self.summary)

        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(preview_box)
        right.addWidget(summary_box)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 2)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("splitter-ingest")
        self.splitter.addWidget(files_box)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)

        self.unavailable = self.no_bank_label(empty_label())
        self.unavailable.setObjectName("empty-state")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.unavailable)
        layout.addWidget(self.splitter, 1)
        self.set_bank(state.bank)

    # -- Pane interface ------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self.unavailable.setText(self.no_bank_text())
        self.unavailable.setVisible(bank is None)
        self.splitter.setVisible(bank is not None)
        self._update_buttons()

    # -- files ---------------------------------------------------------------

    def choose_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Ingest conversations", "", FILE_FILTER)
        self.add_files([Path(p) for p in paths])

    def add_files(self, paths: list[Path]) -> None:
        known = {f.path for f in self.files}
        for path in paths:
            path = Path(path)
            if path.is_file() and path not in known:
                self.files.append(_File(path))
                known.add(path)
        self._show_files()
        if self.table.currentItem() is None and self.files:
            self.table.setCurrentItem(self.table.topLevelItem(0))

    def clear_files(self) -> None:
        if self.running:
            return
        self.files.clear()
        self._show_files()
        self._show_preview(None, [])

    def _remove_selected(self) -> None:
        if self.running:
            return
        rows = {self.table.indexOfTopLevelItem(i) for i in self.table.selectedItems()}
        self.files = [f for i, f in enumerate(self.files) if i not in rows]
        self._show_files()

    def _show_files(self) -> None:
        current = self.table.currentItem()
        current_row = self.table.indexOfTopLevelItem(current) if current else 0
        self.table.clear()
        for f in self.files:
            item = QTreeWidgetItem([f.path.name, f.status, "" if f.facts is None else str(f.facts)])
            item.setToolTip(0, str(f.path))
            item.setToolTip(1, f.status)
            self.table.addTopLevelItem(item)
        if self.files:
            self.table.setCurrentItem(
                self.table.topLevelItem(min(current_row, len(self.files) - 1))
            )
        self._update_buttons()

    def _set_status(self, row: int, status: str, facts: int | None = None) -> None:
        f = self.files[row]
        f.status = status
        if facts is not None:
            f.facts = facts
        item = self.table.topLevelItem(row)
        if item is not None:
            item.setText(1, status)
            item.setToolTip(1, status)
            failed = status.startswith(("failed", "partly failed"))
            item.setForeground(1, QBrush(QColor(FAILED_COLOR)) if failed else QBrush())
            item.setText(2, "" if f.facts is None else str(f.facts))

    # -- preview -------------------------------------------------------------

    def _preview_current(self) -> None:
        item = self.table.currentItem()
        if item is None:
            return
        row = self.table.indexOfTopLevelItem(item)
        if not 0 <= row < len(self.files):
            return
        path, fmt = self.files[row].path, self.format.currentData()
        self.preview_label.setText(f"Reading {path.name}…")
        # Parsing a large file takes a moment: read it off the GUI thread. An
        # unreadable file comes back as InvalidInputError, shown as its message.
        self.state.runner.run_query(
            lambda: load_documents(path, fmt),
            lambda docs: self._show_preview(path, docs),
            lambda error: self._preview_failed(path, error),
        )

    def _show_preview(self, path: Path | None, documents: list[Document]) -> None:
        self.preview.setRowCount(0)
        if path is None:
            self.preview_label.setText("Select a file to preview its first turns.")
            return
        turns = [t for d in documents for t in d.turns]
        shown = turns[:PREVIEW_TURNS]
        self.preview.setRowCount(len(shown))
        for i, turn in enumerate(shown):
            for col, value in enumerate((fmt_time(turn.timestamp), turn.speaker, turn.text)):
                item = QTableWidgetItem(value)
                if col == 2:
                    item.setToolTip(turn.text)
                self.preview.setItem(i, col, item)
        convs = f"{len(documents)} conversation{'s' if len(documents) != 1 else ''}"
        more = f"; the first {len(shown)} shown" if len(turns) > len(shown) else ""
        self.preview_label.setText(f"{path.name}: {len(turns)} turns in {convs}{more}.")

    def _preview_failed(self, path: Path, error: BaseException) -> None:
        self.preview.setRowCount(0)
        self.preview_label.setText(f"{path.name}: {describe(error)}")

    # -- running -------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._current is not None

    def start(self) -> None:
        bank = self.bank
        if bank is None or self.running:
            return
        self._queue = [i for i, f in enumerate(self.files) if f.status not in ("done", "skipped")]
        if not self._queue:
            self.state.status.emit("Nothing to ingest: add files first.")
            return
        for row in self._queue:
            self._set_status(row, "queued")
        self._run_bank = bank
        self.reports = []
        self.errors: list[str] = []
        self.summary.clear()
        self.progress.setRange(0, len(self._queue) * 100)
        self.progress.setValue(0)
        self._total = len(self._queue)
        self._next()

    def _next(self) -> None:
        bank = self._run_bank
        if not self._queue or bank is None or bank is not self.bank:
            self._finish()
            return
        row = self._queue.pop(0)
        self._current = row
        path = self.files[row].path
        fmt, mode = self.format.currentData(), self.mode.currentData()
        number = self._total - len(self._queue)
        self._set_status(row, "starting…")

        def body(progress, cancel):
            return bank.ingest(path, format=fmt, mode=mode, progress=progress, cancel=cancel)

        self.job = self.state.runner.run_job(
            f"Ingesting {path.name} ({number}/{self._total})",
            body,
            lambda report: self._file_done(row, report),
            lambda error: self._file_failed(row, error),
            key=bank,
            initiator=self,
        )
        self.job.progressed.connect(lambda d, t, m: self._file_progress(row, number, d, t, m))
        self._update_buttons()

    def _file_progress(self, row: int, number: int, done: int, total: int, message: str) -> None:
        fraction = done / total if total else 0.0
        self._set_status(row, f"{int(fraction * 100)}% {message}".strip())
        self.progress.setValue(int((number - 1 + fraction) * 100))
        self.progress_label.setText(f"{self.files[row].path.name}: {message}")

    def _file_done(self, row: int, report: IngestReport) -> None:
        self.reports.append(report)
        docs = report.documents
        skipped = bool(docs) and all(d.status == "skipped" for d in docs)
        if report.failures:
            status = failure_status(report)
        else:
            status = "skipped (already in the bank)" if skipped else "done"
        self._set_status(row, status, report.facts_total)
        self._append_summary(self.files[row].path, report)
        if report.failures or report.notes:
            # The model failed or auto mode fell back: the status bar's mode may be stale.
            self.state.recheck_mode()
        self._after_file()

    def _file_failed(self, row: int, error: BaseException) -> None:
        if isinstance(error, CancelledError):
            self._set_status(row, "cancelled — nothing of it was written")
            for other in self._queue:
                self._set_status(other, "cancelled")
            self._queue.clear()
            self.summary.appendPlainText("Cancelled.\n")
        else:
            message = describe(error)
            self._set_status(row, f"failed: {message}")
            self.summary.appendPlainText(f"{self.files[row].path.name}: FAILED — {message}\n")
            self.errors.append(f"{self.files[row].path.name}: {message}")
            self.state.recheck_mode()
        self._after_file()

    def _after_file(self) -> None:
        self._current = None
        self.job = None
        self.progress.setValue((self._total - len(self._queue)) * 100)
        self._next()

    def _finish(self) -> None:
        bank = self._run_bank
        self._current = None
        self.job = None
        self._run_bank = None
        facts = sum(r.facts_total for r in self.reports)
        failures = [f for r in self.reports for f in r.failures]
        problems = list(self.errors)
        if failures:
            problems.insert(
                0,
                f"{len(failures)} chunk{'s' if len(failures) != 1 else ''} failed "
                f"(nothing of them written): {failures[0].reason}",
            )
        tail = "; " + "; ".join(problems) if problems else "."
        self.progress_label.setText(
            f"Finished: {len(self.reports)} file(s), {facts} new facts{tail}"
        )
        head = "Ingest finished with failures" if problems else "Ingest finished"
        self.state.status.emit(f"{head}: {facts} new facts{tail}")
        self._update_buttons()
        if bank is not None and facts and bank is self.bank:
            self._refresh_observations(bank)

    def _refresh_observations(self, bank: Bank) -> None:
        """Retain only queues observation refreshes; run them now, as a job of their own."""

        def done(report) -> None:  # core.retain's JobsReport
            written = report.observations_written
            self.summary.appendPlainText(f"Observations: {written} written or refreshed.\n")
            self.observations_done = True

        self.observations_done = False
        self.state.runner.run_job(
            "Updating observations",
            lambda progress, cancel: bank.process_jobs(progress=progress, cancel=cancel),
            done,
            key=bank,
        )

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def _append_summary(self, path: Path, report: IngestReport) -> None:
        self.summary.appendPlainText(f"{path.name}\n{report.summary()}\n")

    def _update_buttons(self) -> None:
        running = self.running
        has_files = bool(self.files)
        self.ingest_button.setEnabled(has_files and not running and self.bank is not None)
        self.cancel_button.setEnabled(running)
        self.add_button.setEnabled(not running)
        self.remove_button.setEnabled(not running and bool(self.table.selectedItems()))
        self.clear_button.setEnabled(not running and has_files)
        self.format.setEnabled(not running)
        self.mode.setEnabled(not running)
        self.drop_hint.setVisible(not has_files)

    # -- drag and drop -------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()]
        self.add_files(paths)
        event.acceptProposedAction()
