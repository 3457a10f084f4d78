"""Dialogs for entity curation: rename, merge, split, retract (with the facts it
hides) and purge.

Each dialog only collects a decision; the Entities pane runs the engine call
in the runner. Purge, which cannot be undone, needs the entity's name typed.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QCompleter,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListView,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core import Network

if TYPE_CHECKING:
    from core import Entity, Unit

ENTITY_TYPES = ("person", "org", "place", "product", "concept", "other")


def _buttons(
    dialog: QDialog, ok_text: str, danger: bool = False
) -> tuple[QDialogButtonBox, QPushButton]:
    box = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
    ok = box.addButton(ok_text, QDialogButtonBox.ButtonRole.AcceptRole)
    ok.setProperty("danger" if danger else "primary", True)
    ok.setDefault(not danger)
    box.accepted.connect(dialog.accept)
    box.rejected.connect(dialog.reject)
    return box, ok


class RenameEntityDialog(QDialog):
    def __init__(self, entity: Entity, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Rename entity")
        self.entity = entity
        self.name = QLineEdit(entity.name)
        self.name.selectAll()
        self.keep_alias = QCheckBox(f"Keep “{entity.name}” as an alias")
        self.keep_alias.setChecked(True)
        box, self.ok = _buttons(self, "Rename")
        form = QFormLayout()
        form.addRow("New name", self.name)
        form.addRow("", self.keep_alias)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(box)
        self.name.textChanged.connect(
            lambda t: self.ok.setEnabled(bool(t.strip()) and t.strip() != entity.name)
        )
        self.ok.setEnabled(False)
        self.resize(420, self.sizeHint().height())

    def values(self) -> tuple[str, bool]:
        return self.name.text().strip(), self.keep_alias.isChecked()


class MergeEntityDialog(QDialog):
    """Merge one entity into another: the source's names become the target's aliases."""

    def __init__(
        self, source: Entity, candidates: list[Entity], target: Entity | None = None,
        parent: QWidget | None = None,
    ) -> None:  # fmt: skip
        super().__init__(parent)
        self.setWindowTitle("Merge entities")
        self.source = source
        self.target = QComboBox()
        self.target.setEditable(True)
        self.target.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        others = sorted((e for e in candidates if e.id != source.id), key=lambda e: e.name.lower())
        for e in others:
            self.target.addItem(f"{e.name} ({e.type}, {e.mention_count} mentions)", e.id)
        completer = self.target.completer()
        if completer is not None:
            completer.setFilterMode(Qt.MatchFlag.MatchContains)
            completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
        if target is not None:
            self.target.setCurrentIndex(max(0, self.target.findData(target.id)))
        text = QLabel(
            f"Merge <b>{html.escape(source.name)}</b> into the entity chosen below. Its "
            "mentions, links, opinions and observations follow; its name and aliases "
            "become aliases of the target. Undo takes it back."
        )
        text.setWordWrap(True)
        box, self.ok = _buttons(self, "Merge")
        self.ok.setEnabled(bool(others))
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.target)
        layout.addWidget(box)
        self.resize(460, self.sizeHint().height())

    def target_id(self) -> str | None:
        return self.target.currentData()


class SplitEntityDialog(QDialog):
    """Move chosen mentions of an entity to a new one (two people with one name)."""

    def __init__(self, entity: Entity, units: list[Unit], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Split entity")
        self.entity = entity
        text = QLabel(
            f"Tick the facts that are about someone or something else than "
            f"<b>{html.escape(entity.name)}</b>; their mentions move to a new entity."
        )
        text.setWordWrap(True)
        # Long facts are shown whole, wrapped, so a person can judge who they are about.
        self.facts = wrapping_list("split-facts")
        for unit in split_candidates(units):
            item = QListWidgetItem(unit.text)
            item.setData(Qt.ItemDataRole.UserRole, unit.id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            item.setToolTip(unit.text)
            self.facts.addItem(item)
        self.name = QLineEdit()
        self.name.setPlaceholderText("name of the new entity (an alias moves with it)")
        if entity.aliases:
            self.name.setToolTip("aliases: " + ", ".join(entity.aliases))
        self.type = QComboBox()
        for t in ENTITY_TYPES:
            self.type.addItem(t)
        self.type.setCurrentText(entity.type if entity.type in ENTITY_TYPES else "other")
        form = QFormLayout()
        form.addRow("New entity", self.name)
        form.addRow("Type", self.type)
        box, self.ok = _buttons(self, "Split")
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.facts, 1)
        layout.addLayout(form)
        layout.addWidget(box)
        self.name.textChanged.connect(self._check)
        self.facts.itemChanged.connect(self._check)
        self._check()
        self.resize(560, 480)

    def chosen(self) -> list[str]:
        return [
            self.facts.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.facts.count())
            if self.facts.item(i).checkState() == Qt.CheckState.Checked
        ]

    def check(self, unit_ids: list[str]) -> None:
        for i in range(self.facts.count()):
            item = self.facts.item(i)
            if item.data(Qt.ItemDataRole.UserRole) in unit_ids:
                item.setCheckState(Qt.CheckState.Checked)

    def _check(self, *_: Any) -> None:
        self.ok.setEnabled(bool(self.name.text().strip()) and bool(self.chosen()))

    def values(self) -> tuple[list[str], str, str]:
        return self.chosen(), self.name.text().strip(), self.type.currentText()


def wrapping_list(object_name: str) -> QListWidget:
    """A list whose items show their whole text, wrapped to the list's width."""
    view = QListWidget()
    view.setObjectName(object_name)
    view.setWordWrap(True)
    view.setUniformItemSizes(False)
    view.setResizeMode(QListView.ResizeMode.Adjust)
    view.setTextElideMode(Qt.TextElideMode.ElideNone)
    view.setAlternatingRowColors(True)
    view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    return view


