"""The detail panel beside a network table: one unit in full, editable in place.

It shows what the engine knows of the unit (text, times, entities, confidence,
sources, extraction) and, when the engine exposes them, its provenance (the
source turns in their conversation, the used ones highlighted) and its graph
links. Saving and deleting are requests the owning pane runs in the runner.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QDate, QDateTime, Qt, QTime, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDateTimeEdit,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import muted_label
from app.state import StudioState
from app.theme import NETWORK_COLORS
from app.unit_model import fmt_interval, fmt_time
from core import Network

if TYPE_CHECKING:
    from core import Bank, Unit


class UnitDetail(QWidget):
    save_requested = Signal(str, dict)  # unit id, edit_unit keyword arguments
    delete_requested = Signal(list)  # unit ids
    hide_requested = Signal(str, bool)  # unit id, True: hide / False: unhide
    entity_clicked = Signal(str)  # entity name (or id when names are unknown)
    # Set by a pane whose detail sits beside its list: hidden while no unit is shown.
    collapsible = False

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.unit: Unit | None = None
        self.entity_names: dict[str, str] = {}
        self._editing = False

        self.placeholder = muted_label("Select a row to see the unit in full.")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)

        self.badge = QLabel()
        self.badge.setProperty("role", "badge")
        self.unit_id = muted_label()
        self.unit_id.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.unit_id.setWordWrap(False)
        self.edit_button = QPushButton("Edit")
        self.edit_button.setToolTip("Edit this unit in place (re-embedded on save)")
        self.edit_button.clicked.connect(self.start_edit)
        self.delete_button = QPushButton("Delete")
        self.delete_button.setProperty("danger", True)
        self.delete_button.clicked.connect(self._delete)
        self.hide_button = QPushButton("Hide")
        self.hide_button.setToolTip(
            "Hide this fact from recall, reflect and the default views without deleting it"
        )
        self.hide_button.clicked.connect(self._hide)
        self.unit_id.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        header = QHBoxLayout()
        header.addWidget(self.badge)
        header.addWidget(self.unit_id, 1)
        actions = QHBoxLayout()
        actions.addStretch(1)
        actions.addWidget(self.edit_button)
        actions.addWidget(self.hide_button)
        actions.addWidget(self.delete_button)
        self.actions = actions

        self.text = QPlainTextEdit()
        self.text.setObjectName("unit-text")
        self.text.setReadOnly(True)
        self.text.setMinimumHeight(70)
        self.text.setMaximumHeight(160)

        # Editors, shown only while editing.
        self.network = QComboBox()
        for n in Network:
            self.network.addItem(n.value.capitalize(), n.value)
        self.occurred_known = QCheckBox("Known")
        self.occurred = QDateTimeEdit()
        self.occurred.setCalendarPopup(True)
        self.occurred.setDisplayFormat("yyyy-MM-dd HH:mm")
        self.occurred_known.toggled.connect(self.occurred.setEnabled)
        self.confidence_set = QCheckBox("Set")
        self.confidence = QDoubleSpinBox()
        self.confidence.setRange(0.0, 1.0)
        self.confidence.setSingleStep(0.05)
        self.confidence.setDecimals(2)
        self.confidence_set.toggled.connect(self.confidence.setEnabled)
        self.save_button = QPushButton("Save")
        self.save_button.setProperty("primary", True)
        self.save_button.clicked.connect(self._save)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel_edit)
        self.editors = QWidget()
        ed = QFormLayout(self.editors)
        ed.setContentsMargins(0, 0, 0, 0)
        ed.addRow("Network", self.network)
        row = QHBoxLayout()
        row.addWidget(self.occurred_known)
        row.addWidget(self.occurred, 1)
        ed.addRow("Occurred", row)
        row = QHBoxLayout()
        row.addWidget(self.confidence_set)
        row.addWidget(self.confidence, 1)
        ed.addRow("Confidence", row)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.save_button)
        ed.addRow(buttons)
        self.editors.setVisible(False)

        self.fields: dict[str, QLabel] = {}
        form = QFormLayout()
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        for key, title in (
            ("occurred", "Occurred"),
            ("mentioned", "Mentioned"),
            ("confidence", "Confidence"),
            ("entities", "Entities"),
            ("tags", "Tags"),
            ("metadata", "Metadata"),
            ("sources", "Source turns"),
            ("extraction", "Extraction"),
            ("status", "Status"),
            ("created", "Created"),
            ("updated", "Updated"),
            ("accessed", "Usage"),
        ):
            label = QLabel()
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            self.fields[key] = label
            form.addRow(title, label)
        self.fields["entities"].linkActivated.connect(self._entity_link)
        for key in ("tags", "metadata"):  # an agent's text: shown as text, never as markup
            self.fields[key].setTextFormat(Qt.TextFormat.PlainText)

        self.provenance = QTextBrowser()
        self.provenance.setObjectName("provenance")
        self.provenance.setOpenLinks(False)
        self.provenance.setMinimumHeight(120)
        prov_box = QGroupBox("Provenance")
        pv = QVBoxLayout(prov_box)
        pv.addWidget(self.provenance)
        self.links = QLabel()
        self.links.setWordWrap(True)
        self.links.setTextFormat(Qt.TextFormat.RichText)
        links_box = QGroupBox("Graph links")
        lv = QVBoxLayout(links_box)
        lv.addWidget(self.links)

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addLayout(header)
        layout.addWidget(self.text)
        layout.addLayout(actions)
        layout.addWidget(self.editors)
        layout.addLayout(form)
        layout.addWidget(prov_box)
        layout.addWidget(links_box)
        layout.addStretch(1)
        self.body = body

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(body)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.placeholder)
        outer.addWidget(scroll)
        self.scroll = scroll
        self.show_unit(None)

    # -- showing -------------------------------------------------------------

    def show_unit(self, unit: Unit | None) -> None:
        self.unit = unit
        self._editing = False
        self.editors.setVisible(False)
        self.edit_button.setEnabled(True)
        self.text.setReadOnly(True)
        self.placeholder.setVisible(unit is None)
        self.scroll.setVisible(unit is not None)
        if self.collapsible:  # an empty panel beside a list only takes the list's room
            self.setVisible(unit is not None)
        # What is still being read for the unit shown before never arrives.
        self.state.runner.supersede(self)
        if unit is None:
            return
        network = Network(unit.network)
        self.badge.setText(network.value.upper())
        self.badge.setStyleSheet(f"background: {NETWORK_COLORS[network]};")
        self.unit_id.setText(f"id {unit.id}")
        self.text.setPlainText(unit.text)
        self.fields["occurred"].setText(fmt_interval(unit.occurred_start, unit.occurred_end))
        self.fields["mentioned"].setText(fmt_time(unit.mentioned_at) or "unknown")
        self.fields["confidence"].setText(
            "—" if unit.confidence is None else f"{unit.confidence:.2f}"
        )
        self._show_entities()
        self.fields["tags"].setText(", ".join(unit.tags) or "none")
        self.fields["metadata"].setText(metadata_text(unit.metadata))
        # Turn ids mean nothing to a reader: the speakers and times replace them once read.
        n = len(unit.source_ids)
        self.fields["sources"].setText(
            f"{n} turn{'s' if n != 1 else ''} (reading…)" if n else "none (added by hand)"
        )
        extraction = str(unit.extraction_mode)
        if unit.model:
            extraction += f" · {unit.model}"
        self.fields["extraction"].setText(extraction)
        self.fields["status"].setText(str(unit.status))
        status = str(unit.status)
        self.hide_button.setText("Unhide" if status == "hidden" else "Hide")
        # Retracted and stale units come back with their entity or their rebuild.
        self.hide_button.setEnabled(status in ("active", "hidden"))
        self.fields["created"].setText(created_text(unit))
        self.fields["updated"].setText(fmt_time(unit.updated_at))
        self.fields["accessed"].setText(recalled_text(unit))
        self._load_extras(unit)

    def set_entity_names(self, names: dict[str, str]) -> None:
        self.entity_names = dict(names)
        if self.unit is not None:
            self._show_entities()

    def _show_entities(self) -> None:
        assert self.unit is not None
        links = []
        for entity_id in self.unit.entity_ids:
            name = self.entity_names.get(entity_id, entity_id)
            links.append(f'<a href="{html.escape(name)}">{html.escape(name)}</a>')
        label = self.fields["entities"]
        label.setTextFormat(Qt.TextFormat.RichText)
        label.setText(", ".join(links) if links else "none")
        label.setToolTip("Click an entity to show only the facts that mention it")

    def _load_extras(self, unit: Unit) -> None:
        bank = self.state.bank
        if bank is None:
            return
        run = self.state.runner.run_query
        self.provenance.setHtml("<i>Loading source turns…</i>")
        # One call: the conversation, and the unit read afresh (a table's page may
        # be older than the last recall: its count is shown from this).
        run(
            lambda: load_provenance(bank, unit),
            self._show_provenance,
            lambda error: self._show_provenance(None, str(error)),
            key=bank,
            latest=(self, "provenance"),
        )
        self.links.setText("<i>Loading links…</i>")
        names = dict(self.entity_names)
        run(
            lambda: load_links(bank, unit.id),
            lambda result: self._show_links(unit, result, names),
            lambda error: self._show_links(unit, None, names, str(error)),
            key=bank,
            latest=(self, "links"),
        )

    def _show_recalled(self, fresh: Unit) -> None:
        self.fields["accessed"].setText(recalled_text(fresh))

    def _show_provenance(self, result: Provenance | None, error: str = "") -> None:
        if error or result is None:
            self.provenance.setHtml(f"<p style='color:#c0392b'>{html.escape(error)}</p>")
            return
        if result.unit is not None:
            self._show_recalled(result.unit)
        self.provenance.setHtml(provenance_html(result))
        self.provenance.scrollToAnchor("used")
        if result.sources:
            self.fields["sources"].setText(source_turns_text(result.sources))

    def _show_links(self, unit: Unit, result: Any, names: dict[str, str], error: str = "") -> None:
        if error or result is None:
            self.links.setText(html.escape(error))
            return
        links, others = result
        self.links.setText(links_html(unit.id, links, others, names))

    # -- editing -------------------------------------------------------------

    def start_edit(self) -> None:
        unit = self.unit
        if unit is None:
            return
        self._editing = True
        self.text.setReadOnly(False)
        self.network.setCurrentIndex(max(0, self.network.findData(str(unit.network))))
        self.occurred_known.setChecked(unit.occurred_start is not None)
        self.occurred.setEnabled(unit.occurred_start is not None)
        # Undated: offer when it was said (the bank's own time), not today.
        when = unit.occurred_start or unit.mentioned_at or datetime.now()
        self.occurred.setDateTime(_qdatetime(when))
        self.confidence_set.setChecked(unit.confidence is not None)
        self.confidence.setEnabled(unit.confidence is not None)
        self.confidence.setValue(unit.confidence if unit.confidence is not None else 0.5)
        self.editors.setVisible(True)
        self.edit_button.setEnabled(False)
        self.text.setFocus()

    def cancel_edit(self) -> None:
        self.show_unit(self.unit)

    def finish_edit(self) -> None:
        """Saved: leave edit mode showing what was typed until the fresh unit arrives."""
        self._editing = False
        self.editors.setVisible(False)
        self.edit_button.setEnabled(True)
        self.text.setReadOnly(True)

    @property
    def editing(self) -> bool:
        return self._editing

    def edits(self) -> dict[str, Any]:
        """The `edit_unit` keyword arguments for what was changed."""
        unit = self.unit
        if unit is None:
            return {}
        out: dict[str, Any] = {}
        text = self.text.toPlainText().strip()
        if text != unit.text:
            out["text"] = text
        network = self.network.currentData()
        if network != str(unit.network):
            out["network"] = network
        start = self.occurred.dateTime().toPython() if self.occurred_known.isChecked() else None
        if start is not None:
            start = start.replace(second=0, microsecond=0)
        before = (
            unit.occurred_start.replace(second=0, microsecond=0) if unit.occurred_start else None
        )
        if start != before:
            out["occurred_start"] = start
            if start is None or (unit.occurred_end is not None and unit.occurred_end < start):
                out["occurred_end"] = None
        confidence = round(self.confidence.value(), 2) if self.confidence_set.isChecked() else None
        current = None if unit.confidence is None else round(unit.confidence, 2)
        if confidence != current:
            out["confidence"] = confidence
        return out

    def _save(self) -> None:
        if self.unit is None:
            return
        edits = self.edits()
        if not edits:
            self.cancel_edit()
            return
        self.save_requested.emit(self.unit.id, edits)

    def _delete(self) -> None:
        if self.unit is not None:
            self.delete_requested.emit([self.unit.id])

    def _hide(self) -> None:
        if self.unit is not None:
            self.hide_requested.emit(self.unit.id, str(self.unit.status) != "hidden")

    def _entity_link(self, name: str) -> None:
        self.entity_clicked.emit(html.unescape(name))


def _qdatetime(value: datetime) -> QDateTime:
    return QDateTime(
        QDate(value.year, value.month, value.day), QTime(value.hour, value.minute, value.second)
    )


CONTEXT_TURNS = 3  # turns shown before and after the used ones
LINKS_PER_KIND = 6


@dataclass
class Provenance:
    """The source turns of a unit, in their conversation when it was found."""

    title: str
    turns: list[Any]
    used: set[str]
    before: bool = False  # turns exist before / after the ones shown
    after: bool = False
    sources: list[Any] = field(default_factory=list)  # every source turn, in source order
    unit: Unit | None = None  # the unit as read with them (its access count is fresh)


def load_provenance(bank: Bank, unit: Unit) -> Provenance:
    """Runs in the runner: one engine call (`Bank.unit_context`) finds the unit's
    conversation through its document, however many documents the bank holds."""
    found = bank.unit_context(unit.id, CONTEXT_TURNS)
    sources = list(found.sources)
    used = {t.id for t in sources}
    if not found.turns:
        return Provenance("", sources, used, sources=sources, unit=found.unit)
    return Provenance(
        found.title, list(found.turns), used, found.before, found.after, sources, found.unit
    )


SOURCE_TURNS_LISTED = 4


def source_turns_text(turns: list[Any]) -> str:
    """ "Alice · 2025-03-01 10:00; Bob · 2025-03-01 10:02 and 3 more": who said
    the turns a unit came from, and when."""
    shown = [
        f"{t.speaker} · {fmt_time(t.timestamp)}" if t.timestamp else str(t.speaker)
        for t in turns[:SOURCE_TURNS_LISTED]
    ]
    more = len(turns) - SOURCE_TURNS_LISTED
    return "; ".join(shown) + (f" and {more} more" if more > 0 else "")


def provenance_html(p: Provenance) -> str:
    if not p.turns:
        return "<i>No source turns recorded (added by hand, or synthesised).</i>"
    parts = []
    if p.title:
        parts.append(f"<p style='margin:0 0 4px 0'><b>{html.escape(p.title)}</b></p>")
    if p.before:
        parts.append("<p style='color:gray;margin:0'>…</p>")
    anchored = False
    for turn in p.turns:
        if turn.id in p.used and not anchored:
            parts.append("<a name='used'></a>")
            anchored = True
        speaker = html.escape(str(turn.speaker))
        text = html.escape(str(turn.text))
        when = (
            f"<span style='color:gray'>{fmt_time(turn.timestamp)}</span> " if turn.timestamp else ""
        )
        highlight = "background:#fff3bf;color:#1d2430;" if turn.id in p.used else ""
        parts.append(f"<p style='{highlight}margin:2px 0'>{when}<b>{speaker}</b>: {text}</p>")
    if p.after:
        parts.append("<p style='color:gray;margin:0'>…</p>")
    return "".join(parts)


def load_links(bank: Bank, unit_id: str) -> tuple[list[Any], dict[str, Unit]]:
    """Runs in the runner: a unit's links and the units at their other ends."""
    links = list(bank.links(unit_id))
    others = list({link.target if link.source == unit_id else link.source for link in links})
    units = bank.units(ids=others, network=None, status=None, limit=None) if others else []
    return links, {u.id: u for u in units}


