"""Opinion timelines: each opinion's confidence over time, and the evidence behind each step.

A step plot per opinion (y fixed to [0, 1]), several overlaid, with a marker
per event — formed, reinforce, weaken, contradict — whose hover shows the
evidence and the reason and whose click opens the evidence unit. Opinions are
filtered by entity and by time; the side panel shows the current confidence,
the texts the opinion has had and every step. Histories are read in the runner.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QDate, QPointF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDateEdit,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import Pane, empty_label, muted_label, read_only_table
from app.runner import describe
from app.state import StudioState
from core import Kind

if TYPE_CHECKING:
    from core import Bank, Change, Unit

# (symbol, colour, what it means) per event relation.
MARKERS = {
    "formed": ("o", "#64748b", "formed"),
    "reinforce": ("t1", "#16a34a", "reinforced"),
    "weaken": ("t", "#ea580c", "weakened"),
    "contradict": ("x", "#dc2626", "contradicted"),
    "neutral": ("s", "#94a3b8", "neutral evidence"),
    # Steps that are not evidence: a person set the confidence, or evidence was removed.
    "edited": ("star", "#7c3aed", "set by hand"),
    "revised": ("d", "#0891b2", "revised (evidence removed)"),
}
OTHER_MARKER = ("d", "#6366f1", "changed")
LINE_COLORS = (
    "#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2", "#65a30d", "#dc2626",
)  # fmt: skip
MARKER_SIZE = 13
HOVER_WIDTH = 380  # pixels: the hover note wraps to this width
LEGEND_CHARS = 48  # a legend line is at most about this long (and never wider than the plot)
LEGEND_SAMPLE_PX = 60  # the legend's offset, its line sample and margins
EMPTY = (
    "No opinions in this bank yet — ingest a conversation with <b>Ctrl+I</b>.<br>"
    "Opinions are the agent's beliefs; each step of their confidence shows here with its evidence."
)


@dataclass(frozen=True)
class Point:
    """One event of one opinion, as plotted."""

    opinion_id: str
    index: int  # the step's place in the trajectory
    when: datetime
    confidence: float
    relation: str
    before: float | None
    reason: str
    evidence_id: str | None
    evidence_text: str


def points_of(trajectory) -> list[Point]:
    """The plotted points of an OpinionTrajectory: one per event, oldest first."""
    out = []
    for i, step in enumerate(trajectory.steps):
        e = step.event
        out.append(
            Point(
                trajectory.opinion.id,
                i,
                e.happened_at,
                float(e.confidence_after),
                str(e.relation),
                None if e.confidence_before is None else float(e.confidence_before),
                e.reason or "",
                e.evidence_id,
                step.evidence.text if step.evidence is not None else "",
            )
        )
    return out


def step_xy(points: list[Point], until: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A step line through the points: flat until the next event, then a jump;
    carried on to `until` (a timestamp) so the current confidence shows."""
    if not points:
        return np.zeros(0), np.zeros(0)
    t = np.array([p.when.timestamp() for p in points])
    c = np.array([p.confidence for p in points])
    end = max(until if until is not None else t[-1], t[-1])
    xs = np.repeat(t, 2)[1:]
    ys = np.repeat(c, 2)[:-1]
    return np.append(xs, end), np.append(ys, c[-1])


def movement(events) -> float:
    """Total confidence an opinion has moved: the sum of its steps' sizes
    (forming is not a move)."""
    return sum(
        abs(float(e.confidence_after) - float(e.confidence_before))
        for e in events
        if e.confidence_before is not None and e.confidence_after is not None
    )


def by_movement(units: list[Unit], moved: dict[str, float]) -> list[Unit]:
    """Movers first, the most moved on top; the rest keep their order."""
    return sorted(units, key=lambda u: -moved.get(u.id, 0.0))


