"""Entities: the canonical people, places, organisations and things the bank knows.

A table (name, aliases, type, mentions, first and last seen) filtered as you
type, and beside it the selected entity's facts grouped by network, its
observation and the opinions that mention it. Entity lists are small next to
unit lists (thousands, not hundreds of thousands), so the whole list is read
in one query in the runner and sorted and filtered in memory.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QByteArray,
    QEvent,
    QMimeData,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QStackedWidget,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import Pane, detail_column, empty_label, list_and_detail, muted_label
from app.panes.entity_dialogs import (
    MergeEntityDialog,
    PurgeEntityDialog,
    RenameEntityDialog,
    RetractEntityDialog,
    SplitEntityDialog,
)
from app.state import StudioState
from app.theme import NETWORK_COLORS
from app.unit_model import fmt_time
from core import Kind, Network, UnitStatus

if TYPE_CHECKING:
    from core import Bank, Change, Entity, MergeHint, Unit

Index = QModelIndex | QPersistentModelIndex
EntityRole = Qt.ItemDataRole.UserRole + 1
SortRole = Qt.ItemDataRole.UserRole + 2
FACTS_SHOWN = 200

HEADERS = ("Name", "Aliases", "Type", "Mentions", "First seen", "Last seen")


MIME = "application/x-engram-entity"


class EntityTableModel(QAbstractTableModel):
    # Dropping one entity on another asks to merge them (source id, target id).
    merge_dropped = Signal(str, str)

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.entities: list[Entity] = []

    def flags(self, index: Index) -> Qt.ItemFlag:
        base = super().flags(index)
        if index.isValid():
            return base | Qt.ItemFlag.ItemIsDragEnabled | Qt.ItemFlag.ItemIsDropEnabled
        return base

    def mimeTypes(self) -> list[str]:
        return [MIME]

    def mimeData(self, indexes: Any) -> QMimeData:
        data = QMimeData()
        rows = sorted({i.row() for i in indexes if i.isValid()})
        if rows:
            data.setData(MIME, QByteArray(self.entities[rows[0]].id.encode()))
        return data

    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.CopyAction | Qt.DropAction.MoveAction

    def canDropMimeData(
        self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: Index
    ) -> bool:
        return data.hasFormat(MIME) and parent.isValid()

    def dropMimeData(
        self, data: QMimeData, action: Qt.DropAction, row: int, column: int, parent: Index
    ) -> bool:
        if not data.hasFormat(MIME) or not parent.isValid():
            return False
        source = bytes(data.data(MIME)).decode()
        target = self.entities[parent.row()].id
        if source != target:
            self.merge_dropped.emit(source, target)
        return False  # nothing moves in the list; the merge (if confirmed) refreshes it

    def set_entities(self, entities: list[Entity]) -> None:
        self.beginResetModel()
        self.entities = list(entities)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.entities)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        e = self.entities[index.row()]
        col = index.column()
        retracted = str(e.status) == str(UnitStatus.RETRACTED)
        if role == Qt.ItemDataRole.DisplayRole:
            return (
                e.name + (" (retracted)" if retracted else ""),
                ", ".join(e.aliases),
                e.type,
                f"{e.mention_count:,}",
                fmt_time(e.first_seen, with_time=False),
                fmt_time(e.last_seen, with_time=False),
            )[col]
        if role == SortRole:
            return (
                e.name.lower(),
                ", ".join(e.aliases).lower(),
                e.type,
                e.mention_count,
                e.first_seen.isoformat() if e.first_seen else "",
                e.last_seen.isoformat() if e.last_seen else "",
            )[col]
        if role == Qt.ItemDataRole.ToolTipRole and col == 1 and e.aliases:
            return "\n".join(e.aliases)
        if role == Qt.ItemDataRole.TextAlignmentRole and col == 3:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == EntityRole:
            return e
        if role == Qt.ItemDataRole.FontRole and retracted:
            font = QFont()
            font.setItalic(True)
            return font
        return None


class EntityFilter(QSortFilterProxyModel):
    """Matches the search against the name and every alias."""

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        needle = self.filterRegularExpression().pattern().lower()
        if not needle:
            return True
        e = self.sourceModel().entities[source_row]
        return needle in e.name.lower() or any(needle in a.lower() for a in e.aliases)


NAME_WIDTH = 150
# Narrower than this, the aliases column is hidden rather than squeezed to "Nor…"
# or pushing First/Last seen out of sight (1280×720); the detail lists aliases.
ALIASES_MIN_WIDTH = 90


class EntitiesPane(Pane):
    title = "Entities"
    slug = "entities"

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        # The entity an action was about: the list selects it again when it reloads.
        self._keep_id: str | None = None
        self.units: list[Unit] = []
        # Pairs that may be one entity (Bank.merge_hints): shown, never applied.
        self.hints: list[MergeHint] = []
        self.model = EntityTableModel(self)
        self.proxy = EntityFilter(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SortRole)

        self.search = QLineEdit()
        self.search.setObjectName("search")
        self.search.setPlaceholderText("Search names and aliases (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._filter)

        self.table = QTableView()
        self.table.setObjectName("table-entities")
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(3, Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for col, width in ((0, NAME_WIDTH), (2, 70), (3, 78), (4, 92), (5, 92)):
            self.table.setColumnWidth(col, width)
        self.table.viewport().installEventFilter(self)  # narrow: the aliases column gives way
        self.table.selectionModel().currentRowChanged.connect(lambda *_: self._show_current())
        # Drag one entity onto another to merge them.
        self.table.setDragEnabled(True)
        self.table.setAcceptDrops(True)
        self.table.setDropIndicatorShown(True)
        self.table.setDragDropMode(QAbstractItemView.DragDropMode.DragDrop)
        self.table.setDefaultDropAction(Qt.DropAction.CopyAction)
        self.model.merge_dropped.connect(self._merge_dropped)
        self.show_retracted = QCheckBox("Show retracted")
        self.show_retracted.toggled.connect(lambda *_: self.refresh())

        self.count_label = muted_label()
        self.count_label.setTextFormat(Qt.TextFormat.RichText)
        self.count_label.linkActivated.connect(self._next_hint)
        self.empty = self.no_bank_label(empty_label())
        self.empty.setObjectName("empty-state")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.table)
        self.stack.addWidget(self.empty)

        self.heading = QLabel()
        self.heading.setProperty("role", "heading")
        self.heading.setWordWrap(True)
        self.info = muted_label()
        # "May be the same as …" for the selected entity, with a link to review it.
        self.hint_label = QLabel()
        self.hint_label.setObjectName("merge-hint")
        self.hint_label.setWordWrap(True)
        self.hint_label.setTextFormat(Qt.TextFormat.RichText)
        self.hint_label.linkActivated.connect(self._review_hint)
        self.hint_label.hide()
        self.facts = QTextBrowser()
        self.facts.setObjectName("entity-facts")
        self.facts.setOpenLinks(False)
        self.rename_button = QPushButton("Rename…")
        self.rename_button.clicked.connect(self.ask_rename)
        self.merge_button = QPushButton("Merge into…")
        self.merge_button.setToolTip("Merge this entity into another (or drag it onto one)")
        self.merge_button.clicked.connect(lambda: self.ask_merge())
        self.split_button = QPushButton("Split…")
        self.split_button.clicked.connect(self.ask_split)
        self.retract_button = QPushButton("Retract…")
        self.retract_button.clicked.connect(self.ask_retract)
        self.purge_button = QPushButton("Purge…")
        self.purge_button.setProperty("danger", True)
        self.purge_button.clicked.connect(self.ask_purge)
        self.entity_buttons = (
            self.rename_button, self.merge_button, self.split_button, self.retract_button,
            self.purge_button,
        )  # fmt: skip
        buttons = QHBoxLayout()
        for b in self.entity_buttons:
            buttons.addWidget(b)
        buttons.addStretch(1)
        self.detail = detail = detail_column(
            self.heading, self.info, self.hint_label, buttons, body=self.facts
        )

        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.show_retracted)
        lv.addLayout(top)
        lv.addWidget(self.stack, 1)
        lv.addWidget(self.count_label)
        self.splitter = list_and_detail(self, left, detail)
        self.set_bank(state.bank)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_columns()
        return super().eventFilter(watched, event)

    def _fit_columns(self) -> None:
        """Aliases stretch into the room the other columns leave; with too little
        room they hide, and the name takes the slack."""
        header = self.table.horizontalHeader()
        others = sum(self.table.columnWidth(c) for c in (2, 3, 4, 5))
        room = self.table.viewport().width() - others
        narrow = room - NAME_WIDTH < ALIASES_MIN_WIDTH
        if narrow == self.table.isColumnHidden(1):
            return  # a name column the user widened stays as they left it
        self.table.setColumnHidden(1, narrow)
        header.setSectionResizeMode(
            0, QHeaderView.ResizeMode.Stretch if narrow else QHeaderView.ResizeMode.Interactive
        )
        if not narrow:
            self.table.setColumnWidth(0, NAME_WIDTH)

    # -- Pane interface ------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self.model.set_entities([])
        self._show_entity(None, [])
        if bank is None:
            self._empty(self.no_bank_text())
        else:
            self.refresh()

    def apply_change(self, change: Change, initiator: object = None) -> None:
        if self.bank is not None and (change.touches(Kind.ENTITY) or change.touches(Kind.UNIT)):
            self.refresh()

    def refresh(self) -> None:
        bank = self.bank
        if bank is None:
            return
        retracted = self.show_retracted.isChecked()
        self.state.runner.run_query(
            lambda: (list(bank.entities(include_retracted=retracted)), bank.merge_hints()),
            self._loaded,
            key=bank,
            latest=(self, "list"),
        )

    def focus_search(self) -> bool:
        self.search.setFocus()
        self.search.selectAll()
        return True

    # -- list ----------------------------------------------------------------

    def _loaded(self, loaded: tuple[list[Entity], list[MergeHint]]) -> None:
        entities, self.hints = loaded
        current = self.current_entity()
        keep = self._keep_id or (current.id if current is not None else None)
        self.model.set_entities(entities)
        count = f"{len(entities):,} entities"
        if self.hints:
            n = len(self.hints)
            count += (
                f' · <a href="hint">{n} possible duplicate{"" if n == 1 else "s"}</a>'
                " (merge hints: nothing is merged unless you do)"
            )
        self.count_label.setText(count)
        if not entities:
            self._empty(
                "No entities yet — ingest a conversation with <b>Ctrl+I</b>.<br>"
                "People, places, organisations and things the facts mention appear here."
            )
            return
        self.stack.setCurrentWidget(self.table)
        row = 0
        if keep is not None:
            for i, e in enumerate(entities):
                if e.id == keep:
                    row = self.proxy.mapFromSource(self.model.index(i, 0)).row()
                    self._keep_id = None
                    break
        self.table.selectRow(max(row, 0))
        # The same row may hold an entity that changed (retracted, renamed): show it anew.
        self._show_current()

    def hints_for(self, entity_id: str) -> list[MergeHint]:
        return [h for h in self.hints if entity_id in (h.source_id, h.target_id)]

    def _next_hint(self, _link: str = "") -> None:
        """Select the entity of the next hint after the current one."""
        if not self.hints:
            return
        current = self.current_entity()
        ids = [h.source_id for h in self.hints]
        at = ids.index(current.id) + 1 if current is not None and current.id in ids else 0
        hint = self.hints[at % len(self.hints)]
        self.select_entity_id(hint.source_id)

    def select_entity_id(self, entity_id: str) -> bool:
        for row in range(self.proxy.rowCount()):
            e = self.proxy.index(row, 0).data(EntityRole)
            if e is not None and e.id == entity_id:
                self.table.selectRow(row)
                return True
        return False

    def _show_hints(self, entity: Entity | None) -> None:
        hints = self.hints_for(entity.id) if entity is not None else []
        if not hints:
            self.hint_label.hide()
            return
        lines = []
        for n, h in enumerate(hints):
            other = h.target_name if h.source_id == entity.id else h.source_name
            lines.append(
                f"May be the same as <b>{html.escape(other)}</b>: {html.escape(h.reason)}."
                f' <a href="{n}">Review merge…</a>'
            )
        self.hint_label.setText("<br>".join(lines))
        self.hint_label.show()

    def _review_hint(self, link: str) -> None:
        entity = self.current_entity()
        hints = self.hints_for(entity.id) if entity is not None else []
        if not link.isdigit() or int(link) >= len(hints):
            return
        hint = hints[int(link)]
        by_id = {e.id: e for e in self.model.entities}
        source, target = by_id.get(hint.source_id), by_id.get(hint.target_id)
        if source is not None and target is not None:
            self.ask_merge(target=target, source=source)

    def _empty(self, text: str) -> None:
        self.empty.setText(text)
        self.stack.setCurrentWidget(self.empty)
        self.count_label.setText("")

    def _filter(self, text: str) -> None:
        self.proxy.setFilterRegularExpression(text.strip())
        self.proxy.invalidate()

    def current_entity(self) -> Entity | None:
        index = self.table.currentIndex()
        return index.data(EntityRole) if index.isValid() else None

    def select_entity(self, name: str) -> bool:
        for row in range(self.proxy.rowCount()):
            e = self.proxy.index(row, 0).data(EntityRole)
            if e is not None and e.name == name:
                self.table.selectRow(row)
                return True
        return False

    # -- detail --------------------------------------------------------------

    def _show_current(self) -> None:
        entity = self.current_entity()
        bank = self.bank
        if entity is None or bank is None:
            self._show_entity(None, [])
            return
        self._show_entity(entity, None)
        # A retracted entity's page shows what it had (hidden now), not nothing.
        status = None if str(entity.status) == str(UnitStatus.RETRACTED) else UnitStatus.ACTIVE
        self.state.runner.run_query(
            lambda: bank.units(
                entity=entity.id,
                network=None,
                status=status,
                order="occurred_start",
                limit=FACTS_SHOWN,
            ),
            lambda units: self._facts_loaded(entity, units),
            key=bank,
            latest=(self, "detail"),
        )

    def _facts_loaded(self, entity: Entity, units: list[Unit]) -> None:
        current = self.current_entity()
        if current is not None and current.id == entity.id:
            self._show_entity(entity, units)

    def _show_entity(self, entity: Entity | None, units: list[Unit] | None) -> None:
        self.units = units or []
        self._update_buttons(entity)
        self._show_hints(entity)
        self.detail.setVisible(entity is not None)  # nothing to show: the list takes the room
        if entity is None:
            self.heading.setText("")
            self.info.setText("Select an entity to see the facts that mention it.")
            self.facts.clear()
            return
        retracted = str(entity.status) == str(UnitStatus.RETRACTED)
        self.heading.setText(html.escape(entity.name) + (" (retracted)" if retracted else ""))
        aliases = ", ".join(entity.aliases) or "none"
        seen = f"{fmt_time(entity.first_seen, False) or '?'} → {fmt_time(entity.last_seen, False) or '?'}"
        self.info.setText(
            f"{entity.type} · {entity.mention_count:,} mentions · seen {seen}\naliases: {aliases}"
        )
        if units is None:
            self.facts.setHtml("<i>Loading facts…</i>")
            return
        self.facts.setHtml(
            (
                "<p><b>Retracted:</b> hidden from recall, reflect and the default views."
                " This is what it had; Restore (or Undo) brings it back.</p>"
                if retracted
                else ""
            )
            + facts_html(units)
        )

    # -- curation ------------------------------------------------------------

    def _update_buttons(self, entity: Entity | None) -> None:
        retracted = entity is not None and str(entity.status) == str(UnitStatus.RETRACTED)
        for button in self.entity_buttons:
            button.setEnabled(entity is not None)
        self.retract_button.setText("Restore" if retracted else "Retract…")
        for button in (self.rename_button, self.merge_button, self.split_button):
            button.setEnabled(entity is not None and not retracted)

    def _run(self, fn: Any, done: str, keep: str | None = None) -> None:
        bank = self.bank
        if bank is None:
            return
        self._keep_id = keep
        self.state.runner.run_op(lambda: fn(bank), lambda _: self.state.status.emit(done), key=bank)

    def _show_retracted_too(self) -> None:
        """After a retract the entity stays listed (and selected), marked retracted."""
        if not self.show_retracted.isChecked():
            self.show_retracted.blockSignals(True)
            self.show_retracted.setChecked(True)
            self.show_retracted.blockSignals(False)

    def rename(self, entity_id: str, name: str, keep_alias: bool = True) -> None:
        self._run(
            lambda b: b.rename_entity(entity_id, name, keep_alias=keep_alias),
            f"Renamed to {name}.",
            entity_id,
        )

    def merge(self, source_id: str, target_id: str) -> None:
        self._run(lambda b: b.merge_entities(source_id, target_id), "Merged.", target_id)

    def split(
        self, entity_id: str, unit_ids: list[str], name: str, type: str | None = None
    ) -> None:
        self._run(
            lambda b: b.split_entity(entity_id, unit_ids, name, type=type),
            f"Split off {name}.",
            entity_id,
        )

    def retract(self, entity_id: str) -> None:
        self._show_retracted_too()
        self._run(
            lambda b: b.retract_entity(entity_id),
            "Retracted (Restore or Undo brings it back).",
            entity_id,
        )

    def restore(self, entity_id: str) -> None:
        self._run(lambda b: b.restore_entity(entity_id), "Restored.", entity_id)

    def purge(self, entity_id: str) -> None:
        bank = self.bank
        if bank is None:
            return
        self.state.runner.run_job(
            "Purging an entity",
            lambda progress, cancel: bank.purge_entity(entity_id, confirm=True, progress=progress),
            lambda _: self.state.status.emit("Purged."),
            key=bank,
        )

    def ask_rename(self) -> None:
        entity = self.current_entity()
        if entity is None:
            return
        dialog = RenameEntityDialog(entity, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.rename(entity.id, *dialog.values())
        dialog.deleteLater()

    def ask_merge(self, target: Entity | None = None, source: Entity | None = None) -> None:
        source = source or self.current_entity()
        if source is None:
            return
        dialog = MergeEntityDialog(source, self.model.entities, target, self)
        if dialog.exec() == QDialog.DialogCode.Accepted and dialog.target_id():
            self.merge(source.id, dialog.target_id())
        dialog.deleteLater()

    def _merge_dropped(self, source_id: str, target_id: str) -> None:
        by_id = {e.id: e for e in self.model.entities}
        if source_id in by_id and target_id in by_id:
            self.ask_merge(target=by_id[target_id], source=by_id[source_id])

    def ask_split(self) -> None:
        entity = self.current_entity()
        if entity is None or not self.units:
            return
        dialog = SplitEntityDialog(entity, self.units, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.split(entity.id, *dialog.values())
        dialog.deleteLater()

    def ask_retract(self) -> None:
        entity = self.current_entity()
        bank = self.bank
        if entity is None or bank is None:
            return
        if str(entity.status) == str(UnitStatus.RETRACTED):
            self.restore(entity.id)
            return
        self.state.runner.run_query(
            lambda: bank.retract_preview(entity.id), self._confirm_retract, key=bank
        )

    def _confirm_retract(self, preview: Any) -> None:
        dialog = RetractEntityDialog(preview, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.retract(preview.entity_id)
        dialog.deleteLater()

    def ask_purge(self) -> None:
        entity = self.current_entity()
        bank = self.bank
        if entity is None or bank is None:
            return
        self.state.runner.run_query(
            lambda: (bank.retract_preview(entity.id), bank.exports()),
            self._confirm_purge,
            key=bank,
        )

    def _confirm_purge(self, found: tuple[Any, list]) -> None:
        preview, exports = found
        dialog = PurgeEntityDialog(preview, self, exports=exports)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.purge(preview.entity_id)
        dialog.deleteLater()


def facts_html(units: list[Unit]) -> str:
    if not units:
        return "<i>No active facts mention this entity.</i>"
    parts = []
    for network in (Network.OBSERVATION, Network.OPINION, Network.WORLD, Network.EXPERIENCE):
        group = [u for u in units if u.network == network]
        if not group:
            continue
        color = NETWORK_COLORS[network]
        parts.append(
            f"<h4 style='color:{color};margin:8px 0 2px 0'>{network.value.capitalize()} "
            f"({len(group)})</h4>"
        )
        for u in group:
            when = fmt_time(u.occurred_start, with_time=False)
            conf = f" · confidence {u.confidence:.2f}" if u.confidence is not None else ""
            status = "" if str(u.status) == str(UnitStatus.ACTIVE) else f" · {u.status}"
            meta = (
                f"<span style='color:gray'>{when}{conf}{status}</span> "
                if when or conf or status
                else ""
            )
            parts.append(f"<p style='margin:2px 0'>{meta}{html.escape(u.text)}</p>")
    if len(units) >= FACTS_SHOWN:
        parts.append(f"<p><i>The first {FACTS_SHOWN} facts are shown.</i></p>")
    return "".join(parts)
