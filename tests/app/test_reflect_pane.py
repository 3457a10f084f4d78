"""The Reflect pane: Θ sliders drive the prompt preview; compare shows N columns and
commits only the chosen one; profiles save to the bank; past reflections list."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app.panes.reflect import (
    COLUMN_MIN_WIDTH,
    ReflectionColumn,
    ReflectPane,
    diff_html,
    evidence_diff,
    theta_label,
)
from app.runner import Runner
from app.state import StudioState
from core import Disposition, Reflection
from core.reflect import system_prompt
from core.reflect.disposition import EMPATHY, SKEPTICISM
from core.reflect.values import OFFLINE_MODE, Evidence
from tests.app.conftest import wait_idle
from tests.fakes.ollama_server import Reply


@pytest.fixture
def demo_state(qtbot, demo_engine):
    runner = Runner()
    state = StudioState(demo_engine, runner)
    state.set_bank(demo_engine.open_bank("Demo"))
    yield state
    runner.shutdown()


@pytest.fixture
def pane(qtbot, demo_state) -> ReflectPane:
    pane = ReflectPane(demo_state)
    qtbot.addWidget(pane)
    pane.resize(1400, 900)
    qtbot.waitUntil(lambda: pane.profile is not None, timeout=10_000)
    return pane


def highlighted(text: str, others: list[str]) -> list[str]:
    return [p.strip() for p, differs in evidence_diff(text, others) if differs]


def test_the_diff_marks_the_evidence_that_differs_not_its_rank_or_reason() -> None:
    """Two extractive answers: the same memories at other ranks, with other
    reasons for leaving one out, do not differ; a memory only one uses does,
    as a whole line."""
    a = (
        "1. [what I did, 2025-06-27 to 2025-06-28] Juniper is worried Northwind might not"
        " extend the Atlas contract (27 June 2025).\n"
        "2. [what I know, 2025-03-19 12:00] Northwind signed the contract for Atlas (19 March 2025).\n"
        "\nLeft out (2):\n"
        "- “Juniper said: Northwind extended after all (30 July 2025).” — paraphrase only: no word\n"
        "- “Maya said: Now, Northwind (27 June 2025).” — ranked below the selection under this Θ\n"
    )
    b = (
        "1. [what I know, 2025-03-19 12:00] Northwind signed the contract for Atlas (19 March 2025).\n"
        "2. [what I did, 2025-06-27 to 2025-06-28] Juniper is worried Northwind might not"
        " extend the Atlas contract (27 June 2025).\n"
        "3. [what I know, 2025-07-30] Juniper said: Northwind extended after all (30 July 2025).\n"
        "\nLeft out (1):\n"
        "- “Maya said: Now, Northwind (27 June 2025).” — similarity below the threshold\n"
    )
    assert highlighted(a, [b]) == [
        "- “Juniper said: Northwind extended after all (30 July 2025).” — paraphrase only: no word"
    ]
    assert highlighted(b, [a]) == [
        "3. [what I know, 2025-07-30] Juniper said: Northwind extended after all (30 July 2025)."
    ]
    # Against several answers, a memory any of them uses the same way is shared.
    assert highlighted(b, [a, b.replace("3.", "9.")]) == []


def test_written_answers_differ_by_sentence_not_by_word() -> None:
    a = "Tomás fixed the report on Tuesday. Northwind will probably renew."
    b = "Tomás fixed that report on Tuesday. The outage worried Dana, so the renewal is open."
    # A word changed in a sentence that says the same is not a difference...
    assert highlighted(b, [a]) == ["The outage worried Dana, so the renewal is open."]
    assert highlighted(a, [b]) == ["Northwind will probably renew."]
    assert "<span" in diff_html(b, [a]) and "&lt;" in diff_html("<b> x", ["y"])


def test_sliders_change_the_prompt_preview(qtbot, pane, demo_state) -> None:
    profile = demo_state.bank.profile()
    assert pane.preview.toPlainText() == system_prompt(profile, profile.disposition)
    pane.theta.sliders["skepticism"].setValue(5)
    assert f"Skepticism 5/5: {SKEPTICISM[5]}" in pane.preview.toPlainText()
    pane.theta.sliders["empathy"].setValue(1)
    pane.theta.bias.setValue(90)
    d = pane.theta.disposition()
    assert d == Disposition(5, profile.disposition.literalism, 1, 0.9)
    assert pane.preview.toPlainText() == system_prompt(profile, d)
    assert f"Empathy 1/5: {EMPATHY[1]}" in pane.preview.toPlainText()
    assert "Bias strength 0.90" in pane.preview.toPlainText()
    assert pane.profile_status.text().startswith("Not saved")


def test_saving_the_profile_changes_the_bank(qtbot, pane, demo_state) -> None:
    pane.theta.set_disposition(Disposition(4, 2, 5, 0.35))
    pane.save_button.click()
    qtbot.waitUntil(lambda: demo_state.bank.profile().disposition == Disposition(4, 2, 5, 0.35))
    qtbot.waitUntil(lambda: pane.profile_status.text() == "This is the bank's saved disposition.")


def test_a_compare_whose_model_died_shows_the_mode_as_it_is_now(
    qtbot, pane, demo_state, fake_ollama
) -> None:
    """Issue 13, item 11: the status bar said "Ollama: llama3.2" while the
    reflections said the server was unreachable. A compare whose model failed
    probes again, so the mode shown is the real one."""
    engine = demo_state.engine
    engine.set_settings(
        replace(engine.settings, ollama_host=fake_ollama.url, ollama_model="llama3.2")
    )
    demo_state.recheck_mode()
    qtbot.waitUntil(lambda: demo_state.mode == "Ollama: llama3.2", timeout=10_000)
    # The model answers the probe, then the server dies at the first question.
    fake_ollama.script(Reply.dies(shutdown_server=True))
    pane.set_profiles([Disposition(3, 3, 3, 0.2), Disposition(1, 1, 5, 0.8)])
    pane.query.setText("What went wrong with Atlas in June?")
    with qtbot.waitSignal(pane.compared, timeout=120_000):
        pane.compare_button.click()
    assert any(c.reflection.error or c.reflection.offline for c in pane.columns)
    qtbot.waitUntil(lambda: "not reachable" in demo_state.mode, timeout=10_000)
    assert demo_state.mode.startswith("offline rules")


def test_compare_shows_n_columns_and_commits_only_the_chosen_one(qtbot, pane, demo_state) -> None:
    bank = demo_state.bank
    profiles = [Disposition(5, 5, 1, 0.8), Disposition(1, 1, 5, 0.8), Disposition(3, 3, 3, 0.2)]
    pane.set_profiles(profiles)
    assert pane.dispositions() == profiles
    pane.query.setText("What went wrong with Atlas in June?")
    with qtbot.waitSignal(pane.compared, timeout=120_000):
        pane.compare_button.click()
    assert len(pane.columns) == 3
    assert [c.reflection.disposition for c in pane.columns] == profiles
    for column in pane.columns:
        assert column.answer.toPlainText().strip()
        assert column.evidence.count() == len(column.reflection.evidence)
        assert column.commit_button.isEnabled()
    # No language model in tests: the pane says so, and the answers are extractive.
    assert all(c.reflection.offline for c in pane.columns)
    assert pane.offline_banner.isVisibleTo(pane)
    assert bank.reflections() == []  # comparing keeps nothing

    chosen = pane.columns[1].reflection
    with qtbot.waitSignal(pane.committed, timeout=30_000):
        pane.columns[1].commit_button.click()
    kept = bank.reflections()
    assert [r.id for r in kept] == [chosen.id]
    assert kept[0].disposition == profiles[1]
    assert pane.columns[1].commit_button.text() == "Committed ✓"
    assert not any(c.commit_button.isEnabled() for c in pane.columns)
    wait_idle(qtbot, demo_state.runner)
    assert pane.history.rowCount() == 1
    assert pane.history.item(0, 2).text() == theta_label(profiles[1])
    pane.history.selectRow(0)
    assert chosen.query in pane.history_detail.toPlainText()


def test_the_profile_list_holds_two_to_four(qtbot, pane) -> None:
    pane.set_profiles([Disposition(1, 1, 1, 0.0)])
    assert not pane.compare_button.isEnabled()
    pane.theta.set_disposition(Disposition(2, 2, 2, 0.5))
    pane.add_button.click()
    assert pane.compare_button.isEnabled() and len(pane.dispositions()) == 2
    pane.add_button.click()  # the same one again: refused
    assert len(pane.dispositions()) == 2
    for value in (3, 4):
        pane.theta.sliders["skepticism"].setValue(value)
        pane.add_button.click()
    assert len(pane.dispositions()) == 4 and not pane.add_button.isEnabled()
    pane.profiles.setCurrentRow(0)
    pane.remove_button.click()
    assert len(pane.dispositions()) == 3 and pane.add_button.isEnabled()


def test_offline_answers_open_with_what_differs_and_four_columns_scroll(
    qtbot, pane, demo_state
) -> None:
    pane.resize(1280, 720)
    pane.show()
    profiles = [
        Disposition(5, 5, 1, 0.9),
        Disposition(1, 1, 5, 0.1),
        Disposition(3, 3, 3, 0.5),
        Disposition(5, 1, 5, 0.2),
    ]
    pane.set_profiles(profiles)
    pane.query.setText("What went wrong with Atlas in June?")
    with qtbot.waitSignal(pane.compared, timeout=120_000):
        pane.compare_button.click()
    assert len(pane.columns) == 4
    for column in pane.columns:
        text = column.answer.toPlainText()
        # The differences lead; the preamble every column shares is gone.
        assert text.startswith("What differs"), text[:200]
        assert "no language model was used" not in text
        assert "Question:" not in text
    # Four columns do not squeeze below a readable width: the row scrolls instead.
    host, scroll = pane.columns_host, pane.columns_scroll
    qtbot.waitUntil(lambda: pane.columns[-1].x() > 3 * COLUMN_MIN_WIDTH)  # laid out side by side
    assert all(c.width() >= c.minimumWidth() >= COLUMN_MIN_WIDTH for c in pane.columns)
    assert host.width() > scroll.viewport().width()
    qtbot.waitUntil(lambda: scroll.horizontalScrollBar().maximum() > 0)


def test_evidence_only_one_profile_uses_is_marked_in_its_list(qtbot) -> None:
    """The evidence list, read first, marks what the answer marks: the memories no
    other column uses (before, every list looked alike, differences or not)."""

    def reflection(theta: Disposition, used: list[str]) -> Reflection:
        evidence = tuple(Evidence(u, "world", f"memory {u}", "2025-06-23") for u in used)
        return Reflection(
            f"r-{used}", "Why?", theta, "answer", OFFLINE_MODE, "", datetime(2025, 7, 1),
            evidence=evidence,
        )  # fmt: skip

    skeptic = reflection(Disposition(5, 5, 1, 0.6), ["a", "b", "c"])
    trusting = reflection(Disposition(1, 1, 5, 0.6), ["b", "c", "d"])
    column = ReflectionColumn(skeptic, [trusting])
    qtbot.addWidget(column)
    marked = {
        column.evidence.item(i).data(Qt.ItemDataRole.UserRole)
        for i in range(column.evidence.count())
        if column.evidence.item(i).background().style() != Qt.BrushStyle.NoBrush
    }
    assert marked == {"a"}
    assert "Only this profile uses it" in column.evidence.item(0).toolTip()
    heading = next(x for x in column.findChildren(QLabel) if x.text().startswith("Evidence used"))
    assert heading.text() == "Evidence used (3 · 1 only here, marked)"
    # In a narrow column it wraps rather than being cut off (it asks for less than its
    # one-line width).
    one_line = heading.fontMetrics().horizontalAdvance(heading.text())
    assert heading.minimumSizeHint().width() < min(one_line, COLUMN_MIN_WIDTH)
    # Alone (nothing to compare with), nothing is marked.
    alone = ReflectionColumn(skeptic, [])
    qtbot.addWidget(alone)
    assert all(
        alone.evidence.item(i).background().style() == Qt.BrushStyle.NoBrush
        for i in range(alone.evidence.count())
    )