def _tip(p: Point, text: str) -> str:
    label = MARKERS.get(p.relation, OTHER_MARKER)[2]
    move = f"{p.before:.2f} → {p.confidence:.2f}" if p.before is not None else f"{p.confidence:.2f}"
    lines = [f"{label} · {move} · {p.when:%Y-%m-%d %H:%M}", f"opinion: {text[:90]}"]
    if p.reason:
        lines.append(f"reason: {p.reason[:160]}")
    if p.evidence_text:
        lines.append(f"evidence: {p.evidence_text[:160]}")
    elif p.evidence_id:
        lines.append(f"evidence: unit {p.evidence_id} (no longer stored)")
    return "\n".join(lines)


class DateAxis(pg.DateAxisItem):
    """pyqtgraph's date axis, but for a span of a year or more on a narrow plot.
    There pyqtgraph labels the years alone (their months do not fit its text
    budget), so a timeline from March 2025 to December 2026 shows one label,
    "2026", and reads as if it all happened then. Here such a span gets month
    ticks, as many as fit, and each January and the first tick say the year."""

    MONTH_STEPS = (1, 2, 3, 4, 6, 12)
    # The spacing these ticks report: a whole number of average months, which no
    # pyqtgraph tick spec uses (its month is 30 days), so tickStrings knows them.
    MONTH = 30.4375 * 86400
    LABEL = "Mar 2025"  # the widest label this axis writes
    MAX_FILL = 0.7  # share of the axis the labels may take

    def __init__(self) -> None:
        super().__init__(orientation="bottom")

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph's names
        levels = super().tickValues(minVal, maxVal, size)
        if maxVal - minVal < 40 * 86400 or size <= 0:
            return levels  # days and hours: pyqtgraph's own labels say where the span is
        width = self.fontMetrics.boundingRect(self.LABEL).width() + 12
        # A label centred nearer the end than half its width is not drawn.
        margin = (maxVal - minVal) / size * width / 2
        inner = (minVal + margin, maxVal - margin)
        majors = [v for v in (levels[0][1] if levels else []) if inner[0] <= v <= inner[1]]
        if len(majors) >= 2:
            return levels
        months = _month_starts(*inner)  # only where a label is drawn: the first says the year
        fit = max(1, int(size * self.MAX_FILL / width))
        for step in self.MONTH_STEPS:
            # Quarters start in January, April, July and October, halves in January and July.
            ticks = [t for t in months if (datetime.fromtimestamp(t).month - 1) % step == 0]
            if len(ticks) <= fit:
                return [(step * self.MONTH, ticks)] if len(ticks) >= 2 else levels
        return levels

    def tickStrings(self, values, scale, spacing):  # noqa: N802
        steps = spacing / self.MONTH
        if round(steps) not in self.MONTH_STEPS or abs(steps - round(steps)) > 1e-6:
            return super().tickStrings(values, scale, spacing)
        dates = [datetime.fromtimestamp(v) for v in values]
        return [
            d.strftime("%b %Y") if i == 0 or d.month == 1 else d.strftime("%b")
            for i, d in enumerate(dates)
        ]


def _month_starts(start: float, end: float) -> list[float]:
    """The first of each month in (`start`, `end`] (local time, as plotted)."""
    first = datetime.fromtimestamp(start)
    year, month, out = first.year, first.month, []
    while True:
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        when = datetime(year, month, 1).timestamp()
        if when > end:
            return out
        out.append(when)


