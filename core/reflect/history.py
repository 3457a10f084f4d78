"""Opinion history: trajectories, opinions by entity, changes in a time range,
and an opinion's confidence at any past time.

The history is the `opinion_events` rows retain and reflect write: a `formed`
event, then one event per reinforce / weaken / contradict step, each with the
confidence before and after, the evidence unit and the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from core.reflect.keeping import list_reflections
from core.reflect.values import OpinionChange, OpinionTrajectory, TrajectoryStep
from core.retain.opinions import FORMED, OpinionEvent, Relation, apply_evidence, events_of
from core.store.units import UnitFilter, get_units, select_units
from core.timeparse import naive_utc
from core.types import EngramError, InvalidInputError, Network, Unit

if TYPE_CHECKING:
    from core.handle import BankHandle

_EVENT_COLUMNS = (
    "id, opinion_id, happened_at, relation, confidence_before, confidence_after,"
    " evidence_id, reason, old_text, new_text, strength, independence"
)
_ASSESSMENTS = {r.value for r in Relation}


def _opinion(bank: BankHandle, opinion_id: str) -> Unit:
    unit = bank.unit(opinion_id)
    if unit.network is not Network.OPINION:
        raise EngramError(f"unit {opinion_id!r} is a {unit.network.value} fact, not an opinion")
    return unit


def trajectory(bank: BankHandle, opinion_id: str) -> OpinionTrajectory:
    """The opinion, and every step of its history oldest first, with evidence and reasons."""
    opinion = _opinion(bank, opinion_id)
    con = bank.store.reader()
    events = events_of(con, opinion_id)
    evidence = get_units(con, [e.evidence_id for e in events if e.evidence_id])
    by_event = {
        o.event_id: r.id
        for r in list_reflections(bank, limit=None, opinion_id=opinion_id)
        for o in r.opinions
        if o.event_id
    }
    steps = tuple(
        TrajectoryStep(
            event=e,
            evidence=evidence.get(e.evidence_id) if e.evidence_id else None,
            reflection_id=by_event.get(e.id),
        )
        for e in events
    )
    return OpinionTrajectory(opinion=opinion, steps=steps)


def opinions(
    bank: BankHandle,
    entity: str | None = None,
    *,
    min_confidence: float | None = None,
    limit: int | None = None,
) -> list[Unit]:
    """Active opinions, most confident first; with `entity` (an id, name or alias),
    only those about it."""
    flt = UnitFilter(network=Network.OPINION, entity=entity, min_confidence=min_confidence)
    return select_units(bank.store.reader(), flt, order="confidence", descending=True, limit=limit)


def changed_between(
    bank: BankHandle, start: datetime | None = None, end: datetime | None = None
) -> list[OpinionChange]:
    """Opinions with events in [start, end), each with those events, most recently
    changed first."""
    if start is not None and end is not None and end <= start:
        raise InvalidInputError("the end of the range must come after its start")
    clauses, params = [], []
    if start is not None:
        clauses.append("happened_at >= ?")
        params.append(naive_utc(start))
    if end is not None:
        clauses.append("happened_at < ?")
        params.append(naive_utc(end))
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    con = bank.store.reader()
    rows = con.execute(
        f"SELECT {_EVENT_COLUMNS} FROM opinion_events{where}"
        " ORDER BY happened_at, CASE relation WHEN 'formed' THEN 0 ELSE 1 END, rowid",
        params,
    ).fetchall()
    grouped: dict[str, list[OpinionEvent]] = {}
    for row in rows:
        grouped.setdefault(row[1], []).append(OpinionEvent(*row))
    units = get_units(con, list(grouped))
    changes = [
        OpinionChange(units[opinion_id], tuple(events))
        for opinion_id, events in grouped.items()
        if opinion_id in units
    ]
    changes.sort(key=lambda c: c.events[-1].happened_at, reverse=True)
    return changes


def replay(events: Sequence[OpinionEvent], alpha: float) -> list[float]:
    """The confidence after each event, recomputed from the first one by the
    reinforcement rule (not read from the record). Events that are not an
    assessment (formed, or a manual setting) start from their recorded value."""
    out: list[float] = []
    confidence: float | None = None
    for event in events:
        if confidence is None or event.relation == FORMED or event.relation not in _ASSESSMENTS:
            confidence = float(event.confidence_after)
        else:
            confidence = apply_evidence(confidence, event.relation, alpha, event.weight)
        out.append(confidence)
    return out


def confidence_at(bank: BankHandle, opinion_id: str, when: datetime) -> float | None:
    """The opinion's confidence at `when`, replayed from its events up to then;
    None before it was formed.

    Each step takes the value its event recorded: the rule's α may have been
    changed since, and the record is what the agent believed then (`replay`
    recomputes the chain by the rule, to check it). An opinion added by hand,
    without a `formed` event, held its first step's starting value (or, with no
    events at all, its stored confidence) from its creation on."""
    opinion = _opinion(bank, opinion_id)
    when = naive_utc(when)
    history = events_of(bank.store.reader(), opinion_id)
    past = [e for e in history if e.happened_at <= when]
    if past:
        return float(past[-1].confidence_after)
    if opinion.created_at is None or opinion.created_at > when:
        return None
    if not history:
        return opinion.confidence
    first = history[0]
    # Formed without a `formed` event (added by hand): before its first step it
    # held what that step started from.
    if first.relation != FORMED and first.confidence_before is not None:
        return float(first.confidence_before)
    return None