def split_candidates(units: list[Unit]) -> list[Unit]:
    """The facts a split may move: never the entity's own observation, which is
    rebuilt from whatever facts each entity keeps."""
    return [u for u in units if u.network != Network.OBSERVATION]


def preview_list(facts: Any, object_name: str) -> QListWidget:
    """The units an action hides or removes, each whole and wrapped, network first."""
    view = wrapping_list(object_name)
    view.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
    for fact in facts:
        item = QListWidgetItem(f"[{fact.network}] {fact.text}")
        item.setToolTip(fact.text)
        view.addItem(item)
    return view


def impact_text(preview: Any) -> str:
    """The retract/purge preview in words."""
    parts = [
        f"{preview.units:,} fact(s)",
        f"{preview.opinions:,} opinion(s)",
        f"{preview.observations:,} observation(s)",
        f"{preview.links:,} link(s)",
        f"{preview.source_turns:,} source turn(s)",
    ]
    if getattr(preview, "opinion_events", 0):
        parts.append(f"{preview.opinion_events:,} opinion event(s)")
    return ", ".join(parts)


class RetractEntityDialog(QDialog):
    """The retract review: what it hides, listed fact by fact, before confirming."""

    def __init__(self, preview: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Retract entity")
        text = QLabel(
            f"Retracting <b>{html.escape(preview.name)}</b> hides it and everything derived "
            f"from it from recall, reflect and the default views: "
            f"{html.escape(impact_text(preview))}. These are hidden:"
        )
        text.setWordWrap(True)
        text.setTextFormat(Qt.TextFormat.RichText)
        self.facts = preview_list(getattr(preview, "facts", ()), "retract-facts")
        rebuilt = getattr(preview, "rebuilt", ())
        after = QLabel(
            (
                f"Observations that quote them are hidden at once and rebuilt: "
                f"{html.escape(', '.join(rebuilt))}.<br>"
                if rebuilt
                else ""
            )
            + "Nothing is deleted: Restore (or Undo) brings it all back as it was."
        )
        after.setWordWrap(True)
        after.setTextFormat(Qt.TextFormat.RichText)
        box, self.ok = _buttons(self, "Retract")
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.facts, 1)
        layout.addWidget(after)
        layout.addWidget(box)
        self.resize(620, 520)


class PurgeEntityDialog(QDialog):
    """Purge is for good: the preview with every redaction in context, what a
    purge cannot reach (exported snapshots), and the entity's name typed to confirm."""

    def __init__(
        self, preview: Any, parent: QWidget | None = None, *, exports: list | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Purge entity")
        self.entity_name = preview.name
        redactions = list(getattr(preview, "redactions", ()))
        text = QLabel(
            f"Purging <b>{html.escape(preview.name)}</b> removes it and everything derived "
            f"from it from every store of this bank, old copies in its files included:<br><br>"
            f"{html.escape(impact_text(preview))}"
            + (
                f"; every name it had is redacted in {len(redactions):,} place(s), listed below"
                if redactions
                else "; no other stored text names it"
            )
            + "."
        )
        text.setWordWrap(True)
        text.setTextFormat(Qt.TextFormat.RichText)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        if redactions:
            self.redactions = QPlainTextEdit("\n".join(str(r) for r in redactions))
            self.redactions.setReadOnly(True)
            self.redactions.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            self.redactions.setMinimumHeight(120)
            layout.addWidget(self.redactions, 1)  # the list takes the room, not the labels
        present = [e for e in exports or [] if getattr(e, "exists", False)]
        snapshots = QLabel(
            "<b>Exported snapshots are outside the bank.</b> A purge does not touch them, and"
            " importing one made before the purge brings everything back."
            + (
                " This bank was exported to:<br>"
                + "<br>".join(
                    f"&nbsp;&nbsp;{html.escape(e.path)} ({html.escape(e.exported_at)})"
                    for e in present
                )
                + "<br>Delete them, or export again after the purge."
                if present
                else " This bank has no recorded export that still exists."
            )
        )
        snapshots.setWordWrap(True)
        snapshots.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(snapshots)
        confirm = QLabel("<b>This cannot be undone.</b> Type the entity's name to confirm:")
        confirm.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(confirm)
        self.confirm = QLineEdit()
        self.confirm.setPlaceholderText(preview.name)
        box, self.ok = _buttons(self, "Purge for good", danger=True)
        self.ok.setEnabled(False)
        self.confirm.textChanged.connect(lambda t: self.ok.setEnabled(t == self.entity_name))
        layout.addWidget(self.confirm)
        layout.addWidget(box)
        self.resize(620, self.sizeHint().height())
