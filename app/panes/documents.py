"""Documents: the conversations the bank was built from, their turns, and removing one.

Left, every ingested document (title, turns, units, how it was extracted,
when); right, the selected document's turns. Delete shows what goes — every
unit extracted from it, the opinions it was evidence for, the entities only it
mentioned, the observations rebuilt — and runs as one audited action that
Undo takes back. Re-ingest extracts the document again from its stored turns
(replacing what its last ingest wrote; that is retain, not curation, so Undo
does not cover it and the dialog says so). A document some of whose chunks
the model could not read is marked partial, in the list and above its turns
(each failed chunk with its reason), until "Retry failed chunks" (or an
ingest of the same file) has extracted exactly those.
"""

from __future__ import annotations

import html
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QStackedWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import (
    Pane,
    detail_column,
    empty_label,
    list_and_detail,
    muted_label,
    read_only_table,
)
from app.panes.entity_dialogs import preview_list
from app.state import StudioState
from app.unit_model import fmt_time
from core import INGEST_MODES, Kind

if TYPE_CHECKING:
    from core import Bank, Change, DocumentPreview

HEADERS = ["Title", "Turns", "Units", "Extracted by", "Retained by", "Ingested", "Tags"]


class DeleteDocumentDialog(QDialog):
    """The preview of a document's deletion, unit by unit, before confirming."""

    def __init__(self, preview: DocumentPreview, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Delete document")
        revised = len(preview.opinions_revised)
        parts = [f"{preview.turns:,} turn(s)", f"{len(preview.units):,} unit(s)"]
        parts.append(f"{preview.links:,} link(s)")
        if preview.opinion_events:
            parts.append(
                f"{preview.opinion_events:,} step(s) of {revised:,} opinion(s) it was evidence"
                " for (their confidence is replayed without them)"
            )
        if preview.entities_removed:
            parts.append("the entities only it mentions: " + ", ".join(preview.entities_removed))
        text = QLabel(
            f"Deleting <b>{html.escape(preview.title)}</b> removes everything derived only "
            f"from it: {html.escape('; '.join(parts))}. These units go:"
        )
        text.setWordWrap(True)
        text.setTextFormat(Qt.TextFormat.RichText)
        self.units = preview_list(preview.units, "document-units")
        rebuilt = preview.observations_rebuilt
        after = QLabel(
            (f"Observations rebuilt: {html.escape(', '.join(rebuilt))}.<br>" if rebuilt else "")
            + "Undo (Ctrl+Z) brings the document and all of this back."
        )
        after.setWordWrap(True)
        after.setTextFormat(Qt.TextFormat.RichText)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.ok = box.addButton("Delete document", QDialogButtonBox.ButtonRole.AcceptRole)
        self.ok.setProperty("danger", True)
        box.accepted.connect(self.accept)
        box.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.units, 1)
        layout.addWidget(after)
        layout.addWidget(box)
        self.resize(640, 540)


