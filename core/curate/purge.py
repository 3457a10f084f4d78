"""Purging an entity: removed for good, from every store, in every old copy.

A purge cannot be undone. In one DuckDB transaction it deletes the entity,
every unit that mentions it (with their mentions, links, opinion events and
observation rows), redacts the entity's names in everything that stays
(turns, documents, other units' text, opinion reasons, aliases) and blanks
audit entries that name it. Then nothing old may survive:

- LanceDB keeps older table versions and rewrites a data file only when many
  of its rows are deleted, so the vector table is rebuilt from DuckDB in a
  fresh folder and swapped in (no history at all);
- Tantivy keeps deleted documents in their segments until a merge it may
  never schedule, so the BM25 index is rebuilt the same way;
- DuckDB reuses freed blocks without wiping them, so the database file is
  copied into a fresh one and swapped in (`BankStore.rebuild_database`).

A crash after the transaction leaves `purge_pending` in the bank's meta; the
next purge (or `finish_pending_purge`) completes the rebuilds first.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import duckdb
import numpy as np

from core.curate.action import (
    delete_unit_rows,
    entities_of,
    entity_row,
    units_mentioning,
)
from core.curate.audit import PURGE, check_actor, record, scrub
from core.curate.derived import observation_pairs, reconcile
from core.curate.jobs import queue_observations
from core.curate.retract import matching_rows, redaction_names, redaction_pattern, retract_preview
from core.progress import Progress, report
from core.store.bank_store import utcnow
from core.store.filters import like_pattern
from core.types import Change, EngramError, Kind

if TYPE_CHECKING:
    from core.bank import Bank

REDACTED = "[redacted]"
# Units per index chunk when filling fresh indexes (a LanceDB fragment, a Tantivy commit).
FILL_CHUNK = 5000
PENDING_KEY = "purge_pending"
# Tables whose text a purge does not redact in place: units and entities are
# handled on their own, the audit log is scrubbed, the queue holds only ids.
NOT_REDACTED = frozenset({"units", "entities", "audit", "index_queue"})


def purge_entity(
    bank: Bank,
    entity_id: str,
    *,
    confirm: bool = False,
    actor: str = "user",
    progress: Progress | None = None,
) -> Change:
    """Remove an entity and everything derived from it for good. THIS CANNOT BE
    UNDONE: pass `confirm=True`. See the module docstring for what goes where."""
    if not confirm:
        raise EngramError(
            "a purge removes the entity and everything derived from it for good and cannot"
            " be undone; preview it with retract_preview, then confirm"
        )
    check_actor(actor)
    finish_pending_purge(bank, progress)
    con = bank.store.reader()
    entity = entity_row(con, entity_id)
    preview = retract_preview(bank, entity_id)
    purged = units_mentioning(con, entity_id)
    names = redaction_names(entity.name, entity.aliases)
    pattern = redaction_pattern(names)
    # Units that name the entity without mentioning it keep their place, not its name;
    # re-embedded before the transaction (the model is slow).
    redacted_units: dict[str, str] = {}
    if pattern is not None:
        for _, unit_id, text in matching_rows(
            con, "units", ["id", "text"], names, pattern, "id NOT IN (SELECT unnest(?))", [purged]
        ):
            redacted_units[unit_id] = pattern.sub(REDACTED, text)
    ids = list(redacted_units)
    vectors = (
        bank.engine.embedder.embed([redacted_units[i] for i in ids])
        if ids
        else np.zeros((0, bank.store.dim), dtype=np.float32)
    )
    report(progress, 1, 4, "removing from DuckDB")
    neighbours = (entities_of(con, purged) | entities_of(con, ids)) - {entity_id}
    with bank.store.transaction() as tx:
        c = tx.con
        pairs = observation_pairs(c, [*purged, *ids])
        bank.store.set_meta(c, PENDING_KEY, True)
        delete_unit_rows(c, purged)
        c.execute("DELETE FROM mentions WHERE entity_id = ?", [entity_id])
        c.execute("DELETE FROM links WHERE entity_id = ?", [entity_id])
        c.execute("DELETE FROM observations WHERE entity_id = ?", [entity_id])
        c.execute(
            "DELETE FROM entity_decisions WHERE entity_id = $e OR candidate_id = $e",
            {"e": entity_id},
        )
        c.execute("DELETE FROM jobs WHERE target = ?", [entity_id])
        c.execute("DELETE FROM entities WHERE id = ?", [entity_id])
        turns = 0
        if pattern is not None:
            turns = _redact_everywhere(c, names, pattern)
            for rowid, *_ in matching_rows(c, "entity_decisions", ["surface"], names, pattern):
                c.execute("DELETE FROM entity_decisions WHERE rowid = ?", [rowid])
            _redact_entities(c, names, pattern)
        now = utcnow()
        for unit_id, vector in zip(ids, vectors, strict=True):
            c.execute(
                "UPDATE units SET text = ?, vector = ?, updated_at = ? WHERE id = ?",
                [redacted_units[unit_id], vector.astype(np.float32).tolist(), now, unit_id],
            )
        scrub(c, pattern, {entity_id, *purged})
        record(
            c,
            actor=actor,
            action=PURGE,
            target=entity_id,
            before={
                "units": preview.total_units,
                "opinions": preview.opinions,
                "observations": preview.observations,
                "links": preview.links,
                "source_turns": preview.source_turns,
                "turns_redacted": turns,
                "units_redacted": len(ids),
            },
            after={"purged": True},
        )
        jobs = queue_observations(c, neighbours)
        derived = reconcile(c, [*purged, *ids], rewritten=ids, pairs_before=pairs)
        tx.touch([*purged, *ids, *derived.units])
    _finish(bank, progress)
    return derived.change() | Change.of(
        removed={Kind.UNIT: purged, Kind.ENTITY: [entity_id]},
        updated={Kind.UNIT: ids, Kind.ENTITY: neighbours, Kind.DOCUMENT: ["*"] if turns else []},
        added={Kind.JOB: jobs},
    )


def _redact_everywhere(con: duckdb.DuckDBPyConnection, names, pattern: re.Pattern[str]) -> int:
    """Redact the names in every text that stays: every VARCHAR, VARCHAR[] and JSON
    column of every table (tables added later included), except units and
    entities (handled on their own) and the audit log (scrubbed). Returns how
    many turns changed."""
    turns = 0
    columns: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in con.execute(
        "SELECT c.table_name, c.column_name, c.data_type FROM duckdb_columns() c"
        " JOIN duckdb_tables() t ON t.database_name = c.database_name"
        " AND t.schema_name = c.schema_name AND t.table_name = c.table_name"
        " WHERE c.database_name = current_database() AND c.schema_name = 'main'"
        " AND c.data_type IN ('VARCHAR', 'VARCHAR[]', 'JSON')"
        " ORDER BY c.table_name, c.column_index"
    ).fetchall():
        if table not in NOT_REDACTED:
            columns.setdefault(table, []).append((column, kind))
    for table, cols in columns.items():
        likes = " OR ".join(
            f"CAST({c} AS VARCHAR) ILIKE ? ESCAPE '\\'" for c, _ in cols for _ in names
        )
        rows = con.execute(
            f"SELECT rowid, {', '.join(c for c, _ in cols)} FROM {table} WHERE {likes}",
            [like_pattern(n) for _ in cols for n in names],
        ).fetchall()
        for rowid, *values in rows:
            new = [_redacted(v, kind, pattern) for v, (_, kind) in zip(values, cols, strict=True)]
            changed = [(c, n) for (c, _), v, n in zip(cols, values, new, strict=True) if n != v]
            if changed:
                assignments = ", ".join(f"{c} = ?" for c, _ in changed)
                con.execute(
                    f"UPDATE {table} SET {assignments} WHERE rowid = ?",
                    [*(n for _, n in changed), rowid],
                )
                turns += table == "turns"
    return turns


def _redacted(value, kind: str, pattern: re.Pattern[str]):
    if value is None:
        return None
    if kind == "VARCHAR[]":
        return [pattern.sub(REDACTED, v) if isinstance(v, str) else v for v in value]
    if kind == "JSON":
        try:
            return json.dumps(_redact_json(json.loads(value), pattern), ensure_ascii=False)
        except ValueError:
            return pattern.sub(REDACTED, value)
    return pattern.sub(REDACTED, value)


def _redact_json(value, pattern: re.Pattern[str]):
    if isinstance(value, str):
        return pattern.sub(REDACTED, value)
    if isinstance(value, list):
        return [_redact_json(v, pattern) for v in value]
    if isinstance(value, dict):
        return {pattern.sub(REDACTED, k): _redact_json(v, pattern) for k, v in value.items()}
    return value


def _redact_entities(con: duckdb.DuckDBPyConnection, names, pattern: re.Pattern[str]) -> None:
    """Other entities named after, or aliased by, the purged one lose that name."""
    for entity_id, name, aliases in con.execute(
        "SELECT id, name, aliases FROM entities"
    ).fetchall():
        kept = [a for a in aliases or [] if not pattern.search(a)]
        new_name = pattern.sub(REDACTED, name)
        if new_name != name or len(kept) != len(aliases or []):
            con.execute(
                "UPDATE entities SET name = ?, aliases = ? WHERE id = ?",
                [new_name, kept, entity_id],
            )


def finish_pending_purge(bank: Bank, progress: Progress | None = None) -> bool:
    """Complete the rebuilds of a purge a crash interrupted; True if there was one."""
    if not bank.store.meta(PENDING_KEY):
        return False
    _finish(bank, progress)
    return True


def _finish(bank: Bank, progress: Progress | None) -> None:
    store = bank.store
    report(progress, 2, 4, "rebuilding the vector and BM25 indexes")
    store.rebuild_indexes()
    report(progress, 3, 4, "rewriting the database file")
    store.rebuild_database()
    with store.transaction() as tx:
        tx.con.execute("DELETE FROM meta WHERE key = ?", [PENDING_KEY])
    store.checkpoint()
    report(progress, 4, 4, "purged")
