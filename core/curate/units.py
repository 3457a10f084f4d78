"""Editing and deleting units, audited and undoable."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from core.curate.action import (
    Outcome,
    delete_unit_rows,
    entities_of,
    require_entities,
    run_action,
)
from core.curate.memories import confidence_event
from core.curate.relink import relink_units
from core.curate.rows import Scope
from core.handle import validated
from core.retain.opinions import write_events
from core.store.bank_store import utcnow
from core.store.units import UnitFilter, insert_mentions, select_units
from core.types import UNSET, Change, InvalidInputError, Network, NewUnit, Unit

if TYPE_CHECKING:
    from core.handle import BankHandle

# Deleting more than this many units records only a sample of their texts as the
# readable state (the row delta holds all of them).
DESCRIBE_LIMIT = 50


def _describe(unit: Unit, entity_ids: Sequence[str] | None = None) -> dict[str, Any]:
    return {
        "id": unit.id,
        "text": unit.text,
        "network": str(unit.network),
        "occurred_start": unit.occurred_start,
        "occurred_end": unit.occurred_end,
        "confidence": unit.confidence,
        "entity_ids": list(unit.entity_ids if entity_ids is None else entity_ids),
    }


def edit_unit(
    bank: BankHandle,
    unit_id: str,
    *,
    text: str | None = None,
    network: Network | str | None = None,
    occurred_start: datetime | None = UNSET,
    occurred_end: datetime | None = UNSET,
    confidence: float | None = UNSET,
    entity_ids: Sequence[str] | None = None,
) -> Change:
    """Change a unit in place. A new text is re-embedded; new text, time or
    entities re-link it; the entities involved get their observations refreshed."""
    current = bank.unit(unit_id)
    fields: dict[str, Any] = {}
    if text is not None:
        new_text = validated(NewUnit(text=text)).text
        if new_text != current.text:
            fields["text"] = new_text
    if network is not None:
        try:
            new_network = Network(network)
        except ValueError:
            raise InvalidInputError(
                f"network must be one of {', '.join(n.value for n in Network)}; got {network!r}"
            ) from None
        if new_network != current.network:
            fields["network"] = str(new_network)
    for column, value in (("occurred_start", occurred_start), ("occurred_end", occurred_end)):
        if value is not UNSET:
            if value is not None and not isinstance(value, datetime):
                raise InvalidInputError(f"{column} must be a datetime or None")
            if value != getattr(current, column):
                fields[column] = value
    if confidence is not UNSET:
        if confidence is not None and not 0.0 <= float(confidence) <= 1.0:
            raise InvalidInputError(f"confidence must be in [0, 1], got {confidence}")
        if confidence != current.confidence:
            fields["confidence"] = None if confidence is None else float(confidence)
    start = fields.get("occurred_start", current.occurred_start)
    end = fields.get("occurred_end", current.occurred_end)
    if start is not None and end is not None and end < start:
        raise InvalidInputError("a unit's occurrence cannot end before it starts")
    new_entities: tuple[str, ...] | None = None
    if entity_ids is not None:
        wanted = tuple(dict.fromkeys(entity_ids))
        if set(wanted) != set(current.entity_ids):
            new_entities = wanted
    if not fields and new_entities is None:
        return Change()
    require_entities(bank, new_entities or ())
    if "text" in fields:
        # Embed before the transaction: the model is slow, the write lock is not ours to hold.
        fields["vector"] = bank.embedder.embed_one(fields["text"]).tolist()
    relink = bool({"text", "occurred_start", "occurred_end"} & fields.keys()) or (
        new_entities is not None
    )
    old_entities = set(current.entity_ids)
    involved = old_entities | set(new_entities or ())

    # A confidence set by hand is a step in the opinion's history, with its reason.
    is_opinion = Network(fields.get("network", current.network)) is Network.OPINION
    confidence_moved = "confidence" in fields and fields["confidence"] is not None and is_opinion

    def body(tx) -> Outcome:
        fields["updated_at"] = utcnow()
        if confidence_moved:
            write_events(
                tx.con,
                [
                    confidence_event(
                        unit_id,
                        current.confidence,
                        fields["confidence"],
                        fields["updated_at"],
                    )
                ],
            )
        assignments = ", ".join(f"{column} = ?" for column in fields)
        tx.con.execute(f"UPDATE units SET {assignments} WHERE id = ?", [*fields.values(), unit_id])
        if new_entities is not None:
            gone = sorted(old_entities - set(new_entities))
            came = [e for e in new_entities if e not in old_entities]
            if gone:
                tx.con.execute(
                    "DELETE FROM mentions WHERE unit_id = ? AND entity_id IN (SELECT unnest(?))",
                    [unit_id, gone],
                )
            if came:
                insert_mentions(tx.con, [unit_id] * len(came), came)
        if relink:
            relink_units(tx.con, bank.store.vectors, [unit_id], bank.config)
        after = dict(_describe(current, new_entities))
        after.update({k: v for k, v in fields.items() if k not in ("vector", "updated_at")})
        return Outcome(before=_describe(current), after=after, observe=involved)

    return run_action(
        bank,
        action="edit_unit",
        target=unit_id,
        scope=Scope(units={unit_id}, entities=involved, vectors={unit_id}),
        body=body,
    )


def delete_units(bank: BankHandle, unit_ids: Sequence[str]) -> Change:
    """Delete units with their mentions, links, opinion events and observation rows."""
    if isinstance(unit_ids, str):
        unit_ids = [unit_ids]
    con = bank.store.reader()
    existing = [
        r[0]
        for r in con.execute(
            "SELECT id FROM units WHERE id IN (SELECT unnest(?)) ORDER BY id", [list(unit_ids)]
        ).fetchall()
    ]
    if not existing:
        return Change()
    sample = [
        {"id": u.id, "network": str(u.network), "text": u.text}
        for u in select_units(
            bank.store.reader(), UnitFilter(ids=existing[:DESCRIBE_LIMIT], status=None), limit=None
        )
    ]
    involved = entities_of(con, existing)

    def body(tx) -> Outcome:
        delete_unit_rows(tx.con, existing)
        return Outcome(
            before={"count": len(existing), "units": sample},
            after={"count": 0},
            observe=involved,
        )

    return run_action(
        bank,
        action="delete_units",
        target=existing[0] if len(existing) == 1 else None,
        scope=Scope(units=set(existing), vectors=set(existing)),
        body=body,
    )
