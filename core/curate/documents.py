"""Deleting an ingested document with everything derived only from it.

What goes, in one audited transaction (undo brings all of it back):

- the document, its turns and its failed-chunk records;
- every unit extracted from it (facts, opinions), with their mentions and links;
- the opinion events whose evidence was one of those units: an opinion that
  stays loses those steps, and its confidence is replayed from what is left
  (a `revised` event records the change and why);
- entities that only this document mentioned (with their observation and
  resolution decisions); the entity-resolution decisions made for it.

What stays is rebuilt: observations of the entities that keep other facts are
marked stale and queued (core/curate/derived.py), opinions formed by
reflection from its facts are hidden with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from core.curate.action import Outcome, delete_unit_rows, entities_of, run_action
from core.curate.derived import revise_opinions
from core.curate.jobs import drop_jobs
from core.curate.retract import PreviewFact, preview_facts
from core.curate.rows import Scope
from core.types import Change, EngramError

if TYPE_CHECKING:
    from core.handle import BankHandle


@dataclass(frozen=True)
class DocumentPreview:
    """What deleting a document removes, and what it changes elsewhere."""

    document_id: str
    title: str
    turns: int
    units: tuple[PreviewFact, ...]  # removed: every unit extracted from it
    links: int  # links from or to those units
    opinion_events: int  # steps of opinions that stay, whose evidence goes
    opinions_revised: tuple[str, ...]  # ids of those opinions
    entities_removed: tuple[str, ...]  # names only this document mentioned
    observations_rebuilt: tuple[str, ...]  # entities whose profile is rebuilt


@dataclass(frozen=True)
class _Plan:
    title: str
    turns: int
    units: list[str]
    revised: list[str]
    orphans: list[str]
    orphan_observations: list[str]
    keep: set[str]


def _plan(con: duckdb.DuckDBPyConnection, document_id: str) -> _Plan:
    row = con.execute("SELECT title FROM documents WHERE id = ?", [document_id]).fetchone()
    if row is None:
        raise EngramError(f"no document {document_id!r} in this bank")
    turns = con.execute(
        "SELECT count(*) FROM turns WHERE document_id = ?", [document_id]
    ).fetchone()[0]
    units = [
        r[0]
        for r in con.execute(
            "SELECT id FROM units WHERE document_id = ? ORDER BY id", [document_id]
        ).fetchall()
    ]
    revised = [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT opinion_id FROM opinion_events WHERE evidence_id IN"
            " (SELECT unnest($u)) AND opinion_id NOT IN (SELECT unnest($u)) ORDER BY 1",
            {"u": units},
        ).fetchall()
    ]
    touched = entities_of(con, units)
    # An entity is only this document's when no other fact (its own observation
    # aside) mentions it.
    orphans = sorted(
        e
        for e in touched
        if not con.execute(
            "SELECT 1 FROM mentions m JOIN units u ON u.id = m.unit_id"
            " WHERE m.entity_id = ? AND u.network <> 'observation'"
            " AND u.id NOT IN (SELECT unnest(?)) LIMIT 1",
            [e, units],
        ).fetchone()
    )
    orphan_observations = [
        r[0]
        for r in con.execute(
            "SELECT unit_id FROM observations WHERE entity_id IN (SELECT unnest(?))", [orphans]
        ).fetchall()
    ]
    return _Plan(
        title=row[0],
        turns=turns,
        units=units,
        revised=revised,
        orphans=orphans,
        orphan_observations=orphan_observations,
        keep=touched - set(orphans),
    )


def _names(
    con: duckdb.DuckDBPyConnection, entity_ids, *, active_only: bool = False
) -> tuple[str, ...]:
    status = " AND status = 'active'" if active_only else ""
    rows = con.execute(
        f"SELECT name FROM entities WHERE id IN (SELECT unnest(?)){status} ORDER BY lower(name)",
        [sorted(entity_ids)],
    ).fetchall()
    return tuple(r[0] for r in rows)


def document_preview(bank: BankHandle, document_id: str) -> DocumentPreview:
    con = bank.store.reader()
    plan = _plan(con, document_id)
    links = con.execute(
        "SELECT count(*) FROM links WHERE source IN (SELECT unnest($u))"
        " OR target IN (SELECT unnest($u))",
        {"u": plan.units},
    ).fetchone()[0]
    events = con.execute(
        "SELECT count(*) FROM opinion_events WHERE evidence_id IN (SELECT unnest($u))"
        " AND opinion_id NOT IN (SELECT unnest($u))",
        {"u": plan.units},
    ).fetchone()[0]
    return DocumentPreview(
        document_id=document_id,
        title=plan.title,
        turns=plan.turns,
        units=preview_facts(con, plan.units),
        links=links,
        opinion_events=events,
        opinions_revised=tuple(plan.revised),
        entities_removed=_names(con, plan.orphans),
        observations_rebuilt=_names(con, plan.keep, active_only=True),
    )


def delete_document(bank: BankHandle, document_id: str) -> Change:
    """Delete a document and everything derived only from it; audited, undoable."""
    con = bank.store.reader()
    plan = _plan(con, document_id)
    gone = [*plan.units, *plan.orphan_observations]

    def body(tx) -> Outcome:
        c = tx.con
        delete_unit_rows(c, gone)
        c.execute(
            "DELETE FROM opinion_events WHERE evidence_id IN (SELECT unnest(?))", [plan.units]
        )
        revisions = revise_opinions(
            c, plan.revised, f"evidence removed with document {plan.title!r}"
        )
        if plan.orphans:
            c.execute("DELETE FROM mentions WHERE entity_id IN (SELECT unnest(?))", [plan.orphans])
            c.execute("DELETE FROM links WHERE entity_id IN (SELECT unnest(?))", [plan.orphans])
            c.execute(
                "DELETE FROM observations WHERE entity_id IN (SELECT unnest(?))", [plan.orphans]
            )
            c.execute(
                "DELETE FROM entity_decisions WHERE entity_id IN (SELECT unnest($e))"
                " OR candidate_id IN (SELECT unnest($e))",
                {"e": plan.orphans},
            )
            c.execute("DELETE FROM entities WHERE id IN (SELECT unnest(?))", [plan.orphans])
            drop_jobs(c, plan.orphans)
        c.execute("DELETE FROM entity_decisions WHERE document_id = ?", [document_id])
        for table in ("turns", "ingest_failures"):
            c.execute(f"DELETE FROM {table} WHERE document_id = ?", [document_id])
        c.execute("DELETE FROM documents WHERE id = ?", [document_id])
        return Outcome(
            before={
                "id": document_id,
                "title": plan.title,
                "units": len(plan.units),
                "turns": plan.turns,
                "entities": len(plan.orphans),
            },
            after={"id": document_id, "deleted": True, "opinions_revised": len(revisions)},
            observe=plan.keep,
        )

    return run_action(
        bank,
        action="delete_document",
        target=document_id,
        scope=Scope(
            units={*gone, *plan.revised},
            entities=set(plan.orphans),
            vectors=set(gone),
            documents={document_id},
        ),
        body=body,
    )
