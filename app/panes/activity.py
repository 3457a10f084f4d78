"""Activity: every operation on the bank as it happens, like a browser's network panel.

Newest first: when, who (an agent's token name, the CLI, the studio), how it
came in, what it was, a one-line summary, how long it took and how it went.
Filters by actor and kind; Pause holds the feed still (what arrives meanwhile
is counted, and shown on Resume). A recall opens in the recall debugger with
the trace the caller got, to replay against the bank as it is now; a write
selects what it produced in the panes that show it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QStackedWidget,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import Pane, detail_column, empty_label, list_and_detail, muted_label
from app.state import StudioState
from core import ACTIVITY_KINDS, Kind

if TYPE_CHECKING:
    from core import ActivityEntry, Bank, Change

LIMIT = 500  # entries the feed holds; older ones are in the journal (engram activity)
COLUMNS = ("When", "Who", "Via", "Kind", "What", "Took", "")
ALL = ""
Index = QModelIndex | QPersistentModelIndex
ERROR_COLOR = "#c0392b"


class ActivityModel(QAbstractTableModel):
    """Entries newest first. New ones are inserted at the top as rows of their
    own, so a selection stays on its entry while the feed moves under it."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.entries: list[ActivityEntry] = []

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self.entries):
            return None
        e = self.entries[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (
                e.started_at.strftime("%H:%M:%S"),
                e.actor,
                e.transport,
                e.kind,
                e.summary,
                _took(e.duration_ms),
                "" if e.outcome == "ok" else e.outcome,
            )[col]
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == 0:
                return f"{e.started_at.isoformat(' ', 'seconds')} UTC · #{e.id}"
            if col == 4:
                return e.summary + (f"\n\n{e.error}" if e.error else "")
        if role == Qt.ItemDataRole.ForegroundRole and e.outcome != "ok" and col in (4, 6):
            return QColor(ERROR_COLOR)
        if role == Qt.ItemDataRole.TextAlignmentRole and col == 5:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def reset(self, entries: Sequence[ActivityEntry]) -> None:
        self.beginResetModel()
        self.entries = list(entries)[:LIMIT]
        self.endResetModel()

    def prepend(self, entries: Sequence[ActivityEntry]) -> None:
        """Newer entries (newest first) on top; the oldest beyond LIMIT go."""
        known = {e.id for e in self.entries}
        fresh = [e for e in entries if e.id not in known]
        if not fresh:
            return
        self.beginInsertRows(QModelIndex(), 0, len(fresh) - 1)
        self.entries[:0] = fresh
        self.endInsertRows()
        if len(self.entries) > LIMIT:
            self.beginRemoveRows(QModelIndex(), LIMIT, len(self.entries) - 1)
            del self.entries[LIMIT:]
            self.endRemoveRows()

    def row_of(self, entry_id: int) -> int:
        for row, e in enumerate(self.entries):
            if e.id == entry_id:
                return row
        return -1


def _took(ms: float) -> str:
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.0f} ms"


