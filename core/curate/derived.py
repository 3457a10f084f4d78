"""What was derived from curated facts: hidden in the action's own transaction.

An observation quotes its source facts and an opinion formed by reflection
rests on its evidence. When curation hides, deletes, rewrites or moves a fact,
whatever was derived from it must not outlive it in recall: in the same
transaction as the action,

- an active observation with a source that is now gone, not active, rewritten,
  or no longer about the observation's entity becomes `stale` (recall only
  sees active units) and its entity's observation job is queued — the job
  rebuilds it (active again) or removes it;
- an active opinion whose `formed` evidence is now gone or not active becomes
  `stale`; a stale opinion whose evidence is active again comes back.

These status flips are not part of the action's audited delta: undo and redo
call `reconcile` again for the facts they moved, so the derived state always
follows the facts, whichever way they went. Links need nothing: recall's graph
only walks to active units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb

from core.curate.jobs import queue_observations
from core.types import Change, Kind, UnitStatus

ACTIVE, STALE = UnitStatus.ACTIVE.value, UnitStatus.STALE.value
FORMED = "formed"


@dataclass
class Derived:
    """The derived units one reconcile flipped, and the jobs it queued."""

    stale: list[str] = field(default_factory=list)
    revived: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)

    @property
    def units(self) -> list[str]:
        return sorted({*self.stale, *self.revived})

    def change(self) -> Change:
        return Change.of(
            updated={Kind.UNIT: self.units, Kind.OPINION: self.revived + self.stale},
            added={Kind.JOB: self.jobs},
        )


Pairs = set[tuple[str, str]]


def observation_pairs(con: duckdb.DuckDBPyConnection, unit_ids: Iterable[str]) -> Pairs:
    """(observation id, source unit id) for the observations built from `unit_ids`.

    Read before an action too: deleting a fact deletes its source rows."""
    ids = sorted(set(unit_ids))
    if not ids:
        return set()
    rows = con.execute(
        "SELECT observation_id, unit_id FROM observation_sources"
        " WHERE unit_id IN (SELECT unnest(?))",
        [ids],
    ).fetchall()
    return {(r[0], r[1]) for r in rows}


def reconcile(
    con: duckdb.DuckDBPyConnection,
    affected: Iterable[str],
    *,
    rewritten: Iterable[str] = (),
    pairs_before: Pairs = frozenset(),
) -> Derived:
    """Hide (or bring back) what was derived from the `affected` units; see the module."""
    affected = set(affected)
    out = Derived()
    if not affected:
        return out
    rewritten = sorted(set(rewritten))
    pairs = sorted(pairs_before | observation_pairs(con, affected))
    if pairs:
        rows = con.execute(
            "SELECT p.obs, o.entity_id FROM (SELECT unnest($obs) AS obs, unnest($src) AS src) p"
            " JOIN units ou ON ou.id = p.obs AND ou.status = $active"
            " JOIN observations o ON o.unit_id = p.obs"
            " LEFT JOIN units s ON s.id = p.src"
            " WHERE s.id IS NULL OR s.status <> $active OR list_contains($rewritten, p.src)"
            " OR NOT EXISTS (SELECT 1 FROM mentions m WHERE m.unit_id = p.src"
            " AND m.entity_id = o.entity_id)",
            {
                "obs": [p[0] for p in pairs],
                "src": [p[1] for p in pairs],
                "active": ACTIVE,
                "rewritten": rewritten,
            },
        ).fetchall()
        stale = dict(rows)
        if stale:
            con.execute(
                "UPDATE units SET status = ? WHERE id IN (SELECT unnest(?))", [STALE, list(stale)]
            )
            out.stale += sorted(stale)
            out.jobs += queue_observations(con, stale.values())
    opinions = con.execute(
        "SELECT o.id, o.status, coalesce(s.status, 'gone') FROM opinion_events e"
        " JOIN units o ON o.id = e.opinion_id LEFT JOIN units s ON s.id = e.evidence_id"
        " WHERE e.relation = ? AND e.evidence_id IN (SELECT unnest(?))",
        [FORMED, sorted(affected)],
    ).fetchall()
    hide = sorted({o for o, status, ev in opinions if status == ACTIVE and ev != ACTIVE})
    back = sorted({o for o, status, ev in opinions if status == STALE and ev == ACTIVE})
    for ids, status in ((hide, STALE), (back, ACTIVE)):
        if ids:
            con.execute("UPDATE units SET status = ? WHERE id IN (SELECT unnest(?))", [status, ids])
    out.stale += hide
    out.revived += back
    return out


def rewritten_units(forward: Mapping[str, Any]) -> set[str]:
    """Units whose text an audited delta side changed."""
    return {
        key[0] for key, columns in forward.get("units", {}).get("changed", []) if "text" in columns
    }


def mention_units(*sides: Mapping[str, Any]) -> set[str]:
    """Units whose mentions a delta moved (merge, split, edit of entities)."""
    return {r["unit_id"] for side in sides for r in side.get("mentions", {}).get("rows", [])}
