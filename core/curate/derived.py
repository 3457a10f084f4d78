"""What was derived from curated facts: hidden in the action's own transaction.

An observation quotes its source facts and an opinion formed by reflection
rests on its evidence. When curation hides, deletes, rewrites or moves a fact,
whatever was derived from it must not outlive it in recall: in the same
transaction as the action,

- an observation with a source that is now hidden (retracted, hidden, stale),
  no longer about its entity, gone or rewritten becomes `stale` (recall only
  sees active units) and its entity's observation job is queued, which writes
  the profile again, in place, from the facts that are left; one whose source
  is gone or rewritten also loses its source rows, so it can only be rebuilt;
  a stale observation whose sources are all back (restore, unhide) is active
  again at once;
- an active opinion whose `formed` evidence is now gone or not active becomes
  `stale`; a stale opinion whose evidence is active again comes back;
- an opinion that a later step moved (reinforce, weaken, contradict) on evidence
  now hidden or gone, or back again, has its confidence replayed from the steps
  whose evidence is active, and a `revised` event in its history says why (a
  retracted fact no longer props up a belief, and the timeline agrees with the
  table).

The flips are part of the action's audited delta (the candidates are in its
captured scope), so undo restores them exactly; undo and redo call `reconcile`
again for the facts they moved, so what a job rebuilt in between follows the
facts too. Links need nothing: recall's graph only walks to active units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb

from core.curate.jobs import queue_observations
from core.retain.opinions import FORMED, OpinionEvent, Relation, events_of, write_events
from core.store.bank_store import utcnow
from core.types import Change, Kind, UnitStatus, new_id

ACTIVE, STALE = UnitStatus.ACTIVE.value, UnitStatus.STALE.value
# An opinion's confidence recomputed by curation: derived from its other events,
# so a replay never starts from one.
REVISED = "revised"
STEPS = frozenset(r.value for r in Relation)  # assessments: each moved the confidence


@dataclass
class Derived:
    """The derived units one reconcile flipped or cut from their sources, and the
    jobs it queued."""

    stale: list[str] = field(default_factory=list)
    revived: list[str] = field(default_factory=list)
    # Observations that lost their source rows (broken); one may already have
    # been stale (its entity retracted), so it is in neither list above.
    unsourced: list[str] = field(default_factory=list)
    # Opinions whose confidence was replayed (a `revised` event each).
    revised: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)

    @property
    def units(self) -> list[str]:
        return sorted({*self.stale, *self.revived, *self.revised})

    @property
    def wrote(self) -> bool:
        """Whether reconcile changed any row (the action's delta must be read again)."""
        return bool(self.units or self.unsourced)

    def change(self) -> Change:
        return Change.of(
            updated={Kind.UNIT: self.units},
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


def derived_candidates(
    con: duckdb.DuckDBPyConnection, unit_ids: Iterable[str], pairs: Pairs
) -> set[str]:
    """Units that may be derived from `unit_ids`: the observations built from them
    (`pairs`) and the opinions formed or moved on them as evidence."""
    ids = sorted(set(unit_ids))
    if not ids:
        return set()
    opinions = con.execute(
        "SELECT DISTINCT opinion_id FROM opinion_events WHERE evidence_id IN (SELECT unnest(?))",
        [ids],
    ).fetchall()
    return {p[0] for p in pairs} | {r[0] for r in opinions}


def reconcile(
    con: duckdb.DuckDBPyConnection,
    affected: Iterable[str],
    *,
    rewritten: Iterable[str] = (),
    pairs_before: Pairs = frozenset(),
    revise: bool = False,
) -> Derived:
    """Hide, remove or bring back what was derived from the `affected` units; see the module.

    `revise` replays the opinions moved on them; undo and redo do not: the delta
    they apply already holds those revisions."""
    affected = set(affected)
    out = Derived()
    if not affected:
        return out
    pairs = sorted(pairs_before | observation_pairs(con, affected))
    if pairs:
        _observations(con, pairs, sorted(set(rewritten)), out)
    opinions = con.execute(
        "SELECT o.id, o.status, coalesce(s.status, 'gone') FROM opinion_events e"
        " JOIN units o ON o.id = e.opinion_id LEFT JOIN units s ON s.id = e.evidence_id"
        " WHERE e.relation = ? AND e.evidence_id IN (SELECT unnest(?))",
        [FORMED, sorted(affected)],
    ).fetchall()
    hide = sorted({o for o, status, ev in opinions if status == ACTIVE and ev != ACTIVE})
    back = sorted({o for o, status, ev in opinions if status == STALE and ev == ACTIVE})
    _set_status(con, hide, STALE)
    _set_status(con, back, ACTIVE)
    out.stale += hide
    out.revived += back
    if revise:
        stepped = con.execute(
            "SELECT DISTINCT opinion_id FROM opinion_events WHERE relation <> ?"
            " AND evidence_id IN (SELECT unnest(?)) ORDER BY 1",
            [FORMED, sorted(affected)],
        ).fetchall()
        out.revised += revise_opinions(con, [r[0] for r in stepped], "its evidence was curated")
    return out


def revise_opinions(
    con: duckdb.DuckDBPyConnection, opinion_ids: Iterable[str], why: str
) -> list[str]:
    """Replay each opinion's confidence over the steps whose evidence is active
    (or that need none: formed, set by hand); where it differs from the stored
    one, store it with a `revised` event giving `why`. Returns those opinions.

    Each step moves the confidence by what it recorded (not by today's α), so
    with every step kept the replay lands exactly on the stored value."""
    revised: list[str] = []
    events: list[OpinionEvent] = []
    now = utcnow()
    for opinion_id in opinion_ids:
        row = con.execute("SELECT confidence FROM units WHERE id = ?", [opinion_id]).fetchone()
        history = [e for e in events_of(con, opinion_id) if e.relation != REVISED]
        evidence = sorted({e.evidence_id for e in history if e.evidence_id})
        active = {
            r[0]
            for r in con.execute(
                "SELECT id FROM units WHERE id IN (SELECT unnest(?)) AND status = ?",
                [evidence, ACTIVE],
            ).fetchall()
        }
        kept = [
            e
            for e in history
            if e.relation == FORMED or not e.evidence_id or e.evidence_id in active
        ]
        if row is None or not kept:
            continue
        confidence = _replay(kept)
        if row[0] is not None and abs(confidence - row[0]) <= 1e-9:
            continue
        left_out = len(history) - len(kept)
        reason = (
            f"{why}: replayed without {left_out} step(s) whose evidence is hidden or gone"
            if left_out
            else f"{why}: replayed with all its evidence back"
        )
        events.append(
            OpinionEvent(new_id(), opinion_id, now, REVISED, row[0], confidence, None, reason)
        )
        con.execute("UPDATE units SET confidence = ? WHERE id = ?", [confidence, opinion_id])
        revised.append(opinion_id)
    write_events(con, events)
    return revised


def _replay(events: list[OpinionEvent]) -> float:
    confidence: float | None = None
    for e in events:
        if confidence is None or e.relation not in STEPS or e.confidence_before is None:
            confidence = float(e.confidence_after)  # a start: formed, set by hand
        else:
            step = float(e.confidence_after) - float(e.confidence_before)
            confidence = min(max(confidence + step, 0.0), 1.0)
    assert confidence is not None
    return confidence


def _set_status(con: duckdb.DuckDBPyConnection, ids: list[str], status: str) -> None:
    if ids:
        con.execute("UPDATE units SET status = ? WHERE id IN (SELECT unnest(?))", [status, ids])


def _observations(
    con: duckdb.DuckDBPyConnection, pairs: list[tuple[str, str]], rewritten: list[str], out
) -> None:
    """Observations quoting a fact hidden, moved away, gone or rewritten turn stale;
    stale ones whose facts are all back as they were come back (see the module)."""
    rows = con.execute(
        "SELECT p.obs, o.entity_id, ou.status,"
        " bool_or(s.id IS NULL OR list_contains($rewritten, p.src)"
        " OR s.updated_at > ou.updated_at) AS broken,"
        " bool_or(s.status <> $active OR NOT EXISTS (SELECT 1 FROM mentions m"
        " WHERE m.unit_id = p.src AND m.entity_id = o.entity_id)) AS hidden"
        " FROM (SELECT unnest($obs) AS obs, unnest($src) AS src) p"
        " JOIN units ou ON ou.id = p.obs JOIN observations o ON o.unit_id = p.obs"
        " LEFT JOIN units s ON s.id = p.src GROUP BY ALL",
        {
            "obs": [p[0] for p in pairs],
            "src": [p[1] for p in pairs],
            "active": ACTIVE,
            "rewritten": rewritten,
        },
    ).fetchall()
    broken = {obs: entity for obs, entity, _, is_broken, _ in rows if is_broken}
    stale = {
        obs: entity
        for obs, entity, status, is_broken, hidden in rows
        if status == ACTIVE and (hidden or is_broken)
    }
    candidates = [obs for obs, _, status, is_broken, _ in rows if status == STALE and not is_broken]
    back = _whole_again(con, candidates)
    if broken:
        # It no longer says what its facts say: it can only be rebuilt, never come
        # back as it is. Without source rows it is never "whole again"; its job
        # rewrites it in place (same unit, so undo and the rebuild never collide).
        con.execute(
            "DELETE FROM observation_sources WHERE observation_id IN (SELECT unnest(?))",
            [sorted(broken)],
        )
    _set_status(con, sorted(stale), STALE)
    _set_status(con, back, ACTIVE)
    out.unsourced += sorted(broken)
    out.stale += sorted(stale)
    out.revived += back
    out.jobs += queue_observations(con, [*broken.values(), *stale.values()])


def _whole_again(con: duckdb.DuckDBPyConnection, observation_ids: list[str]) -> list[str]:
    if not observation_ids:
        return []
    rows = con.execute(
        "SELECT o.unit_id FROM observations o JOIN units ou ON ou.id = o.unit_id"
        " WHERE o.unit_id IN (SELECT unnest($ids))"
        " AND EXISTS (SELECT 1 FROM observation_sources k WHERE k.observation_id = o.unit_id)"
        " AND NOT EXISTS ("
        " SELECT 1 FROM observation_sources src LEFT JOIN units s ON s.id = src.unit_id"
        " WHERE src.observation_id = o.unit_id AND (s.id IS NULL OR s.status <> $active"
        " OR s.updated_at > ou.updated_at OR NOT EXISTS (SELECT 1 FROM mentions m"
        " WHERE m.unit_id = s.id AND m.entity_id = o.entity_id)))",
        {"ids": observation_ids, "active": ACTIVE},
    ).fetchall()
    return sorted(r[0] for r in rows)


def rewritten_units(forward: Mapping[str, Any]) -> set[str]:
    """Units whose text an audited delta side changed."""
    return {
        key[0] for key, columns in forward.get("units", {}).get("changed", []) if "text" in columns
    }


def mention_units(*sides: Mapping[str, Any]) -> set[str]:
    """Units whose mentions a delta moved (merge, split, edit of entities)."""
    return {r["unit_id"] for side in sides for r in side.get("mentions", {}).get("rows", [])}
