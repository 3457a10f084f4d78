"""The operations the CLI needed and now finds on `Bank` (it no longer reaches
into the stores): resolving an entity reference, and repairing with a rebuild."""

from __future__ import annotations

import pytest

from core import EngramError
from tests.support.curation import MARKER, add_entity, lexical_ids, vector_ids


@pytest.mark.slow
def test_resolve_entity_by_id_name_or_alias_and_refuses_ambiguity(built):
    bank, b = built
    bob = b.entities["bob"]
    assert bank.resolve_entity(bob) == bob
    assert bank.resolve_entity("bob") == bob  # names are case-insensitive
    assert bank.resolve_entity("Bobby") == bob  # an alias
    with pytest.raises(EngramError, match="no entity 'Nobody' in bank 'test'"):
        bank.resolve_entity("Nobody")
    add_entity(bank, "Bob", "person")
    with pytest.raises(EngramError, match="'Bob' names several entities"):
        bank.resolve_entity("Bob")
    assert bank.resolve_entity(bob) == bob  # an id is never ambiguous


def test_repair_with_rebuild_keeps_every_unit_indexed(built):
    bank, b = built
    units = bank.count(status=None)
    report = bank.repair(rebuild=True)
    assert report.ok and report.units == report.vectors == report.lexical == units
    cello = b.units["m_cello"]
    assert cello in lexical_ids(bank, "cello")
    assert cello in vector_ids(bank, f"{MARKER} plays the cello")