class DocumentsPane(Pane):
    title = "Documents"
    slug = "documents"

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self._wanted: str | None = None  # a document to select once it is listed
        self.documents: list[Any] = []
        self.table = read_only_table(HEADERS, stretch=0)
        self.table.setObjectName("documents")
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.currentCellChanged.connect(lambda *_: self._show_current())
        self.empty = self.no_bank_label(empty_label())
        self.empty.setObjectName("empty-state")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.table)
        self.stack.addWidget(self.empty)
        self.count_label = muted_label()

        self.heading = QLabel()
        self.heading.setProperty("role", "heading")
        self.heading.setWordWrap(True)
        self.info = muted_label()
        self.turns = QTextBrowser()
        self.turns.setObjectName("document-turns")
        self.delete_button = QPushButton("Delete…")
        self.delete_button.setProperty("danger", True)
        self.delete_button.setToolTip("Delete the document and what was derived only from it")
        self.delete_button.clicked.connect(self.ask_delete)
        self.mode = QComboBox()
        for mode in INGEST_MODES:
            self.mode.addItem(mode, mode)
        self.mode.setToolTip("How to extract it again")
        self.reingest_button = QPushButton("Re-ingest")
        self.reingest_button.setToolTip("Extract the document again from its stored turns")
        self.reingest_button.clicked.connect(self.ask_reingest)
        self.retry_button = QPushButton("Retry failed chunks")
        self.retry_button.setToolTip(
            "Extract again only the chunks that failed; the document's other facts stay"
        )
        self.retry_button.clicked.connect(self.retry_failed)
        self.failures = muted_label()
        self.failures.setObjectName("document-failures")
        self.failures.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.delete_button)
        buttons.addWidget(self.reingest_button)
        buttons.addWidget(self.retry_button)
        buttons.addWidget(self.mode)
        buttons.addStretch(1)
        self.detail = detail = detail_column(
            self.heading, self.info, self.failures, buttons, body=self.turns
        )

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addWidget(self.stack, 1)
        lv.addWidget(self.count_label)
        self.splitter = list_and_detail(self, left, detail, (1, 1))
        self.set_bank(state.bank)

    # -- Pane interface ------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self._show([])
        if bank is None:
            self._empty(self.no_bank_text())
        else:
            self.refresh()

    def apply_change(self, change: Change, initiator: object = None) -> None:
        if self.bank is not None and (change.touches(Kind.DOCUMENT) or change.touches(Kind.UNIT)):
            self.refresh()

    def refresh(self) -> None:
        bank = self.bank
        if bank is None:
            return
        self.state.runner.run_query(bank.documents, self._loaded, key=bank, latest=(self, "list"))

    # -- list ----------------------------------------------------------------

    def _loaded(self, documents: list[Any]) -> None:
        current = self.current_document()
        self._show(documents)
        if not documents:
            self._empty(
                "No documents yet — ingest a conversation with <b>Ctrl+I</b>.<br>"
                "Each conversation the bank was built from is listed here with its turns."
            )
            return
        ids = [d.id for d in documents]
        if self._wanted in ids:
            current, self._wanted = documents[ids.index(self._wanted)], None
        row = ids.index(current.id) if current is not None and current.id in ids else 0
        self.table.selectRow(row)
        self._show_current()

    def _empty(self, text: str) -> None:
        self.empty.setText(text)
        self.stack.setCurrentWidget(self.empty)
        self.count_label.setText("")
        self._show_document(None, None)

    def _show(self, documents: list[Any]) -> None:
        self.documents = list(documents)
        self.table.setRowCount(len(documents))
        for row, d in enumerate(documents):
            partial = d.failed_chunks
            values = (
                d.title,
                f"{d.turns:,}",
                f"{d.units:,}",
                (d.extraction_mode or "") + (f" · partial ({partial} failed)" if partial else ""),
                d.created_by,
                fmt_time(d.created_at),
                ", ".join(d.tags),
            )
            for col, value in enumerate(values):
                item = QTableWidgetItem(value)
                if partial and col == 3:
                    item.setForeground(QColor("#c0392b"))
                    item.setToolTip(
                        f"{partial} chunk(s) could not be extracted: the document is partial"
                    )
                if col in (1, 2):
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if col == 0:
                    item.setToolTip(d.source_path or d.title)
                self.table.setItem(row, col, item)
        self.stack.setCurrentWidget(self.table)
        self.count_label.setText(f"{len(documents):,} documents" if documents else "")

    def current_document(self) -> Any | None:
        row = self.table.currentRow()
        return self.documents[row] if 0 <= row < len(self.documents) else None

    def select_document(self, document_id: str) -> bool:
        """Select it; one not listed yet (a write just made) is selected when it is."""
        for row, d in enumerate(self.documents):
            if d.id == document_id:
                self._wanted = None
                self.table.selectRow(row)
                return True
        self._wanted = document_id
        return False

    # -- detail --------------------------------------------------------------

    def _show_current(self) -> None:
        document = self.current_document()
        bank = self.bank
        if document is None or bank is None:
            self._show_document(None, None)
            return
        self._show_document(document, None)
        partial = document.failed_chunks
        self.state.runner.run_query(
            lambda: (
                bank.turns(document.id),
                bank.document_failures(document.id) if partial else [],
            ),
            lambda loaded: self._turns_loaded(document, *loaded),
            key=bank,
            latest=(self, "detail"),
        )

    def _turns_loaded(self, document: Any, turns: list[Any], failures: list[Any]) -> None:
        current = self.current_document()
        if current is not None and current.id == document.id:
            self._show_document(document, turns, failures)

    def _show_document(
        self, document: Any | None, turns: list[Any] | None, failures: list[Any] = ()
    ) -> None:
        for button in (self.delete_button, self.reingest_button, self.mode):
            button.setEnabled(document is not None)
        partial = document.failed_chunks if document is not None else 0
        self.retry_button.setVisible(bool(partial))
        self.failures.setVisible(bool(partial))
        self.detail.setVisible(document is not None)  # nothing to show: the list takes the room
        if document is None:
            self.heading.setText("")
            self.info.setText("Select a document to see its turns.")
            self.turns.clear()
            return
        if partial:
            lines = [
                f"Partial: {partial} chunk(s) could not be extracted; nothing of them is in"
                " the bank."
            ]
            # The reason names the chunk's turns ("could not extract facts from turns …").
            lines += [f"• {f.reason}" for f in failures]
            self.failures.setText("\n".join(lines))
        self.heading.setText(html.escape(document.title))
        model = f" · {document.model}" if document.model else ""
        # Titles, tags and metadata come from agents: text, never markup.
        self.info.setTextFormat(Qt.TextFormat.PlainText)
        self.info.setText(
            f"{document.turns:,} turns · {document.units:,} units · "
            f"{document.extraction_mode or '?'}{model} · ingested {fmt_time(document.created_at)}"
            + (f" by {document.created_by}" if document.created_by else "")
            + (f"\n{document.source_path}" if document.source_path else "")
            + (f"\nTags: {', '.join(document.tags)}" if document.tags else "")
            + (f"\nMetadata: {metadata_line(document.metadata)}" if document.metadata else "")
        )
        if turns is None:
            self.turns.setHtml("<i>Loading turns…</i>")
            return
        failed = {t for f in failures for t in f.turn_ids}
        self.turns.setHtml(turns_html(turns, failed))

    # -- actions -------------------------------------------------------------

    def ask_delete(self) -> None:
        document, bank = self.current_document(), self.bank
        if document is None or bank is None:
            return
        self.state.runner.run_query(
            lambda: bank.document_preview(document.id), self._confirm_delete, key=bank
        )

    def _confirm_delete(self, preview: DocumentPreview) -> None:
        dialog = DeleteDocumentDialog(preview, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.delete(preview.document_id, preview.title)
        dialog.deleteLater()

    def delete(self, document_id: str, title: str = "") -> None:
        bank = self.bank
        if bank is None:
            return
        self.state.runner.run_op(
            lambda: bank.delete_document(document_id),
            lambda _: self.state.status.emit(
                f"Deleted “{title or document_id}” (Undo brings it back)."
            ),
            key=bank,
        )

    def ask_reingest(self) -> None:
        document = self.current_document()
        if document is None:
            return
        mode = self.mode.currentData()
        box = QMessageBox(self)
        box.setWindowTitle("Re-ingest document")
        box.setText(
            f"Extract “{document.title}” again ({mode}) from its {document.turns:,} stored"
            f" turns? What its last ingest wrote ({document.units:,} units) is replaced."
            " This is a new ingest: Undo does not take it back."
        )
        box.setStandardButtons(QMessageBox.StandardButton.Cancel)
        ok = box.addButton("Re-ingest", QMessageBox.ButtonRole.AcceptRole)
        box.exec()
        if box.clickedButton() is ok:
            self.reingest(document.id, mode)
        box.deleteLater()

    def retry_failed(self) -> None:
        document = self.current_document()
        if document is not None:
            self.reingest(document.id, self.mode.currentData(), failed_only=True)

    def reingest(self, document_id: str, mode: str = "auto", failed_only: bool = False) -> None:
        bank = self.bank
        if bank is None:
            return
        engine = self.state.engine_for(bank)

        def body(progress: Any, cancel: Any) -> Any:
            llm = engine.language_model() if mode in ("auto", "llm") else None
            try:
                report = bank.reingest_document(
                    document_id,
                    mode,
                    failed_only=failed_only,
                    progress=progress,
                    cancel=cancel,
                    llm=llm,
                )
                # The observations that quoted the replaced facts are hidden: rebuild
                # them before reporting done, as `engram documents reingest` does.
                jobs = bank.process_jobs(llm=llm, progress=progress, cancel=cancel)
                return replace(report, change=report.change | jobs.change)
            finally:
                if llm is not None:
                    llm.close()

        title = next((d.title for d in self.documents if d.id == document_id), document_id)
        self.state.runner.run_job(
            "Retrying failed chunks" if failed_only else "Re-ingesting a document",
            body,
            lambda report: self.state.status.emit(reingest_status(title, report)),
            key=bank,
        )


def reingest_status(title: str, report: Any) -> str:
    """One status-bar line: what the re-ingest wrote, or that it failed and why
    (a failed chunk must never read as success)."""
    from app.panes.ingest import failure_status

    if report.failures:
        return f"Re-ingest of “{title}” {failure_status(report)}"
    return f"Re-ingested “{title}”: {report.facts_total} facts ({report.mode})."


def metadata_line(metadata: dict[str, str]) -> str:
    """An agent's metadata on one line: `key: value; key: value`."""
    return "; ".join(f"{k}: {v}" for k, v in sorted((metadata or {}).items()))


def turns_html(turns: list[Any], failed: set[str] | frozenset[str] = frozenset()) -> str:
    if not turns:
        return "<i>This document has no stored turns.</i>"
    parts = []
    session = None
    for t in turns:
        if t.session and t.session != session:
            session = t.session
            parts.append(f"<h4 style='margin:8px 0 2px 0'>{html.escape(session)}</h4>")
        when = fmt_time(t.timestamp)
        scope = "".join(
            f" · {html.escape(part)}"
            for part in (", ".join(t.tags), metadata_line(t.metadata))
            if part
        )
        mark = " · <span style='color:#c0392b'>not extracted</span>" if t.id in failed else ""
        meta = f"<span style='color:gray'>{when} · {html.escape(t.id)}{scope}</span>{mark}<br>"
        parts.append(
            f"<p style='margin:4px 0'>{meta}<b>{html.escape(t.speaker)}</b>: "
            f"{html.escape(t.text)}</p>"
        )
    return "".join(parts)
