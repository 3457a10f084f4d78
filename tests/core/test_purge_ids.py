"""A purge reaches ids too (issue 27, item 15): a caller-given turn id
("zorblax-7") and document id ("zorblax-notes") kept the purged name in
`turns.id`, `documents.id` and every later export. They are re-keyed, with
everything that points at them."""

from __future__ import annotations

import pytest

from core import Engine
from core.types import Document, Turn
from tests.core.test_purge_exact import _leaks
from tests.support.curation import add_entity, folder_contains
from tests.support.embedders import HashEmbedder


@pytest.fixture
def engine(tmp_path):
    with Engine(tmp_path / "home", embedder=HashEmbedder()) as engine:
        yield engine


def test_ids_that_name_the_purged_entity_are_re_keyed_everywhere(engine, tmp_path):
    bank = engine.create_bank("ids")
    turns = (
        Turn("zorblax-7", "Ann", "Ann keeps bees on the roof."),
        Turn("t2", "Bob", "Zorblax came by with honey jars."),
        Turn("t3", "Ann", "The weather is fine."),
    )
    bank.ingest([Document("zorblax-notes", "notes", turns)], mode="verbatim")
    zid = add_entity(bank, "Zorblax", "org")
    named = next(u for u in bank.units() if "Zorblax" in u.text)
    with bank.store.transaction() as tx:
        tx.con.execute("INSERT INTO mentions VALUES (?, ?, 'Zorblax')", [named.id, zid])
    assert _leaks(bank, "zorblax")  # in the ids before

    bank.purge_entity(zid, confirm=True)
    assert _leaks(bank, "zorblax") == []
    assert not folder_contains(bank.folder, b"zorblax")
    # The document and its turns are all there under their new ids, and the unit
    # made from the renamed turn still points at it.
    [document] = bank.documents()
    stored = bank.turns(document.id)
    assert [t.text for t in stored] == [turns[0].text, "[redacted] came by with honey jars.",
                                        turns[2].text]  # fmt: skip
    assert [t.id for t in stored][1:] == ["t2", "t3"]
    bees = next(u for u in bank.units() if turns[0].text in u.text)
    assert bees.source_ids == (stored[0].id,) and bees.document_id == document.id
    assert bank.verify().ok
    # And an export after the purge carries neither id.
    snapshot = tmp_path / "after.engram"
    bank.export_snapshot(snapshot)
    assert _leaks(engine.import_snapshot(snapshot, "copy"), "zorblax") == []
