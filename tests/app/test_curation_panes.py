"""Entity curation, the audit log, snapshots and settings through their panes, on an ingested bank."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, Qt
from PySide6.QtWidgets import QDialog, QLabel

import app.panes.entities as entities_module
from app.panes.entities import MIME
from app.panes.entity_dialogs import PurgeEntityDialog, RenameEntityDialog
from core import Kind, Network
from tests.app.conftest import wait_idle


@pytest.fixture
def window(qtbot, make_window, demo_engine):
    window = make_window(start=True, engine=demo_engine)
    qtbot.waitUntil(lambda: window.state.bank is not None)
    wait_idle(qtbot, window.runner)
    return window


def entities_pane(qtbot, window):
    pane = window.show_pane("entities")
    qtbot.waitUntil(lambda: pane.model.rowCount() > 0)
    return pane


def entity_named(bank, name, include_retracted=False):
    return next(e for e in bank.entities(include_retracted=include_retracted) if e.name == name)


def test_rename_an_entity(qtbot, window):
    bank = window.state.bank
    pane = entities_pane(qtbot, window)
    target = bank.entities()[1]
    assert pane.select_entity(target.name)
    dialog = RenameEntityDialog(target)
    assert not dialog.ok.isEnabled()
    dialog.name.setText("Renamed One")
    assert dialog.ok.isEnabled() and dialog.values() == ("Renamed One", True)
    dialog.deleteLater()
    with qtbot.waitSignal(window.state.changed):
        pane.rename(target.id, "Renamed One")
    wait_idle(qtbot, window.runner)
    renamed = bank.entity(target.id)
    assert renamed.name == "Renamed One" and target.name in renamed.aliases
    qtbot.waitUntil(lambda: pane.select_entity("Renamed One"))
    # The network panes show the new name in their entity column.
    world = window.pane("world")
    qtbot.waitUntil(lambda: "Renamed One" in world.model.entity_names.values())


def test_a_merge_hint_is_shown_and_reviewed_never_applied(qtbot, window, monkeypatch):
    bank = window.state.bank
    pane = entities_pane(qtbot, window)
    [hint] = [h for h in bank.merge_hints() if h.source_name == "Beacon 2.0"]
    assert "possible duplicate" in pane.count_label.text()
    before = len(bank.entities())
    # The count's link selects the hinted entity; its detail says why.
    pane.count_label.linkActivated.emit("hint")
    qtbot.waitUntil(lambda: pane.current_entity() is not None)
    assert pane.select_entity("Beacon 2.0")
    qtbot.waitUntil(lambda: pane.hint_label.isVisible())
    assert "May be the same as <b>Beacon</b>" in pane.hint_label.text()
    assert "part of" in pane.hint_label.text()
    assert len(bank.entities()) == before  # shown, not merged
    asked = []

    class Review(entities_module.MergeEntityDialog):
        def exec(self):
            asked.append((self.source.id, self.target_id()))
            return QDialog.DialogCode.Rejected

    monkeypatch.setattr(entities_module, "MergeEntityDialog", Review)
    pane.hint_label.linkActivated.emit("0")
    # "Review merge…" opens the merge dialog with both chosen; cancelled, nothing changes.
    assert asked == [(hint.source_id, hint.target_id)]
    assert len(bank.entities()) == before


@pytest.mark.slow
def test_drag_one_entity_onto_another_asks_to_merge_then_merges(qtbot, window, monkeypatch):
    bank = window.state.bank
    pane = entities_pane(qtbot, window)
    first, second = bank.entities()[:2]
    rows = {e.id: i for i, e in enumerate(pane.model.entities)}
    data = pane.model.mimeData([pane.model.index(rows[second.id], 0)])
    assert data.hasFormat(MIME)
    asked = []

    class Accept(entities_module.MergeEntityDialog):
        def exec(self):
            asked.append((self.source.id, self.target_id()))
            return QDialog.DialogCode.Accepted

    monkeypatch.setattr(entities_module, "MergeEntityDialog", Accept)
    target_index = pane.model.index(rows[first.id], 0)
    with qtbot.waitSignal(window.state.changed) as changed:
        pane.model.dropMimeData(data, Qt.DropAction.MoveAction, -1, -1, target_index)
    assert asked == [(second.id, first.id)]
    assert changed.args[0].touches(Kind.ENTITY)
    wait_idle(qtbot, window.runner)
    ids = {e.id for e in bank.entities()}
    assert second.id not in ids and first.id in ids
    assert second.name in bank.entity(first.id).aliases
    qtbot.waitUntil(lambda: len(pane.model.entities) == len(ids))
    # Dropping an entity on itself does nothing.
    assert not pane.model.dropMimeData(QMimeData(), Qt.DropAction.MoveAction, -1, -1, target_index)


@pytest.mark.slow
def test_split_moves_chosen_mentions_to_a_new_entity(qtbot, window):
    bank = window.state.bank
    pane = entities_pane(qtbot, window)
    entity = bank.entities()[0]
    facts = bank.units(entity=entity.id, network=[Network.WORLD, Network.EXPERIENCE], limit=None)
    moved = [facts[0].id]
    with qtbot.waitSignal(window.state.changed) as changed:
        pane.split(entity.id, moved, "Someone Else", "person")
    wait_idle(qtbot, window.runner)
    new_id = next(iter(changed.args[0].added[Kind.ENTITY]))
    assert bank.entity(new_id).name == "Someone Else"
    # (The new entity's observation is written at once too: only its facts are compared.)
    facts = bank.units(entity=new_id, network=[Network.WORLD, Network.EXPERIENCE], limit=None)
    assert [u.id for u in facts] == moved


@pytest.mark.slow
def test_retract_shows_its_impact_then_restore_and_undo(qtbot, window, monkeypatch):
    bank = window.state.bank
    pane = entities_pane(qtbot, window)
    entity = bank.entities()[0]
    world_before = bank.count(Network.WORLD)
    shown = []

    class Accept(entities_module.RetractEntityDialog):
        def exec(self):
            labels = self.findChildren(entities_module.QLabel)
            shown.append(" ".join(label.text() for label in labels))
            return QDialog.DialogCode.Accepted

    monkeypatch.setattr(entities_module, "RetractEntityDialog", Accept)
    assert pane.select_entity(entity.name)
    with qtbot.waitSignal(window.state.changed):
        pane.retract_button.click()
    wait_idle(qtbot, window.runner)
    preview = bank.retract_preview(entity.id)
    assert shown and f"{preview.units:,} fact(s)" in shown[0] and "Restore" in shown[0]
    assert entity.id not in {e.id for e in bank.entities()}
    world = window.pane("world")
    qtbot.waitUntil(
        lambda: world.model.counted and world.model.rowCount() == bank.count(Network.WORLD)
    )
    assert bank.count(Network.WORLD) < world_before

    # Retracted entities are listed on request, and restored from there.
    pane.show_retracted.setChecked(True)
    qtbot.waitUntil(lambda: pane.select_entity(entity.name))
    qtbot.waitUntil(lambda: pane.retract_button.text() == "Restore")
    assert "(retracted)" in pane.table.currentIndex().data()
    with qtbot.waitSignal(window.state.changed):
        pane.retract_button.click()
    wait_idle(qtbot, window.runner)
    assert bank.count(Network.WORLD) == world_before

    # The audit pane lists both actions, and undo takes the restore back.
    audit = window.show_pane("audit")
    qtbot.waitUntil(lambda: len(audit.entries) >= 2)
    assert [e.action for e in audit.entries[:2]] == ["restore_entity", "retract_entity"]
    assert audit.undo_button.isEnabled()
    with qtbot.waitSignal(window.state.changed):
        audit.undo_button.click()
    wait_idle(qtbot, window.runner)
    assert bank.count(Network.WORLD) < world_before
    # The undo is itself recorded; the restore it took back is marked undone.
    qtbot.waitUntil(lambda: audit.entries and audit.entries[0].action == "undo")
    restore = next(e for e in audit.entries if e.action == "restore_entity")
    assert restore.undone
    assert audit.table.item(audit.entries.index(restore), 4).text() == "undone"
    assert audit.redo_button.isEnabled()
    assert restore.redoable

    # A new action clears the redo stack: the restore stays undone, but redo is off.
    with qtbot.waitSignal(window.state.changed):
        window.runner.run_op(lambda: bank.rename_entity(entity.id, "Renamed After Undo"))
    wait_idle(qtbot, window.runner)
    qtbot.waitUntil(lambda: audit.entries and audit.entries[0].action == "rename_entity")
    restore = next(e for e in audit.entries if e.action == "restore_entity")
    assert restore.undone and not restore.redoable
    assert not audit.redo_button.isEnabled()
    assert audit.undo_button.isEnabled()


@pytest.mark.slow
def test_purge_needs_the_name_typed_and_removes_the_entity(qtbot, window):
    bank = window.state.bank
    pane = entities_pane(qtbot, window)
    entity = bank.entities()[-1]
    preview = bank.retract_preview(entity.id)
    dialog = PurgeEntityDialog(preview)
    assert not dialog.ok.isEnabled()
    dialog.confirm.setText(entity.name.upper() if entity.name.upper() != entity.name else "x")
    assert not dialog.ok.isEnabled()
    dialog.confirm.setText(entity.name)
    assert dialog.ok.isEnabled()
    dialog.deleteLater()
    with qtbot.waitSignal(window.state.changed):
        pane.purge(entity.id)
    wait_idle(qtbot, window.runner)
    assert entity.id not in {e.id for e in bank.entities(include_retracted=True)}
    qtbot.waitUntil(lambda: entity.id not in {e.id for e in pane.model.entities})


@pytest.mark.slow
def test_the_purge_dialog_lists_redactions_and_known_exports(qtbot, window, tmp_path):
    """Snapshots made before a purge resurrect everything: the dialog says so and
    names the files this bank was exported to, beside every redaction in context."""
    bank = window.state.bank
    entity = max(bank.entities(), key=lambda e: len(bank.retract_preview(e.id).redactions))
    preview = bank.retract_preview(entity.id)
    bank.export_snapshot(tmp_path / "before-purge.engram")
    dialog = PurgeEntityDialog(preview, exports=bank.exports())
    qtbot.addWidget(dialog)
    text = " ".join(label.text() for label in dialog.findChildren(QLabel))
    assert "Exported snapshots are outside the bank" in text
    assert "before-purge.engram" in text
    if preview.redactions:
        listed = dialog.redactions.toPlainText().splitlines()
        assert listed == [str(r) for r in preview.redactions] and "«" in listed[0]
    dialog.resize(1440, 900)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.grab().save(str(tmp_path / "purge_dialog.png"))


@pytest.mark.slow
def test_export_diff_and_import_snapshots(qtbot, window, tmp_path):
    bank = window.state.bank
    pane = window.show_pane("snapshots")
    assert pane.export_button.isEnabled()
    path = tmp_path / "demo.engram"
    pane.export_to(path)
    qtbot.waitUntil(lambda: pane.last_manifest is not None, timeout=60_000)
    assert path.is_file() and "Exported to" in pane.export_result.text()
    assert pane.side_a.text() == str(path)

    opinion = bank.units(Network.OPINION, limit=1)[0]
    new_confidence = 0.05 if opinion.confidence != 0.05 else 0.1
    bank.edit_unit(opinion.id, confidence=new_confidence)
    pane.compare()
    qtbot.waitUntil(lambda: pane.last_diff is not None, timeout=60_000)
    rows = [
        tuple(pane.diff_table.item(r, c).text() for c in range(3))
        for r in range(pane.diff_table.rowCount())
    ]
    changed = [r for r in rows if r[0] == "opinion confidence"]
    assert changed and changed[0][2].startswith(f"{new_confidence:.2f}")

    world = bank.count(Network.WORLD)
    pane.import_name.setText("Demo copy")
    pane.import_from(path)
    qtbot.waitUntil(
        lambda: window.state.bank is not None and window.state.bank.name == "Demo copy",
        timeout=60_000,
    )
    wait_idle(qtbot, window.runner)
    copy = window.state.bank
    assert copy.count(Network.WORLD) == world
    qtbot.waitUntil(lambda: "Demo copy" in window.bank_list.names())


def test_settings_save_parameters_and_profile(qtbot, window):
    bank = window.state.bank
    pane = window.show_pane("settings")
    qtbot.waitUntil(lambda: pane.profile is not None)
    row = next(
        r for r in range(pane.params.rowCount()) if pane.params.item(r, 0).text() == "recall.rrf_k"
    )
    pane.params.item(row, 2).setData(Qt.ItemDataRole.EditRole, 30)
    assert pane.params.item(row, 2).font().bold()  # differs from the default
    with qtbot.waitSignal(window.state.changed):
        pane.params_save.click()
    wait_idle(qtbot, window.runner)
    assert bank.profile().config["recall.rrf_k"] == 30
    pane.background.setPlainText("A new background.")
    with qtbot.waitSignal(window.state.changed):
        pane.profile_save.click()
    wait_idle(qtbot, window.runner)
    assert bank.profile().background == "A new background."
    pane._reset_params()
    with qtbot.waitSignal(window.state.changed):
        pane.params_save.click()
    wait_idle(qtbot, window.runner)
    assert bank.profile().config["recall.rrf_k"] == 60


@pytest.mark.slow
def test_settings_connection_test_against_a_fake_ollama(qtbot, window, fake_ollama):
    pane = window.show_pane("settings")
    pane.llm_host.setText(fake_ollama.url)
    pane.list_models.click()
    qtbot.waitUntil(lambda: pane.llm_model.count() > 0)
    model = pane.llm_model.itemText(0)
    pane.llm_model.setEditText(model)
    pane.test_button.click()
    qtbot.waitUntil(lambda: pane.llm_result.text().startswith(("✓", "✗")))
    assert pane.llm_result.text().startswith("✓") and "available" in pane.llm_result.text()
    pane.llm_model.setEditText("not-installed:1b")
    pane.test_button.click()
    qtbot.waitUntil(lambda: "not installed" in pane.llm_result.text())
    assert pane.llm_result.text().startswith("✗")
    pane.llm_host.setText("http://127.0.0.1:9")  # nothing listens there
    pane.test_button.click()
    qtbot.waitUntil(
        lambda: pane.llm_result.text().startswith("✗") and "9" in pane.llm_result.text()
    )
