"""One audited curation action: capture, change, capture, record — one transaction.

Everything an action does to DuckDB, its audit entry and the observation jobs
it queues commit together; the indexes follow for the units whose rows changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import duckdb

from core.curate.audit import record
from core.curate.derived import (
    derived_candidates,
    mention_units,
    observation_pairs,
    reconcile,
    rewritten_units,
)
from core.curate.jobs import queue_observations
from core.curate.rows import Scope, capture, change_of, diff
from core.types import Change, EngramError, Kind, UnitStatus

if TYPE_CHECKING:
    from core.handle import BankHandle
    from core.store.bank_store import Tx


@dataclass
class Outcome:
    """What an action's body reports back: the readable before and after, and
    the entities whose observations must be regenerated."""

    before: Mapping[str, Any]
    after: Mapping[str, Any]
    observe: Iterable[str] = field(default_factory=set)


def run_action(
    bank: BankHandle,
    *,
    action: str,
    target: str | None,
    scope: Scope,
    body: Callable[[Tx], Outcome],
) -> Change:
    with bank.store.transaction() as tx:
        pairs = observation_pairs(tx.con, scope.units)
        # What may be derived from the scope's units is captured too: hiding it is
        # part of the action, so undo restores it exactly.
        derived_ids = derived_candidates(tx.con, scope.units, pairs)
        if derived_ids:
            # Reconcile flips statuses and may drop an observation's source rows.
            tables = scope.tables and scope.tables | {
                "units",
                "observation_sources",
                "opinion_events",
            }
            scope = replace(
                scope,
                units=scope.units | derived_ids,
                tables=tables,
            )
        before = capture(tx.con, scope)
        outcome = body(tx)
        back, forward = diff(tx.con, before, capture(tx.con, scope))
        if not back and not forward:
            return Change()
        moved = touched_units(back, forward) | mention_units(back, forward)
        derived = reconcile(
            tx.con,
            moved,
            rewritten=rewritten_units(forward),
            pairs_before=pairs,
            revise=True,
        )
        if derived.wrote:
            back, forward = diff(tx.con, before, capture(tx.con, scope))
        record(
            tx.con,
            action=action,
            target=target,
            before=outcome.before,
            after=outcome.after,
            rows=(back, forward),
        )
        jobs = queue_observations(tx.con, outcome.observe)
        tx.touch(sorted(touched_units(back, forward)))
    return change_of(back, forward) | Change.of(added={Kind.JOB: jobs}) | derived.change()


def touched_units(back: Mapping[str, Any], forward: Mapping[str, Any]) -> set[str]:
    """Units whose own row changed: their index entries must follow."""
    ids: set[str] = set()
    for side in (back, forward):
        units = side.get("units", {})
        ids.update(r["id"] for r in units.get("rows", []))
        ids.update(k[0] for k, _ in units.get("changed", []))
    return ids


# -- shared reads -----------------------------------------------------------------


@dataclass(frozen=True)
class EntityRow:
    id: str
    name: str
    type: str
    aliases: tuple[str, ...]
    status: str

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "aliases": list(self.aliases),
            "status": self.status,
        }


def entity_row(con: duckdb.DuckDBPyConnection, entity_id: str) -> EntityRow:
    row = con.execute(
        "SELECT id, name, type, aliases, status FROM entities WHERE id = ?", [entity_id]
    ).fetchall()
    row = row[0] if row else None
    if row is None:
        raise EngramError(f"no entity {entity_id!r} in this bank")
    return EntityRow(row[0], row[1], row[2], tuple(row[3] or ()), row[4])


def require_entities(bank: BankHandle, entity_ids: Iterable[str]) -> None:
    """EngramError naming the first of `entity_ids` the bank does not have."""
    ids = list(entity_ids)
    if not ids:
        return
    known = {
        r[0]
        for r in bank.store.reader()
        .execute("SELECT id FROM entities WHERE id IN (SELECT unnest(?))", [ids])
        .fetchall()
    }
    unknown = [e for e in ids if e not in known]
    if unknown:
        raise EngramError(f"no entity {unknown[0]!r} in bank {bank.name!r}")


def require_active(entity: EntityRow, doing: str) -> None:
    if entity.status != UnitStatus.ACTIVE:
        raise EngramError(f"entity {entity.name!r} is retracted: restore it before you {doing} it")


def units_mentioning(con: duckdb.DuckDBPyConnection, entity_id: str) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT DISTINCT unit_id FROM mentions WHERE entity_id = ? ORDER BY unit_id",
            [entity_id],
        ).fetchall()
    ]


def entities_of(con: duckdb.DuckDBPyConnection, unit_ids: Iterable[str]) -> set[str]:
    ids = sorted(set(unit_ids))
    if not ids:
        return set()
    return {
        r[0]
        for r in con.execute(
            "SELECT DISTINCT entity_id FROM mentions WHERE unit_id IN (SELECT unnest(?))", [ids]
        ).fetchall()
    }


def delete_unit_rows(con: duckdb.DuckDBPyConnection, unit_ids: Iterable[str]) -> list[str]:
    """Delete units and everything that hangs off them: mentions, links, opinion
    events, observation rows and sources. Returns the ids that existed."""
    from core.store.units import delete_units

    ids = sorted(set(unit_ids))
    if not ids:
        return []
    con.execute("DELETE FROM opinion_events WHERE opinion_id IN (SELECT unnest(?))", [ids])
    con.execute(
        "DELETE FROM observation_sources WHERE observation_id IN (SELECT unnest($ids))"
        " OR unit_id IN (SELECT unnest($ids))",
        {"ids": ids},
    )
    con.execute("DELETE FROM observations WHERE unit_id IN (SELECT unnest(?))", [ids])
    return delete_units(con, ids)
