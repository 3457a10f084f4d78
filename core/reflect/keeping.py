"""Keeping reflections: commit one (its opinions and its record, in one unit of
work) and read back the ones kept.

A commit re-applies each planned step to the opinion as it is *now* (another
reflection or a retain may have moved it since planning), through retain's
`apply_evidence`, and records every step as an opinion event exactly as retain
does. Either all of it lands, or none of it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from core import tags as tagging
from core.reflect.prompt import UNKNOWN_DATE, bank_time, date_of
from core.reflect.values import (
    Evidence,
    FormedOpinion,
    OpinionAction,
    Reflection,
    ReflectionError,
)
from core.retain.opinions import (
    FORMED,
    OpinionEvent,
    Relation,
    apply_evidence,
    latest_events,
    write_events,
)
from core.store.bank_store import utcnow
from core.store.units import get_units, insert_units
from core.types import Change, Disposition, ExtractionMode, Kind, Network, NewUnit, Unit, new_id

if TYPE_CHECKING:
    import duckdb

    from core.handle import BankHandle

_COLUMNS = (
    "id, query, disposition, evidence_ids, answer, opinions, model, mode, created_at,"
    " committed, committed_at, budget_tokens, system_prompt, opinion_error, notes"
)


def commit(
    bank: BankHandle, reflection: Reflection, *, apply_opinions: bool = True
) -> tuple[Change, Reflection]:
    """Store `reflection` and apply its opinions; returns the change and the
    reflection as kept (final confidences, event ids). With `apply_opinions=False`
    only the record is kept (marked not committed): the answer without its beliefs."""
    if not reflection.ok:
        raise ReflectionError(
            f"this reflection has no answer to keep ({reflection.error})", "commit"
        )
    ops = list(reflection.opinions) if apply_opinions else []
    alpha = float(bank.config["retain.opinion_alpha"])
    supporting = {i for op in ops for i in op.supporting_ids}
    now = utcnow()
    with bank.store.transaction() as tx:
        con = tx.con
        stored = con.execute(
            "SELECT committed FROM reflections WHERE id = ?", [reflection.id]
        ).fetchone()
        # A record kept without its opinions may still have them applied, once.
        if stored is not None and (stored[0] or not apply_opinions):
            raise ReflectionError(
                f"reflection {reflection.id} is already kept; a reflection is committed once",
                "commit",
            )
        sources = get_units(con, list(supporting)) if supporting else {}
        current = _current_opinions(con, [op.opinion_id for op in ops])
        last_step = latest_events(con, [op.opinion_id for op in ops])
        confidence: dict[str, float] = {}
        new_units: list[NewUnit] = []
        updates: dict[str, float] = {}
        events: list[OpinionEvent] = []
        done: list[FormedOpinion] = []
        for op in ops:
            evidence_id = op.supporting_ids[0] if op.supporting_ids else None
            target = op.opinion_id
            at = _bank_time(op, sources, reflection, last_step.get(target), now)
            if op.action is OpinionAction.UPDATED and (target in confidence or target in current):
                before = confidence.get(target, current.get(target))
                relation = Relation(op.relation or Relation.NEUTRAL)
                after = apply_evidence(before, relation, alpha)
                confidence[target] = after
                event_id = None
                if relation is not Relation.NEUTRAL:  # as in retain: neutral is no step
                    event_id = new_id()
                    updates[target] = after
                    events.append(
                        OpinionEvent(
                            event_id,
                            target,
                            at,
                            relation.value,
                            before,
                            after,
                            evidence_id,
                            op.reason,
                        )
                    )
                done.append(
                    replace(op, confidence=after, confidence_before=before, event_id=event_id)
                )
                continue
            if op.action is OpinionAction.FORMED and target in current:
                raise ReflectionError(
                    f"opinion {target} of this reflection already exists; "
                    "was the reflection committed before?",
                    "commit",
                )
            if op.action is OpinionAction.UPDATED:
                # The opinion it would update is gone (deleted or retracted since
                # planning): the reflection's opinion stands on its own.
                target = new_id()
                op = replace(
                    op,
                    action=OpinionAction.FORMED,
                    opinion_id=target,
                    confidence=op.confidence
                    if op.proposed_confidence is None
                    else op.proposed_confidence,
                    relation=None,
                    confidence_before=None,
                    reason=op.reason + " (the opinion it would update no longer exists)",
                )
            confidence[target] = op.confidence
            source_ids = tuple(
                dict.fromkeys(
                    s for i in op.supporting_ids if i in sources for s in sources[i].source_ids
                )
            )
            vector = reflection.vectors.get(op.opinion_id)
            new_units.append(
                NewUnit(
                    vector=tuple(vector) if vector is not None else None,
                    text=op.text,
                    network=Network.OPINION,
                    confidence=op.confidence,
                    mentioned_at=at,
                    source_ids=source_ids,
                    entity_ids=op.entity_ids,
                    # Its evidence's scopes: formed from one user's facts, it is theirs.
                    tags=tagging.union(sources[i].tags for i in op.supporting_ids if i in sources),
                    extraction_mode=ExtractionMode.LLM
                    if reflection.model
                    else ExtractionMode.RULES,
                    model=reflection.model,
                    id=target,
                )
            )
            event_id = new_id()
            events.append(
                OpinionEvent(
                    event_id,
                    target,
                    at,
                    FORMED,
                    None,
                    op.confidence,
                    evidence_id,
                    op.reason,
                    None,
                    op.text,
                )
            )
            done.append(replace(op, event_id=event_id))
        if new_units:
            # Planning embedded them; only an opinion whose update target vanished is new here.
            vectors = bank.vectors_for(new_units)
            insert_units(con, new_units, vectors, bank.store.embedding_model, now)
            tx.touch([u.id for u in new_units])
        if updates:
            con.execute(
                "UPDATE units SET confidence = n.c, updated_at = ? FROM"
                " (SELECT unnest(?) AS id, unnest(?) AS c) n WHERE units.id = n.id",
                [now, list(updates), list(updates.values())],
            )
        write_events(con, events)
        kept = replace(
            reflection,
            opinions=tuple(done) if apply_opinions else reflection.opinions,
            committed=apply_opinions,
        )
        if stored is not None:
            con.execute("DELETE FROM reflections WHERE id = ?", [reflection.id])
        _insert(con, kept, now)
    formed = [u.id for u in new_units]
    record = {Kind.REFLECTION: [reflection.id]}
    change = Change.of(
        added={Kind.UNIT: formed, Kind.OPINION: formed, **({} if stored else record)},
        updated={
            Kind.UNIT: list(updates),
            Kind.OPINION: list(updates),
            **(record if stored else {}),
        },
    )
    return change, kept


def _bank_time(
    op: FormedOpinion,
    sources: dict[str, Unit],
    reflection: Reflection,
    last_step: datetime | None,
    now: datetime,
) -> datetime:
    """When an opinion step happened on the bank's own time line: the newest of
    its evidence, else the reflection's time (its reference time or newest
    evidence), else — nothing dated at all — the wall clock. Never before the
    opinion's previous step, so a trajectory does not run backwards."""
    times = [bank_time(sources[i]) for i in op.supporting_ids if i in sources]
    dated = [t for t in times if t is not None]
    at = max(dated) if dated else reflection.as_of or now
    return max(at, last_step) if last_step is not None else at


