"""The Reflect pane: Θ sliders with the prompt they make, profiles compared, one committed.

Left: the disposition Θ (Trusting ↔ Skeptical, Flexible ↔ Literal, Detached ↔
Empathetic, bias 0–1) and, live, the exact system prompt it verbalises to;
"Save to bank" makes it the bank's profile. Right: compare 2–4 profiles on
one query — each column shows the answer (the memories and sentences the
other answers do not have highlighted), the evidence used and the opinions it would form — and
commit the one to keep; or browse past reflections. Without a language model
the pane says so, and every column is the extractive reflection.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSlider,
    QSpinBox,
    QSplitter,
    QStackedWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import Pane, empty_label, muted_label, read_only_table
from app.runner import describe
from app.state import StudioState
from core import (
    Disposition,
    Kind,
    system_prompt,
)

if TYPE_CHECKING:
    from core import (
        Bank,
        BankProfile,
        Change,
        Comparison,
        Reflection,
    )

# (attribute, left end, right end)
TRAITS = (
    ("skepticism", "Trusting", "Skeptical"),
    ("literalism", "Flexible", "Literal"),
    ("empathy", "Detached", "Empathetic"),
)
PRESETS = (
    ("Skeptical, literal, detached", Disposition(5, 5, 1, 0.6)),
    ("Trusting, flexible, empathetic", Disposition(1, 1, 5, 0.6)),
)
MAX_PROFILES = 4
MIN_PROFILES = 2
DIFF_RGBA = (250, 204, 21, 0.45)  # legible on light and dark
DIFF_STYLE = f"background-color: rgba{DIFF_RGBA};"
OFFLINE_TEXT = (
    "<b>Offline mode.</b> No language model is reachable, so every answer is the "
    "<i>extractive reflection</i>: the evidence Θ selects and orders, quoted. Choose an "
    "Ollama model in <b>Settings</b> for written answers."
)


def theta_label(d: Disposition) -> str:
    return (
        f"Θ skeptic {d.skepticism} · literal {d.literalism} · empathy {d.empathy} · β {d.bias:.2f}"
    )


# -- evidence diff ---------------------------------------------------------------------------

# What two answers are compared by: the memories they quote, not their words. An
# extractive answer is a numbered list of used memories ("3. [what I did, <when>]
# <memory>") and a list of left-out ones ("- “<memory…>” — <why>"); a written
# answer is sentences. As "What differs" says it: a used memory differs when no
# other answer uses it, a left-out one when another answer uses it (a rank or a
# reason that moved is not a difference); a sentence differs when no other
# answer has one close to it.
_USED = re.compile(r"^\s*\d+\.\s+(?:\[[^\]]*\]\s*)?(?P<memory>\S.*)$")
_LEFT_OUT = re.compile(r"^\s*[-•]\s*“(?P<memory>[^”]*)”")
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+[\"”’)]*|$)|\n")
SIMILAR_SENTENCE = 0.8  # difflib ratio over words above which two sentences say the same


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _segments(text: str) -> list[tuple[str, tuple[str, str] | None]]:
    """`text` cut into pieces with what each says: ("used" | "left out", memory)
    for a memory line, ("said", sentence) for prose, None for blank space and headings."""
    out: list[tuple[str, tuple[str, str] | None]] = []
    for line in text.splitlines(keepends=True):
        if line.rstrip().endswith(":"):  # a heading ("Left out (98):"): its count is no evidence
            out.append((line, None))
            continue
        used, left = _USED.match(line), _LEFT_OUT.match(line)
        if used or left:
            memory = (used or left)["memory"].rstrip("…")
            out.append((line, ("used" if used else "left out", " ".join(_words(memory)))))
            continue
        for piece in _SENTENCE.findall(line):
            words = _words(piece)
            out.append((piece, ("said", " ".join(words)) if words else None))
    return out


def _differs(key: tuple[str, str], theirs: Sequence[tuple[str, str]]) -> bool:
    kind, said = key
    if kind == "said":
        words = said.split()
        return not any(
            k[0] == "said"
            and difflib.SequenceMatcher(a=words, b=k[1].split(), autojunk=False).ratio()
            >= SIMILAR_SENTENCE
            for k in theirs
        )
    # Left-out quotes are cut short: a memory is the same when one starts the other.
    used_elsewhere = any(
        k[0] == "used" and (k[1].startswith(said) or said.startswith(k[1])) for k in theirs
    )
    return not used_elsewhere if kind == "used" else used_elsewhere


def evidence_diff(text: str, others: Sequence[str]) -> list[tuple[str, bool]]:
    """`text` as (piece, differs) pairs: a memory used here and nowhere else or
    left out here and used elsewhere, or a sentence no other answer says (see above)."""
    pieces = _segments(text)
    if not others:
        return [(piece, False) for piece, _key in pieces]
    theirs = [key for other in others for _p, key in _segments(other) if key is not None]
    return [(piece, key is not None and _differs(key, theirs)) for piece, key in pieces]


def diff_html(text: str, others: Sequence[str]) -> str:
    parts = []
    for piece, differs in evidence_diff(text, others):
        escaped = html.escape(piece).replace("\n", "<br>")
        parts.append(f'<span style="{DIFF_STYLE}">{escaped}</span>' if differs else escaped)
    return "".join(parts)


QUOTE_CHARS = 70
DIFFERENCES_LISTED = 3
COLUMN_MIN_WIDTH = 230  # three fit a 1440 window; beyond that the row scrolls sideways


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return f"“{text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + '…'}”"


def differences(reflection: Reflection, others: Sequence[Reflection]) -> list[str]:
    """What sets one answer apart from the others', in evidence: the facts only it
    uses, the ones the others use that it leaves out (and why), or, with the same
    facts, what it puts first."""
    if not others:
        return []
    mine = reflection.evidence_ids
    theirs = {u for o in others for u in o.evidence_ids}
    texts = {e.unit_id: e.text for r in (reflection, *others) for e in r.evidence}
    reasons = {x.unit_id: x.reason for x in reflection.left_out}
    out = []
    only = [u for u in mine if u not in theirs]
    if only:
        out.append(
            f"Only this profile uses {len(only)}: "
            + "; ".join(_quote(texts[u]) for u in only[:DIFFERENCES_LISTED])
        )
    missing = [u for u in dict.fromkeys(u for o in others for u in o.evidence_ids) if u not in mine]
    if missing:
        out.append(
            f"Leaves out {len(missing)} the others use: "
            + "; ".join(
                _quote(texts[u]) + (f" ({reasons[u]})" if u in reasons else "")
                for u in missing[:DIFFERENCES_LISTED]
            )
        )
    if not out and mine:
        firsts = {o.evidence_ids[0] for o in others if o.evidence_ids}
        if firsts != {mine[0]}:
            out.append(f"Same facts, but puts first {_quote(texts[mine[0]])}")
        else:
            out.append("Same facts in the same lead as the others")
    return out


def offline_body(answer: str) -> str:
    """An extractive answer without its preamble (what it is, Θ, the question): the
    banner says it once for every column, and the columns differ in what follows."""
    lines = answer.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Question:"):
            return "\n".join(lines[i + 1 :]).strip("\n")
    return answer


def answer_html(reflection: Reflection, others: Sequence[Reflection]) -> str:
    """The column's answer: offline, what differs first, then the body with the
    memories and sentences the other answers do not have highlighted."""
    if not reflection.offline:
        return diff_html(reflection.answer, [o.answer for o in others])
    head = "".join(f"<li>{html.escape(d)}</li>" for d in differences(reflection, others))
    head = f"<p><b>What differs</b></p><ul style='margin-top:0'>{head}</ul>" if head else ""
    body = diff_html(offline_body(reflection.answer), [offline_body(o.answer) for o in others])
    return head + body


# -- widgets ---------------------------------------------------------------------------------


class ThetaEditor(QWidget):
    """Sliders for Θ; `changed` carries the new Disposition."""

    changed = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        self.sliders: dict[str, QSlider] = {}
        self.values: dict[str, QLabel] = {}
        for row, (trait, left, right) in enumerate(TRAITS):
            slider = QSlider(Qt.Orientation.Horizontal)
            slider.setRange(1, 5)
            slider.setPageStep(1)
            slider.setTickPosition(QSlider.TickPosition.TicksBelow)
            slider.setTickInterval(1)
            slider.setToolTip(f"{trait}: 1 = {left.lower()}, 5 = {right.lower()}")
            slider.valueChanged.connect(self._emit)
            value = QLabel()
            grid.addWidget(QLabel(left), row, 0, Qt.AlignmentFlag.AlignRight)
            grid.addWidget(slider, row, 1)
            grid.addWidget(QLabel(right), row, 2)
            grid.addWidget(value, row, 3)
            self.sliders[trait] = slider
            self.values[trait] = value
        self.bias = QSlider(Qt.Orientation.Horizontal)
        self.bias.setRange(0, 100)
        self.bias.setPageStep(10)
        self.bias.setToolTip("Bias strength β: how far the disposition may lean the answer")
        self.bias.valueChanged.connect(self._emit)
        self.bias_value = QLabel()
        grid.addWidget(QLabel("Neutral"), 3, 0, Qt.AlignmentFlag.AlignRight)
        grid.addWidget(self.bias, 3, 1)
        grid.addWidget(QLabel("Opinionated"), 3, 2)
        grid.addWidget(self.bias_value, 3, 3)
        grid.setColumnStretch(1, 1)
        self._quiet = False
        self.set_disposition(Disposition())

    def disposition(self) -> Disposition:
        return Disposition(
            skepticism=self.sliders["skepticism"].value(),
            literalism=self.sliders["literalism"].value(),
            empathy=self.sliders["empathy"].value(),
            bias=round(self.bias.value() / 100, 2),
        )

    def set_disposition(self, d: Disposition) -> None:
        self._quiet = True
        try:
            for trait, slider in self.sliders.items():
                slider.setValue(int(getattr(d, trait)))
            self.bias.setValue(round(float(d.bias) * 100))
        finally:
            self._quiet = False
        self._emit()

    def _emit(self, *_: Any) -> None:
        d = self.disposition()
        for trait, label in self.values.items():
            label.setText(f"{getattr(d, trait)}/5")
        self.bias_value.setText(f"{d.bias:.2f}")
        if not self._quiet:
            self.changed.emit(d)


class ReflectionColumn(QFrame):
    """One reflection of a comparison: answer, evidence, opinions, and a commit button."""

    commit_requested = Signal(object)  # Reflection

    def __init__(
        self, reflection: Reflection, others: Sequence[Reflection], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.reflection = reflection
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setMinimumWidth(COLUMN_MIN_WIDTH)
        layout = QVBoxLayout(self)
        title = QLabel(f"<b>{html.escape(theta_label(reflection.disposition))}</b>")
        title.setWordWrap(True)
        mode = muted_label(reflection.mode + (f" · {reflection.model}" if reflection.model else ""))
        # The commit button sits under the title, so it shows however long the answer is.
        self.commit_button = QPushButton("Commit this reflection")
        self.commit_button.setToolTip("Keep this answer and apply exactly its opinions")
        self.commit_button.setEnabled(reflection.ok and not reflection.committed)
        self.commit_button.clicked.connect(lambda: self.commit_requested.emit(self.reflection))
        self.status = muted_label("")
        layout.addWidget(title)
        layout.addWidget(mode)
        layout.addWidget(self.commit_button)
        layout.addWidget(self.status)
        self.answer = QTextBrowser()
        self.answer.setOpenLinks(False)
        self.answer.setMinimumHeight(100)
        if reflection.error:
            self.answer.setHtml(f"<p style='color:#dc2626'>{html.escape(reflection.error)}</p>")
        else:
            self.answer.setHtml(answer_html(reflection, others))
        self.answer.setToolTip(
            "Highlighted: the memories and sentences the other answers do not have"
        )
        layout.addWidget(QLabel("Answer"))
        layout.addWidget(self.answer, 3)

        self.evidence = QListWidget()
        self.evidence.setWordWrap(True)
        self.evidence.setMinimumHeight(60)
        # Marked as in the answer: the memories no other column uses (the list is
        # what the eye reads first; the answer's own marks can sit below its fold).
        theirs = {u for o in others for u in o.evidence_ids}
        r, g, b, alpha = DIFF_RGBA
        only_here = QBrush(QColor(r, g, b, round(alpha * 255)))
        unique = 0
        for e in reflection.evidence:
            item = QListWidgetItem(f"[{e.network}] {e.text}")
            item.setData(Qt.ItemDataRole.UserRole, e.unit_id)
            tip = f"{e.text}\n\n{e.date} · score {e.score:.3f} · id {e.unit_id}"
            if others and e.unit_id not in theirs:
                unique += 1
                item.setBackground(only_here)
                tip = "Only this profile uses it.\n\n" + tip
            item.setToolTip(tip)
            self.evidence.addItem(item)
        only = f" · {unique} only here, marked" if unique else ""
        heading = QLabel(f"Evidence used ({len(reflection.evidence)}{only})")
        heading.setWordWrap(True)  # a column is ~230 px wide
        layout.addWidget(heading)
        layout.addWidget(self.evidence, 2)
        if reflection.left_out:
            left = muted_label(f"{len(reflection.left_out)} recalled facts left out by Θ")
            left.setToolTip("\n".join(f"{x.unit_id}: {x.reason}" for x in reflection.left_out[:30]))
            layout.addWidget(left)

        self.opinions = QListWidget()
        self.opinions.setWordWrap(True)
        self.opinions.setMinimumHeight(50)
        for o in reflection.opinions:
            if o.action.value == "formed":
                text = f"new · {o.confidence:.2f} · {o.text}"
            else:
                before = "?" if o.confidence_before is None else f"{o.confidence_before:.2f}"
                text = f"{o.relation or 'update'} · {before} → {o.confidence:.2f} · {o.existing_text or o.text}"
            item = QListWidgetItem(text)
            item.setToolTip(o.reason or o.text)
            self.opinions.addItem(item)
        if not reflection.opinions:
            note = reflection.opinion_error or "no opinion would be formed or changed"
            self.opinions.addItem(QListWidgetItem(f"— {note}"))
        layout.addWidget(QLabel(f"Opinions it would form ({len(reflection.opinions)})"))
        layout.addWidget(self.opinions, 1)

    def mark(self, committed: bool) -> None:
        self.commit_button.setEnabled(False)
        if committed:
            self.commit_button.setText("Committed ✓")
            self.status.setText("Kept: its opinions were applied to the bank.")
        else:
            self.status.setText("Not kept.")


class ReflectPane(Pane):
    title = "Reflect"
    slug = "reflect"
    compared = Signal(object)  # Comparison
    committed = Signal(object)  # Reflection committed

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self.profile: BankProfile | None = None
        self.comparison: Comparison | None = None
        self.columns: list[ReflectionColumn] = []
        self.past: list[Reflection] = []

        # -- left: Θ and the prompt it makes --
        self.theta = ThetaEditor()
        self.theta.changed.connect(self._theta_changed)
        self.preview = QPlainTextEdit()
        self.preview.setReadOnly(True)
        self.preview.setObjectName("prompt-preview")
        self.preview.setMinimumHeight(180)
        self.save_button = QPushButton("Save to bank profile")
        self.save_button.setToolTip("Make this Θ the bank's disposition")
        self.save_button.clicked.connect(self.save_profile)
        self.reset_button = QPushButton("Bank's Θ")
        self.reset_button.setToolTip("Put the sliders back to the bank's saved disposition")
        self.reset_button.clicked.connect(self._reset_theta)
        self.add_button = QPushButton("Add to comparison →")
        self.add_button.clicked.connect(self.add_current_profile)
        buttons = QHBoxLayout()
        buttons.addWidget(self.reset_button)
        buttons.addWidget(self.save_button)
        buttons.addStretch(1)
        buttons.addWidget(self.add_button)
        theta_box = QGroupBox("Disposition Θ")
        tl = QVBoxLayout(theta_box)
        tl.addWidget(self.theta)
        tl.addLayout(buttons)
        tl.addWidget(QLabel("System prompt it verbalises to (live):"))
        tl.addWidget(self.preview, 1)
        self.profile_status = muted_label()
        tl.addWidget(self.profile_status)

        # -- right: compare --
        self.query = QLineEdit()
        self.query.setPlaceholderText(
            "A question to answer under each profile, e.g. “Should we trust Tomás's estimate?”"
        )
        self.query.setClearButtonEnabled(True)
        self.query.returnPressed.connect(self.compare)
        self.budget = QSpinBox()
        self.budget.setRange(64, 200_000)
        self.budget.setSingleStep(256)
        self.budget.setValue(2048)
        self.budget.setSuffix(" tokens")
        self.compare_button = QPushButton("Compare")
        self.compare_button.setProperty("primary", True)
        self.compare_button.clicked.connect(self.compare)
        self.profiles = QListWidget()
        self.profiles.setMaximumHeight(84)
        self.profiles.setToolTip(
            "The profiles compared (2–4). Double-click one to load it into the sliders."
        )
        self.profiles.itemDoubleClicked.connect(self._load_profile_item)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_selected_profile)
        qrow = QHBoxLayout()
        qrow.addWidget(self.query, 1)
        qrow.addWidget(self.budget)
        qrow.addWidget(self.compare_button)
        prow = QHBoxLayout()
        prow.addWidget(self.profiles, 1)
        prow.addWidget(self.remove_button, 0, Qt.AlignmentFlag.AlignTop)
        self.offline_banner = QLabel(OFFLINE_TEXT)
        self.offline_banner.setWordWrap(True)
        self.offline_banner.setObjectName("offline-banner")
        self.offline_banner.setStyleSheet(
            "QLabel#offline-banner { background: rgba(234, 179, 8, 0.18); border: 1px solid rgba(202, 138, 4, 0.6);"
            " border-radius: 4px; padding: 6px; }"
        )
        self.compare_status = muted_label()
        self.columns_host = QWidget()
        self.columns_layout = QHBoxLayout(self.columns_host)
        self.columns_layout.setContentsMargins(0, 0, 0, 0)
        self.columns_empty = empty_label(
            "Pick 2–4 profiles (the sliders, then <b>Add to comparison</b>), type a question "
            "and press <b>Compare</b>.<br>Nothing is kept until you commit one answer."
        )
        self.columns_layout.addWidget(self.columns_empty)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.columns_host)
        self.columns_scroll = scroll
        compare_tab = QWidget()
        cl = QVBoxLayout(compare_tab)
        cl.addLayout(qrow)
        cl.addLayout(prow)
        cl.addWidget(self.compare_status)
        cl.addWidget(scroll, 1)

        # -- right: past reflections --
        self.history = read_only_table(["when", "question", "Θ", "mode"], stretch=1)
        self.history.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.history.itemSelectionChanged.connect(self._history_selected)
        self.history_detail = QTextBrowser()
        self.history_empty = muted_label("No reflection has been kept in this bank yet.")
        past_tab = QWidget()
        pl = QVBoxLayout(past_tab)
        past_split = QSplitter(Qt.Orientation.Vertical)
        past_split.addWidget(self.history)
        past_split.addWidget(self.history_detail)
        pl.addWidget(self.history_empty)
        pl.addWidget(past_split, 1)

        self.tabs = QTabWidget()
        self.tabs.addTab(compare_tab, "Compare profiles")
        self.tabs.addTab(past_tab, "Past reflections")

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.offline_banner)
        rl.addWidget(self.tabs, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(theta_box)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 5)
        self.splitter.setSizes([420, 1000])

        self.no_bank = self.no_bank_label(empty_label())
        self.stack = QStackedWidget()
        self.stack.addWidget(self.no_bank)
        self.stack.addWidget(self.splitter)
        root = QVBoxLayout(self)
        root.addWidget(self.stack)
        state.mode_changed.connect(self._mode_changed)
        self._mode_changed(state.mode)
        self.set_bank(state.bank)

    # -- pane interface ----------------------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self.state.runner.supersede(self)  # nothing still on its way for the old bank
        self.profile = None
        self.comparison = None
        self._clear_columns()
        self.profiles.clear()
        self.stack.setCurrentWidget(self.no_bank if bank is None else self.splitter)
        if bank is None:
            return
        self._load_profile(bank)
        self._load_history()

    def apply_change(self, change: Change, initiator: object = None) -> None:
        if change.touches(Kind.PROFILE) and self.bank is not None:
            self._load_profile(self.bank, keep_sliders=True)
        # A commit made here reloads the history when it is done (`_committed`).
        if change.touches(Kind.REFLECTION) and initiator is not self:
            self._load_history()

    def refresh(self) -> None:
        if self.bank is not None:
            self._load_profile(self.bank, keep_sliders=True)
            self._load_history()

    def focus_search(self) -> bool:
        self.query.setFocus()
        self.query.selectAll()
        return True

    def _mode_changed(self, mode: str) -> None:
        self.offline_banner.setVisible(mode.startswith("offline"))

    # -- profile and prompt -------------------------------------------------------------------

    def _load_profile(self, bank: Bank, keep_sliders: bool = False) -> None:
        def loaded(profile: BankProfile) -> None:
            first = self.profile is None
            self.profile = profile
            if not keep_sliders or first:
                self.theta.set_disposition(profile.disposition)
            self._update_preview()
            if self.profiles.count() == 0:
                self.set_profiles([profile.disposition, *(d for _name, d in PRESETS)])

        self.state.runner.run_query(bank.profile, loaded, key=bank, latest=(self, "profile"))

    def _theta_changed(self, _d: Disposition) -> None:
        self._update_preview()

    def _update_preview(self) -> None:
        if self.profile is None:
            self.preview.setPlainText("")
            return
        d = self.theta.disposition()
        self.preview.setPlainText(system_prompt(self.profile, d))
        saved = self.profile.disposition
        self.profile_status.setText(
            "This is the bank's saved disposition."
            if d == saved
            else "Not saved: the bank keeps " + theta_label(saved)
        )

    def _reset_theta(self) -> None:
        if self.profile is not None:
            self.theta.set_disposition(self.profile.disposition)

    def save_profile(self) -> None:
        bank = self.bank
        if bank is None:
            return
        d = self.theta.disposition()
        self.state.runner.run_op(
            lambda: bank.set_profile(disposition=d),
            lambda _c: self._load_profile(bank, keep_sliders=True),
            key=bank,
        )

    # -- the profiles compared ------------------------------------------------------------------

    def dispositions(self) -> list[Disposition]:
        return [
            self.profiles.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.profiles.count())
        ]

    def set_profiles(self, dispositions: Sequence[Disposition]) -> None:
        self.profiles.clear()
        for d in list(dispositions)[:MAX_PROFILES]:
            self._append_profile(d)
        self._profiles_changed()

    def _append_profile(self, d: Disposition) -> None:
        item = QListWidgetItem(theta_label(d))
        item.setData(Qt.ItemDataRole.UserRole, d)
        self.profiles.addItem(item)

    def add_current_profile(self) -> None:
        d = self.theta.disposition()
        if d in self.dispositions():
            self.compare_status.setText("That profile is already in the comparison.")
            return
        if self.profiles.count() >= MAX_PROFILES:
            self.compare_status.setText(f"At most {MAX_PROFILES} profiles: remove one first.")
            return
        self._append_profile(d)
        self._profiles_changed()

    def remove_selected_profile(self) -> None:
        for item in self.profiles.selectedItems():
            self.profiles.takeItem(self.profiles.row(item))
        self._profiles_changed()

    def _load_profile_item(self, item: QListWidgetItem) -> None:
        self.theta.set_disposition(item.data(Qt.ItemDataRole.UserRole))

    def _profiles_changed(self) -> None:
        n = self.profiles.count()
        self.add_button.setEnabled(n < MAX_PROFILES)
        self.compare_button.setEnabled(MIN_PROFILES <= n <= MAX_PROFILES)
        self.compare_status.setText(
            f"{n} profiles to compare."
            if n >= MIN_PROFILES
            else f"Add at least {MIN_PROFILES} profiles to compare."
        )

    # -- compare and commit ------------------------------------------------------------------------

    def compare(self) -> None:
        bank = self.bank
        query = self.query.text().strip()
        dispositions = self.dispositions()
        if bank is None or not query or not MIN_PROFILES <= len(dispositions) <= MAX_PROFILES:
            return
        budget = self.budget.value()
        self.compare_button.setEnabled(False)
        self.compare_status.setText(f"Answering under {len(dispositions)} profiles…")
        self.state.runner.run_query(
            lambda: bank.compare(query, dispositions, budget_tokens=budget),
            self._compared,
            self._compare_failed,
            key=bank,
            latest=(self, "compare"),
        )

    def _compare_failed(self, error: BaseException) -> None:
        self._profiles_changed()
        self.compare_status.setText(f"Compare failed: {describe(error)}")

    def _compared(self, comparison: Comparison) -> None:
        self._profiles_changed()
        self.show_comparison(comparison)
        self.compared.emit(comparison)
        if any(r.error or (r.offline and r.notes) for r in comparison.reflections):
            # The model failed or was not used: show the mode as it is now.
            self.state.recheck_mode()

    def show_comparison(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self._clear_columns()
        self.columns_empty.hide()
        reflections = list(comparison.reflections)
        for i, reflection in enumerate(reflections):
            others = [r for j, r in enumerate(reflections) if j != i and r.ok]
            column = ReflectionColumn(reflection, others)
            column.commit_requested.connect(self.commit)
            self.columns.append(column)
            self.columns_layout.addWidget(column, 1)
        offline = all(r.offline for r in comparison.reflections)
        self.offline_banner.setVisible(offline or self.state.mode.startswith("offline"))
        notes = sorted({n[:1].upper() + n[1:] for r in comparison.reflections for n in r.notes})
        text = f"{len(comparison)} answers to “{comparison.query}” — nothing is kept until you commit one."
        if comparison.warning:
            # Composed next to extractive: the columns differ by more than their profiles.
            text = f"⚠ {comparison.warning[:1].upper()}{comparison.warning[1:]}. " + text
        if notes:
            text += " " + "; ".join(notes) + "."
        self.compare_status.setText(text)

    def _clear_columns(self) -> None:
        for column in self.columns:
            self.columns_layout.removeWidget(column)
            column.deleteLater()
        self.columns = []
        self.columns_empty.show()

    def commit(self, reflection: Reflection) -> None:
        bank = self.bank
        if bank is None:
            return
        for column in self.columns:
            column.commit_button.setEnabled(False)
        self.state.runner.run_op(
            lambda: bank.commit_reflection(reflection),
            lambda _change: self._committed(reflection),
            lambda error: self._commit_failed(error),
            key=bank,
            label="Commit reflection",
            initiator=self,
        )

    def _committed(self, reflection: Reflection) -> None:
        for column in self.columns:
            column.mark(column.reflection.id == reflection.id)
        self.compare_status.setText(
            f"Committed the answer under {theta_label(reflection.disposition)}."
        )
        self._load_history()
        self.committed.emit(reflection)

    def _commit_failed(self, error: BaseException) -> None:
        for column in self.columns:
            column.commit_button.setEnabled(column.reflection.ok)
        self.compare_status.setText(f"Commit failed: {describe(error)}")

    def prepare_screenshot(self, idle) -> None:
        """For `engram screenshot`: three profiles compared on a demo question."""
        idle()
        self.theta.set_disposition(Disposition(4, 4, 2, 0.5))
        self.query.setText("Is Northwind likely to extend the Atlas contract?")
        self.compare()
        idle()

    # -- past reflections -----------------------------------------------------------------------------

    def _load_history(self) -> None:
        bank = self.bank
        if bank is None:
            return
        self.state.runner.run_query(
            lambda: bank.reflections(limit=200),
            self._show_history,
            key=bank,
            latest=(self, "history"),
        )

    def _show_history(self, rows: list[Reflection]) -> None:
        self.past = list(rows)
        self.history.setRowCount(len(rows))
        for r, reflection in enumerate(rows):
            cells = [
                reflection.created_at.strftime("%Y-%m-%d %H:%M"),
                reflection.query,
                theta_label(reflection.disposition),
                reflection.mode,
            ]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.history.setItem(r, c, item)
        self.history_empty.setVisible(not rows)
        self.history_detail.setHtml("")

    def _history_selected(self) -> None:
        rows = self.history.selectionModel().selectedRows()
        if not rows:
            return
        self.history_detail.setHtml(reflection_html(self.past[rows[0].row()]))


def reflection_html(r: Reflection) -> str:
    """A kept reflection in full: question, Θ, answer, evidence, opinions."""
    parts = [
        f"<h3>{html.escape(r.query)}</h3>",
        f"<p><i>{html.escape(theta_label(r.disposition))} · {html.escape(r.mode)}"
        f" · {r.created_at:%Y-%m-%d %H:%M}</i></p>",
        f"<p>{html.escape(r.answer).replace(chr(10), '<br>')}</p>",
        f"<h4>Evidence ({len(r.evidence)})</h4><ul>",
        *(f"<li>[{html.escape(e.network)}] {html.escape(e.text)}</li>" for e in r.evidence),
        "</ul>",
        f"<h4>Opinions ({len(r.opinions)})</h4><ul>",
        *(
            f"<li>{html.escape(o.action.value)} · {o.confidence:.2f} · {html.escape(o.existing_text or o.text)}</li>"
            for o in r.opinions
        ),
        "</ul>",
    ]
    return "".join(parts)