def links_html(
    unit_id: str, links: Iterable[Any], others: dict[str, Unit], names: dict[str, str]
) -> str:
    by_kind: dict[str, list[Any]] = {}
    for link in links:
        by_kind.setdefault(str(link.kind), []).append(link)
    if not by_kind:
        return "No links."
    parts = []
    for kind in ("causal", "entity", "temporal", "semantic", *sorted(by_kind)):
        group = by_kind.pop(kind, None)
        if not group:
            continue
        group.sort(key=lambda link: -link.weight)
        parts.append(f"<b>{html.escape(kind)}</b> ({len(group)})")
        for link in group[:LINKS_PER_KIND]:
            other_id = link.target if link.source == unit_id else link.source
            other = others.get(other_id)
            text = other.text if other else other_id
            text = text if len(text) <= 90 else text[:89] + "…"
            how = ""
            if link.relation:
                how = f"{link.relation} · "
            elif link.entity_id:
                how = f"via {names.get(link.entity_id, link.entity_id)} · "
            parts.append(
                f"&nbsp;&nbsp;<span style='color:gray'>{html.escape(how)}{link.weight:.2f}</span> "
                f"{html.escape(text)}"
            )
        if len(group) > LINKS_PER_KIND:
            parts.append(
                f"&nbsp;&nbsp;<span style='color:gray'>and {len(group) - LINKS_PER_KIND} more</span>"
            )
    return "<br>".join(parts)


def created_text(unit: Unit) -> str:
    """ "2026-12-01 18:40 · by support-bot": when, and by whom (the request's actor)."""
    by = f" · by {unit.created_by}" if unit.created_by else ""
    return fmt_time(unit.created_at) + by


def metadata_text(metadata: dict[str, str]) -> str:
    """An agent's metadata (Hindsight's `metadata`), one `key: value` a line."""
    if not metadata:
        return "none"
    return "\n".join(f"{key}: {value}" for key, value in sorted(metadata.items()))


def recalled_text(unit: Unit) -> str:
    """ "recalled 3 times · last recalled 2026-12-01 18:40": by agents and the studio
    (the recall debugger's inspection runs are not counted)."""
    n = unit.access_count
    if not n:
        return "never recalled"
    times = "once" if n == 1 else f"{n} times"
    last = f" · last recalled {fmt_time(unit.last_accessed_at)}" if unit.last_accessed_at else ""
    return f"recalled {times}{last}"