class TimelinePlot(pg.PlotWidget):
    """Confidence over time, several opinions overlaid."""

    point_clicked = Signal(object)  # Point
    point_hovered = Signal(object)  # Point | None

    def __init__(self, parent: QWidget | None = None) -> None:
        bg = parent.palette().base().color() if parent is not None else QColor("#ffffff")
        super().__init__(parent, background=bg, axisItems={"bottom": DateAxis()})
        plot = self.getPlotItem()
        text = QColor("#e5e8ed" if bg.lightnessF() < 0.5 else "#1d2430")
        for name in ("left", "bottom"):
            axis = plot.getAxis(name)
            axis.enableAutoSIPrefix(False)  # confidences in [0, 1] must not read as "m" units
            axis.setTextPen(text)
            axis.setPen(QPen(text))
        plot.setLabel("left", "confidence")
        plot.showGrid(x=True, y=True, alpha=0.2)
        plot.setMenuEnabled(False)
        plot.hideButtons()
        vb = plot.getViewBox()
        vb.setMouseEnabled(x=True, y=False)
        vb.setLimits(yMin=-0.05, yMax=1.05)
        plot.setYRange(0.0, 1.0, padding=0.03)
        self.legend = plot.addLegend(offset=(10, 10), labelTextColor=text)
        self.lines: dict[str, pg.PlotDataItem] = {}
        self.markers: dict[str, pg.ScatterPlotItem] = {}
        self.points: dict[str, list[Point]] = {}
        self.texts: dict[str, str] = {}
        vb.sigResized.connect(self._fit_legend)
        fill = QBrush(QColor(bg.red(), bg.green(), bg.blue(), 235))
        self._hover = pg.TextItem(
            "", color=text, fill=fill, border=pg.mkPen(text, width=1), anchor=(0, 1)
        )
        self._hover.setTextWidth(HOVER_WIDTH)  # wrap long reasons and evidence
        self._hover.setZValue(50)
        self._hover.hide()
        self.addItem(self._hover, ignoreBounds=True)
        self._brushes = {k: QBrush(QColor(c)) for k, (_s, c, _l) in MARKERS.items()}
        self._other_brush = QBrush(QColor(OTHER_MARKER[1]))
        # Cosmetic pens (mkPen): a plain QPen's width would scale with the symbol and
        # paint every marker as a solid square.
        outline = QColor(bg).darker(160) if bg.lightnessF() >= 0.5 else QColor(bg).lighter(220)
        self._marker_pens = {k: pg.mkPen(outline, width=1.0) for k in MARKERS}
        self._other_pen = pg.mkPen(outline, width=1.0)

    def show_opinions(
        self, series: list[tuple[str, str, list[Point]]], until: float | None = None
    ) -> None:
        """(opinion id, text, points) per opinion; replaces what is shown."""
        self.clear_opinions()
        for n, (opinion_id, text, points) in enumerate(series):
            color = QColor(LINE_COLORS[n % len(LINE_COLORS)])
            pen = pg.mkPen(color, width=2.2)
            x, y = step_xy(points, until)
            line = pg.PlotDataItem(x, y, pen=pen, name=text)
            self.addItem(line)
            symbols = [MARKERS.get(p.relation, OTHER_MARKER)[0] for p in points]
            brushes = [self._brushes.get(p.relation, self._other_brush) for p in points]
            pens = [self._marker_pens.get(p.relation, self._other_pen) for p in points]
            scatter = pg.ScatterPlotItem(
                x=[p.when.timestamp() for p in points],
                y=[p.confidence for p in points],
                symbol=symbols,
                brush=brushes,
                pen=pens,
                size=MARKER_SIZE,
                data=list(range(len(points))),
                hoverable=True,
                tip=None,
                hoverSize=MARKER_SIZE + 5,
            )
            scatter.setZValue(10)
            scatter.sigClicked.connect(lambda _s, pts, _ev, oid=opinion_id: self._clicked(oid, pts))
            scatter.sigHovered.connect(lambda _s, pts, _ev, oid=opinion_id: self._hovered(oid, pts))
            self.addItem(scatter)
            self.lines[opinion_id] = line
            self.markers[opinion_id] = scatter
            self.points[opinion_id] = points
            self.texts[opinion_id] = text
        self.getPlotItem().setYRange(0.0, 1.0, padding=0.03)
        self._fit_legend()

    def _fit_legend(self) -> None:
        """Each legend line elided to the plot's width: in a small window the plot is
        a third of the screen, and a full opinion would run past its edge. (Rebuilt,
        not relabelled: pyqtgraph's legend only sizes itself to items as added.)"""
        font = QFont(self.font())
        size = str(self.legend.opts.get("labelTextSize") or "")
        if size.endswith("pt"):
            font.setPointSizeF(float(size[:-2]))
        metrics = QFontMetrics(font)
        room = int(self.getPlotItem().getViewBox().width()) - LEGEND_SAMPLE_PX
        width = max(60, min(room, metrics.horizontalAdvance("x" * LEGEND_CHARS)))
        names = {
            oid: metrics.elidedText(text, Qt.TextElideMode.ElideRight, width)
            for oid, text in self.texts.items()
        }
        if [label.text for _sample, label in self.legend.items] == list(names.values()):
            return
        self.legend.clear()
        for oid, line in self.lines.items():
            self.legend.addItem(line, names[oid])

    def legend_rect(self):
        """The legend's rectangle in scene coordinates (tests: it stays in the plot)."""
        return self.legend.sceneBoundingRect()

    def clear_opinions(self) -> None:
        for item in (*self.lines.values(), *self.markers.values()):
            self.removeItem(item)
        self.legend.clear()
        self.lines, self.markers, self.points, self.texts = {}, {}, {}, {}
        self._hover.hide()

    def set_time_range(self, start: float | None, end: float | None) -> None:
        xs = [p.when.timestamp() for pts in self.points.values() for p in pts]
        lo = start if start is not None else (min(xs) if xs else None)
        hi = end if end is not None else (max(xs) if xs else None)
        if lo is None or hi is None:
            return
        if hi <= lo:
            hi = lo + 86400.0
        pad = (hi - lo) * 0.06  # room for the first and last markers
        self.getPlotItem().setXRange(lo - pad, hi + pad, padding=0)

    def _clicked(self, opinion_id: str, pts) -> None:
        if len(pts):
            self.point_clicked.emit(self.points[opinion_id][int(pts[0].data())])

    def _hovered(self, opinion_id: str, pts) -> None:
        if not len(pts):
            self.hover(None)
            return
        self.hover(self.points[opinion_id][int(pts[0].data())])

    def hover(self, point: Point | None) -> None:
        """Show the hover note for a point (None hides it)."""
        if point is None:
            self._hover.hide()
            self.point_hovered.emit(None)
            return
        vb = self.getPlotItem().getViewBox()
        # Keep the note inside the plot: on the side of the point with more room (left
        # near the right edge), below it near the top, and no wider than that room
        # (a narrow plot in a small window gets a narrow note).
        (x0, x1), (_y0, _y1) = vb.viewRange()
        share = (point.when.timestamp() - x0) / (x1 - x0) if x1 > x0 else 0.0
        left = share > 0.5
        room = (share if left else 1.0 - share) * vb.width() - 12
        self._hover.setTextWidth(max(120, min(HOVER_WIDTH, int(room))))
        self._hover.setText(_tip(point, self.texts.get(point.opinion_id, "")))
        self._hover.setPos(QPointF(point.when.timestamp(), point.confidence))
        self._hover.setAnchor((1.0 if left else 0.0, 0.0 if point.confidence > 0.6 else 1.0))
        self._hover.show()
        self.point_hovered.emit(point)

    def hover_rect(self):
        """The hover note's rectangle in scene coordinates (tests: it stays in the plot)."""
        item = self._hover.textItem
        return item.mapRectToScene(item.boundingRect())

    def hover_text(self) -> str:
        return self._hover.textItem.toPlainText() if self._hover.isVisible() else ""

    def plotted(self, opinion_id: str) -> list[tuple[float, float]]:
        """The marker coordinates drawn for an opinion (tests, accessibility)."""
        scatter = self.markers[opinion_id]
        return [(float(p.pos().x()), float(p.pos().y())) for p in scatter.points()]


