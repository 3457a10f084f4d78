"""A memory added by hand, and one fact hidden without deleting it: audited, undoable.

An added memory is a unit like any other (embedded, indexed, linked to its
entities, time neighbours and similar facts); its extraction mode is `manual`.
Hiding flips one unit's status to `hidden` — out of recall, reflect and the
default views, with everything derived from it (core/curate/derived.py) — and
unhiding flips it back; nothing else about the unit changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from core import limits
from core.context import current_caller
from core.curate.action import Outcome, require_entities, run_action
from core.curate.relink import relink_units
from core.curate.rows import Scope
from core.handle import validated
from core.retain.opinions import OpinionEvent, write_events
from core.store.bank_store import utcnow
from core.store.units import UnitFilter, insert_units, select_units
from core.types import (
    Change,
    EngramError,
    ExtractionMode,
    InvalidInputError,
    Network,
    NewUnit,
    UnitStatus,
    new_id,
)

if TYPE_CHECKING:
    from core.handle import BankHandle

# The event an opinion gets when a person sets its confidence (not an assessment:
# replaying the history starts again from the value it records).
EDITED = "edited"


def add_memory(
    bank: BankHandle,
    text: str,
    *,
    network: Network | str = Network.WORLD,
    occurred_start: datetime | None = None,
    occurred_end: datetime | None = None,
    confidence: float | None = None,
    entity_ids: Sequence[str] = (),
) -> Change:
    """Add one memory by hand; its id is in `change.added[Kind.UNIT]`."""
    try:
        network = Network(network)
    except ValueError:
        raise InvalidInputError(
            f"network must be one of {', '.join(n.value for n in Network)}; got {network!r}"
        ) from None
    if network is Network.OBSERVATION:
        raise InvalidInputError("observations are written by the engine, not by hand")
    if network is Network.OPINION and confidence is None:
        confidence = 0.5
    if network is not Network.OPINION and confidence is not None:
        raise InvalidInputError("only an opinion has a confidence")
    if occurred_start and occurred_end and occurred_end < occurred_start:
        raise InvalidInputError("a memory's occurrence cannot end before it starts")
    entities = tuple(dict.fromkeys(entity_ids))
    require_entities(bank, entities)
    unit = validated(
        NewUnit(
            text=text,
            network=network,
            occurred_start=occurred_start,
            occurred_end=occurred_end,
            mentioned_at=utcnow(),
            confidence=confidence,
            entity_ids=entities,
            extraction_mode=ExtractionMode.MANUAL,
        )
    ).with_id()
    # Embed before the transaction: the model is slow, the write lock is not ours to hold.
    vector = bank.vectors_for([unit])
    now = utcnow()

    def body(tx) -> Outcome:
        insert_units(tx.con, [unit], vector, bank.store.embedding_model, now)
        if network is Network.OPINION:
            formed = _event(
                unit.id,
                "formed",
                None,
                float(confidence),
                f"added by {current_caller().actor}",
                now,
            )
            write_events(tx.con, [replace(formed, new_text=unit.text)])
        relink_units(tx.con, bank.store.vectors, [unit.id], bank.config)
        return Outcome(
            before={},
            after={"id": unit.id, "text": unit.text, "network": str(network)},
            observe=set(entities),
        )

    return run_action(
        bank,
        action="add_unit",
        target=unit.id,
        scope=Scope(units={unit.id}, entities=set(entities), vectors={unit.id}),
        body=body,
    )


def set_hidden(
    bank: BankHandle,
    unit_ids: Sequence[str],
    hidden: bool,
    *,
    reason: str | None = None,
) -> Change:
    """Hide active units (hidden=True) or bring hidden ones back; `reason` is
    kept in the audit entry."""
    limits.check_text("reason", reason, limits.REASON_CHARS)
    ids = sorted({unit_ids} if isinstance(unit_ids, str) else set(unit_ids))
    if not ids:
        raise InvalidInputError("choose at least one memory")
    units = select_units(bank.store.reader(), UnitFilter(ids=ids, status=None), limit=None)
    found = {u.id: u for u in units}
    missing = [i for i in ids if i not in found]
    if missing:
        raise EngramError(f"no unit {missing[0]!r} in bank {bank.name!r}")
    want, have = (
        (UnitStatus.HIDDEN, UnitStatus.ACTIVE) if hidden else (UnitStatus.ACTIVE, UnitStatus.HIDDEN)
    )
    wrong = [u for u in units if u.status != have]
    if wrong:
        raise EngramError(
            f"unit {wrong[0].id} is {wrong[0].status.value}, not {have.value}: "
            + ("only an active memory can be hidden" if hidden else "only a hidden one comes back")
        )
    entities = {e for u in units for e in u.entity_ids}

    def body(tx) -> Outcome:
        tx.con.execute(
            "UPDATE units SET status = ? WHERE id IN (SELECT unnest(?))", [str(want), ids]
        )
        sample = [{"id": u.id, "text": u.text} for u in units[:20]]
        return Outcome(
            before={"count": len(ids), "units": sample, "status": str(have)},
            after={"count": len(ids), "status": str(want)} | ({"reason": reason} if reason else {}),
            observe=entities,
        )

    return run_action(
        bank,
        action="hide_units" if hidden else "unhide_units",
        target=ids[0] if len(ids) == 1 else None,
        scope=Scope(units=set(ids), tables=frozenset({"units"})),
        body=body,
    )


def _event(
    opinion_id: str,
    relation: str,
    before: float | None,
    after: float,
    reason: str,
    now: datetime,
) -> OpinionEvent:
    return OpinionEvent(new_id(), opinion_id, now, relation, before, after, None, reason)


def confidence_event(
    opinion_id: str, before: float | None, after: float, now: datetime
) -> OpinionEvent:
    """The event a confidence set by hand leaves in the opinion's history."""
    return _event(opinion_id, EDITED, before, after, f"edited by {current_caller().actor}", now)
