"""Deleting a document with everything derived only from it, previewed first,
undoable; re-ingesting one (issue 13, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import Kind, Network, UnitStatus
from core.cli import main as cli
from tests.support.curation import dump, lexical_ids, table_rows

DATA = Path(__file__).parent / "data"


def _two_documents(bank):
    first = bank.ingest(DATA / "northwind-call.txt", mode="rules").documents[0].id
    bank.ingest(DATA / "northwind-followup.txt", mode="rules")
    bank.process_jobs()
    return first


@pytest.mark.slow
def test_delete_a_document_and_only_what_derives_from_it_then_undo(engine):
    bank = engine.create_bank("docs", agent_name="Juniper")
    call = _two_documents(bank)
    before = dump(bank)
    units = {u.id for u in bank.units(None, status=None, limit=None) if u.network != "observation"}
    from_call = {
        r[0] for r in table_rows(bank, "SELECT id FROM units WHERE document_id = ?", [call])
    }
    assert from_call and from_call < units

    preview = bank.document_preview(call)
    assert {f.id for f in preview.units} == from_call
    assert any("renewal decision" in f.text for f in preview.units)
    assert "Dana Whitfield" in preview.entities_removed
    assert "Northwind Analytics" in preview.observations_rebuilt
    assert preview.turns == 6

    change = bank.delete_document(call)
    assert call in change.removed[Kind.DOCUMENT]
    assert call not in {d.id for d in bank.documents()}
    assert bank.turns(call) == []
    assert not table_rows(bank, "SELECT id FROM units WHERE document_id = ?", [call])
    assert "Dana Whitfield" not in {e.name for e in bank.entities(include_retracted=True)}
    # What still quotes it is hidden (stale) until its rebuild...
    assert all(bank.unit(i).status == "stale" for i in lexical_ids(bank, "renewal decision"))
    # Nothing still active quotes the document, before and after the rebuild.
    for _ in range(2):
        texts = [u.text for u in bank.units(None, limit=None)]
        assert not [t for t in texts if "renewal decision" in t or "outage report" in t]
        bank.process_jobs()
    assert not lexical_ids(bank, "renewal decision")  # ...and rebuilt without it
    northwind = next(e for e in bank.entities() if e.name == "Northwind Analytics")
    assert "signed the Atlas extension" in bank.observation(northwind.id).text
    assert bank.verify().ok
    [entry] = bank.audit(limit=1)
    assert entry.action == "delete_document" and "northwind-call" in entry.summary

    bank.undo()
    bank.process_jobs()
    assert call in {d.id for d in bank.documents()}
    assert len(bank.turns(call)) == 6
    after = dump(bank, {"units": "id", "turns": "document_id, id", "documents": "id"})
    assert {r[0] for r in after["units"]} >= units
    assert {r[:2] for r in after["turns"]} == {r[:2] for r in before["turns"]}
    assert lexical_ids(bank, "renewal decision")
    assert bank.verify().ok


@pytest.mark.slow
def test_an_opinion_loses_the_steps_its_deleted_evidence_gave_it(built):
    bank, b = built
    cello, opinion = b.units["m_cello"], b.units["o_music"]
    with bank.store.transaction() as tx:
        tx.con.execute("UPDATE units SET document_id = 'doc1' WHERE id = ?", [cello])
        tx.con.execute(
            "UPDATE opinion_events SET relation = 'formed', evidence_id = NULL WHERE id = 'ev0'"
        )
    assert bank.unit(opinion).confidence == 0.7
    preview = bank.document_preview("doc1")
    assert preview.opinions_revised == (opinion,) and preview.opinion_events == 1
    bank.delete_document("doc1")
    assert bank.unit(opinion).confidence == 0.5
    last = bank.opinion_history(opinion).steps[-1].event
    assert (last.relation, last.confidence_before, last.confidence_after) == ("revised", 0.7, 0.5)
    assert "doc1" not in {d.id for d in bank.documents()}
    assert bank.unit(opinion).status == UnitStatus.ACTIVE
    bank.undo()
    assert bank.unit(opinion).confidence == 0.7
    assert [s.event.id for s in bank.opinion_history(opinion).steps] == ["ev0", "ev1"]


@pytest.mark.slow
def test_reingest_replaces_what_the_document_wrote(engine):
    bank = engine.create_bank("again", agent_name="Juniper")
    call = _two_documents(bank)
    count = bank.count(Network.WORLD, status=None)
    report = bank.reingest_document(call, mode="rules")
    assert report.documents[0].id == call
    assert bank.count(Network.WORLD, status=None) == count
    assert len(bank.turns(call)) == 6


@pytest.mark.slow
def test_cli_documents_list_delete_and_jobs(engine, capsys):
    bank = engine.create_bank("cli", agent_name="Juniper")
    call = _two_documents(bank)
    home = str(engine.home)
    bank.close()
    assert cli(["--home", home, "documents", "list", "cli"]) == 0
    assert call in capsys.readouterr().out
    assert cli(["--home", home, "documents", "delete", "cli", call, "--preview"]) == 0
    out = capsys.readouterr().out
    assert "renewal decision" in out and call in out
    code = cli(["--home", home, "documents", "delete", "cli", call, "--yes", "--no-jobs"])
    out = capsys.readouterr().out
    assert code == 0 and "pending job(s): run `engram jobs run cli`" in out
    assert cli(["--home", home, "jobs", "run", "cli", "--quiet"]) == 0
    assert "observation(s) rebuilt" in capsys.readouterr().out
    assert cli(["--home", home, "jobs", "list", "cli"]) == 0
    assert "0 pending" in capsys.readouterr().out
