"""Bank.append_turns: a conversation retained turn by turn under one document
(Hindsight's update_mode="append") extracts only the new turns, and what the
document's earlier turns gave — curation included — stays."""

from __future__ import annotations

import pytest

from core.types import Document, EngramError, Turn


def test_appended_turns_are_extracted_alone_and_earlier_memories_stay(bank):
    first = Turn("t0", "Iris", "I repaired the old radio.", tags=("s:1",))
    bank.ingest(Document(id="chat", title="chat", turns=(first,)), mode="verbatim")
    (kept,) = bank.units(limit=None)
    bank.edit_unit(kept.id, text="Iris repaired the old valve radio.")
    digest = bank.documents()[0].content_hash

    report = bank.append_turns(
        "chat", [Turn("x", "Iris", "I sold it at the market.", metadata={"k": "v"})], "verbatim"
    )

    assert sum(report.facts.values()) == 1
    units = {u.id: u for u in bank.units(limit=None)}
    assert units[kept.id].text == "Iris repaired the old valve radio."  # the edit stays
    (new,) = [u for u in units.values() if u.id != kept.id]
    assert new.text.endswith("sold it at the market.") and new.metadata == {"k": "v"}
    assert new.document_id == "chat"
    turns = bank.turns("chat")
    assert [(t.id, t.index) for t in turns] == [("t0", 0), ("x", 1)]
    (document,) = bank.documents()
    assert document.turns == 2 and document.units == 2 and document.content_hash != digest
    assert bank.verify().ok


def test_a_clashing_turn_id_gets_one_of_its_own(bank):
    bank.ingest(
        Document(id="d", title="d", turns=(Turn("t0", "", "Alpha happened."),)), mode="verbatim"
    )
    bank.append_turns("d", [Turn("t0", "", "Beta happened.")], "verbatim")
    assert [t.id for t in bank.turns("d")] == ["t0", "t1"]


def test_appending_to_no_document_is_an_error(bank):
    with pytest.raises(EngramError, match="no document"):
        bank.append_turns("nope", [Turn("t0", "", "x")], "verbatim")
