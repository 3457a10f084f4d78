"""Ingest through the pane: files in, facts out, per-file progress; a cancel leaves the bank as it was."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from core import Network
from tests.app.conftest import DEMO, wait_idle
from tests.fakes.ollama_server import Reply

FILE = DEMO / "03-may-beacon-beta.json"


@pytest.fixture
def window(qtbot, make_window, engine, embedder):
    engine.create_bank("Ingest", agent_name="Juniper")
    window = make_window(start=True)
    qtbot.waitUntil(lambda: window.state.bank is not None)
    wait_idle(qtbot, window.runner)
    return window


@pytest.mark.slow
def test_ingest_a_file_in_rules_mode(qtbot, window):
    bank = window.state.bank
    pane = window.show_pane("ingest")
    assert pane.splitter.isVisibleTo(pane)
    pane.add_files([FILE, FILE])  # the same file once
    assert [f.path for f in pane.files] == [FILE]
    pane.mode.setCurrentIndex(pane.mode.findData("rules"))
    assert "deterministic" in pane.mode_help.text()
    progress = []
    pane.progress.valueChanged.connect(progress.append)
    qtbot.mouseClick(pane.ingest_button, Qt.MouseButton.LeftButton)
    assert pane.running and pane.cancel_button.isEnabled() and not pane.ingest_button.isEnabled()
    qtbot.waitUntil(lambda: not pane.running, timeout=60_000)
    qtbot.waitUntil(lambda: pane.observations_done, timeout=60_000)
    wait_idle(qtbot, window.runner)
    assert pane.files[0].status == "done"
    facts = pane.files[0].facts
    assert facts and facts == sum(
        bank.count(n) for n in (Network.WORLD, Network.EXPERIENCE, Network.OPINION)
    )
    assert len(set(progress)) > 2  # moved through the document, not just 0 and 100
    summary = pane.summary.toPlainText()
    assert FILE.name in summary and "facts:" in summary and "entities:" in summary
    assert "Observations:" in summary
    # The other panes refreshed from the change records.
    world = window.pane("world")
    qtbot.waitUntil(lambda: world.model.rowCount() == bank.count(Network.WORLD) > 0)
    entities = window.pane("entities")
    qtbot.waitUntil(lambda: entities.model.rowCount() == len(bank.entities()) > 0)
    observations = window.pane("observation")
    qtbot.waitUntil(lambda: observations.model.rowCount() == bank.count(Network.OBSERVATION) > 0)

    # Ingesting the same file again is recognised and skipped.
    pane.files[0].status = "queued"
    pane.start()
    qtbot.waitUntil(lambda: not pane.running, timeout=60_000)
    assert pane.files[0].status.startswith("skipped")


def test_cancel_leaves_the_bank_as_it_was(qtbot, window):
    bank = window.state.bank
    before = {n: bank.count(n) for n in Network}
    pane = window.show_pane("ingest")
    pane.add_files([FILE])
    pane.mode.setCurrentIndex(pane.mode.findData("rules"))
    # Hold the bank so the ingest job is queued, cancel it, then let it run:
    # the engine sees a cancelled token at its first check.
    release = threading.Event()
    window.runner.run_query(lambda: release.wait(30), key=bank, exclusive=True)
    pane.start()
    assert pane.job is not None and pane.cancel_button.isEnabled()
    pane.cancel_button.click()
    release.set()
    qtbot.waitUntil(lambda: not pane.running, timeout=60_000)
    wait_idle(qtbot, window.runner)
    assert pane.files[0].status == "cancelled — nothing of it was written"
    assert "Cancelled" in pane.summary.toPlainText()
    assert {n: bank.count(n) for n in Network} == before
    assert bank.documents() == []
    assert bank.entities() == []


def test_a_bad_file_fails_with_the_reason(qtbot, window, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('[{"speaker": "A", "text": ', "utf-8")
    pane = window.show_pane("ingest")
    pane.add_files([bad])
    pane.start()
    qtbot.waitUntil(lambda: not pane.running, timeout=30_000)
    assert pane.files[0].status.startswith("failed: ")
    assert "broken.json" in pane.summary.toPlainText()
    assert window.state.bank.documents() == []


def test_preview_shows_the_first_turns_of_the_chosen_file(qtbot, window, tmp_path):
    chat = tmp_path / "chat.jsonl"
    lines = [f'{{"speaker": "{"AB"[i % 2]}", "text": "line {i}"}}' for i in range(50)]
    chat.write_text("\n".join(lines) + "\n", "utf-8")
    pane = window.show_pane("ingest")
    pane.add_files([chat])
    qtbot.waitUntil(lambda: pane.preview.rowCount() > 0)
    assert pane.preview.rowCount() == 40  # PREVIEW_TURNS of the 50
    assert [pane.preview.item(r, 2).text() for r in (0, 1)] == ["line 0", "line 1"]
    assert pane.preview.item(0, 1).text() == "A"
    assert (
        pane.preview_label.text() == "chat.jsonl: 50 turns in 1 conversation; the first 40 shown."
    )


def test_preview_of_an_unreadable_file_shows_the_engines_reason(qtbot, window, tmp_path):
    from core import InvalidInputError, load_documents

    bad = tmp_path / "broken.json"
    bad.write_text('[{"speaker": "A", "text": ', "utf-8")
    with pytest.raises(InvalidInputError) as raised:
        load_documents(bad, "auto")
    pane = window.show_pane("ingest")
    pane.add_files([bad])
    qtbot.waitUntil(lambda: pane.preview_label.text() == f"broken.json: {raised.value}")
    assert pane.preview.rowCount() == 0


CONVERSATION = (
    "## 2025-03-01 09:00\nAlice: I moved to Lisbon last week.\nBob: Lisbon is lovely in spring.\n"
)


def _llm_ingest(qtbot, window, tmp_path, mode="llm"):
    path = tmp_path / "chat.txt"
    path.write_text(CONVERSATION, "utf-8")
    pane = window.show_pane("ingest")
    pane.add_files([path])
    pane.mode.setCurrentIndex(pane.mode.findData(mode))
    pane.start()
    qtbot.waitUntil(lambda: not pane.running, timeout=60_000)
    wait_idle(qtbot, window.runner)
    return pane


def test_a_failed_llm_ingest_shows_as_failed_with_the_reason(qtbot, window, tmp_path, fake_ollama):
    from dataclasses import replace

    engine = window.state.engine
    engine.set_settings(
        replace(engine.settings, ollama_host=fake_ollama.url, ollama_model="llama3.2")
    )
    # Every reply is cut at the token limit: the chunk fails, nothing is half-kept.
    fake_ollama.responder = lambda body: Reply.text(
        '{"facts": [{"text": "Alice mo', done_reason="length"
    )
    pane = _llm_ingest(qtbot, window, tmp_path)
    status = pane.files[0].status
    assert status.startswith("failed") and "cut off" in status
    assert pane.table.topLevelItem(0).text(1) == status
    assert window.statusBar().currentMessage().startswith("Ingest finished with failures")
    assert "cut off" in window.statusBar().currentMessage()
    assert "FAILED chunk" in pane.summary.toPlainText()
    assert window.state.bank.count(Network.WORLD) == 0


def test_the_mode_is_rechecked_when_the_model_dies(qtbot, window, tmp_path, fake_ollama):
    from dataclasses import replace

    engine = window.state.engine
    engine.set_settings(
        replace(engine.settings, ollama_host=fake_ollama.url, ollama_model="llama3.2")
    )
    window.update_mode()
    qtbot.waitUntil(lambda: window.mode_label.text() == "Mode: Ollama: llama3.2")
    # The model answers the probe, then the server dies mid-ingest.
    fake_ollama.script(Reply.dies(shutdown_server=True))
    pane = _llm_ingest(qtbot, window, tmp_path)
    assert pane.files[0].status.startswith("failed")
    qtbot.waitUntil(lambda: "not reachable" in window.mode_label.text())
    assert window.mode_label.text().startswith("Mode: offline rules")
