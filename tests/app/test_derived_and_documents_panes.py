"""The studio side of issue 13's curation items and issue 15's retract review:
the retract review lists what it hides and keeps the entity selected, the
pending-jobs indicator runs the rebuilds at once, the Documents pane deletes a
document (previewed) and undo brings it back, the split dialog lists only facts,
hide/unhide and a memory added by hand."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QDialog

import app.panes.documents as documents_module
import app.panes.entities as entities_module
from app.panes.entity_dialogs import SplitEntityDialog
from app.panes.memory_dialog import AddMemoryDialog
from core import Network, UnitStatus
from tests.app.conftest import wait_idle

# A fact of Dana's that her observation quotes (its profile quotes her first few by time).
PHRASE = "answered the incident report"


@pytest.fixture
def window(qtbot, make_window, demo_engine):
    window = make_window(start=True, engine=demo_engine)
    qtbot.waitUntil(lambda: window.state.bank is not None)
    wait_idle(qtbot, window.runner)
    window.resize(1440, 900)
    return window


def _dana(bank):
    # "Dana Whitfield" on the whole demo; the two files of the test bank only say "Dana".
    return next(e for e in bank.entities(include_retracted=True) if e.name.startswith("Dana"))


@pytest.mark.slow
def test_retract_review_lists_the_facts_keeps_the_entity_and_rebuilds_at_once(
    qtbot, window, monkeypatch, tmp_path
):
    bank = window.state.bank
    dana = _dana(bank)
    # Before: an observation quotes her fact (whose profile quotes which facts is
    # the profile builder's choice; tests/core/test_curate_derived.py covers the
    # observations of other entities).
    assert [u for u in bank.units(Network.OBSERVATION, limit=None) if PHRASE in u.text]
    pane = window.show_pane("entities")
    qtbot.waitUntil(lambda: pane.select_entity(dana.name))
    listed = []

    class Accept(entities_module.RetractEntityDialog):
        def exec(self):
            listed.extend(self.facts.item(i).text() for i in range(self.facts.count()))
            self.grab().save(str(tmp_path / "retract-review.png"))
            return QDialog.DialogCode.Accepted

    monkeypatch.setattr(entities_module, "RetractEntityDialog", Accept)
    preview = bank.retract_preview(dana.id)
    with qtbot.waitSignal(window.state.changed, timeout=60_000):
        pane.retract_button.click()
    assert len(listed) == len(preview.facts) > 0
    assert any(PHRASE in text for text in listed)
    # The rebuild runs at once, as a job; the indicator ends at none pending.
    wait_idle(qtbot, window.runner, timeout=60_000)
    assert bank.pending_jobs() == 0
    qtbot.waitUntil(lambda: window.jobs_indicator.label.text() == "Jobs: none")
    assert not [u for u in bank.units(None, limit=None) if PHRASE in u.text]
    # The entity stays selected, marked retracted, and its page shows what it had.
    qtbot.waitUntil(lambda: pane.retract_button.text() == "Restore")
    assert pane.current_entity().id == dana.id
    qtbot.waitUntil(lambda: PHRASE in pane.facts.toPlainText())
    assert "Retracted" in pane.facts.toPlainText()
    window.grab().save(str(tmp_path / "entities-retracted.png"))


@pytest.mark.slow
def test_pending_jobs_indicator_counts_and_runs_them(qtbot, window):
    bank = window.state.bank
    bank.retract_entity(_dana(bank).id)  # outside the studio: nothing broadcast
    indicator = window.jobs_indicator
    indicator.recount()
    qtbot.waitUntil(lambda: indicator.pending == bank.pending_jobs() > 0)
    assert indicator.label.text() == f"Jobs: {indicator.pending} pending"
    assert indicator.run_button.isVisibleTo(window)
    indicator.run_button.click()
    wait_idle(qtbot, window.runner, timeout=60_000)
    qtbot.waitUntil(lambda: indicator.pending == 0)
    assert bank.pending_jobs() == 0 and not indicator.run_button.isVisibleTo(window)


def test_split_dialog_lists_only_facts_and_wraps_them(qtbot, window):
    bank = window.state.bank
    dana = _dana(bank)
    units = bank.units(entity=dana.id, network=None, limit=None)
    assert any(u.network == Network.OBSERVATION for u in units)
    dialog = SplitEntityDialog(dana, units)
    qtbot.addWidget(dialog)
    texts = [dialog.facts.item(i).text() for i in range(dialog.facts.count())]
    assert len(texts) == len([u for u in units if u.network != Network.OBSERVATION])
    assert dialog.facts.wordWrap()
    longest = max(units, key=lambda u: len(u.text) if u.network != "observation" else 0)
    assert longest.text in texts  # whole, not cut


@pytest.mark.slow
def test_documents_pane_deletes_a_previewed_document_and_undo_brings_it_back(
    qtbot, window, monkeypatch, tmp_path
):
    bank = window.state.bank
    pane = window.show_pane("documents")
    qtbot.waitUntil(lambda: len(pane.documents) == 2)
    incident = next(d for d in pane.documents if "atlas-incident" in d.title)
    assert pane.select_document(incident.id)
    qtbot.waitUntil(lambda: "Dana" in pane.turns.toPlainText())
    window.grab().save(str(tmp_path / "documents.png"))
    listed = []

    class Accept(documents_module.DeleteDocumentDialog):
        def exec(self):
            listed.extend(self.units.item(i).text() for i in range(self.units.count()))
            return QDialog.DialogCode.Accepted

    monkeypatch.setattr(documents_module, "DeleteDocumentDialog", Accept)
    with qtbot.waitSignal(window.state.changed, timeout=60_000):
        pane.delete_button.click()
    assert len(listed) == incident.units and any(PHRASE in t for t in listed)
    wait_idle(qtbot, window.runner, timeout=60_000)
    qtbot.waitUntil(lambda: len(pane.documents) == 1)
    assert incident.id not in {d.id for d in bank.documents()}
    assert not [u for u in bank.units(None, limit=None) if PHRASE in u.text]
    window.undo()
    wait_idle(qtbot, window.runner, timeout=60_000)
    qtbot.waitUntil(lambda: len(pane.documents) == 2)
    assert [u for u in bank.units(Network.WORLD, limit=None) if PHRASE in u.text]


@pytest.mark.slow
def test_hide_and_unhide_from_the_detail_and_add_a_memory(qtbot, window):
    bank = window.state.bank
    pane = window.show_pane("world")
    qtbot.waitUntil(lambda: pane.model.rowCount() > 0)
    unit = bank.units(Network.WORLD, limit=1)[0]
    pane.set_hidden(unit.id, True)
    wait_idle(qtbot, window.runner, timeout=60_000)
    assert bank.unit(unit.id).status == UnitStatus.HIDDEN
    pane.set_hidden(unit.id, False)
    wait_idle(qtbot, window.runner, timeout=60_000)
    assert bank.unit(unit.id).status == UnitStatus.ACTIVE

    dialog = AddMemoryDialog(bank.entities(), Network.WORLD)
    qtbot.addWidget(dialog)
    dialog.text.setPlainText("Maya keeps a spare badge for visitors.")
    dialog.entities.setText("maya, Nobody Known")
    assert not dialog.ok.isEnabled() and "Nobody Known" in dialog.problem.text()
    dialog.entities.setText("maya")
    assert dialog.ok.isEnabled()
    before = bank.count(Network.WORLD)
    with qtbot.waitSignal(window.state.changed, timeout=60_000):
        pane.add_memory(**dialog.values())
    wait_idle(qtbot, window.runner, timeout=60_000)
    assert bank.count(Network.WORLD) == before + 1
    [added] = bank.units(Network.WORLD, text="spare badge", limit=None)
    assert [bank.entity(e).name for e in added.entity_ids] == ["Maya"]
    # Work the studio's runner does is the studio user's: the unit and the audit say so.
    assert added.created_by == "studio"
    assert {e.actor for e in bank.audit(limit=3)} == {"studio"}


@pytest.mark.slow
def test_a_document_reingested_from_the_pane_leaves_no_rebuild_pending(qtbot, window):
    """A re-ingest replaces the document's facts: the observations that quoted
    the old ones are hidden, and rebuilt before the studio reports it done (the
    CLI's `documents reingest` did; the pane left them pending)."""
    bank = window.state.bank
    pane = window.show_pane("documents")
    qtbot.waitUntil(lambda: len(pane.documents) == 2)
    incident = next(d for d in pane.documents if "atlas-incident" in d.title)
    wait_idle(qtbot, window.runner)
    with qtbot.waitSignal(window.state.changed, timeout=60_000):
        pane.reingest(incident.id, "rules")
    wait_idle(qtbot, window.runner, timeout=60_000)
    assert bank.pending_jobs() == 0
    assert not bank.units(Network.OBSERVATION, status=UnitStatus.STALE, limit=None)
    qtbot.waitUntil(lambda: window.jobs_indicator.label.text() == "Jobs: none")
    # One line in the status bar (the whole multi-line report ran under the
    # permanent widgets).
    message = window.statusBar().currentMessage()
    assert message.startswith(f"Re-ingested “{incident.title}”: ") and "\n" not in message


@pytest.mark.slow
def test_a_failed_llm_reingest_says_failed_and_keeps_the_document(qtbot, window, fake_ollama):
    from dataclasses import replace

    from tests.fakes.ollama_server import Reply

    engine, bank = window.state.engine, window.state.bank
    engine.set_settings(
        replace(engine.settings, ollama_host=fake_ollama.url, ollama_model="llama3.2")
    )
    fake_ollama.responder = lambda body: Reply.http_error(500, "model runner crashed")
    pane = window.show_pane("documents")
    qtbot.waitUntil(lambda: len(pane.documents) == 2)
    incident = next(d for d in pane.documents if "atlas-incident" in d.title)
    before = bank.count(None)
    wait_idle(qtbot, window.runner)
    pane.reingest(incident.id, "llm")
    wait_idle(qtbot, window.runner, timeout=120_000)
    qtbot.waitUntil(lambda: "failed" in window.statusBar().currentMessage())
    message = window.statusBar().currentMessage()
    assert message.startswith(f"Re-ingest of “{incident.title}” failed: ")
    assert message.endswith("model runner crashed") and "\n" not in message
    assert bank.count(None) == before


@pytest.mark.slow
def test_rebuilds_whose_model_died_say_so_and_recheck_the_mode(qtbot, window, fake_ollama):
    """Issue 13, item 11: the model dying under the observation rebuilds left the
    status bar saying "Ollama" and "Observations rebuilt" as if it had written them."""
    from dataclasses import replace

    from tests.fakes.ollama_server import Reply

    engine, bank = window.state.engine, window.state.bank
    engine.set_settings(
        replace(engine.settings, ollama_host=fake_ollama.url, ollama_model="llama3.2")
    )
    window.update_mode()
    qtbot.waitUntil(lambda: window.mode_label.text() == "Mode: Ollama: llama3.2")
    fake_ollama.script(Reply.dies(shutdown_server=True))
    bank.retract_entity(_dana(bank).id)  # outside the studio: the indicator runs them
    indicator = window.jobs_indicator
    indicator.recount()
    qtbot.waitUntil(lambda: indicator.pending > 0)
    indicator.run()
    wait_idle(qtbot, window.runner, timeout=60_000)
    assert bank.pending_jobs() == 0  # rules profiles stood in
    message = window.statusBar().currentMessage()
    assert message.startswith("Observations rebuilt") and "by rules, the model failed" in message
    qtbot.waitUntil(lambda: "not reachable" in window.mode_label.text())
    # However narrow the status bar, the whole reason is one hover away.
    assert window.mode_label.toolTip().startswith(window.mode_label.text())


@pytest.mark.slow
def test_an_agents_retain_through_the_server_is_rebuilt_at_once(qtbot, window, tmp_path):
    """A change from the studio's server that adds a document (an agent's retain)
    queued rebuilds the indicator left pending: only the Ingest pane runs its own."""
    bank = window.state.bank
    chat = tmp_path / "agent.txt"
    chat.write_text("## 2025-07-31 09:00\nMaya: Dana signed the renewal this morning.\n", "utf-8")
    report = bank.ingest(chat, mode="rules")  # as the server's retain route does
    assert bank.pending_jobs() > 0
    wait_idle(qtbot, window.runner)
    window.state.broadcast(report.change)
    wait_idle(qtbot, window.runner, timeout=60_000)
    qtbot.waitUntil(lambda: bank.pending_jobs() == 0, timeout=30_000)
    qtbot.waitUntil(lambda: window.jobs_indicator.label.text() == "Jobs: none")


@pytest.mark.slow
def test_a_partial_document_is_marked_until_its_failed_chunks_are_retried(
    qtbot, window, fake_ollama, tmp_path
):
    """Issue 30: a partly failed ingest was stored and then hidden."""
    from dataclasses import replace

    from tests.core.test_retain_llm import SESSIONS, Script, chat, kind_of

    engine, bank = window.state.engine, window.state.bank
    engine.set_settings(
        replace(engine.settings, ollama_host=fake_ollama.url, ollama_model="llama3.2")
    )
    fake_ollama.responder = Script()
    lm = engine.language_model()
    try:
        report = bank.ingest(chat(SESSIONS, "partial"), mode="llm", llm=lm)
    finally:
        lm.close()
    assert len(report.failures) == 1
    pane = window.show_pane("documents")
    pane.refresh()
    qtbot.waitUntil(lambda: any(d.partial for d in pane.documents))
    qtbot.waitUntil(lambda: pane.select_document(report.documents[0].id))
    row = next(i for i, d in enumerate(pane.documents) if d.partial)
    assert "partial (1 failed)" in pane.table.item(row, 3).text()
    qtbot.waitUntil(lambda: "Partial: 1 chunk" in pane.failures.text())
    assert pane.retry_button.isVisible() and "FAIL-ME" not in pane.failures.text()
    pane.grab().save(str(tmp_path / "partial-document.png"))

    def healed(body):
        if kind_of(body) == "extract":
            body["messages"][-1]["content"] = body["messages"][-1]["content"].replace(
                "FAIL-ME ", ""
            )
        return Script()(body)

    fake_ollama.responder = healed
    pane.retry_failed()
    wait_idle(qtbot, window.runner, timeout=120_000)
    qtbot.waitUntil(lambda: not any(d.partial for d in pane.documents))
    assert not pane.retry_button.isVisible()
    assert window.statusBar().currentMessage().startswith("Re-ingested “partial”")
