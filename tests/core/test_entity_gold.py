"""Entity extraction and typing in rules mode against the hand-made gold file of
two LoCoMo dev conversations (tests/data/locomo_entities_gold.json)."""

from __future__ import annotations

import pytest

from benchmarks.entity_quality import GOLD, evaluate
from tests.shared_data import LOCOMO_DEV


@pytest.fixture(scope="module")
def results():
    if not LOCOMO_DEV.exists():
        pytest.skip("the LoCoMo dev split is not here")
    return evaluate(LOCOMO_DEV, GOLD)


def test_entity_precision_and_recall_on_the_gold_file(results) -> None:
    assert results["all"]["precision"] >= 0.9, results
    assert results["all"]["recall"] >= 0.8, results
    # The examples of non-entities are not found.
    for conversation in ("conv-26", "conv-30"):
        found = set(results[conversation]["false_positives"])
        assert not found & {"FYI", "Perfect", "R&R", "BTW", "DOING", "Finding"}


def test_places_and_persons_typed_by_evidence(results) -> None:
    assert "Sweden: person (gold place)" not in results["conv-26"]["mistyped"]
    for conversation in ("conv-26", "conv-30"):
        assert results[conversation]["typing"] >= 0.6, results[conversation]
