"""Snapshots: export the bank to one .engram file, import one, and diff two side by side.

Export and import run as jobs with progress and cancel. A diff compares two
snapshot files, or a snapshot and the live bank; its rows show each side's
value next to the other's.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import Pane, muted_label
from app.state import StudioState
from core import Bank, Change, Kind, PurgedInSnapshotError, diff_snapshots

if TYPE_CHECKING:
    from core import Manifest, SnapshotDiff

FILTER = "Engram snapshots (*.engram);;All files (*)"
LIVE = "the live bank"
EXPORT_HINT = (
    "One .engram file holds the whole bank: units with their vectors, entities, links, "
    "opinions with their history, documents and turns."
)
CELL_CHARS = 280  # longer texts are cut in the table; the tooltip has them whole


def _cut(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def diff_rows(diff: SnapshotDiff) -> list[tuple[str, str, str]]:
    """(change, A side, B side) rows for the side-by-side table: entities and opinions
    first, then facts, then the observations regenerated from them."""
    rows: list[tuple[str, str, str]] = []
    rows += [("entity renamed", r.before, r.after) for r in diff.entities_renamed]
    rows += [
        ("entity merged", m.source.name, f"an alias of {m.target.name}")
        for m in diff.entities_merged
    ]
    rows += [("entity added", "—", e.name) for e in diff.entities_added]
    rows += [("entity removed", e.name, "—") for e in diff.entities_removed]
    rows += [("entity retracted", e.name, f"{e.name} (retracted)") for e in diff.entities_retracted]
    rows += [("entity restored", f"{e.name} (retracted)", e.name) for e in diff.entities_restored]
    for c in diff.opinions_changed:
        before = "—" if c.before is None else f"{c.before:.2f}"
        after = "—" if c.after is None else f"{c.after:.2f}"
        rows.append(("opinion confidence", f"{before} · {c.text}", f"{after} · {c.text}"))
    units: list[tuple[bool, tuple[str, str, str]]] = []
    for u in diff.units_changed:
        observation = u.network == "observation"
        before, after = u.before, u.after
        if "text" in u.fields:
            units.append(
                (
                    observation,
                    (f"{u.network} edited", before.get("text", ""), after.get("text", "")),
                )
            )
        # An opinion's confidence change is already listed with the opinions.
        skip = {"text", "confidence"} if u.network == "opinion" else {"text"}
        others = [f for f in u.fields if f not in skip]
        if others:
            units.append(
                (
                    observation,
                    (
                        f"{u.network}: {', '.join(others)}",
                        ", ".join(f"{f} {before.get(f)}" for f in others),
                        ", ".join(f"{f} {after.get(f)}" for f in others),
                    ),
                )
            )
    units += [
        (u.network == "observation", (f"{u.network} added", "—", u.text)) for u in diff.units_added
    ]
    units += [
        (u.network == "observation", (f"{u.network} removed", u.text, "—"))
        for u in diff.units_removed
    ]
    rows += [r for obs, r in units if not obs]
    rows += [r for obs, r in units if obs]
    return [(kind, _cut(a), _cut(b)) for kind, a, b in rows]


class SnapshotsPane(Pane):
    title = "Snapshots"
    slug = "snapshots"

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self.last_manifest: Any = None
        self.last_diff: Any = None

        self.export_button = QPushButton("Export this bank…")
        self.export_button.setToolTip("Write the whole bank to one .engram file (Ctrl+E)")
        self.export_button.clicked.connect(self.choose_export)
        self.export_result = muted_label(EXPORT_HINT)
        export_box = QGroupBox("Export")
        ev = QVBoxLayout(export_box)
        ev.addWidget(self.export_result)
        row = QHBoxLayout()
        row.addWidget(self.export_button)
        row.addStretch(1)
        ev.addLayout(row)
        ev.addStretch(1)

        self.import_name = QLineEdit()
        self.import_name.setPlaceholderText("the name stored in the snapshot")
        self.import_replace = QCheckBox("Replace the bank of that name (atomically)")
        self.import_button = QPushButton("Import a snapshot…")
        self.import_button.clicked.connect(self.choose_import)
        self.import_result = muted_label(
            "Imported banks open when they are complete. A snapshot made before a purge"
            " would bring back what the purge removed: replacing the bank with one, you are"
            " asked first."
        )
        import_box = QGroupBox("Import")
        iv = QFormLayout(import_box)
        iv.addRow("As bank", self.import_name)
        iv.addRow("", self.import_replace)
        row = QHBoxLayout()
        row.addWidget(self.import_button)
        row.addStretch(1)
        iv.addRow("", row)
        iv.addRow("", self.import_result)

        self.side_a = QLineEdit()
        self.side_b = QLineEdit()
        for side in (self.side_a, self.side_b):
            side.setPlaceholderText(f"{LIVE} (leave empty) or a .engram file")
        browse_a, browse_b = QPushButton("Browse…"), QPushButton("Browse…")
        browse_a.clicked.connect(lambda: self._browse(self.side_a))
        browse_b.clicked.connect(lambda: self._browse(self.side_b))
        self.diff_button = QPushButton("Compare")
        self.diff_button.setProperty("primary", True)
        self.diff_button.clicked.connect(self.compare)
        self.diff_summary = muted_label(
            "Compare two snapshots, or a snapshot (A) with the live bank (B)."
        )
        self.diff_table = QTableWidget(0, 3)
        self.diff_table.setObjectName("snapshot-diff")
        self.diff_table.setHorizontalHeaderLabels(["Change", "A", "B"])
        self.diff_table.verticalHeader().setVisible(False)
        self.diff_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.diff_table.setWordWrap(True)
        self.diff_table.setAlternatingRowColors(True)
        header = self.diff_table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        diff_box = QGroupBox("Diff")
        dv = QVBoxLayout(diff_box)
        sides = QFormLayout()
        for label, edit, browse in (("A", self.side_a, browse_a), ("B", self.side_b, browse_b)):
            row = QHBoxLayout()
            row.addWidget(edit, 1)
            row.addWidget(browse)
            sides.addRow(label, row)
        dv.addLayout(sides)
        row = QHBoxLayout()
        row.addWidget(self.diff_summary, 1)
        row.addWidget(self.diff_button)
        dv.addLayout(row)
        dv.addWidget(self.diff_table, 1)

        top = QHBoxLayout()
        top.addWidget(export_box, 1)
        top.addWidget(import_box, 1)
        self.body = QWidget()
        bv = QVBoxLayout(self.body)
        bv.setContentsMargins(0, 0, 0, 0)
        bv.addLayout(top)
        bv.addWidget(diff_box, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.body, 1)
        self.set_bank(state.bank)

    def set_bank(self, bank: Bank | None) -> None:
        # Import works without an open bank; export and a live diff need one.
        self.export_button.setEnabled(bank is not None)
        self.export_result.setText(
            EXPORT_HINT
            if bank is not None
            else "Open a bank to export it; import works without one."
        )

    # -- export --------------------------------------------------------------

    def choose_export(self) -> None:
        bank = self.bank
        if bank is None:
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Export snapshot", f"{bank.name}.engram", FILTER
        )
        if path:
            self.export_to(Path(path))

    def export_to(self, path: Path) -> None:
        bank = self.bank
        if bank is None:
            return
        self.export_result.setText(f"Exporting to {path}…")
        self.state.runner.run_job(
            f"Exporting “{bank.name}”",
            lambda progress, cancel: bank.export_snapshot(path, progress=progress, cancel=cancel),
            lambda manifest: self._exported(path, manifest),
            lambda error: self._failed(self.export_result, error),
            mutating=False,
            key=bank,
        )

    def _exported(self, path: Path, manifest: Manifest) -> None:
        self.last_manifest = manifest
        what = ", ".join(f"{v:,} {k}" for k, v in manifest.counts.items() if v)
        self.export_result.setText(f"Exported to {path}" + (f": {what}." if what else "."))
        if not self.side_a.text():
            self.side_a.setText(str(path))
        self.state.status.emit(f"Exported to {path}.")

    # -- import --------------------------------------------------------------

    def choose_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import snapshot", "", FILTER)
        if path:
            self.import_from(Path(path))

    def import_from(self, path: Path, restore_purged: bool = False) -> None:
        # With a remote bank open, the snapshot is uploaded to its server.
        engine, url = self.state.engine_for(), self.state.bank_url
        name = self.import_name.text().strip() or None
        replace = self.import_replace.isChecked()
        where = f" to {url}" if url else ""
        self.import_result.setText(f"Importing {path.name}{where}…")
        window = self.window()

        def done(bank: Bank) -> None:
            self.import_result.setText(f"Imported “{bank.name}”{where}.")
            set_bank = getattr(window, "set_bank", None)
            if callable(set_bank):
                set_bank(bank, url)
            if url:
                self.state.remotes.reload(url)

        self.state.runner.run_job(
            f"Importing {path.name}{where}",
            lambda progress, cancel: _Imported(
                engine.import_snapshot(
                    path,
                    name,
                    replace,
                    progress=progress,
                    cancel=cancel,
                    restore_purged=restore_purged,
                ),
                remote=bool(url),
            ),
            lambda imported: done(imported.bank),
            lambda error: self._import_failed(path, error),
        )

    def _import_failed(self, path: Path, error: BaseException) -> None:
        """A snapshot that would undo a purge is asked about (a purge is for good:
        never undone quietly); any other failure is said."""
        if isinstance(error, PurgedInSnapshotError):
            self.ask_restore_purged(path, error)
        else:
            self._failed(self.import_result, error)

    def ask_restore_purged(self, path: Path, error: PurgedInSnapshotError) -> QMessageBox:
        """Window-modal, not a nested event loop: the studio goes on while it asks.
        Cancel, the default, imports nothing."""
        typed = self.import_name.text().strip()
        name = f"“{typed}”" if typed else "the bank"
        self.import_result.setText(f"{path.name} would bring back what the bank purged: asking.")
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Bring back purged entities?",
            f"{path.name} was made before a purge: importing it in place of {name}"
            " would bring back what the purge removed.",
            parent=self,
        )
        box.setObjectName("restore-purged-question")
        reason = str(error)
        box.setInformativeText(
            f"{reason[:1].upper()}{reason[1:]}.\n\nImport it anyway, bringing them back?"
        )
        restore = box.addButton("Bring them back", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def answered() -> None:
            if box.clickedButton() is restore:
                self.import_from(path, restore_purged=True)
            else:
                self.import_result.setText(
                    f"Nothing imported: {path.name} would have brought back what the bank purged."
                )

        box.finished.connect(answered)
        box.open()
        return box

    # -- diff ----------------------------------------------------------------

    def _browse(self, edit: QLineEdit) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a snapshot", "", FILTER)
        if path:
            edit.setText(path)

    def _side(self, edit: QLineEdit) -> Path | Bank | None:
        text = edit.text().strip()
        return Path(text) if text else self.bank

    def compare(self) -> None:
        a, b = self._side(self.side_a), self._side(self.side_b)
        if a is None or b is None:
            self.diff_summary.setText(
                "Open a bank to compare with the live bank, or choose two files."
            )
            return
        self.diff_summary.setText("Comparing…")
        live = self.bank if not isinstance(a, Path) or not isinstance(b, Path) else None
        if live is not None and self.state.remote:
            # A remote bank's tables are on its server: compared as a snapshot of it
            # now, downloaded (progress, cancel) into a folder deleted afterwards.
            self.state.runner.run_job(
                f"Comparing with “{live.name}”",
                lambda progress, cancel: _diff_remote(live, a, b, progress, cancel),
                self._show_diff,
                lambda error: self._failed(self.diff_summary, error),
                mutating=False,
                key=live,
            )
            return
        self.state.runner.run_query(
            lambda: diff_snapshots(a, b),
            self._show_diff,
            lambda error: self._failed(self.diff_summary, error),
            key=live,
        )

    def _show_diff(self, diff: SnapshotDiff) -> None:
        self.last_diff = diff
        rows = diff_rows(diff)
        self.diff_table.setRowCount(len(rows))
        for r, values in enumerate(rows):
            for c, value in enumerate(values):
                item = QTableWidgetItem(value)
                item.setToolTip(value if len(value) < CELL_CHARS else value[:2000])
                self.diff_table.setItem(r, c, item)
        self.diff_table.resizeRowsToContents()
        a, b = diff.a, diff.b
        self.diff_summary.setText(
            f"A: {a} · B: {b} — {len(rows)} difference(s)"
            if rows
            else f"A: {a} · B: {b} — no differences."
        )

    def _failed(self, label: Any, error: BaseException) -> None:
        from app.runner import describe

        label.setText(f"✗ {describe(error)}")


def _diff_remote(bank: Any, a: Any, b: Any, progress: Any, cancel: Any) -> SnapshotDiff:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="engram-remote-diff-") as tmp:
        copy = Path(tmp) / f"{bank.id}.engram"
        bank.export_snapshot(copy, progress=progress, cancel=cancel)
        return diff_snapshots(copy if a is bank else a, copy if b is bank else b)


class _Imported:
    """An import result: the bank, and a change record naming it for the bank list."""

    def __init__(self, bank: Bank, *, remote: bool = False) -> None:
        if remote:  # uploaded to a server: its name is read on the UI thread
            from app.following import followed

            followed(bank)  # type: ignore[arg-type]
        self.bank = bank
        self.change = Change.of(added={Kind.BANK: [bank.id]})
