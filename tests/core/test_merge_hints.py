"""Merge hints: entities that may be one are named, with why; nothing is merged."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from core.types import Document, Turn

DAY = datetime(2024, 5, 6, 10, 0)
LINES = [
    ("Ivo", "We shipped Beacon to the testers on Monday."),
    ("Mara", "The Beacon 2.0 release notes are on the wiki."),
    ("Ivo", "We run the release builds on Kubernetes."),
    ("Mara", "Our Kubernets cluster kept the builds green."),
    ("Ivo", "I play Animal Crossing: New Horizons every evening."),
    ("Mara", "Animal Crossing and New Horizons kept me busy all winter."),
    ("Ivo", "My island in Animal Crossing: New Horizons has a museum now."),
    ("Mara", "My friends Ana and Luis came over for dinner."),
    ("Ivo", "I met Ana and Luis at the market."),
    ("Mara", "My friends Ana and Luis are moving to Porto."),
]


def conversation() -> Document:
    turns = tuple(
        Turn(f"t{i}", who, text, DAY + timedelta(minutes=i), "s1", i)
        for i, (who, text) in enumerate(LINES)
    )
    return Document(id="", title="chat", turns=turns)


@pytest.mark.slow
def test_a_name_inside_another_a_near_spelling_and_names_always_together(bank) -> None:
    bank.ingest(conversation(), mode="rules")
    before = {e.id: (e.name, e.mention_count) for e in bank.entities()}
    hints = bank.merge_hints()
    pairs = {frozenset((h.source_name, h.target_name)): h for h in hints}
    beacon = pairs[frozenset(("Beacon", "Beacon 2.0"))]
    assert "part of" in beacon.reason and beacon.target_name == "Beacon"  # the better known
    assert "spelling" in pairs[frozenset(("Kubernetes", "Kubernets"))].reason
    together = pairs[frozenset(("Animal Crossing", "New Horizons"))]
    assert "together" in together.reason
    # People are often together: two of them are never hinted as one.
    assert frozenset(("Ana", "Luis")) not in pairs
    assert all(0 < h.score <= 1 for h in hints)
    assert [h.score for h in hints] == sorted((h.score for h in hints), reverse=True)
    # A hint merges nothing.
    assert {e.id: (e.name, e.mention_count) for e in bank.entities()} == before
