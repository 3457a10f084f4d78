"""`Bank.unit_labels`: what a page of units shows beside their text (entity
names, document titles, observation sources) in one query, exactly what the
three lookups it stands for give."""

from __future__ import annotations

from pathlib import Path

from core import Network

CALL = Path(__file__).parent / "data" / "northwind-call.txt"


def test_unit_labels_are_the_three_lookups_in_one(engine):
    bank = engine.create_bank("northwind", agent_name="Juniper")
    bank.ingest(CALL, mode="rules")
    bank.process_jobs()
    units = bank.units(limit=None, status=None)
    entities = [e for u in units for e in u.entity_ids]
    documents = sorted({u.document_id for u in units if u.document_id})
    observations = [u.id for u in units if u.network is Network.OBSERVATION]
    assert entities and documents and observations
    sources = bank.observation_sources(observations)
    assert any(len(v) > 1 for v in sources.values())  # an order to keep
    labels = bank.unit_labels(entities + ["nobody"], documents + ["none"], observations + ["x"])
    assert labels == (bank.entity_names(entities), bank.document_titles(documents), sources)
    assert bank.unit_labels([], [], []) == ({}, {}, {})
    assert bank.unit_labels(entities[:1], [], []) == (bank.entity_names(entities[:1]), {}, {})