def _current_opinions(con: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, float]:
    """Confidence of the active opinions among `ids` (an unrated one counts as 0.5,
    as in retain)."""
    if not ids:
        return {}
    rows = con.execute(
        "SELECT id, coalesce(confidence, 0.5) FROM units WHERE id IN (SELECT unnest(?))"
        " AND network = 'opinion' AND status = 'active'",
        [ids],
    ).fetchall()
    return {r[0]: float(r[1]) for r in rows}


def _insert(con: duckdb.DuckDBPyConnection, r: Reflection, now: datetime) -> None:
    con.execute(
        f"INSERT INTO reflections ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            r.id,
            r.query,
            json.dumps(r.disposition.to_dict()),
            r.evidence_ids,
            r.answer,
            json.dumps([o.to_dict() for o in r.opinions]),
            r.model,
            r.mode,
            r.created_at,
            r.committed,
            now,
            r.budget_tokens,
            r.system_prompt,
            r.opinion_error,
            list(r.notes),
        ],
    )


def list_reflections(
    bank: BankHandle,
    *,
    limit: int | None = 100,
    offset: int = 0,
    opinion_id: str | None = None,
) -> list[Reflection]:
    """Kept reflections, newest first; with `opinion_id`, those that formed or updated it."""
    con = bank.store.reader()
    sql = f"SELECT {_COLUMNS} FROM reflections"
    params: list[Any] = []
    if opinion_id is not None:
        # Opinion ids are stored inside the JSON; matched as a JSON string value.
        sql += " WHERE contains(CAST(opinions AS VARCHAR), ?)"
        params.append(json.dumps(opinion_id))
    sql += " ORDER BY created_at DESC, id DESC"
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        params += [int(limit), int(offset)]
    rows = con.execute(sql, params).fetchall()
    ids = list({i for row in rows for i in row[3]})
    units = get_units(con, ids) if ids else {}
    out = [_from_row(row, units) for row in rows]
    if opinion_id is not None:
        out = [r for r in out if any(o.opinion_id == opinion_id for o in r.opinions)]
    return out


def get_reflection(bank: BankHandle, reflection_id: str) -> Reflection:
    con = bank.store.reader()
    row = con.execute(
        f"SELECT {_COLUMNS} FROM reflections WHERE id = ?", [reflection_id]
    ).fetchone()
    if row is None:
        raise ReflectionError(f"no reflection {reflection_id!r} in bank {bank.name!r}", "missing")
    return _from_row(row, get_units(con, list(row[3])))


def _from_row(row: tuple, units: dict) -> Reflection:
    evidence = []
    for unit_id in row[3]:
        unit = units.get(unit_id)
        if unit is None:
            evidence.append(Evidence(unit_id, "", "(no longer stored)", UNKNOWN_DATE))
        else:
            evidence.append(
                Evidence(
                    unit_id,
                    unit.network.value,
                    unit.text,
                    date_of(unit),
                    unit.confidence,
                    source_count=len(unit.source_ids),
                    entity_ids=unit.entity_ids,
                )
            )
    return Reflection(
        id=row[0],
        query=row[1],
        disposition=Disposition.from_dict(json.loads(row[2])),
        evidence=tuple(evidence),
        answer=row[4],
        opinions=tuple(FormedOpinion.from_dict(o) for o in json.loads(row[5])),
        model=row[6],
        mode=row[7],
        created_at=row[8],
        committed=bool(row[9]),
        budget_tokens=row[11] or 0,
        system_prompt=row[12] or "",
        opinion_error=row[13],
        notes=tuple(row[14] or ()),
    )
