"""Renaming, merging and splitting entities, audited and undoable."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from core.curate.action import (
    EntityRow,
    Outcome,
    delete_unit_rows,
    entity_row,
    require_active,
    run_action,
    units_mentioning,
)
from core.curate.jobs import drop_jobs
from core.curate.relink import entity_links
from core.curate.rows import Scope
from core.retain.links import write_links
from core.store.bank_store import utcnow
from core.types import Change, EngramError, InvalidInputError, new_id

if TYPE_CHECKING:
    from core.handle import BankHandle

MAX_NAME = 200


def valid_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("an entity needs a non-empty name")
    name = " ".join(name.split())
    if len(name) > MAX_NAME:
        raise InvalidInputError(f"an entity name is at most {MAX_NAME} characters")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise InvalidInputError("an entity name cannot contain control characters")
    return name


def _merged_aliases(name: str, aliases: Iterable[str]) -> list[str]:
    """Aliases without the name itself and without case-insensitive repeats."""
    seen = {name.casefold()}
    out = []
    for alias in aliases:
        if alias and alias.casefold() not in seen:
            seen.add(alias.casefold())
            out.append(alias)
    return out


def rename_entity(
    bank: BankHandle, entity_id: str, name: str, *, keep_alias: bool = True
) -> Change:
    """Give an entity a new name; the old one stays as an alias unless `keep_alias=False`."""
    name = valid_name(name)
    con = bank.store.reader()
    entity = entity_row(con, entity_id)
    if name == entity.name:
        return Change()
    clash = con.execute(
        "SELECT id FROM entities WHERE id <> ? AND status = 'active' AND lower(name) = lower(?)",
        [entity_id, name],
    ).fetchall()
    if clash:
        raise EngramError(
            f"another entity is already named {name!r} ({clash[0][0]}): merge the two instead"
        )
    old = [entity.name] if keep_alias else []
    aliases = _merged_aliases(name, [*entity.aliases, *old])

    def body(tx) -> Outcome:
        tx.con.execute(
            "UPDATE entities SET name = ?, aliases = ?, updated_at = ? WHERE id = ?",
            [name, aliases, utcnow(), entity_id],
        )
        return Outcome(
            before=entity.describe(),
            after={**entity.describe(), "name": name, "aliases": aliases},
            observe={entity_id},
        )

    return run_action(
        bank,
        action="rename_entity",
        target=entity_id,
        scope=Scope(entities={entity_id}, tables=frozenset({"entities"})),
        body=body,
    )


def _observation_unit(con, entity_id: str) -> str | None:
    row = con.execute(
        "SELECT unit_id FROM observations WHERE entity_id = ?", [entity_id]
    ).fetchone()
    return row[0] if row else None


def merge_entities(bank: BankHandle, source_id: str, target_id: str) -> Change:
    """Merge entity `source_id` into `target_id`: its mentions, links, opinions and
    observations follow; its name and aliases become aliases of the target."""
    if source_id == target_id:
        raise InvalidInputError("an entity cannot be merged into itself")
    con = bank.store.reader()
    source = entity_row(con, source_id)
    target = entity_row(con, target_id)
    require_active(source, "merge")
    require_active(target, "merge")
    moved = units_mentioning(con, source_id)
    source_obs = _observation_unit(con, source_id)
    target_obs = _observation_unit(con, target_id)
    # The target keeps one observation; regenerating it covers the merged facts.
    dropped_obs = source_obs if source_obs and target_obs else None
    aliases = _merged_aliases(target.name, [*target.aliases, source.name, *source.aliases])
    cap = int(bank.config["retain.entity_links_per_entity"])

    def body(tx) -> Outcome:
        c = tx.con
        c.execute(
            "DELETE FROM mentions WHERE entity_id = $a AND unit_id IN"
            " (SELECT unit_id FROM mentions WHERE entity_id = $b)",
            {"a": source_id, "b": target_id},
        )
        c.execute("UPDATE mentions SET entity_id = ? WHERE entity_id = ?", [target_id, source_id])
        _move_entity_links(c, source_id, target_id)
        _dedupe_entity_links(c, target_id)
        if dropped_obs:
            delete_unit_rows(c, [dropped_obs])
        elif source_obs:
            c.execute(
                "UPDATE observations SET entity_id = ? WHERE entity_id = ?", [target_id, source_id]
            )
        write_links(c, entity_links(c, moved, [target_id], cap))
        for column in ("entity_id", "candidate_id"):
            c.execute(
                f"UPDATE entity_decisions SET {column} = ? WHERE {column} = ?",
                [target_id, source_id],
            )
        c.execute(
            "UPDATE entities SET aliases = ?, updated_at = ? WHERE id = ?",
            [aliases, utcnow(), target_id],
        )
        c.execute("DELETE FROM entities WHERE id = ?", [source_id])
        drop_jobs(c, [source_id])
        return Outcome(
            before={"source": source.describe(), "target": target.describe()},
            after={"target": {**target.describe(), "aliases": aliases}, "units": len(moved)},
            observe={target_id},
        )

    return run_action(
        bank,
        action="merge_entities",
        target=target_id,
        scope=Scope(
            units=set(moved),
            entities={source_id, target_id},
            vectors={dropped_obs} if dropped_obs else set(),
        ),
        body=body,
    )


def _dedupe_entity_links(con, entity_id: str) -> None:
    con.execute(
        "DELETE FROM links WHERE rowid IN (SELECT rid FROM (SELECT rowid AS rid, row_number()"
        " OVER (PARTITION BY source, target, kind ORDER BY weight DESC, rowid) AS rn"
        " FROM links WHERE entity_id = ?) WHERE rn > 1)",
        [entity_id],
    )


def split_entity(
    bank: BankHandle,
    entity_id: str,
    unit_ids: Sequence[str],
    name: str,
    *,
    type: str | None = None,
) -> Change:
    """Move the mentions of `entity_id` by `unit_ids` to a new entity called `name`.

    The new entity's id is in the returned change (`change.added[Kind.ENTITY]`)."""
    name = valid_name(name)
    con = bank.store.reader()
    entity: EntityRow = entity_row(con, entity_id)
    require_active(entity, "split")
    chosen = sorted(set([unit_ids] if isinstance(unit_ids, str) else unit_ids))
    if not chosen:
        raise InvalidInputError("choose at least one mention to move to the new entity")
    mentioned = set(units_mentioning(con, entity_id))
    stray = [u for u in chosen if u not in mentioned]
    if stray:
        raise InvalidInputError(f"unit {stray[0]!r} does not mention {entity.name!r}")
    fresh = new_id()
    kind = valid_name(type) if type else entity.type
    obs = _observation_unit(con, entity_id)
    # The name split out was (usually) one of the entity's aliases: it now names
    # the new entity, so it stops resolving to the old one.
    kept_aliases = [a for a in entity.aliases if a.casefold() != name.casefold()]

    def body(tx) -> Outcome:
        c = tx.con
        now = utcnow()
        c.execute(
            "INSERT INTO entities (id, name, type, aliases, status, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, 'active', ?, ?)",
            [fresh, name, kind, [], now, now],
        )
        c.execute(
            "UPDATE mentions SET entity_id = $new WHERE entity_id = $old"
            " AND unit_id IN (SELECT unnest($units))",
            {"new": fresh, "old": entity_id, "units": chosen},
        )
        # Entity links between two moved units now go through the new entity;
        # links between a moved unit and one that stayed no longer share one.
        _move_entity_links(c, entity_id, fresh, chosen)
        c.execute(
            "DELETE FROM links WHERE entity_id = $old"
            " AND (source IN (SELECT unnest($units)) OR target IN (SELECT unnest($units)))",
            {"old": entity_id, "units": chosen},
        )
        if obs and obs in chosen:
            c.execute(
                "UPDATE observations SET entity_id = ? WHERE entity_id = ?", [fresh, entity_id]
            )
        c.execute(
            "UPDATE entities SET aliases = ?, updated_at = ? WHERE id = ?",
            [kept_aliases, now, entity_id],
        )
        return Outcome(
            before={**entity.describe(), "units": chosen},
            after={
                **entity.describe(),
                "aliases": kept_aliases,
                "new_entity": {"id": fresh, "name": name, "type": kind},
                "units": chosen,
            },
            observe={entity_id, fresh},
        )

    return run_action(
        bank,
        action="split_entity",
        target=entity_id,
        scope=Scope(units=set(chosen), entities={entity_id, fresh}),
        body=body,
    )


def _move_entity_links(c, old: str, new: str, units: list[str] | None = None) -> None:
    """Point the entity links through `old` at `new` (only those between `units`
    when given). The rows are rewritten, not updated in place: recall's link graph
    in memory (core/recall/linkgraph.py) notices inserts and deletes, not updates."""
    condition = "entity_id = $old"
    params: dict = {"old": old, "new": new}
    if units is not None:
        condition += " AND source IN (SELECT unnest($units)) AND target IN (SELECT unnest($units))"
        params["units"] = units
    c.execute(
        "INSERT INTO links SELECT source, target, kind, weight, $new, relation"
        f" FROM links WHERE {condition}",
        params,
    )
    c.execute(
        f"DELETE FROM links WHERE {condition}", {k: v for k, v in params.items() if k != "new"}
    )