class TimelinesPane(Pane):
    title = "Opinion timelines"
    slug = "timelines"
    unit_requested = Signal(str)  # the evidence unit of a clicked step
    shown = Signal()  # the plot shows what is checked

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self.opinions: list[Unit] = []
        self.moved: dict[str, float] = {}  # opinion id -> total movement (movers only)
        self.trajectories: dict[str, object] = {}
        self._quiet = False
        self.side_points: list[Point] = []

        # -- filters --
        self.entity = QLineEdit()
        self.entity.setPlaceholderText("Entity (name, alias or id)")
        self.entity.setClearButtonEnabled(True)
        self.entity.returnPressed.connect(self.reload)
        self.use_range = QCheckBox("From")
        self.start = QDateEdit(QDate.currentDate().addMonths(-6))
        self.end = QDateEdit(QDate.currentDate())
        for edit in (self.start, self.end):
            edit.setCalendarPopup(True)
            edit.setDisplayFormat("yyyy-MM-dd")
            edit.setEnabled(False)
            edit.dateChanged.connect(self._range_changed)
        self.use_range.toggled.connect(self._range_toggled)
        self.apply_button = QPushButton("Filter")
        self.apply_button.clicked.connect(self.reload)
        filters = QHBoxLayout()
        filters.addWidget(self.entity, 1)
        filters.addWidget(self.use_range)
        filters.addWidget(self.start)
        filters.addWidget(QLabel("to"))
        filters.addWidget(self.end)
        filters.addWidget(self.apply_button)

        # -- the list of opinions (checked ones are plotted) --
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.itemChanged.connect(self._check_changed)
        self.list.currentItemChanged.connect(self._current_changed)
        self.list_status = muted_label()
        # On a real bank most opinions never move: list the movers, the rest on demand.
        self.show_all = QCheckBox("Show opinions that never moved")
        self.show_all.toggled.connect(self._filter_movers)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        heading = QLabel("<b>Opinions</b> (check to overlay; ↕ = total movement)")
        heading.setWordWrap(True)  # the list may be narrow in a small window
        ll.addWidget(heading)
        ll.addWidget(self.show_all)
        ll.addWidget(self.list, 1)
        ll.addWidget(self.list_status)

        # -- the plot --
        self.plot = TimelinePlot(self)
        self.plot.point_clicked.connect(self._point_clicked)
        legend = QLabel(
            "  ".join(
                f"<span style='color:{c}'>{'●▲▼✕■★◆'[i]}</span> {label}"
                for i, (_s, c, label) in enumerate(MARKERS.values())
            )
        )
        legend.setTextFormat(Qt.TextFormat.RichText)
        legend.setWordWrap(True)  # one line at 1440, two in a 1280 window: never wider
        centre = QWidget()
        cl = QVBoxLayout(centre)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(self.plot, 1)
        cl.addWidget(legend)
        self.status = muted_label(
            "Hover a marker for its evidence and reason; click it to open the evidence."
        )
        cl.addWidget(self.status)

        # -- side panel --
        self.current = QLabel()
        self.current.setWordWrap(True)
        self.current.setTextFormat(Qt.TextFormat.RichText)
        self.past_texts = QTextBrowser()
        self.past_texts.setMaximumHeight(140)
        self.steps = read_only_table(["when", "step", "confidence", "reason"], stretch=3)
        # The reason wraps in its row (the side panel is narrow: one line cut it short).
        self.steps.setWordWrap(True)
        self.steps.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.steps.cellDoubleClicked.connect(self._step_activated)
        # Imported here: app.graph.detail builds on app.panes, which lists this pane.
        from app.graph.detail import ReadOnlyUnitDetail

        self.detail = ReadOnlyUnitDetail(state)
        self.detail.placeholder.setText(
            "Click a marker (or double-click a step) to open its evidence."
        )
        # Until evidence is opened the steps table takes the side's height.
        self.detail.collapsible = True
        self.detail.hide()
        side = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.current)
        tl.addWidget(QLabel("Texts it has had (oldest first)"))
        tl.addWidget(self.past_texts)
        tl.addWidget(QLabel("Steps (double-click to open the evidence)"))
        tl.addWidget(self.steps, 1)
        side.addWidget(top)
        side.addWidget(self.detail)
        self.side = side

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(left)
        self.splitter.addWidget(centre)
        self.splitter.addWidget(side)
        self.splitter.setSizes([260, 760, 380])
        self.splitter.setStretchFactor(1, 1)

        body = QWidget()
        bl = QVBoxLayout(body)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addLayout(filters)
        bl.addWidget(self.splitter, 1)
        self.body = body
        self.no_bank = self.no_bank_label(empty_label())
        self.empty = empty_label(EMPTY)
        self.stack = QStackedWidget()
        for widget in (self.no_bank, self.empty, body):
            self.stack.addWidget(widget)
        root = QVBoxLayout(self)
        root.addWidget(self.stack)
        self.set_bank(state.bank)

    # -- pane interface ------------------------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self.opinions = []
        self.trajectories = {}
        self.list.clear()
        self.plot.clear_opinions()
        self._show_side(None)
        # A time filter belongs to one bank's time line: off for the next bank,
        # whose plotted span the pickers then offer (see _suggest_range).
        blocked = self.use_range.blockSignals(True)
        self.use_range.setChecked(False)
        self.use_range.blockSignals(blocked)
        self._range_toggled(False)
        if bank is None:
            self.stack.setCurrentWidget(self.no_bank)
            return
        self.stack.setCurrentWidget(self.body)
        self.reload()

    def apply_change(self, change: Change, initiator: object = None) -> None:
        if change.touches(Kind.OPINION) or change.ids(Kind.UNIT) & {o.id for o in self.opinions}:
            self.trajectories = {}
            self.reload()

    def refresh(self) -> None:
        self.trajectories = {}
        self.reload()

    def focus_search(self) -> bool:
        self.entity.setFocus()
        self.entity.selectAll()
        return True

    def show_entity(self, entity: str) -> None:
        """The opinions about one entity (the entity map's click-through)."""
        self.entity.setText(entity)
        self.reload()

    # -- loading --------------------------------------------------------------------------------

    def time_range(self) -> tuple[datetime | None, datetime | None]:
        if not self.use_range.isChecked():
            return None, None
        start = datetime.combine(self.start.date().toPython(), datetime.min.time())
        end = datetime.combine(self.end.date().toPython(), datetime.min.time()) + timedelta(days=1)
        return start, end

    def reload(self) -> None:
        bank = self.bank
        if bank is None:
            return
        entity = self.entity.text().strip() or None
        start, end = self.time_range()
        checked = set(self.checked_ids())
        # Histories asked for before this reload would fill the cache it cleared.
        for topic in ("histories", "side"):
            self.state.runner.supersede(self, topic)

        def work() -> tuple[list[Unit], dict[str, float]]:
            units = bank.opinions(entity, limit=2000)
            changes = bank.opinions_changed(start, end)
            moved = {c.opinion.id: movement(c.events) for c in changes}
            moved = {k: v for k, v in moved.items() if v > 0}
            if start is not None or end is not None:
                changed = {c.opinion.id for c in changes}
                units = [u for u in units if u.id in changed]
            return by_movement(units, moved), moved

        self.list_status.setText("Reading opinions…")
        self.state.runner.run_query(
            work,
            lambda found: self._listed(*found, checked),
            self._failed,
            key=bank,
            latest=(self, "list"),
        )

    def _failed(self, error: BaseException) -> None:
        self.list_status.setText(f"Could not read opinions: {describe(error)}")

    def _listed(self, units: list[Unit], moved: dict[str, float], checked: set[str]) -> None:
        self.opinions = units
        self.moved = moved
        filtered = bool(self.entity.text().strip() or self.use_range.isChecked())
        if not units and not filtered:
            self.stack.setCurrentWidget(self.empty)
            return
        self.stack.setCurrentWidget(self.body)
        self._quiet = True
        self.list.clear()
        # With nothing checked before, the three that moved most start overlaid.
        keep = checked & {u.id for u in units} or {u.id for u in units[:3]}
        for unit in units:
            conf = "—" if unit.confidence is None else f"{unit.confidence:.2f}"
            move = moved.get(unit.id)
            mark = f"↕{move:.2f}  " if move else ""
            item = QListWidgetItem(f"{mark}{conf}  {unit.text}")
            item.setData(Qt.ItemDataRole.UserRole, unit.id)
            item.setToolTip(unit.text)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(
                Qt.CheckState.Checked if unit.id in keep else Qt.CheckState.Unchecked
            )
            self.list.addItem(item)
        self._quiet = False
        movers = sum(1 for u in units if u.id in moved)
        self.list_status.setText(
            f"{len(units)} opinions, {movers} moved" + (" · match the filters" if filtered else "")
            if units
            else "No opinion matches the filters."
        )
        self._filter_movers()
        if units and self.list.currentRow() < 0:
            self.list.setCurrentRow(0)
        self._plot_checked()

    def _filter_movers(self, *_: object) -> None:
        """Hide the opinions that never moved unless asked (or nothing moved)."""
        show_all = self.show_all.isChecked() or not any(
            self.list.item(i).data(Qt.ItemDataRole.UserRole) in self.moved
            for i in range(self.list.count())
        )
        for i in range(self.list.count()):
            item = self.list.item(i)
            item.setHidden(not show_all and item.data(Qt.ItemDataRole.UserRole) not in self.moved)

    def listed_ids(self, visible_only: bool = True) -> list[str]:
        """The opinions in the list, in order (only the shown ones by default)."""
        return [
            self.list.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.list.count())
            if not (visible_only and self.list.item(i).isHidden())
        ]

    def checked_ids(self) -> list[str]:
        return [
            self.list.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.list.count())
            if self.list.item(i).checkState() == Qt.CheckState.Checked
        ]

    def set_checked(self, opinion_ids: Iterable[str]) -> None:
        wanted = set(opinion_ids)
        self._quiet = True
        for i in range(self.list.count()):
            item = self.list.item(i)
            on = item.data(Qt.ItemDataRole.UserRole) in wanted
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        self._quiet = False
        self._plot_checked()

    def _check_changed(self, _item: QListWidgetItem) -> None:
        if not self._quiet:
            self._plot_checked()

    def _plot_checked(self) -> None:
        bank = self.bank
        ids = self.checked_ids()
        missing = [i for i in ids if i not in self.trajectories]
        if bank is None:
            return
        if not missing:
            self._draw(ids)
            return

        def work() -> dict[str, object]:
            return {i: bank.opinion_history(i) for i in missing}

        # The newest ask holds every history still missing: older ones can go.
        self.state.runner.run_query(
            work, self._histories, self._failed, key=bank, latest=(self, "histories")
        )

    def _histories(self, found: dict[str, object]) -> None:
        self.trajectories.update(found)
        self._plot_checked()
        current = self.list.currentItem()
        if current is not None:
            self._show_side(current.data(Qt.ItemDataRole.UserRole))

    def _draw(self, ids: list[str]) -> None:
        series = []
        latest = 0.0
        for opinion_id in ids:
            trajectory = self.trajectories[opinion_id]
            points = points_of(trajectory)
            series.append((opinion_id, trajectory.opinion.text, points))
            if points:
                latest = max(latest, points[-1].when.timestamp())
        start, end = self.time_range()
        until = end.timestamp() if end is not None else latest or None
        self.plot.show_opinions(series, until=until)
        self.plot.set_time_range(start.timestamp() if start else None, until)
        if not self.use_range.isChecked():
            self._suggest_range(series)
        self.shown.emit()

    def _suggest_range(self, series) -> None:
        """Offer the span of what is plotted as the time filter, not today's date."""
        times = [p.when for _id, _text, points in series for p in points]
        if not times:
            return
        for edit, value in ((self.start, min(times)), (self.end, max(times))):
            blocked = edit.blockSignals(True)
            edit.setDate(QDate(value.year, value.month, value.day))
            edit.blockSignals(blocked)

    def _range_toggled(self, on: bool) -> None:
        self.start.setEnabled(on)
        self.end.setEnabled(on)

    def _range_changed(self, *_: object) -> None:
        if self.use_range.isChecked() and self.end.date() < self.start.date():
            self.end.setDate(self.start.date())

    def prepare_screenshot(self, idle) -> None:
        """For `engram screenshot`: the opinions that moved most, overlaid."""
        idle()
        bank = self.bank
        if bank is None:
            return
        changes = sorted(bank.opinions_changed(), key=lambda c: -len(c.events))[:3]
        if changes:
            ids = [c.opinion.id for c in changes]
            self.set_checked(ids)
            idle()
            row = next(
                (
                    i
                    for i in range(self.list.count())
                    if self.list.item(i).data(Qt.ItemDataRole.UserRole) == ids[0]
                ),
                -1,
            )
            if row >= 0:
                self.list.setCurrentRow(row)
            idle()
            points = self.plot.points.get(ids[0], [])
            if len(points) > 1:
                self.plot.hover(points[1])
            idle()

    # -- the side panel ------------------------------------------------------------------------------

    def _current_changed(self, current: QListWidgetItem | None, _previous: object = None) -> None:
        if current is None:
            self._show_side(None)
            return
        opinion_id = current.data(Qt.ItemDataRole.UserRole)
        if opinion_id in self.trajectories:
            self._show_side(opinion_id)
            return
        bank = self.bank
        # Clearing the list on a bank switch moves the current row through the old
        # bank's opinions: ask only for an opinion listed from the bank shown now.
        if bank is None or opinion_id not in {o.id for o in self.opinions}:
            return
        self.state.runner.run_query(
            lambda: {opinion_id: bank.opinion_history(opinion_id)},
            lambda found: self._side_loaded(opinion_id, found),
            self._failed,
            key=bank,
            latest=(self, "side"),
        )

    def _side_loaded(self, opinion_id: str, found: dict[str, object]) -> None:
        self.trajectories.update(found)
        current = self.list.currentItem()
        if current is not None and current.data(Qt.ItemDataRole.UserRole) == opinion_id:
            self._show_side(opinion_id)

    def _show_side(self, opinion_id: str | None) -> None:
        trajectory = self.trajectories.get(opinion_id) if opinion_id else None
        # No opinion selected: an empty side panel only takes the plot's room.
        self.side.setVisible(trajectory is not None)
        if trajectory is None:
            self.current.setText("<i>Select an opinion to see its history.</i>")
            self.past_texts.setHtml("")
            self.steps.setRowCount(0)
            self.side_points = []
            return
        opinion = trajectory.opinion
        conf = "—" if opinion.confidence is None else f"{opinion.confidence:.2f}"
        self.current.setText(
            f"<div style='font-size:20pt; font-weight:600'>{conf}</div>"
            f"<div>current confidence of</div><div><b>{html.escape(opinion.text)}</b></div>"
        )
        texts = trajectory.texts
        self.past_texts.setHtml(
            "<ol>" + "".join(f"<li>{html.escape(t)}</li>" for t in texts) + "</ol>"
            if texts
            else "<i>No other text.</i>"
        )
        points = points_of(trajectory)
        self.side_points = points
        self.steps.setRowCount(len(points))
        for r, p in enumerate(points):
            move = (
                f"{p.before:.2f} → {p.confidence:.2f}"
                if p.before is not None
                else f"{p.confidence:.2f}"
            )
            cells = [
                p.when.strftime("%Y-%m-%d %H:%M"),
                MARKERS.get(p.relation, OTHER_MARKER)[2],
                move,
                p.reason,
            ]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(_tip(p, opinion.text))
                self.steps.setItem(r, c, item)

    def _step_activated(self, row: int, _col: int) -> None:
        if 0 <= row < len(self.side_points):
            self._point_clicked(self.side_points[row])

    def _point_clicked(self, point: Point) -> None:
        if point.evidence_id:
            self.detail.load(point.evidence_id)
            self.unit_requested.emit(point.evidence_id)
            self.status.setText(f"Evidence of the {point.relation} step on {point.when:%Y-%m-%d}.")
        else:
            self.status.setText(
                f"This {MARKERS.get(point.relation, OTHER_MARKER)[2]} step has no evidence unit"
                + (f": {point.reason}." if point.reason else ".")
            )
