"""Curation reaches what was derived: observations quoting a hidden fact and
opinions formed from one leave recall in the action's own transaction, and the
queued jobs rebuild them (issue 13, item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import Kind, Network, UnitStatus

CALL = Path(__file__).parent / "data" / "northwind-call.txt"
# Phrases only Dana's facts carry (what her retract must hide everywhere).
DANA_PHRASES = ("renewal decision is due", "outage report by Friday")
QUERY = "What did Dana say about the renewal decision?"


@pytest.fixture
def call_bank(engine):
    bank = engine.create_bank("northwind", agent_name="Juniper")
    bank.ingest(CALL, mode="rules")
    bank.process_jobs()
    return bank


def _entity(bank, name):
    return next(e for e in bank.entities(include_retracted=True) if e.name == name)


def _quoting(texts):
    return [t for t in texts if any(p in t for p in DANA_PHRASES)]


def _active_texts(bank):
    return [u.text for u in bank.units(None, limit=None)]


def _recalled(bank):
    return [item.text for item in bank.recall(QUERY, budget_tokens=4096).items]


@pytest.mark.slow
def test_retract_hides_every_unit_quoting_its_facts_before_jobs_run(call_bank):
    bank = call_bank
    dana = _entity(bank, "Dana Whitfield")
    others = [
        u
        for u in bank.units(Network.OBSERVATION, limit=None)
        if dana.id not in u.entity_ids and _quoting([u.text])
    ]
    assert others, "the fixture needs another entity's observation quoting Dana"

    change = bank.retract_entity(dana.id)

    assert _quoting(_recalled(bank)) == []
    assert _quoting(_active_texts(bank)) == []
    stale = {u.id for u in bank.units(None, status=UnitStatus.STALE, limit=None)}
    assert {u.id for u in others} <= stale
    assert stale <= change.ids(Kind.UNIT)
    assert bank.pending_jobs() > 0

    report = bank.process_jobs()
    assert report.failed == []
    assert bank.pending_jobs() == 0
    assert bank.count(None, status=UnitStatus.STALE) == 0
    assert _quoting(_recalled(bank)) == []
    assert _quoting(_active_texts(bank)) == []
    # Rebuilt, not just removed: the other entities keep a profile of what is left.
    rebuilt = {u.id for u in bank.units(Network.OBSERVATION, limit=None)}
    assert rebuilt & {u.id for u in others}
    assert bank.verify().ok


@pytest.mark.slow
def test_undo_of_a_retract_brings_the_quotes_back_after_the_jobs(call_bank):
    bank = call_bank
    dana = _entity(bank, "Dana Whitfield")
    bank.retract_entity(dana.id)
    bank.process_jobs()
    bank.undo()
    assert bank.pending_jobs() > 0
    bank.process_jobs()
    assert _quoting(_active_texts(bank))
    assert _quoting(_recalled(bank))
    assert bank.count(None, status=UnitStatus.STALE) == 0


@pytest.mark.slow
def test_deleting_or_editing_a_fact_stales_the_observations_built_from_it(call_bank):
    bank = call_bank
    # A world fact that some observation quotes (which ones a bounded profile
    # quotes is the profile builder's choice, so the test asks, not assumes).
    observations = bank.units(Network.OBSERVATION, limit=None)
    quoted = [
        f
        for f in bank.units(Network.WORLD, limit=None)
        if len(f.text) > 30 and any(f.text[:30] in o.text for o in observations)
    ]
    assert quoted
    fact = quoted[0]
    head = fact.text[:30]
    bank.edit_unit(fact.id, text="Dana asked for the incident summary next week.")
    assert not [t for t in _active_texts(bank) if head in t]
    bank.process_jobs()
    assert [t for t in _active_texts(bank) if "incident summary next week" in t]
    bank.delete_units([fact.id])
    assert not [t for t in _active_texts(bank) if "incident summary" in t]
    assert not [t for t in _recalled(bank) if "incident summary" in t]