class ActivityPane(Pane):
    title = "Activity"
    slug = "activity"
    # Asked of the window: open a journaled recall in the recall debugger,
    # and show what a write produced (unit ids, document ids).
    recall_requested = Signal(object)  # ActivityEntry
    change_requested = Signal(object)  # Change

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self.paused = False
        self.held: list[ActivityEntry] = []  # arrived while paused, newest first
        self.model = ActivityModel(self)
        self.table = QTableView()
        self.table.setObjectName("activity")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        for col in range(len(COLUMNS)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.table.selectionModel().currentRowChanged.connect(lambda *_: self._show_current())
        self.table.doubleClicked.connect(lambda _index: self.open_current())

        self.actor = QComboBox()
        self.actor.setObjectName("activity-actor")
        self.actor.addItem("Everyone", ALL)
        self.actor.setMinimumContentsLength(14)
        self.actor.currentIndexChanged.connect(lambda _: self.reload())
        self.kind = QComboBox()
        self.kind.setObjectName("activity-kind")
        self.kind.addItem("Every kind", ALL)
        for kind in ACTIVITY_KINDS:
            self.kind.addItem(kind.capitalize(), kind)
        self.kind.currentIndexChanged.connect(lambda _: self.reload())
        self.pause_button = QPushButton("Pause")
        self.pause_button.setObjectName("activity-pause")
        self.pause_button.setCheckable(True)
        self.pause_button.setToolTip("Hold the feed still; what arrives meanwhile shows on Resume")
        self.pause_button.toggled.connect(self.set_paused)
        self.count_label = muted_label()
        self.count_label.setWordWrap(False)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Who"))
        bar.addWidget(self.actor)
        bar.addWidget(QLabel("Kind"))
        bar.addWidget(self.kind)
        bar.addWidget(self.pause_button)
        bar.addWidget(self.count_label, 1)

        self.empty = self.no_bank_label(empty_label())
        self.empty.setObjectName("empty-state")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.table)
        self.stack.addWidget(self.empty)
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addLayout(bar)
        lv.addWidget(self.stack, 1)

        self.heading = QLabel()
        self.heading.setProperty("role", "heading")
        self.heading.setWordWrap(True)
        self.info = muted_label()
        self.body = QTextBrowser()
        self.body.setObjectName("activity-detail")
        self.open_button = QPushButton("Open in the recall debugger")
        self.open_button.setObjectName("activity-open")
        self.open_button.setProperty("primary", True)
        self.open_button.clicked.connect(self.open_current)
        buttons = QHBoxLayout()
        buttons.addWidget(self.open_button)
        buttons.addStretch(1)
        self.detail = detail_column(self.heading, self.info, buttons, body=self.body)
        self.splitter = list_and_detail(self, left, self.detail, (3, 2))

        state.activity.recorded.connect(self._recorded)
        self.set_bank(state.bank)

    # -- Pane interface --------------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self.held.clear()
        self.model.reset([])
        self._show_entry(None)
        if bank is None:
            self._empty(self.no_bank_text())
        else:
            self.reload()

    def apply_change(self, change: Change, initiator: object = None) -> None:
        """The feed is live; a change needs no re-read (new actors come with it)."""

    def refresh(self) -> None:
        self.reload()

    # -- reading ---------------------------------------------------------------------

    def filters(self) -> dict[str, str | None]:
        return {"actor": self.actor.currentData() or None, "kind": self.kind.currentData() or None}

    def reload(self) -> None:
        bank = self.bank
        if bank is None:
            return
        filters = self.filters()

        def read() -> tuple[list, list]:
            return bank.activity(limit=LIMIT, **filters), bank.activity_actors()

        self.state.runner.run_query(
            read, lambda got: self._loaded(bank, *got), key=bank, latest=(self, "list")
        )

    def _loaded(self, bank: Bank, entries: list[ActivityEntry], actors: list[str]) -> None:
        if bank is not self.bank:
            return
        current = self.current_entry()
        self.held.clear()
        self.model.reset(entries)
        self._set_actors(actors)
        self._show_state()
        row = self.model.row_of(current.id) if current is not None else -1
        if row >= 0:
            self.table.selectRow(row)
        else:
            self._show_entry(None)

    def _set_actors(self, actors: Sequence[str]) -> None:
        known = {self.actor.itemData(i) for i in range(self.actor.count())}
        self.actor.blockSignals(True)
        for actor in actors:
            if actor not in known:
                self.actor.addItem(actor, actor)
        self.actor.blockSignals(False)

    def _recorded(self, entry: ActivityEntry) -> None:
        if self.bank is None:
            return
        self._set_actors([entry.actor])
        f = self.filters()
        if (f["actor"] and entry.actor != f["actor"]) or (f["kind"] and entry.kind != f["kind"]):
            return
        if self.paused:
            self.held.insert(0, entry)
            self._update_count()
            return
        self.model.prepend([entry])
        self._show_state()

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        self.pause_button.setText("Resume" if paused else "Pause")
        if self.pause_button.isChecked() != paused:
            self.pause_button.setChecked(paused)
        if not paused and self.held:
            held, self.held = self.held, []
            self.model.prepend(held)
            self._show_state()
        self._update_count()

    # -- showing ---------------------------------------------------------------------

    def _empty(self, text: str) -> None:
        self.empty.setText(text)
        self.stack.setCurrentWidget(self.empty)
        self.count_label.setText("")

    def _show_state(self) -> None:
        if self.bank is None:
            self._empty(self.no_bank_text())
        elif not self.model.entries:
            filtered = any(self.filters().values())
            self._empty(
                "Nothing matches these filters."
                if filtered
                else "No activity yet.<br>Every retain, recall, reflect and curation — the "
                "studio's and every agent's — appears here as it happens."
            )
        else:
            self.stack.setCurrentWidget(self.table)
            self._update_count()

    def _update_count(self) -> None:
        n = len(self.model.entries)
        text = f"{n:,} entr{'y' if n == 1 else 'ies'}" + (" (the latest)" if n >= LIMIT else "")
        if self.paused:
            text += f" · paused, {len(self.held):,} new"
        self.count_label.setText(text)

    def current_entry(self) -> ActivityEntry | None:
        row = self.table.currentIndex().row()
        return self.model.entries[row] if 0 <= row < len(self.model.entries) else None

    def select_entry(self, entry_id: int) -> bool:
        row = self.model.row_of(entry_id)
        if row >= 0:
            self.table.selectRow(row)
        return row >= 0

    def _show_current(self) -> None:
        self._show_entry(self.current_entry())

    def _show_entry(self, entry: ActivityEntry | None) -> None:
        self.detail.setVisible(entry is not None)
        if entry is None:
            self.heading.setText("")
            self.info.setText("")
            self.body.clear()
            return
        self.heading.setText(html.escape(entry.summary))
        self.info.setText(
            f"#{entry.id} · {entry.started_at.isoformat(' ', 'seconds')} UTC · {entry.actor}"
            f" via {entry.transport} · {entry.kind} ({entry.operation}) · {_took(entry.duration_ms)}"
            f" · {entry.outcome}"
        )
        self.body.setHtml(entry_html(entry))
        is_recall = entry.operation == "recall" and entry.outcome == "ok" and not entry.redacted
        writes = entry.change is not None and not entry.redacted
        self.open_button.setVisible(is_recall or writes)
        self.open_button.setText(
            "Open in the recall debugger" if is_recall else "Show what it changed"
        )

    # -- acting on an entry ----------------------------------------------------------

    def open_current(self) -> None:
        entry = self.current_entry()
        if entry is None or entry.redacted:
            return
        if entry.operation == "recall" and entry.outcome == "ok":
            self.recall_requested.emit(entry)
        elif entry.change is not None:
            self.change_requested.emit(entry.change)

    def prepare_screenshot(self, idle) -> None:
        """For `engram screenshot`: the feed with an agent's latest recall selected."""
        self.reload()
        idle()
        for row, entry in enumerate(self.model.entries):
            if entry.operation == "recall" and entry.transport not in ("studio", "python"):
                self.table.selectRow(row)
                break
        idle()


def entry_html(entry: ActivityEntry) -> str:
    parts = []
    if entry.error:
        parts.append(f"<p style='color:{ERROR_COLOR}'>{html.escape(entry.error)}</p>")
    if entry.arguments:
        rows = "".join(
            f"<tr><td><b>{html.escape(str(k))}</b></td><td>{html.escape(_short(v))}</td></tr>"
            for k, v in entry.arguments.items()
        )
        parts.append(f"<h4>Asked</h4><table cellspacing='4'>{rows}</table>")
    if entry.unit_ids:
        parts.append(
            f"<h4>Packed</h4><p>{len(entry.unit_ids)} facts, {entry.tokens or 0} tokens</p>"
        )
    if entry.change is not None:
        lines = []
        for side in ("added", "updated", "removed"):
            for kind, ids in sorted(getattr(entry.change, side).items()):
                if kind is Kind.JOB:
                    continue
                lines.append(f"{side} {len(ids):,} {kind}{'s' if len(ids) != 1 else ''}")
        if lines:
            parts.append("<h4>Changed</h4><p>" + html.escape("; ".join(lines)) + "</p>")
    return "".join(parts) or "<p><i>Nothing more was kept.</i></p>"


def _short(value: Any, width: int = 160) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"
