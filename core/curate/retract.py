"""Retracting an entity: the impact preview, the soft retract and the restore.

A soft retract marks the entity and every unit that mentions it (facts,
opinions, observations) 'retracted'. Recall, reflect and the default views
show only active units, and the status column in LanceDB follows, so hidden
units are filtered before ranking. Restore brings back exactly what the
retract hid: a unit that also mentions another retracted entity stays hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from core.curate.action import (
    Outcome,
    entities_of,
    entity_row,
    run_action,
    units_mentioning,
)
from core.curate.redaction import NameMatcher, Redaction, names_ever, plan_redactions
from core.curate.rows import Scope
from core.types import Change, EngramError, Network, UnitStatus

if TYPE_CHECKING:
    from core.handle import BankHandle


@dataclass(frozen=True)
class PreviewFact:
    """One unit an action would hide or remove, as a confirm dialog lists it."""

    id: str
    network: str
    text: str
    status: str = "active"


def preview_facts(
    con: duckdb.DuckDBPyConnection, unit_ids: Sequence[str]
) -> tuple[PreviewFact, ...]:
    """The units, facts first (world, experience, opinion, observation), oldest first."""
    rows = con.execute(
        "SELECT id, network, text, status FROM units WHERE id IN (SELECT unnest(?))"
        " ORDER BY CASE network WHEN 'world' THEN 0 WHEN 'experience' THEN 1"
        " WHEN 'opinion' THEN 2 ELSE 3 END, occurred_start NULLS LAST, id",
        [list(unit_ids)],
    ).fetchall()
    return tuple(PreviewFact(*r) for r in rows)


@dataclass(frozen=True)
class RetractPreview:
    """What retracting (or purging) an entity touches."""

    entity_id: str
    name: str
    status: str
    units: int  # world and experience facts that mention it
    opinions: int
    observations: int
    links: int  # links from or to those units, or laid through the entity
    source_turns: int  # distinct turns those units were extracted from
    opinion_events: int
    unit_ids: tuple[str, ...] = ()
    # Only a purge touches these: text naming the entity is redacted.
    turns_to_redact: int = 0
    units_to_redact: int = 0  # units that name it without mentioning it
    # Every occurrence a purge blanks, in context ("turns.text 1a2b-3: …«Grace» is…").
    redactions: tuple[Redaction, ...] = ()
    # Every unit it hides (or a purge removes), for a person to read before confirming.
    facts: tuple[PreviewFact, ...] = ()
    # Entities whose observations quote some of those facts and are rebuilt.
    rebuilt: tuple[str, ...] = ()

    @property
    def total_units(self) -> int:
        return self.units + self.opinions + self.observations


# A retract or restore flips statuses and nothing else.
STATUS_TABLES = frozenset({"units", "entities"})


def retract_preview(bank: BankHandle, entity_id: str) -> RetractPreview:
    con = bank.store.reader()
    entity = entity_row(con, entity_id)
    unit_ids = units_mentioning(con, entity_id)
    by_network = dict(
        con.execute(
            "SELECT network, count(*) FROM units WHERE id IN (SELECT unnest(?)) GROUP BY network",
            [unit_ids],
        ).fetchall()
    )
    links = con.execute(
        "SELECT count(*) FROM links WHERE source IN (SELECT unnest($ids))"
        " OR target IN (SELECT unnest($ids)) OR entity_id = $e",
        {"ids": unit_ids, "e": entity_id},
    ).fetchall()[0][0]
    turns = con.execute(
        "SELECT count(DISTINCT s) FROM (SELECT unnest(source_ids) AS s FROM units"
        " WHERE id IN (SELECT unnest(?)))",
        [unit_ids],
    ).fetchall()[0][0]
    events = con.execute(
        "SELECT count(*) FROM opinion_events WHERE opinion_id IN (SELECT unnest(?))", [unit_ids]
    ).fetchall()[0][0]
    # What a purge would blank, occurrence by occurrence (a retract blanks nothing).
    plan = plan_redactions(con, NameMatcher(names_ever(con, entity_id)), unit_ids, entity_id)
    facts = by_network.get(str(Network.WORLD), 0) + by_network.get(str(Network.EXPERIENCE), 0)
    return RetractPreview(
        entity_id=entity.id,
        name=entity.name,
        status=entity.status,
        units=facts,
        opinions=by_network.get(str(Network.OPINION), 0),
        observations=by_network.get(str(Network.OBSERVATION), 0),
        links=links,
        source_turns=turns,
        opinion_events=events,
        unit_ids=tuple(unit_ids),
        turns_to_redact=plan.count("turns"),
        units_to_redact=len(plan.units),
        redactions=tuple(plan.redactions),
        facts=preview_facts(con, unit_ids),
        rebuilt=tuple(
            r[0]
            for r in con.execute(
                "SELECT name FROM entities WHERE id IN (SELECT unnest(?)) AND status = 'active'"
                " ORDER BY lower(name)",
                [sorted(entities_of(con, unit_ids) - {entity_id})],
            ).fetchall()
        ),
    )


def retract_entity(bank: BankHandle, entity_id: str) -> Change:
    """Hide an entity and everything derived from it from recall, reflect and the
    default views. Reversible: `restore_entity`, or `undo`."""
    con = bank.store.reader()
    entity = entity_row(con, entity_id)
    if entity.status == UnitStatus.RETRACTED:
        raise EngramError(f"entity {entity.name!r} is already retracted")
    unit_ids = units_mentioning(con, entity_id)
    neighbours = entities_of(con, unit_ids) - {entity_id}

    def body(tx) -> Outcome:
        # Status is visibility, not content: updated_at stays, so restore is exact.
        tx.con.execute("UPDATE entities SET status = 'retracted' WHERE id = ?", [entity_id])
        hidden = tx.con.execute(
            "UPDATE units SET status = 'retracted' WHERE id IN (SELECT unnest(?))"
            " AND status = 'active' RETURNING id",
            [unit_ids],
        ).fetchall()
        return Outcome(
            before={"id": entity_id, "name": entity.name, "status": entity.status},
            after={
                "id": entity_id,
                "name": entity.name,
                "status": "retracted",
                "units": len(hidden),
            },
            observe=neighbours,
        )

    return run_action(
        bank,
        action="retract_entity",
        target=entity_id,
        scope=Scope(units=set(unit_ids), entities={entity_id}, tables=STATUS_TABLES),
        body=body,
    )


def restore_entity(bank: BankHandle, entity_id: str) -> Change:
    """Bring a retracted entity and what it hid back."""
    con = bank.store.reader()
    entity = entity_row(con, entity_id)
    if entity.status != UnitStatus.RETRACTED:
        raise EngramError(f"entity {entity.name!r} is not retracted")
    unit_ids = units_mentioning(con, entity_id)
    neighbours = entities_of(con, unit_ids)

    def body(tx) -> Outcome:
        tx.con.execute("UPDATE entities SET status = 'active' WHERE id = ?", [entity_id])
        back = tx.con.execute(
            "UPDATE units SET status = 'active' WHERE id IN (SELECT unnest($ids))"
            " AND status = 'retracted' AND NOT EXISTS (SELECT 1 FROM mentions m"
            " JOIN entities e ON e.id = m.entity_id WHERE m.unit_id = units.id"
            " AND e.status = 'retracted') RETURNING id",
            {"ids": unit_ids},
        ).fetchall()
        return Outcome(
            before={"id": entity_id, "name": entity.name, "status": entity.status},
            after={"id": entity_id, "name": entity.name, "status": "active", "units": len(back)},
            observe=neighbours,
        )

    return run_action(
        bank,
        action="restore_entity",
        target=entity_id,
        scope=Scope(units=set(unit_ids), entities={entity_id}, tables=STATUS_TABLES),
        body=body,
    )
