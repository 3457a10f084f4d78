"""The recall debugger: every stage of one recall, from the trace it returns.

Query, budget, networks, reference time and level go in; out come the four
channels side by side (rank and raw score), the fused list with what each
channel contributed, the rerank scores and which reranker ran, a budget bar
showing what fit and what did not, and the graph of what the trace names with
its spreading activation. Selecting a fact anywhere selects it everywhere.
The trace can be saved as JSON. Recall runs in the studio's runner.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QDateTime, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDateTimeEdit,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from app.graph import neighbourhood
from app.graph.model import typed_trace
from app.graph.neighbourhood import Neighbourhood
from app.graph.style import network_color
from app.graph.widget import GraphWidget
from app.panes.base import Pane, empty_label, muted_label
from app.runner import describe
from app.state import StudioState
from core import CHANNEL_TITLES, CHANNELS, LEVELS, NETWORKS, Network

if TYPE_CHECKING:
    from core import ActivityEntry, Bank, RecallReplay, RecallResult, RecallTrace

# The level menu: each level with the candidates a channel returns at it.
LEVEL_CHOICES = tuple(
    (level, f"{level} · {count}" + (" per channel" if i == 0 else ""))
    for i, (level, count) in enumerate(LEVELS.items())
)
RERANKERS = (("", "bank default"), ("heuristic", "heuristic"), ("none", "none (fused order)"))
ID_ROLE = Qt.ItemDataRole.UserRole + 1
# The fused table: key, header, what the column means (the header's tooltip).
# What decided the answer (final place, tokens, packed) comes first, so it never
# scrolls out of sight; the fact takes the spare width; the diagnostics follow, compact.
FUSED_COLUMNS = (
    ("rank", "#", "Place after reciprocal rank fusion"),
    ("final", "final", "Place after reranking"),
    ("budget", "budget", "Whether it fit the token budget"),
    ("tokens", "tok.", "Tokens the fact takes"),
    ("fact", "fact", "The fact (hover for all of it and its id)"),
    ("rrf", "RRF", "Fused score: the sum of what the channels contributed"),
    ("semantic", "sem.", "Semantic channel: its rank (hover: what it added, 1 / (k + rank))"),
    ("lexical", "lex.", "Lexical (BM25) channel: its rank (hover: what it added)"),
    ("graph", "graph", "Graph (activation) channel: its rank (hover: what it added)"),
    ("temporal", "time", "Temporal channel: its rank (hover: what it added)"),
    ("rerank", "rerank", "The reranker's score"),
)
FUSED_KEYS = tuple(key for key, _h, _t in FUSED_COLUMNS)
FIT_COLOR = "#16a34a"
SHOWN = 3  # facts lost, gained and moved listed in a replay's summary, each
SKIP_COLOR = "#dc2626"
EMPTY = (
    "Type a question and press <b>Enter</b> to see how recall answers it:<br>"
    "the four channels, how they were fused and reranked, and what fit the token budget."
)


# -- the trace, as rows ------------------------------------------------------------------


@dataclass(frozen=True)
class ChannelRow:
    rank: int
    unit_id: str
    score: float


@dataclass(frozen=True)
class FusedRow:
    unit_id: str
    rank: int
    score: float
    contributions: Mapping[str, tuple[int, float]]  # channel -> (its rank, RRF value)
    rerank_score: float | None
    final_rank: int | None  # place after reranking (1-based)
    tokens: int | None
    status: str  # packed | skipped | not tried
    left: int | None = None  # tokens left when a skipped fact was tried
    factor: float = 1.0  # speaker focus: the fused score is the contributions' sum times this


@dataclass
class TraceView:
    """What the debugger shows, read from a trace alone (no Qt, no bank)."""

    channels: dict[str, list[ChannelRow]] = field(default_factory=dict)
    channel_notes: dict[str, str] = field(default_factory=dict)
    fused: list[FusedRow] = field(default_factory=list)
    reranker: str = ""
    packed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, int, int]] = field(default_factory=list)  # id, tokens, left
    tokens: dict[str, int] = field(default_factory=dict)
    tokens_used: int = 0
    budget: int = 0
    notes: list[str] = field(default_factory=list)


def trace_view(trace: RecallTrace | Mapping[str, Any]) -> TraceView:
    """The rows the debugger shows; `trace` is recall's own, or a saved one's JSON."""
    trace = typed_trace(trace)
    view = TraceView()
    for name in CHANNELS:
        channel = trace.channels.get(name)
        if channel is None:
            view.channels[name] = []
            view.channel_notes[name] = "not requested"
            continue
        view.channels[name] = [
            ChannelRow(i + 1, unit_id, float(score))
            for i, (unit_id, score) in enumerate(zip(channel.ids, channel.scores, strict=False))
        ]
        parts = [] if channel.ran else ["did not run"]
        if channel.ran:
            parts.append(f"{channel.ms:.0f} ms")
        if channel.note:
            parts.append(channel.note)
        if name == "temporal" and trace.interval is not None:
            parts.append(f"window {trace.interval.describe()}")
        view.channel_notes[name] = " · ".join(parts)
    view.reranker = trace.rerank.name
    rerank_scores = {r.id: r.score for r in trace.rerank.scores}
    final = {unit_id: i + 1 for i, unit_id in enumerate(trace.rerank.order)}
    packing = trace.packing
    view.packed = list(packing.packed)
    view.skipped = [(s.id, s.tokens, s.left) for s in packing.skipped]
    view.tokens = dict(packing.tokens)
    view.tokens_used = packing.tokens_used
    view.budget = packing.budget
    packed, skipped = set(view.packed), {s[0]: s for s in view.skipped}
    for fused in trace.fused:
        unit_id = fused.id
        contributions = {ch: (c.rank, c.value) for ch, c in fused.contributions.items()}
        status = "packed" if unit_id in packed else "skipped" if unit_id in skipped else "not tried"
        view.fused.append(
            FusedRow(
                unit_id,
                fused.rank,
                fused.score,
                contributions,
                rerank_scores.get(unit_id),
                final.get(unit_id),
                view.tokens.get(unit_id),
                status,
                skipped[unit_id][2] if unit_id in skipped else None,
                fused.factor,
            )
        )
    view.notes = list(trace.notes)
    return view


# -- widgets ------------------------------------------------------------------------------


def _item(text: str, unit_id: str, align_right: bool = False, tip: str = "") -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setData(ID_ROLE, unit_id)
    item.setFlags(Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled)
    if align_right:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if tip:
        item.setToolTip(tip)
    return item


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Table(QTableWidget):
    """A read-only list of facts; every row carries its unit id."""

    unit_selected = Signal(str)

    def __init__(self, headers: Sequence[str], parent: QWidget | None = None) -> None:
        super().__init__(0, len(headers), parent)
        self.setHorizontalHeaderLabels(list(headers))
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setWordWrap(False)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.horizontalHeader().setHighlightSections(False)
        self.itemSelectionChanged.connect(self._selection_changed)
        self._quiet = False

    def reset_rows(self, count: int) -> None:
        """`count` empty rows, the old ones (and their selection) gone first: items
        replaced one by one in a selected row each emit a selection change, which
        selects the fact again in every list, the budget bar and the graph (3.3 s
        to show a second recall, where this takes 10 ms)."""
        self.setRowCount(0)
        self.setRowCount(count)

    def unit_ids(self) -> list[str]:
        return [self.item(r, 0).data(ID_ROLE) for r in range(self.rowCount())]

    def row_of(self, unit_id: str) -> int:
        for row in range(self.rowCount()):
            if self.item(row, 0).data(ID_ROLE) == unit_id:
                return row
        return -1

    def select_unit(self, unit_id: str | None) -> None:
        self._quiet = True
        try:
            row = self.row_of(unit_id) if unit_id else -1
            if row < 0:
                self.clearSelection()
            else:
                self.selectRow(row)
                self.scrollToItem(self.item(row, 0), QAbstractItemView.ScrollHint.EnsureVisible)
        finally:
            self._quiet = False

    def selected_unit(self) -> str | None:
        rows = self.selectionModel().selectedRows()
        return self.item(rows[0].row(), 0).data(ID_ROLE) if rows else None

    def _selection_changed(self) -> None:
        if not self._quiet:
            unit_id = self.selected_unit()
            if unit_id:
                self.unit_selected.emit(unit_id)


class BudgetBar(QWidget):
    """The token budget as a bar: packed facts in order (coloured by network), the
    budget left, and below it the facts that were tried and did not fit."""

    unit_selected = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setMinimumHeight(self.fontMetrics().height() * 2 + 44)
        self.budget = 0
        self.used = 0
        self.packed: list[tuple[str, int]] = []
        self.skipped: list[tuple[str, int, int]] = []
        self.networks: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.selected: str | None = None

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(600, self.minimumHeight())

    def set_data(
        self,
        budget: int,
        used: int,
        packed: Sequence[tuple[str, int]],
        skipped: Sequence[tuple[str, int, int]],
        networks: Mapping[str, int],
        texts: Mapping[str, str],
    ) -> None:
        self.budget, self.used = int(budget), int(used)
        self.packed, self.skipped = list(packed), list(skipped)
        self.networks, self.texts = dict(networks), dict(texts)
        self.update()

    def summary(self) -> str:
        if not self.budget:
            return ""
        text = (
            f"Budget {self.budget:,} tokens · {self.used:,} used by {len(self.packed)} packed facts"
        )
        if self.skipped:
            text += f" · {len(self.skipped)} did not fit"
        return text

    def select(self, unit_id: str | None) -> None:
        self.selected = unit_id
        self.update()

    def _geometry(self) -> tuple[float, float, float, float, float]:
        line = float(self.fontMetrics().height())
        left, width = 8.0, max(10.0, self.width() - 16.0)
        bar_h = 18.0
        top = line + 6.0
        return left, width, top, top + bar_h + 6.0, bar_h

    def segments(self) -> list[tuple[QRectF, str, str]]:
        """(rectangle, unit id, "packed" | "skipped") for every fact drawn, plus the
        room the "+N more" note needs; computed from the width, not from painting."""
        if not self.budget:
            return []
        left, width, top, row2, bar_h = self._geometry()
        scale = width / self.budget
        out: list[tuple[QRectF, str, str]] = []
        x = left
        for unit_id, tokens in self.packed:
            w = max(1.0, tokens * scale)
            out.append((QRectF(x, top, w, bar_h), unit_id, "packed"))
            x += w
        x = left + self._skip_label_width()
        # Room for the "+N more" note that follows when not every skipped fact fits.
        more = self.fontMetrics().horizontalAdvance(f"+{len(self.skipped)} more") + 10.0
        for shown, (unit_id, tokens, _left) in enumerate(self.skipped):
            w = max(3.0, tokens * scale)
            last = shown == len(self.skipped) - 1
            if x + w > left + width - (0.0 if last else more):
                break
            out.append((QRectF(x, row2, w, bar_h), unit_id, "skipped"))
            x += w + 2
        return out

    def _skip_label_width(self) -> float:
        return self.fontMetrics().horizontalAdvance("did not fit:") + 8.0

    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 (Qt's name)
        p = QPainter(self)
        pal = self.palette()
        left, width, top, row2, bar_h = self._geometry()
        line = self.fontMetrics().height()
        p.setPen(pal.windowText().color())
        p.drawText(QRectF(left, 2, width, line), Qt.AlignmentFlag.AlignLeft, self.summary())
        if not self.budget:
            p.end()
            return
        p.fillRect(QRectF(left, top, width, bar_h), pal.base().color())
        p.setPen(QPen(pal.mid().color()))
        p.drawRect(QRectF(left, top, width, bar_h))
        segments = self.segments()
        for rect, unit_id, kind in segments:
            self._draw_segment(p, rect, unit_id, FIT_COLOR if kind == "packed" else SKIP_COLOR)
        if self.skipped:
            p.setPen(pal.windowText().color())
            label = QRectF(left, row2, self._skip_label_width(), bar_h)
            p.drawText(label, Qt.AlignmentFlag.AlignVCenter, "did not fit:")
            shown = sum(1 for _r, _u, kind in segments if kind == "skipped")
            if shown < len(self.skipped):
                x = segments[-1][0].right() + 6 if shown else label.right()
                more = QRectF(x, row2, left + width - x, bar_h)
                p.drawText(
                    more, Qt.AlignmentFlag.AlignVCenter, f"+{len(self.skipped) - shown} more"
                )
        p.end()

    def _draw_segment(self, p: QPainter, rect: QRectF, unit_id: str, outline: str) -> None:
        p.fillRect(rect, QBrush(network_color(self.networks.get(unit_id, len(NETWORKS)))))
        selected = unit_id == self.selected
        pen = QPen(QColor("#e11d48" if selected else outline))
        pen.setWidthF(3.0 if selected else 1.0)
        p.setPen(pen)
        p.drawRect(rect.adjusted(0.5, 0.5, -0.5, -0.5))

    def unit_at(self, x: float, y: float) -> str | None:
        for rect, unit_id, _kind in self.segments():
            if rect.contains(x, y):
                return unit_id
        return None

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt's name)
        unit_id = self.unit_at(event.position().x(), event.position().y())
        if unit_id:
            tokens = dict(self.packed).get(unit_id)
            if tokens is None:
                tokens = next((t for u, t, _l in self.skipped if u == unit_id), 0)
            text = f"{_short(self.texts.get(unit_id, unit_id), 120)}\n{tokens} tokens"
            QToolTip.showText(event.globalPosition().toPoint(), text, self)
        else:
            QToolTip.hideText()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 (Qt's name)
        unit_id = self.unit_at(event.position().x(), event.position().y())
        if unit_id:
            self.unit_selected.emit(unit_id)


class RecallDebuggerPane(Pane):
    title = "Recall debugger"
    slug = "recall"
    unit_requested = Signal(str)
    recalled = Signal(object)  # the RecallResult shown

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self.result: RecallResult | None = None
        self.trace: RecallTrace | None = None
        self.view_data = TraceView()
        self.texts: dict[str, str] = {}
        self.networks: dict[str, int] = {}
        self.selected: str | None = None

        # -- the form --
        self.query = QLineEdit()
        self.query.setPlaceholderText(
            "Ask what the agent remembers, e.g. “What went wrong with Atlas in June?”"
        )
        self.query.setClearButtonEnabled(True)
        self.query.returnPressed.connect(self.run)
        self.budget = QSpinBox()
        self.budget.setRange(16, 200_000)
        self.budget.setSingleStep(128)
        self.budget.setValue(1024)
        self.budget.setSuffix(" tokens")
        self.budget.setToolTip("Token budget the packed facts must fit in")
        self.level = QComboBox()
        for key, label in LEVEL_CHOICES:
            self.level.addItem(label, key)
        self.level.setCurrentIndex(1)
        self.level.setToolTip("Candidates each channel returns")
        self.reranker = QComboBox()
        for key, label in RERANKERS:
            self.reranker.addItem(label, key)
        self.reranker.setToolTip("Which reranker orders the fused candidates")
        self.network_boxes: dict[str, QCheckBox] = {}
        nets = QHBoxLayout()
        nets.setSpacing(6)
        nets.addWidget(QLabel("Networks"))
        for network in NETWORKS:
            box = QCheckBox(network, checked=True)
            self.network_boxes[network] = box
            nets.addWidget(box)
        self.use_now = QCheckBox("Now:", checked=False)
        self.use_now.setToolTip(
            "The reference time for “last week” and the like; unchecked, the bank's latest activity"
        )
        # Set to the bank's own reference time when a bank opens (never today's
        # date: a bank of 2023 conversations lives in 2023).
        self.now = QDateTimeEdit()
        self.now.setCalendarPopup(True)
        self.now.setDisplayFormat("yyyy-MM-dd HH:mm")
        self.now.setEnabled(False)
        self.use_now.toggled.connect(self.now.setEnabled)
        self.run_button = QPushButton("Recall")
        self.run_button.setProperty("primary", True)
        self.run_button.clicked.connect(self.run)
        self.save_button = QPushButton("Save trace…")
        self.save_button.setToolTip("Save the whole trace as JSON")
        self.save_button.clicked.connect(self.ask_save_trace)
        self.save_button.setEnabled(False)

        row1 = QHBoxLayout()
        row1.addWidget(self.query, 1)
        row1.addWidget(self.run_button)
        row1.addWidget(self.save_button)
        row2 = QHBoxLayout()
        row2.addWidget(QLabel("Budget"))
        row2.addWidget(self.budget)
        row2.addSpacing(8)
        row2.addWidget(QLabel("Level"))
        row2.addWidget(self.level)
        row2.addSpacing(8)
        row2.addWidget(QLabel("Reranker"))
        row2.addWidget(self.reranker)
        row2.addStretch(1)
        # Networks and time on their own row: the pane fits a 1200-pixel window.
        row3 = QHBoxLayout()
        row3.addLayout(nets)
        row3.addSpacing(8)
        row3.addWidget(self.use_now)
        row3.addWidget(self.now)
        row3.addStretch(1)
        # A recall the journal kept (the Activity pane opens one): whose it was, and
        # Replay now, which runs it again against the bank as it is now.
        self.recorded: ActivityEntry | None = None
        self.replay: RecallReplay | None = None
        self.recorded_label = QLabel()
        self.recorded_label.setObjectName("recorded-recall")
        self.recorded_label.setWordWrap(True)
        self.recorded_label.setTextFormat(Qt.TextFormat.RichText)
        self.replay_button = QPushButton("Replay now")
        self.replay_button.setObjectName("replay-now")
        self.replay_button.setToolTip(
            "Run the same recall, with the same arguments, against the bank as it is now, "
            "and show what changed"
        )
        self.replay_button.clicked.connect(self.replay_now)
        self.recorded_back = QPushButton("As recorded")
        self.recorded_back.setToolTip("Show the trace the caller got again")
        self.recorded_back.clicked.connect(self.show_as_recorded)
        self.recorded_bar = QFrame()
        self.recorded_bar.setObjectName("recorded-bar")
        self.recorded_bar.setFrameShape(QFrame.Shape.StyledPanel)
        rb = QHBoxLayout(self.recorded_bar)
        rb.setContentsMargins(6, 4, 6, 4)
        rb.addWidget(self.recorded_label, 1)
        rb.addWidget(self.recorded_back)
        rb.addWidget(self.replay_button)
        self.recorded_bar.setVisible(False)
        self.status = muted_label()
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A long status (notes, reference time) wraps instead of widening the pane.
        self.status.setWordWrap(True)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

        # -- the channels --
        self.channel_tables: dict[str, _Table] = {}
        self.channel_notes: dict[str, QLabel] = {}
        channels = QSplitter(Qt.Orientation.Horizontal)
        for name in CHANNELS:
            box = QWidget()
            col = QVBoxLayout(box)
            col.setContentsMargins(0, 0, 0, 0)
            col.setSpacing(2)
            title = QLabel(f"<b>{CHANNEL_TITLES[name]}</b>")
            note = muted_label()
            note.setWordWrap(True)
            table = _Table(["#", "score", "fact"])
            header = table.horizontalHeader()
            header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
            header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
            header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
            table.unit_selected.connect(self.select_unit)
            col.addWidget(title)
            col.addWidget(note)
            col.addWidget(table, 1)
            self.channel_tables[name] = table
            self.channel_notes[name] = note
            channels.addWidget(box)

        # -- fused and reranked, and the graph --
        self.fused_title = QLabel()
        self.fused_title.setWordWrap(True)
        self.fused_table = _Table([header for _key, header, _tip in FUSED_COLUMNS])
        for col, (_key, _header, tip) in enumerate(FUSED_COLUMNS):
            self.fused_table.horizontalHeaderItem(col).setToolTip(tip)
        header = self.fused_table.horizontalHeader()
        for col in range(self.fused_table.columnCount()):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        # The fact takes what the numbers leave, so the table fits without scrolling.
        header.setSectionResizeMode(FUSED_KEYS.index("fact"), QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(28)
        self.fused_table.unit_selected.connect(self.select_unit)
        fused_box = QWidget()
        fl = QVBoxLayout(fused_box)
        fl.setContentsMargins(0, 0, 0, 0)
        fl.setSpacing(2)
        fl.addWidget(self.fused_title)
        fl.addWidget(self.fused_table, 1)
        self.graph = GraphWidget(runner=state.runner, autoplay=True)
        self._graph_settings: dict[str, Any] = {}  # recall overrides from the graph's budgets
        self.graph.recall_rerun = self._recall_with
        # Its own controls ask for more height than a 720-pixel window leaves here.
        self.graph.setMinimumHeight(200)
        self.graph.node_clicked.connect(self.select_unit)
        self.graph.node_clicked.connect(self.unit_requested)
        # Compact: the tools on a second row and the parameters folded behind
        # "Controls", so the graph fits its half without scrolling sideways; unfolded
        # (~580 px) they scroll inside it rather than squeeze the fused table.
        self.graph.set_compact(True)
        self.graph_scroll = graph_scroll = QScrollArea()
        graph_scroll.setWidgetResizable(True)
        graph_scroll.setFrameShape(QFrame.Shape.NoFrame)
        graph_scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        graph_scroll.setWidget(self.graph)
        graph_scroll.setMinimumWidth(300)
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(fused_box)
        lower.addWidget(graph_scroll)
        lower.setStretchFactor(0, 3)
        lower.setStretchFactor(1, 2)
        lower.setSizes([840, 560])
        self.lower = lower
        self.budget_bar = BudgetBar()
        self.budget_bar.unit_selected.connect(self.select_unit)
        budget_frame = QFrame()
        budget_frame.setFrameShape(QFrame.Shape.StyledPanel)
        bl = QVBoxLayout(budget_frame)
        bl.setContentsMargins(2, 2, 2, 2)
        bl.addWidget(self.budget_bar)

        # The selected fact in full: channel tables cut long facts to one line.
        self.fact_strip = QLabel()
        self.fact_strip.setObjectName("fact-strip")
        self.fact_strip.setWordWrap(True)
        self.fact_strip.setTextFormat(Qt.TextFormat.PlainText)
        self.fact_strip.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fact_strip.setFrameShape(QFrame.Shape.StyledPanel)
        self.fact_strip.setMargin(4)
        self.fact_strip.setVisible(False)  # collapsed until a fact is selected
        channels_box = QWidget()
        cbl = QVBoxLayout(channels_box)
        cbl.setContentsMargins(0, 0, 0, 0)
        cbl.setSpacing(2)
        cbl.addWidget(channels, 1)
        cbl.addWidget(self.fact_strip)

        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(channels_box)
        self.splitter.addWidget(lower)
        self.splitter.setSizes([260, 420])
        body = QWidget()
        bv = QVBoxLayout(body)
        bv.setContentsMargins(0, 0, 0, 0)
        bv.addWidget(self.splitter, 1)
        bv.addWidget(budget_frame)

        self.no_bank = self.no_bank_label(empty_label())
        self.empty = empty_label(EMPTY)
        self.stack = QStackedWidget()
        for widget in (self.no_bank, self.empty, body):
            self.stack.addWidget(widget)
        self.body = body

        root = QVBoxLayout(self)
        root.addLayout(row1)
        root.addLayout(row2)
        root.addLayout(row3)
        root.addWidget(self.recorded_bar)
        root.addWidget(self.status)
        root.addWidget(self.stack, 1)
        self.set_bank(state.bank)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        """Below 1200 px the graph yields to the fused table (its fact column must
        stay readable); the graph's controls scroll inside its half."""
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width() and event.size().width() < 1200:
            total = sum(self.lower.sizes()) or self.lower.width()
            self.lower.setSizes([int(total * 0.7), total - int(total * 0.7)])

    # -- pane interface ----------------------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self.result = None
        self.trace = None
        self._forget_recorded()
        self.status.setText("")
        self.save_button.setEnabled(False)
        for widget in (self.query, self.run_button, self.budget, self.level):
            widget.setEnabled(bank is not None)
        self.stack.setCurrentWidget(self.no_bank if bank is None else self.empty)
        if bank is not None:
            self.state.runner.run_query(
                bank.reference_time,
                lambda when: self._reference_known(bank, when),
                lambda _error: None,
                key=bank,
            )

    def _reference_known(self, bank: Bank, when: datetime) -> None:
        """Offer the bank's reference time in the picker (the previous bank's
        never carries over)."""
        if bank is self.bank:
            self.now.setDateTime(QDateTime(when))

    def focus_search(self) -> bool:
        self.query.setFocus()
        self.query.selectAll()
        return True

    def refresh(self) -> None:
        if self.trace is not None:
            self.run()

    # -- running -------------------------------------------------------------------------------

    def options(self) -> dict[str, Any]:
        """The keyword arguments `Bank.recall` gets from the form."""
        opts: dict[str, Any] = {
            "budget_tokens": self.budget.value(),
            "networks": [Network(n) for n, box in self.network_boxes.items() if box.isChecked()],
            "level": self.level.currentData(),
            "now": self.now.dateTime().toPython() if self.use_now.isChecked() else None,
        }
        if self.reranker.currentData():
            opts["reranker"] = self.reranker.currentData()
        if self._graph_settings:
            opts["settings"] = dict(self._graph_settings)
        return opts

    def _recall_with(self, settings: dict[str, Any]) -> None:
        """The graph's budgets changed: recall again with them, to replay what it does."""
        self._graph_settings = dict(settings)
        self.run()

    def run(self) -> None:
        bank = self.bank
        query = self.query.text().strip()
        if bank is None or not query:
            return
        self._forget_recorded()  # a recall of one's own, not the recorded one
        opts = self.options()

        def work() -> tuple[RecallResult, Neighbourhood]:
            # An inspection run: it must not count as the unit being recalled.
            result = bank.recall(query, count_access=False, **opts)
            return result, neighbourhood.of_trace(bank, result.trace, result.unit_ids)

        self.status.setText("Recalling…")
        self.run_button.setEnabled(False)
        self.state.runner.run_query(
            work,
            lambda out: self._arrived(*out),
            self._failed,
            key=bank,
            latest=(self, "recall"),  # a newer question (or slider move) wins
        )

    def _failed(self, error: BaseException) -> None:
        self.run_button.setEnabled(True)
        self.status.setText(f"Recall failed: {describe(error)}")

    def _arrived(self, result: RecallResult, nb: Neighbourhood) -> None:
        self.run_button.setEnabled(True)
        self.show_result(result, nb)
        self.recalled.emit(result)

    # -- a recorded recall ----------------------------------------------------------------------

    def show_recorded(self, entry: ActivityEntry) -> None:
        """Show the trace a journaled recall gave its caller, exactly as it got it."""
        bank = self.bank
        if bank is None:
            return

        def read() -> tuple[RecallResult, Neighbourhood]:
            result = bank.recorded_recall(entry.id)
            return result, neighbourhood.of_trace(bank, result.trace, result.unit_ids)

        self.status.setText(f"Reading recall #{entry.id} from the journal…")
        self.state.runner.run_query(
            read,
            lambda out: self._recorded_arrived(entry, *out),
            self._failed,
            key=bank,
            latest=(self, "recall"),
        )

    def _recorded_arrived(
        self, entry: ActivityEntry, result: RecallResult, nb: Neighbourhood
    ) -> None:
        self.recorded, self.replay = entry, None
        self._recorded_nb = (result, nb)
        self._fill_form(result)
        self.show_result(result, nb)
        self._show_recorded_bar()

    def show_as_recorded(self) -> None:
        if self.recorded is not None and getattr(self, "_recorded_nb", None):
            self.replay = None
            self.show_result(*self._recorded_nb)
            self._show_recorded_bar()

    def replay_now(self) -> None:
        """Run the recorded recall again against the bank as it is now."""
        bank, entry = self.bank, self.recorded
        if bank is None or entry is None:
            return

        def work() -> tuple[RecallReplay, Neighbourhood]:
            replay = bank.replay_recall(entry.id)
            result = replay.replayed
            return replay, neighbourhood.of_trace(bank, result.trace, result.unit_ids)

        self.replay_button.setEnabled(False)
        self.status.setText("Replaying against the bank as it is now…")
        self.state.runner.run_query(
            work,
            lambda out: self._replayed(entry, *out),
            self._failed,
            key=bank,
            latest=(self, "recall"),
        )

    def _replayed(self, entry: ActivityEntry, replay: RecallReplay, nb: Neighbourhood) -> None:
        if self.recorded is not entry:
            return
        self.replay = replay
        self.show_result(replay.replayed, nb)
        self._show_recorded_bar()

    def _show_recorded_bar(self) -> None:
        entry = self.recorded
        self.replay_button.setEnabled(entry is not None)
        self.recorded_bar.setVisible(entry is not None)
        if entry is None:
            return
        who = (
            f"<b>Recorded recall #{entry.id}</b> by <b>{html.escape(entry.actor)}</b>"
            f" via {html.escape(entry.transport)} at {entry.started_at:%Y-%m-%d %H:%M:%S} UTC"
        )
        replay = self.replay
        self.recorded_back.setVisible(replay is not None)
        if replay is None:
            self.recorded_label.setText(who + " — as the caller got it.")
            return
        lines = [f"{who} — <b>replayed now</b>: {html.escape(replay.summary())}."]
        # A few of each (the fused table and the budget bar show the rest).
        shown = {"lost": replay.lost[:SHOWN], "gained": replay.gained[:SHOWN]}
        for item in shown["lost"]:
            lines.append(
                f"<span style='color:{SKIP_COLOR}'>− {html.escape(_short(item.text, 110))}</span>"
            )
        for item in shown["gained"]:
            lines.append(
                f"<span style='color:{FIT_COLOR}'>+ {html.escape(_short(item.text, 110))}</span>"
            )
        for move in replay.moved[:SHOWN]:
            lines.append(f"~ #{move.was} → #{move.now} {html.escape(_short(move.text, 90))}")
        hidden = sum(max(0, len(x) - SHOWN) for x in (replay.lost, replay.gained, replay.moved))
        if hidden:
            lines.append(f"<i>… and {hidden} more</i>")
        self.recorded_label.setText("<br>".join(lines))

    def _fill_form(self, result: RecallResult) -> None:
        """The form as the recorded recall was asked (so Recall asks it again)."""
        trace = result.trace
        self.query.setText(result.query)
        self.budget.setValue(max(self.budget.minimum(), min(result.budget, self.budget.maximum())))
        level = self.level.findData(trace.level)
        if level >= 0:
            self.level.setCurrentIndex(level)
        asked = set(trace.networks) or set(NETWORKS)
        for network, box in self.network_boxes.items():
            box.setChecked(network in asked)
        self.use_now.setChecked(trace.now is not None)
        if trace.now is not None:
            self.now.setDateTime(QDateTime(trace.now))

    def _forget_recorded(self) -> None:
        self.recorded, self.replay = None, None
        self._recorded_nb = None
        self.recorded_bar.setVisible(False)

    # -- showing ------------------------------------------------------------------------------

    def show_result(self, result: RecallResult, nb: Neighbourhood) -> None:
        """Show a recall and the neighbourhood its trace names."""
        self.result = result
        self.trace = result.trace
        graph = nb.graph
        self.texts = {**nb.texts, **{u: graph.label(i) for i, u in enumerate(graph.ids)}}
        self.networks = {
            **{u: NETWORKS.index(n) for u, n in nb.networks.items() if n in NETWORKS},
            **{u: int(graph.network[i]) for i, u in enumerate(graph.ids)},
        }
        for item in (*result.items, *result.observations):
            self.texts.setdefault(item.unit_id, item.text)
        view = trace_view(result.trace)
        self.view_data = view
        self.selected = None
        self._show_fact(None)
        self.stack.setCurrentWidget(self.body)
        self.save_button.setEnabled(True)

        for name, table in self.channel_tables.items():
            self._fill_channel(table, view.channels.get(name, []))
            self.channel_notes[name].setText(view.channel_notes.get(name, ""))
        self._fill_fused(view)
        self.fused_title.setText(
            f"<b>Fused</b> (reciprocal rank fusion, k = {result.trace.settings.get('recall.rrf_k', 60)})"
            f" and <b>reranked</b> by <b>{view.reranker or '—'}</b>"
            f" ({result.trace.rerank.ms:.0f} ms)"
        )
        self.budget_bar.set_data(
            view.budget,
            view.tokens_used,
            [(u, view.tokens.get(u, 0)) for u in view.packed],
            view.skipped,
            self.networks,
            self.texts,
        )
        self.graph.show_graph(graph, activation=nb.activation, params=nb.params, marked=nb.packed)
        timings = result.trace.timings_ms
        parts = [
            f"{len(result.items)} facts packed",
            f"{view.tokens_used:,} of {view.budget:,} tokens",
            f"reranker: {view.reranker or '—'}",
        ]
        if "total" in timings:
            parts.append(f"{float(timings['total']):.0f} ms")
        reference = result.trace.reference_time
        if reference is not None and not self.use_now.isChecked():
            self.now.setDateTime(QDateTime(reference))  # what "now" was for this recall
        if reference is not None:
            parts.append(
                f"reference time {reference.isoformat()[:16]} ({result.trace.reference_source})"
            )
        interval = result.trace.interval
        parts.append(f"time window {interval.describe()}" if interval else "no time window")
        parts += view.notes
        self.status.setText(" · ".join(parts))

    def _fill_channel(self, table: _Table, rows: Sequence[ChannelRow]) -> None:
        table.setSortingEnabled(False)
        table.reset_rows(len(rows))
        for r, row in enumerate(rows):
            text = self.texts.get(row.unit_id, row.unit_id)
            table.setItem(r, 0, _item(str(row.rank), row.unit_id, True))
            table.setItem(r, 1, _item(f"{row.score:.4f}", row.unit_id, True))
            table.setItem(r, 2, _item(_short(text), row.unit_id, tip=f"{text}\n\nid {row.unit_id}"))

    def _fill_fused(self, view: TraceView) -> None:
        table = self.fused_table
        table.reset_rows(len(view.fused))
        for r, row in enumerate(view.fused):
            text = self.texts.get(row.unit_id, row.unit_id)
            status_item = _item(
                row.status,
                row.unit_id,
                tip=f"tried with {row.left} tokens left" if row.status == "skipped" else "",
            )
            if row.status == "packed":
                status_item.setForeground(QColor(FIT_COLOR))
            elif row.status == "skipped":
                status_item.setForeground(QColor(SKIP_COLOR))
            cells = {
                "rank": _item(str(row.rank), row.unit_id, True),
                "final": _item(
                    "—" if row.final_rank is None else str(row.final_rank), row.unit_id, True
                ),
                "budget": status_item,
                "tokens": _item("—" if row.tokens is None else str(row.tokens), row.unit_id, True),
                "fact": _item(_short(text, 120), row.unit_id, tip=f"{text}\n\nid {row.unit_id}"),
                "rrf": _item(
                    f"{row.score:.4f}" + (f" ×{row.factor:g}" if row.factor != 1.0 else ""),
                    row.unit_id,
                    True,
                    f"the channels' sum ×{row.factor:g}: spoken by a speaker the query names"
                    if row.factor != 1.0
                    else "",
                ),
                "rerank": _item(
                    "—" if row.rerank_score is None else f"{row.rerank_score:.4f}",
                    row.unit_id,
                    True,
                ),
            }
            for name in CHANNELS:
                c = row.contributions.get(name)
                cells[name] = _item(
                    f"#{c[0]}" if c else "—",
                    row.unit_id,
                    True,
                    f"{name}: rank {c[0]}, adds {c[1]:.5f} to the fused score"
                    if c
                    else f"not in {name}",
                )
            for col, key in enumerate(FUSED_KEYS):
                table.setItem(r, col, cells[key])

    # -- selection -------------------------------------------------------------------------------

    def select_unit(self, unit_id: str | None) -> None:
        """Select one fact in every list, the budget bar and the graph."""
        self.selected = unit_id
        for table in (*self.channel_tables.values(), self.fused_table):
            table.select_unit(unit_id)
        self.budget_bar.select(unit_id)
        self.graph.select(unit_id)
        self._show_fact(unit_id)

    def _show_fact(self, unit_id: str | None) -> None:
        """The selected fact's full text and where each channel ranked it."""
        text = self.texts.get(unit_id) if unit_id else None
        self.fact_strip.setVisible(text is not None)
        if text is None:
            self.fact_strip.clear()
            return
        places = [
            f"{name} #{table.row_of(unit_id) + 1}"
            for name, table in self.channel_tables.items()
            if table.row_of(unit_id) >= 0
        ]
        where = " · ".join(places) if places else "in no channel"
        self.fact_strip.setText(f"{text}\n— {where} · id {unit_id}")

    def prepare_screenshot(self, idle) -> None:
        """For `engram screenshot`: a demo query naming a speaker (so speaker focus
        shows), with its second fused fact selected."""
        self.query.setText("What did Priya say caused the Atlas outage on June 23?")
        self.run()
        idle()
        if len(self.view_data.fused) > 1:
            self.select_unit(self.view_data.fused[1].unit_id)
        player = self.graph.player
        player.pause()  # where the replay ends: every wave and the packed results
        player.seek(player.last_frame)
        idle()

    # -- saving ------------------------------------------------------------------------------------

    def save_trace(self, path: Path | str) -> Path:
        if self.trace is None:
            raise ValueError("there is no trace to save: run a recall first")
        path = Path(path)
        path.write_text(
            json.dumps(self.trace.to_dict(), indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        return path

    def ask_save_trace(self) -> None:
        if self.trace is None:
            return
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        name, _ = QFileDialog.getSaveFileName(
            self, "Save recall trace", f"recall-trace-{stamp}.json", "JSON (*.json)"
        )
        if name:
            try:
                self.save_trace(name)
            except OSError as error:
                self.status.setText(f"Could not save the trace: {error}")
            else:
                self.status.setText(f"Trace saved to {name}")
