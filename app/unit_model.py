"""A lazy table of units: pages of 100 fetched in the runner as the view needs them.

The model knows the row count (one `bank.count` query) but holds only a
window of pages (an LRU cache). `data()` for a row whose page is not cached
answers "Loading…" and asks for that page; the page arrives from the runner
and the rows repaint. Requests are coalesced and the newest win: dragging the
scrollbar across 100,000 rows fetches the pages where it stops, not every page
it passed. This is a windowed cache rather than canFetchMore/fetchMore, which
would have to fetch every page above a row before showing it.

A change record that touches units marks the cached pages stale instead of
dropping them: the view keeps showing the old rows until fresh ones arrive, so
an edit or delete does not blank the table or lose the scroll position.

A selection follows its unit, not its row number: when a fresh page shows a
unit at another row (a write landed above it, one above it went, the order
changed), every persistent index on it — the view's selection and current
row — moves with it (`changePersistentIndex`), and one on a unit that is
gone lets go. So Delete acts on the unit the person is looking at, whatever
an agent writes meanwhile.

Rows another actor just wrote are marked for a while (`marks`, the studio's
activity feed).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QItemSelectionModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QColor

from app.runner import Runner, describe
from core import Kind

if TYPE_CHECKING:
    from core import Bank, Change, Network, Unit

PAGE_SIZE = 100
MAX_PAGES = 60  # cached pages (6,000 units) before the least recently used go
MAX_IN_FLIGHT = 2
MAX_WANTED = 6  # pages asked for but not started; older asks are dropped (scrolled past)

UnitRole = Qt.ItemDataRole.UserRole + 1
MARK_COLOR = "#fde68a"  # a row another actor just wrote (amber, readable in both themes)

Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    order: str | None  # the `bank.units(order=...)` key; None when not sortable


COLUMNS: tuple[Column, ...] = (
    Column("text", "Text", "text"),
    Column("occurred", "Occurred", "occurred_start"),
    Column("mentioned", "Mentioned", "mentioned_at"),
    Column("confidence", "Confidence", "confidence"),
    Column("entities", "Entities", None),
    Column("mode", "Mode", None),
    Column("updated", "Updated", "updated_at"),
)
COLUMN = {c.key: i for i, c in enumerate(COLUMNS)}


def fmt_time(value: datetime | None, with_time: bool = True) -> str:
    if value is None:
        return ""
    if not with_time or (value.hour, value.minute, value.second) == (0, 0, 0):
        return value.strftime("%Y-%m-%d")
    return value.strftime("%Y-%m-%d %H:%M")


def fmt_interval(start: datetime | None, end: datetime | None) -> str:
    if start is None:
        return "unknown"
    if end is None or end == start:
        return fmt_time(start)
    return f"{fmt_time(start)} → {fmt_time(end)}"


class UnitTableModel(QAbstractTableModel):
    count_changed = Signal(int)  # rows after each count
    page_loaded = Signal(int)  # a page arrived (its number)
    edit_requested = Signal(str, dict)  # unit id, edit_unit keyword arguments
    failed = Signal(str)

    def __init__(self, runner: Runner, network: Network | None = None, parent: Any = None) -> None:
        super().__init__(parent)
        self.runner = runner
        self.network = network
        self._bank: Bank | None = None
        self._filters: dict[str, Any] = {}
        self._order = "occurred_start"
        self._descending = False
        self._rows = 0
        self._counted = False
        self._pages: OrderedDict[int, list[Unit]] = OrderedDict()
        self._stale: set[int] = set()
        self._in_flight: set[int] = set()
        self._wanted: OrderedDict[int, None] = OrderedDict()
        self.entity_names: dict[str, str] = {}
        # The studio's activity feed (app/activity_feed.py): rows others just wrote.
        self.marks = None
        # Every page fetched, in order; `count_fetches` counts count queries. For
        # tests and benchmarks: proof the model fetches what is seen and no more.
        self.fetches: list[int] = []
        self.count_fetches = 0
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(0)
        self._flush_timer.timeout.connect(self._flush)

    # -- what is shown -------------------------------------------------------

    @property
    def bank(self) -> Bank | None:
        return self._bank

    @property
    def counted(self) -> bool:
        return self._counted

    @property
    def filters(self) -> dict[str, Any]:
        return dict(self._filters)

    @property
    def order(self) -> tuple[str, bool]:
        return self._order, self._descending

    def set_bank(self, bank: Bank | None, filters: Mapping[str, Any] | None = None) -> None:
        """Show `bank`, with `filters` when given (one reload for both)."""
        self._bank = bank
        self.entity_names = {}
        if filters is not None:
            self._filters = {k: v for k, v in filters.items() if v is not None and v != ""}
        self.reload()

    def set_filters(self, filters: Mapping[str, Any]) -> None:
        clean = {k: v for k, v in filters.items() if v is not None and v != ""}
        if clean != self._filters:
            self._filters = clean
            self.reload()

    def set_order(self, order: str, descending: bool = False) -> None:
        if (order, descending) != (self._order, self._descending):
            self._order, self._descending = order, descending
            self.reload()

    def set_entity_names(self, names: Mapping[str, str]) -> None:
        self.entity_names = dict(names)
        if self._rows:
            col = COLUMN["entities"]
            self.dataChanged.emit(self.index(0, col), self.index(self._rows - 1, col))

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        key = COLUMNS[column].order
        if key is not None:
            self.set_order(key, order == Qt.SortOrder.DescendingOrder)

    def sort_column(self) -> int:
        for i, c in enumerate(COLUMNS):
            if c.order == self._order:
                return i
        return COLUMN["occurred"]

    # -- refresh -------------------------------------------------------------

    def reload(self) -> None:
        """Start over: new filters, order or bank. Rows reappear as the count arrives."""
        self.runner.supersede(self)  # reads for the old bank, filter or order never arrive
        self.beginResetModel()
        self._rows = 0
        self._counted = False
        self._pages.clear()
        self._stale.clear()
        self._in_flight.clear()
        self._wanted.clear()
        self.endResetModel()
        if self._bank is not None:
            self._request_count()
            self._want(0)

    def refresh(self) -> None:
        """Re-read in place: keep showing cached rows until fresh ones replace them."""
        if self._bank is None:
            return
        self.runner.supersede(self)
        self._stale.update(self._pages)
        self._in_flight.clear()
        self._wanted.clear()
        self._request_count(repaint=True)

    def apply_change(self, change: Change) -> None:
        if change.touches(Kind.UNIT):
            self.refresh()

    # -- Qt model API --------------------------------------------------------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else self._rows

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section].title
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            c = COLUMNS[section]
            return f"Sort by {c.title.lower()}" if c.order else f"{c.title} (not sortable)"
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        base = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.column() == COLUMN["text"] and self.unit_at(index.row()) is not None:
            base |= Qt.ItemFlag.ItemIsEditable
        return base

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        unit = self._unit(index.row())
        key = COLUMNS[index.column()].key
        if unit is None:
            if role == Qt.ItemDataRole.DisplayRole and key == "text":
                return "Loading…"
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(unit, key)
        if role == Qt.ItemDataRole.EditRole and key == "text":
            return unit.text
        marked = self.marks is not None and self.marks.is_marked(unit.id)
        if role == Qt.ItemDataRole.BackgroundRole and marked:
            return QColor(MARK_COLOR)
        if role == Qt.ItemDataRole.ToolTipRole:
            if key == "text":
                new = (
                    f"New: written by {self.marks.marked_by(unit.id)} just now\n\n"
                    if marked
                    else ""
                )
                return (new + unit.text) if (new or len(unit.text) > 80) else None
            if key == "occurred":
                return fmt_interval(unit.occurred_start, unit.occurred_end)
            if key == "entities":
                return self._display(unit, key) or None
            if key == "mode" and unit.model:
                return f"{unit.extraction_mode} · {unit.model}"
        if role == UnitRole:
            return unit
        if role == Qt.ItemDataRole.TextAlignmentRole and key == "confidence":
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or COLUMNS[index.column()].key != "text":
            return False
        unit = self.unit_at(index.row())
        text = str(value).strip()
        if unit is None or not text or text == unit.text:
            return False
        # Show the new text at once; the change record re-reads the row.
        self._replace(index.row(), replace(unit, text=text))
        self.edit_requested.emit(unit.id, {"text": text})
        return True

    def _display(self, unit: Unit, key: str) -> str:
        if key == "text":
            return unit.text.replace("\n", " ")
        if key == "occurred":
            return fmt_time(unit.occurred_start)
        if key == "mentioned":
            return fmt_time(unit.mentioned_at)
        if key == "confidence":
            return "" if unit.confidence is None else f"{unit.confidence:.2f}"
        if key == "entities":
            names = [self.entity_names.get(e) for e in unit.entity_ids]
            known = [n for n in names if n]
            if known:
                return ", ".join(known)
            return f"{len(unit.entity_ids)}" if unit.entity_ids else ""
        if key == "mode":
            return str(unit.extraction_mode)
        if key == "updated":
            return fmt_time(unit.updated_at)
        return ""

    # -- rows ----------------------------------------------------------------

    def unit_at(self, row: int) -> Unit | None:
        if not 0 <= row < self._rows:  # a page read before the count names no row yet
            return None
        page = self._pages.get(row // PAGE_SIZE)
        if page is None:
            return None
        offset = row % PAGE_SIZE
        return page[offset] if offset < len(page) else None

    def row_of(self, unit_id: str) -> int | None:
        for number, page in self._pages.items():
            for i, unit in enumerate(page):
                if unit.id == unit_id:
                    return number * PAGE_SIZE + i
        return None

    def cached_pages(self) -> list[int]:
        return sorted(self._pages)

    def ids_for_rows(self, rows: Sequence[int]) -> Callable[[], list[str]]:
        """A function (to run in the runner) giving the unit ids of `rows`,
        reading pages that are not cached with the current bank, filters and order."""
        known: dict[int, str] = {}
        missing: set[int] = set()
        for row in rows:
            unit = self.unit_at(row)
            if unit is not None:
                known[row] = unit.id
            else:
                missing.add(row // PAGE_SIZE)
        bank, args = self._bank, self._query_args()
        wanted = list(rows)

        def resolve() -> list[str]:
            ids = dict(known)
            for page in sorted(missing):
                units = bank.units(offset=page * PAGE_SIZE, limit=PAGE_SIZE, **args)
                for i, unit in enumerate(units):
                    ids.setdefault(page * PAGE_SIZE + i, unit.id)
            return [ids[r] for r in wanted if r in ids]

        return resolve

    def _unit(self, row: int) -> Unit | None:
        number = row // PAGE_SIZE
        page = self._pages.get(number)
        if page is None or number in self._stale:
            self._want(number)
        if page is not None:
            self._pages.move_to_end(number)
            offset = row % PAGE_SIZE
            return page[offset] if offset < len(page) else None
        return None

    def _replace(self, row: int, unit: Unit) -> None:
        page = self._pages.get(row // PAGE_SIZE)
        if page is not None and row % PAGE_SIZE < len(page):
            page[row % PAGE_SIZE] = unit
            self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    # -- fetching ------------------------------------------------------------

    def _query_args(self) -> dict[str, Any]:
        return {
            "network": self.network,
            "order": self._order,
            "descending": self._descending,
            **self._filters,
        }

    def _request_count(self, repaint: bool = False) -> None:
        bank, args = self._bank, self._query_args()
        for k in ("order", "descending"):
            args.pop(k)
        self.count_fetches += 1
        self.runner.run_query(
            lambda: bank.count(**args),
            lambda n: self._count_loaded(n, repaint),
            self._failed,
            key=bank,
            latest=(self, "count"),
        )

    def _want(self, page: int) -> None:
        if page in self._in_flight or self._bank is None:
            return
        if self._counted and page * PAGE_SIZE >= max(self._rows, 1):
            return
        self._wanted[page] = None
        self._wanted.move_to_end(page)
        while len(self._wanted) > MAX_WANTED:
            self._wanted.popitem(last=False)
        if not self._flush_timer.isActive():
            self._flush_timer.start()

    def _flush(self) -> None:
        while self._wanted and len(self._in_flight) < MAX_IN_FLIGHT:
            page, _ = self._wanted.popitem(last=True)  # newest first: where the view is now
            if page in self._pages and page not in self._stale:
                continue
            self._fetch(page)

    def _fetch(self, page: int) -> None:
        bank, args = self._bank, self._query_args()
        self._in_flight.add(page)
        self.fetches.append(page)
        self.runner.run_query(
            lambda: bank.units(offset=page * PAGE_SIZE, limit=PAGE_SIZE, **args),
            lambda units: self._page_loaded(page, units),
            lambda error: self._failed(error, page),
            key=bank,
            latest=(self, f"page {page}"),
        )

    def _count_loaded(self, rows: int, repaint: bool) -> None:
        old = self._rows
        if rows < old:
            self.beginRemoveRows(QModelIndex(), rows, old - 1)
            self._rows = rows
            for page in [p for p in self._pages if p * PAGE_SIZE >= rows]:
                del self._pages[page]
                self._stale.discard(page)
            self.endRemoveRows()
        elif rows > old:
            self.beginInsertRows(QModelIndex(), old, rows - 1)
            self._rows = rows
            self.endInsertRows()
        self._counted = True
        if repaint and self._rows:
            # The view asks again for what it shows; stale pages are re-read then.
            self.dataChanged.emit(self.index(0, 0), self.index(self._rows - 1, len(COLUMNS) - 1))
        self.count_changed.emit(rows)

    def _page_loaded(self, page: int, units: list[Unit]) -> None:
        self._in_flight.discard(page)
        # Views turn their selections into persistent indexes on this signal: only
        # then can those be moved with their units (see _follow).
        following = bool(self.persistentIndexList())
        if following:
            self.layoutAboutToBeChanged.emit()
        held = self._held_units()
        self._pages[page] = list(units)
        self._pages.move_to_end(page)
        self._stale.discard(page)
        self._evict()
        if following:
            self._follow(held, page)
            self.layoutChanged.emit()
        first = page * PAGE_SIZE
        last = min(first + len(units), self._rows) - 1
        if last >= first:
            self.dataChanged.emit(self.index(first, 0), self.index(last, len(COLUMNS) - 1))
        self.page_loaded.emit(page)
        if self._wanted:
            self._flush()

    # -- a selection follows its unit ------------------------------------------

    def _held_units(self) -> list[tuple[QPersistentModelIndex, str]]:
        """Each persistent index (a view's selection, its current row) and the unit
        it stands on now."""
        held = []
        for index in self.persistentIndexList():
            unit = self.unit_at(index.row())
            if unit is not None:
                held.append((QPersistentModelIndex(index), unit.id))
        return held

    def _follow(self, held: list[tuple[QPersistentModelIndex, str]], page: int) -> None:
        """After `page` was read afresh (between layoutAboutToBeChanged and
        layoutChanged): move every persistent index to where its unit is now; let
        go of one whose unit is nowhere to be seen."""
        moves = []
        for index, unit_id in held:
            if not index.isValid():
                continue
            row = index.row()
            here = self.unit_at(row)
            if here is not None and here.id == unit_id:
                continue
            fresh = self._row_in(unit_id, fresh=True)
            if fresh is None and row // PAGE_SIZE != page:
                continue  # its page is not read afresh yet: it still shows it
            target = fresh if fresh is not None else self._row_in(unit_id, fresh=False)
            moves.append((index, target))
        for index, target in moves:
            column = index.column()
            new = self.index(target, column) if target is not None else QModelIndex()
            self.changePersistentIndex(QModelIndex(index), new)

    def _row_in(self, unit_id: str, *, fresh: bool) -> int | None:
        for number, units in self._pages.items():
            if (number in self._stale) == fresh:
                continue
            for i, unit in enumerate(units):
                if unit.id == unit_id:
                    return number * PAGE_SIZE + i
        return None

    def select_ids(self, selection: QItemSelectionModel, ids: Sequence[str]) -> int:
        """Select the rows of `ids` that are cached; returns how many."""
        rows = sorted(r for r in (self.row_of(i) for i in ids) if r is not None)
        flags = (
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows
        )
        for n, row in enumerate(rows):
            index = self.index(row, 0)
            if n == 0:
                selection.setCurrentIndex(index, flags)
            else:
                selection.select(
                    index,
                    QItemSelectionModel.SelectionFlag.Select
                    | QItemSelectionModel.SelectionFlag.Rows,
                )
        return len(rows)

    def mark_all(self) -> None:
        """The marks changed: repaint what is shown."""
        if self._rows:
            self.dataChanged.emit(self.index(0, 0), self.index(self._rows - 1, len(COLUMNS) - 1))

    def _evict(self) -> None:
        while len(self._pages) > MAX_PAGES:
            self._pages.popitem(last=False)

    def _failed(self, error: BaseException, page: int | None = None) -> None:
        if page is not None:
            self._in_flight.discard(page)
        self.failed.emit(describe(error))
